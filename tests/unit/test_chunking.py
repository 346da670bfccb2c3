"""Chunking of Markdown and prose: headings, merges, size cap, overlap, ids, spans, pages."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from indexing.chunking import ChunkSettings, chunk_file, chunk_id, chunk_text, content_hash
from indexing.readers import DecodedFile
from indexing.sources import SourceFile
from indexing.types import Chunk

DEFAULT = ChunkSettings()


def check_invariants(text: str, chunks: list[Chunk], settings: ChunkSettings) -> None:
    """What every chunking must satisfy; shared with the property tests."""
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert chunk.text == text[chunk.start_char : chunk.end_char]
        assert chunk.text and chunk.text == chunk.text.strip()
        assert len(chunk.text) <= settings.chunk_size
        assert chunk.start_line == text.count("\n", 0, chunk.start_char) + 1
        assert chunk.end_line == chunk.start_line + chunk.text.count("\n")
        assert chunk.content_hash == content_hash(chunk.text)
        assert chunk.id == chunk_id(chunk.source, i, chunk.content_hash)
    for a, b in itertools.pairwise(chunks):
        # In order, and no chunk inside another (overlap only ever shares an edge).
        assert a.start_char < b.start_char and a.end_char < b.end_char, (a.text, b.text)
    covered = bytearray(len(text))
    for chunk in chunks:
        covered[chunk.start_char : chunk.end_char] = b"\x01" * (chunk.end_char - chunk.start_char)
        # A repeat of a kept chunk's text is dropped (stored once per file): it counts as kept.
        # In periodic text a repeat can start inside the kept chunk (chunks overlap), so the
        # search starts right after the chunk's start, not after its end.
        at = text.find(chunk.text, chunk.start_char + 1)
        while at >= 0:
            covered[at : at + len(chunk.text)] = b"\x01" * len(chunk.text)
            at = text.find(chunk.text, at + 1)
    lost = [i for i, c in enumerate(text) if not c.isspace() and not covered[i]]
    assert not lost, f"characters not in any chunk at {lost[:10]}: {text[lost[0] : lost[0] + 20]!r}"


def md(text: str, settings: ChunkSettings = DEFAULT) -> list[Chunk]:
    chunks = chunk_text(text, fmt="markdown", settings=settings, source="/n/a.md", root="/n")
    check_invariants(text, chunks, settings)
    return chunks


LONG_PARAGRAPH = (
    "Second brain keeps notes close. It reads folders of Markdown. "
    "It answers questions with citations. "
) * 4


def test_heading_paths_atx_and_setext() -> None:
    text = (
        "Intro before any heading, long enough to stand alone as its own chunk. "
        + LONG_PARAGRAPH
        + "\n\n# Install\n\n"
        + LONG_PARAGRAPH
        + "\n\n## Linux\n\n"
        + LONG_PARAGRAPH
        + "\n\n### Debian ###\n\n"
        + LONG_PARAGRAPH
        + "\n\nUsage\n=====\n\n"
        + LONG_PARAGRAPH
        + "\n\nOptions\n-------\n\n"
        + LONG_PARAGRAPH
    )
    chunks = md(text)
    assert [c.heading for c in chunks] == [
        "",
        "Install",
        "Install > Linux",
        "Install > Linux > Debian",
        "Usage",
        "Usage > Options",
    ]
    assert chunks[3].text.startswith("### Debian ###")


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("# `git stash` usage", "git stash usage"),
        ("## [Install](https://example.com/install) on **Linux**", "Install on Linux"),
        ("## Options {#options}", "Options"),
        ("# snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("## *Why* _this_ matters", "Why this matters"),
        ("#", "(untitled)"),
    ],
)
def test_heading_text_is_cleaned(line: str, heading: str) -> None:
    (chunk,) = md(f"{line}\n\nBody.\n")
    assert chunk.heading == heading
    assert chunk.text.startswith(line)  # the chunk text itself is untouched


def test_hashes_in_code_fences_are_not_headings() -> None:
    text = (
        "# Shell\n\n"
        + LONG_PARAGRAPH
        + "\n\n```bash\n# just a comment\nls -la\n```\n\n~~~\n## also not\n~~~\n\n"
        + LONG_PARAGRAPH
    )
    assert {c.heading for c in md(text)} == {"Shell"}


def test_thematic_break_and_list_are_not_setext() -> None:
    text = "# A\n\n" + LONG_PARAGRAPH + "\n\n---\n\n- item\n---\n\n" + LONG_PARAGRAPH
    assert {c.heading for c in md(text)} == {"A"}


def test_front_matter_is_its_own_chunk() -> None:
    text = "---\ntitle: Notes\ntags: [a, b]\n---\n# Title\n\nBody text.\n"
    chunks = md(text)
    assert [(c.heading, c.text) for c in chunks] == [
        ("front matter", "---\ntitle: Notes\ntags: [a, b]\n---"),
        ("Title", "# Title\n\nBody text."),
    ]


TLDR_PAGE = """# tar

