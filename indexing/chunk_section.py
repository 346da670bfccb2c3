"""Structural sections and the merge of tiny ones with their neighbours."""

from __future__ import annotations

from dataclasses import dataclass

HEADING_SEPARATOR = " > "
MAX_LEAVES = 3  # a merged heading names at most this many sibling sections


@dataclass(frozen=True, slots=True)
class Section:
    """A structural unit of a file: text[start:end] under the heading path `heading`."""

    start: int
    end: int
    heading: tuple[str, ...]
    mergeable: bool = True  # front matter stays on its own


@dataclass(frozen=True, slots=True)
class Block:
    """One or more adjacent sections that become chunks together (split further if too long)."""

    start: int
    end: int
    heading: str


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without leading/trailing whitespace (start == end when only whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def merge_tiny(text: str, sections: list[Section], *, size: int, min_chars: int) -> list[Block]:
    """Group adjacent sections so that no section under `min_chars` stands alone if avoidable.

    Sections merge only with a neighbour under the same parent (a sibling, or its own parent or
    child heading), and only while the group still fits in `size`. A tldr page (one heading, a
    few tiny example paragraphs) therefore stays one chunk, and a Markdown "## Linux" with one
    command line joins "## macOS" instead of becoming a 1-line chunk.
    """
    trimmed = [(trim(text, s.start, s.end), s) for s in sections]
    trimmed = [(span, s) for span, s in trimmed if span[0] < span[1]]
    blocks: list[Block] = []
    group: list[tuple[tuple[int, int], Section]] = []

    def flush() -> None:
        if group:
            start, end = group[0][0][0], group[-1][0][1]
            blocks.append(Block(start, end, _merged_heading(group)))
            group.clear()

    for n, (span, section) in enumerate(trimmed):
        # A heading that opens its successor (a "# Install" line, a class header) belongs with
        # what follows it, not glued to the end of the previous sibling.
        opens_next = n + 1 < len(trimmed) and _extends(trimmed[n + 1][1].heading, section.heading)
        if (
            opens_next
            and group
            and not _extends(section.heading, group[-1][1].heading, strict=False)
        ):
            flush()
        if group and _can_join(group, span, section, size=size, min_chars=min_chars):
            group.append((span, section))
            continue
        flush()
        group.append((span, section))
    flush()
    return blocks


def _can_join(
    group: list[tuple[tuple[int, int], Section]],
    span: tuple[int, int],
    section: Section,
    *,
    size: int,
    min_chars: int,
) -> bool:
    last_span, last = group[-1]
    if not (section.mergeable and last.mergeable):
        return False
    if span[1] - group[0][0][0] > size:
        return False
    group_len = last_span[1] - group[0][0][0]
    if group_len >= min_chars and span[1] - span[0] >= min_chars:
        return False
    return _related(last.heading, section.heading)


def _extends(path: tuple[str, ...], prefix: tuple[str, ...], *, strict: bool = True) -> bool:
    if strict and len(path) <= len(prefix):
        return False
    return path[: len(prefix)] == prefix


def _related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Siblings, or one heading inside the other."""
    shorter = min(len(a), len(b))
    if a[:shorter] == b[:shorter]:
        return True
    return len(a) == len(b) and a[:-1] == b[:-1]


def _merged_heading(group: list[tuple[tuple[int, int], Section]]) -> str:
    paths = [s.heading for _, s in group]
    if len(group) == 1:
        return HEADING_SEPARATOR.join(paths[0])
    # The biggest section names the block when all the others are its parents (a heading line
    # followed by its first sub-section, or a class header followed by its first method).
    biggest = max(group, key=lambda item: item[0][1] - item[0][0])[1].heading
    if all(biggest[: len(p)] == p for p in paths):
        return HEADING_SEPARATOR.join(biggest)
    common: tuple[str, ...] = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    leaves: list[str] = []
    for path in paths:
        if len(path) > len(common) and path[len(common)] not in leaves:
            leaves.append(path[len(common)])
    if not leaves:
        return HEADING_SEPARATOR.join(common)
    leaf = ", ".join(leaves[:MAX_LEAVES]) + (", …" if len(leaves) > MAX_LEAVES else "")
    return HEADING_SEPARATOR.join((*common, leaf))
