"""Heading structure of Markdown (ATX and setext), reStructuredText and Org documents.

Each returns `Section`s that tile the text in order: an optional preamble before the first
heading, then one section per heading running to the next heading, with the heading path of
every enclosing heading ("Install > Linux").
"""

from __future__ import annotations

import re

from indexing.chunk_section import Section

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:[-*+>]|\d+[.)]|#|`{3}|~{3}|\||<)|^( {4}|\t)")
_ORG = re.compile(r"^(\*+)[ \t]+(.*?)[ \t]*$")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")

# (line index where the heading starts, level, title)
_Heading = tuple[int, int, str]


def markdown_sections(text: str, lines: list[str], line_starts: list[int]) -> list[Section]:
    sections: list[Section] = []
    first_line = 0
    front = _front_matter_end(lines)
    if front:
        end = line_starts[front] if front < len(line_starts) else len(text)
        sections.append(Section(0, end, ("front matter",), mergeable=False))
        first_line = front
    headings: list[_Heading] = []
    fence: str | None = None
    for i in range(first_line, len(lines)):
        line = lines[i]
        fence_match = _FENCE.match(line)
        if fence is not None:
            # A fence closes with at least as many of the same character and nothing else.
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
                and not line.strip().strip(fence[0])
            ):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((i, len(atx.group(1)), clean_title(atx.group(2) or "")))
            continue
        setext = _SETEXT.match(line)
        if setext and i > first_line and _is_setext_title(lines, i - 1, first_line, headings):
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append((i - 1, level, clean_title(lines[i - 1])))
    sections.extend(_tile(text, line_starts, headings, first_line))
    return sections


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
# Only at word edges, so `snake_case` and `2*3*4` keep their marks.
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1(?![\w*])")


def clean_title(title: str) -> str:
    """Heading text for display: links, `{#anchors}`, emphasis and code marks removed."""
    title = _ANCHOR.sub("", _LINK.sub(r"\1", title))
    title = _EMPHASIS.sub(r"\2", title)
    return " ".join(title.split())


def _is_setext_title(lines: list[str], i: int, first_line: int, headings: list[_Heading]) -> bool:
    """A one-line paragraph directly above a ===/--- line (not a list item, quote, table …)."""
    title = lines[i]
    if not title.strip() or _NOT_PARAGRAPH.match(title):
        return False
    if headings and headings[-1][0] == i:
        return False
    if i == first_line:
        return True
    above = lines[i - 1]
    # A blank line, a heading or a closing code fence ends the block before the title.
    return not above.strip() or bool(_ATX.match(above) or _FENCE.match(above))


def _front_matter_end(lines: list[str]) -> int:
    """Line index just after a leading YAML (---) or TOML (+++) front matter block, else 0."""
    if not lines or lines[0].rstrip() not in ("---", "+++"):
        return 0
    closer = ("---", "...") if lines[0].rstrip() == "---" else ("+++",)
    for i in range(1, min(len(lines), 200)):
        if lines[i].rstrip() in closer:
            return i + 1
    return 0


def org_sections(text: str, lines: list[str], line_starts: list[int]) -> list[Section]:
    headings: list[_Heading] = []
    in_block = False
    for i, line in enumerate(lines):
        upper = line.strip().upper()
        if upper.startswith("#+BEGIN_"):
            in_block = True
        elif upper.startswith("#+END_"):
            in_block = False
        elif not in_block:
            match = _ORG.match(line)
            if match:
                headings.append((i, len(match.group(1)), clean_title(match.group(2))))
    return _tile(text, line_starts, headings, 0)


def rst_sections(text: str, lines: list[str], line_starts: list[int]) -> list[Section]:
    """Titles underlined (optionally also overlined) with a repeated punctuation character.

    reST has no fixed levels: the first adornment style seen is level 1, the next new one 2…
    """
    styles: list[tuple[str, bool]] = []
    headings: list[_Heading] = []
    i = 1
    while i < len(lines):
        under = _RST_ADORNMENT.match(lines[i])
        title = lines[i - 1]
        if (
            under
            and title.strip()
            and not _RST_ADORNMENT.match(title)
            and len(lines[i].rstrip()) >= min(len(title.rstrip()), 3)
            and (i < 2 or not lines[i - 2].strip() or _RST_ADORNMENT.match(lines[i - 2]))
        ):
            overlined = i >= 2 and lines[i - 2].rstrip() == lines[i].rstrip()
            style = (under.group(1), overlined)
            if style not in styles:
                styles.append(style)
            start = i - 2 if overlined else i - 1
            headings.append((start, styles.index(style) + 1, title.strip()))
            i += 2
            continue
        i += 1
    return _tile(text, line_starts, headings, 0)


def _tile(
    text: str, line_starts: list[int], headings: list[_Heading], first_line: int
) -> list[Section]:
    sections: list[Section] = []
    first_char = line_starts[first_line] if first_line < len(line_starts) else len(text)
    if not headings:
        return [Section(first_char, len(text), ())] if first_char < len(text) else []
    if line_starts[headings[0][0]] > first_char:
        sections.append(Section(first_char, line_starts[headings[0][0]], ()))
    stack: list[tuple[int, str]] = []
    for n, (line, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title or "(untitled)"))
        start = line_starts[line]
        end = line_starts[headings[n + 1][0]] if n + 1 < len(headings) else len(text)
        sections.append(Section(start, end, tuple(t for _, t in stack)))
    return sections