> Archiving utility.
> Often combined with a compression method, such as `gzip` or `bzip2`.
> More information: <https://www.gnu.org/software/tar>.

- [c]reate an archive and write it to a [f]ile:

`tar cf {{path/to/target.tar}} {{path/to/file1 path/to/file2 ...}}`

- [c]reate a g[z]ipped archive and write it to a [f]ile:

`tar czf {{path/to/target.tar.gz}} {{path/to/file1 path/to/file2 ...}}`

- E[x]tract a (compressed) archive [f]ile into the current directory [v]erbosely:

`tar xvf {{path/to/source.tar[.gz|.bz2|.xz]}}`
"""


def test_small_tldr_page_is_one_chunk() -> None:
    (chunk,) = md(TLDR_PAGE)
    assert chunk.heading == "tar"
    assert chunk.text == TLDR_PAGE.strip()
    assert (chunk.start_line, chunk.end_line) == (1, 17)


def test_long_tldr_page_splits_between_examples() -> None:
    examples = "".join(
        f"- Example {i} does something useful:\n\n`tool --opt-{i} {{{{path/to/file}}}}`\n\n"
        for i in range(20)
    )
    page = "# tool\n\n> A tool.\n\n" + examples
    settings = ChunkSettings(chunk_size=400, chunk_overlap=100)
    chunks = md(page, settings)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.endswith("`"), chunk.text[-40:]  # never an orphaned "- Do X:" line
        assert chunk.heading == "tool"


def test_tiny_sections_merge_with_siblings() -> None:
    text = "# Install\n\n## Linux\n\napt install brain\n\n## macOS\n\nbrew install brain\n"
    (chunk,) = md(text)
    assert chunk.heading == "Install > Linux, macOS"
    assert "apt install" in chunk.text and "brew install" in chunk.text


def test_heading_line_joins_its_first_subsection() -> None:
    text = "# Guide\n\n## Setup\n\n" + LONG_PARAGRAPH + "\n\n## Use\n\n" + LONG_PARAGRAPH
    chunks = md(text)
    assert [c.heading for c in chunks] == ["Guide > Setup", "Guide > Use"]
    assert chunks[0].text.startswith("# Guide")


def test_tiny_sections_do_not_merge_across_unrelated_parents() -> None:
    text = (
        "# A\n\n## A1\n\n"
        + LONG_PARAGRAPH
        + "\n\n### Deep\n\ntiny\n\n# B\n\n## B1\n\nalso tiny\n\n"
        + LONG_PARAGRAPH
    )
    chunks = md(text)
    deep = next(c for c in chunks if "tiny" in c.text and "also" not in c.text)
    assert "also tiny" not in deep.text
    assert deep.heading.startswith("A > A1")


def test_merge_stops_at_chunk_size() -> None:
    sections = "".join(f"## S{i}\n\nline {i}\n\n" for i in range(60))
    settings = ChunkSettings(chunk_size=200, chunk_overlap=0, min_chunk_chars=100)
    chunks = md("# Top\n\n" + sections, settings)
    assert len(chunks) > 5
    assert all(len(c.text) <= 200 for c in chunks)
    assert all(c.heading.startswith("Top") for c in chunks)


def test_long_section_splits_with_overlap_on_sentence_boundaries() -> None:
    sentences = [f"Sentence number {i} talks about topic {i * 7}." for i in range(80)]
    text = "# Long\n\n" + " ".join(sentences) + "\n"
    settings = ChunkSettings(chunk_size=300, chunk_overlap=80, min_chunk_chars=50)
    chunks = md(text, settings)
    assert len(chunks) > 5
    for a, b in itertools.pairwise(chunks):
        assert b.start_char < a.end_char, "no overlap between neighbours"
        assert a.end_char - b.start_char <= 80
        assert b.text.startswith("Sentence number"), b.text[:30]
        assert a.text.endswith("."), a.text[-30:]
    assert {c.heading for c in chunks} == {"Long"}


def test_overlap_never_crosses_a_heading() -> None:
    body = " ".join(f"Fact {i} is worth remembering." for i in range(40))
    text = f"# One\n\n{body}\n\n# Two\n\n{body}\n"
    settings = ChunkSettings(chunk_size=300, chunk_overlap=100, min_chunk_chars=50)
    chunks = md(text, settings)
    two = text.index("# Two")
    for chunk in chunks:
        assert chunk.end_char <= two or chunk.start_char >= two
    assert any(c.start_char == two for c in chunks)


def test_paragraph_boundary_preferred_over_sentence() -> None:
    para = "Short sentence here. " * 5
    text = "\n\n".join([para.strip()] * 12)
    settings = ChunkSettings(chunk_size=400, chunk_overlap=0, min_chunk_chars=0)
    chunks = chunk_text(text, fmt="text", settings=settings)
    check_invariants(text, chunks, settings)
    assert all(text[c.end_char : c.end_char + 2] in ("\n\n", "") for c in chunks)


def test_one_enormous_word_is_hard_split() -> None:
    text = "x" * 3000
    settings = ChunkSettings(chunk_size=1000, chunk_overlap=100)
    chunks = chunk_text(text, fmt="text", settings=settings, distinct=False)
    check_invariants(text, chunks, settings)
    assert [len(c.text) for c in chunks] == [1000, 1000, 1000]
    # Stored, the three identical pieces are one chunk.
    assert len(chunk_text(text, fmt="text", settings=settings)) == 1


def test_ids_are_stable_and_change_with_content() -> None:
    text = "# A\n\n" + LONG_PARAGRAPH + "\n\n# B\n\n" + LONG_PARAGRAPH
    first = md(text)
    again = md(text)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)
    edited = md(text.replace("# B", "# B2"))
    assert edited[0].id == first[0].id
    assert edited[1].id != first[1].id
    other_file = chunk_text(text, fmt="markdown", settings=DEFAULT, source="/n/b.md")
    assert {c.id for c in other_file}.isdisjoint(c.id for c in first)
    assert chunk_id("/a", 0, "h") == chunk_id("/a", 0, "h") != chunk_id("/a", 1, "h")


def test_chunk_file_fills_every_field(tmp_path: Path) -> None:
    source = SourceFile(tmp_path / "notes" / "a.md", tmp_path, 123, 1_700_000_000.5)
    decoded = DecodedFile("# Title\n\nHello world, this is a note.\n", "utf-8", "markdown")
    (chunk,) = chunk_file(source, decoded, DEFAULT)
    assert chunk == Chunk(
        id=chunk.id,
        text="# Title\n\nHello world, this is a note.",
        source=str(tmp_path / "notes" / "a.md"),
        root=str(tmp_path),
        heading="Title",
        index=0,
        start_char=0,
        end_char=37,
        start_line=1,
        end_line=3,
        page=None,
        mtime=1_700_000_000.5,
        content_hash=content_hash("# Title\n\nHello world, this is a note."),
        language="en",
    )
    assert chunk.relpath == "notes/a.md"
    assert all(v is not None for k, v in dataclasses.asdict(chunk).items()
               if k not in ("page", "end_page"))
    assert chunk.page_label is None


def test_pdf_pages_come_from_the_page_table() -> None:
    pages_text = [("Page one words. " * 30).strip(), ("Page two words. " * 30).strip()]
    text = pages_text[0] + "\n\n" + pages_text[1]
    pages = ((0, 1), (len(pages_text[0]) + 2, 2))
    settings = ChunkSettings(chunk_size=200, chunk_overlap=0)
    chunks = chunk_text(text, fmt="pdf", settings=settings, pages=pages)
    check_invariants(text, chunks, settings)
    for chunk in chunks:
        assert chunk.page == (1 if chunk.start_char < pages[1][0] else 2)
        assert ("one" in chunk.text) == (chunk.page == 1)
    assert {c.page for c in chunks} == {1, 2}
    for chunk in chunks:
        assert chunk.last_page == (1 if chunk.end_char <= pages[1][0] else 2)


def test_a_chunk_over_a_page_break_keeps_the_page_range() -> None:
    """Issue 15 snag 5: it was cited as "page 1" although the match was on page 2."""
    text = "The first page ends here.\n\nThe match is on the second page."
    pages = ((0, 1), (text.index("The match"), 2))
    [chunk] = chunk_text(text, fmt="pdf", settings=DEFAULT, pages=pages)
    assert (chunk.page, chunk.end_page, chunk.last_page) == (1, 2, 2)
    assert chunk.page_label == "pages 1–2"
    [one] = chunk_text("Only one page.", fmt="pdf", settings=DEFAULT, pages=((0, 3),))
    assert (one.page, one.last_page, one.page_label) == (3, 3, "page 3")


def test_rst_and_org_headings() -> None:
    rst = (
        "=====\nTitle\n=====\n\nIntro paragraph.\n\nSection\n-------\n\n"
        + LONG_PARAGRAPH
        + "\n\nSub\n~~~\n\n"
        + LONG_PARAGRAPH
    )
    chunks = chunk_text(rst, fmt="rst", settings=DEFAULT)
    check_invariants(rst, chunks, DEFAULT)
    assert [c.heading for c in chunks] == ["Title > Section", "Title > Section > Sub"]
    org = "* Projects\n" + LONG_PARAGRAPH + "\n** Brain\n" + LONG_PARAGRAPH + "\n* Inbox\nmilk\n"
    chunks = chunk_text(org, fmt="org", settings=DEFAULT)
    check_invariants(org, chunks, DEFAULT)
    assert [c.heading for c in chunks] == ["Projects", "Projects > Brain", "Inbox"]


def test_html_uses_markdown_headings() -> None:
    text = "# Page\n\n" + LONG_PARAGRAPH + "\n\n## Part\n\n" + LONG_PARAGRAPH
    chunks = chunk_text(text, fmt="html", settings=DEFAULT)
    assert [c.heading for c in chunks] == ["Page", "Page > Part"]


def test_language_per_chunk() -> None:
    text = (
        "# English\n\n"
        + LONG_PARAGRAPH
        + "\n\n# 中文\n\n"
        + "这是一个关于第二大脑的中文段落。" * 20
    )
    chunks = md(text)
    assert [c.language for c in chunks] == ["en", "zh"]


def test_empty_and_whitespace_text() -> None:
    assert chunk_text("", fmt="markdown", settings=DEFAULT) == []
    assert chunk_text(" \n\t\n", fmt="text", settings=DEFAULT) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chunk_size": 10},
        {"chunk_overlap": -1},
        {"chunk_size": 400, "chunk_overlap": 300},
        {"min_chunk_chars": -5},
    ],
)
def test_settings_are_validated(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ChunkSettings(**kwargs)


def test_pdf_end_to_end_keeps_page_numbers(tmp_path: Path) -> None:
    from indexing.readers import read_file
    from tests.unit.test_readers import make_pdf

    pages = [f"Page {n} says something unique about topic {n}." for n in range(1, 6)]
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(pages))
    decoded = read_file(path, max_bytes=1 << 20)
    source = SourceFile(path, tmp_path, path.stat().st_size, path.stat().st_mtime)
    settings = ChunkSettings(chunk_size=60, chunk_overlap=0, min_chunk_chars=0)
    chunks = chunk_file(source, decoded, settings)
    check_invariants(decoded.text, chunks, settings)
    assert [(c.page, c.text) for c in chunks] == list(enumerate(pages, start=1))


def test_a_repeated_text_is_stored_once_per_file() -> None:
    """A 3.6 MB log of one line once became ~3,900 identical chunks (issue 13)."""
    line = "status: the weekly report was archived and the backup finished without errors\n"
    settings = ChunkSettings(chunk_size=300, chunk_overlap=50)
    text = "# Log\n\n" + line * 200 + "\nThe end: one different line.\n"
    chunks = chunk_text(text, fmt="text", settings=settings, source="/n/log.txt")
    every = chunk_text(text, fmt="text", settings=settings, source="/n/log.txt", distinct=False)
    assert len(every) > 50
    assert len(chunks) <= 4 and len({c.text for c in chunks}) == len(chunks)
    assert chunks[-1].text.endswith("one different line.")
    assert [c.index for c in chunks] == list(range(len(chunks)))
    check_invariants(text, chunks, settings)
