"""Domain types of the knowledge layer that travel to retrieval, chat and the UI."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a file, with enough metadata to cite and open it.

    `id` is stable: the same file content at the same path gives the same ids, so a re-sync
    of an unchanged file changes nothing and an edit replaces exactly that file's chunks.
    """

    id: str
    text: str
    source: str  # absolute path of the file
    root: str  # absolute path of the registered folder it came from
    heading: str  # heading path, e.g. "Install > Linux" (code: "class Foo > def bar"); "" if none
    index: int  # position of the chunk within its file, from 0
    start_char: int  # span in the decoded file text, [start, end)
    end_char: int
    start_line: int  # 1-based, inclusive
    end_line: int
    page: int | None  # 1-based PDF page, None for other formats
    mtime: float  # file modification time (seconds since the epoch)
    content_hash: str  # sha256 hex of `text`: the embedding cache key together with the model id
    language: str  # "en", "zh", or "code:<lang>" ("code:python", …); "other" when unsure
    end_page: int | None = None  # 1-based PDF page the chunk ends on; None: same as `page`

    @property
    def last_page(self) -> int | None:
        return self.end_page if self.end_page is not None else self.page

    @property
    def page_label(self) -> str | None:
        """'page 3', or 'pages 1–2' for a chunk that runs over a page break; None: no pages."""
        return page_label(self.page, self.end_page)

    @property
    def relpath(self) -> str:
        """The source relative to its folder, for display."""
        if self.source.startswith(self.root.rstrip("/") + "/"):
            return self.source[len(self.root.rstrip("/")) + 1 :]
        return self.source



@dataclass(frozen=True, slots=True)
class ChunkPlace:
    """What ranking needs of a candidate chunk before its text: its file and the file's mtime
    (the per-file cap and the recency boost), read without the text (issue 25)."""

    source: str
    mtime: float


def page_label(page: int | None, end_page: int | None) -> str | None:
    if page is None:
        return None
    if end_page is None or end_page == page:
        return f"page {page}"
    return f"pages {page}–{end_page}"
