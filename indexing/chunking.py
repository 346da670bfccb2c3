"""Decoded file → `Chunk`s: structure first, then the size cap with overlap.

1. Structural sections by format: Markdown/HTML headings, reST/Org titles, top-level
   definitions of code (tree-sitter), one section for prose and data.
2. Tiny sections merge with a neighbour under the same parent (`chunk_section.merge_tiny`).
3. Blocks over `chunk_size` are split at paragraph → line → sentence (CJK too) → clause →
   whitespace → character boundaries with `chunk_overlap` (`chunk_split`); overlap never
   reaches across a block boundary.
4. A chunk whose text repeats an earlier chunk of the same file is dropped: a log of one
   repeated line would otherwise become thousands of identical chunks that fill every result
   list (issue 13). Searching finds the text once; its first occurrence is the citation.

Invariants, checked by property tests: `chunk.text == decoded.text[chunk.start_char:
chunk.end_char]`; every non-whitespace character of the text is in some chunk or in a span
whose text equals a kept chunk's (`distinct=False` keeps those too); chunks never start or end
with whitespace; `len(chunk.text) <= chunk_size` (no tolerance needed: only a block that
already fits is kept whole, and every atom of a split is at most `chunk_size`).
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass

from indexing.chunk_code import code_sections
from indexing.chunk_markdown import markdown_sections, org_sections, rst_sections
from indexing.chunk_section import Block, Section, merge_tiny, trim
from indexing.chunk_split import split_span
from indexing.languages import detect_language
from indexing.readers import DecodedFile
from indexing.sources import SourceFile
from indexing.types import Chunk

__all__ = [
    "CHUNKER_VERSION",
    "ChunkSettings",
    "chunk_file",
    "chunk_id",
    "chunk_text",
    "content_hash",
    "detect_language",
]


# Bump whenever the chunks of some file change for the same settings: indexes record it with
# the settings and re-chunk every file on the next sync (embeddings of unchanged texts come
# from the cache). 2: a text repeated within a file is stored once.
CHUNKER_VERSION = 2


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    chunk_size: int = 1200  # characters, hard maximum per chunk
    chunk_overlap: int = 200  # characters repeated between neighbouring chunks of one section
    min_chunk_chars: int = 250  # sections shorter than this merge with a neighbour

    def __post_init__(self) -> None:
        if self.chunk_size < 50:
            raise ValueError(f"chunk_size must be at least 50 characters, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap <= self.chunk_size // 2:
            raise ValueError(
                f"chunk_overlap must be between 0 and half of chunk_size ({self.chunk_size // 2}),"
                f" got {self.chunk_overlap}"
            )
        if self.min_chunk_chars < 0:
            raise ValueError(f"min_chunk_chars must not be negative, got {self.min_chunk_chars}")


def chunk_id(source_path: str, index: int, content_hash: str) -> str:
    """Stable id: the same text at the same position of the same file gets the same id."""
    key = f"{source_path}\x00{index}\x00{content_hash}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:32]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_file(source: SourceFile, decoded: DecodedFile, settings: ChunkSettings) -> list[Chunk]:
    """All chunks of one file, in text order, with every `Chunk` field filled."""
    return chunk_text(
        decoded.text,
        fmt=decoded.format,
        settings=settings,
        source=str(source.path),
        root=str(source.root),
        mtime=source.mtime,
        pages=decoded.pages,
    )


def chunk_text(
    text: str,
    *,
    fmt: str,
    settings: ChunkSettings,
    source: str = "",
    root: str = "",
    mtime: float = 0.0,
    pages: tuple[tuple[int, int], ...] | None = None,
    distinct: bool = True,
) -> list[Chunk]:
    """`chunk_file` without the file: for tests, benchmarks and text that is not on disk.

    `distinct=False` keeps chunks that repeat an earlier chunk's text (tests use it to check
    that every character is covered).
    """
    if not text or text.isspace():
        return []
    lines = text.split("\n")
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    sections = _sections(text, fmt, lines, line_starts, settings)
    blocks = merge_tiny(
        text, sections, size=settings.chunk_size, min_chars=settings.min_chunk_chars
    )
    is_code = fmt.startswith(("code:", "data:"))
    code_language = fmt if fmt.startswith("code:") else None
    page_starts = [start for start, _ in pages] if pages else []
    file_language = detect_language(text) if code_language is None else code_language
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for block in blocks:
        for start, end in _split_block(text, block, settings, code=is_code):
            body = text[start:end]
            digest = content_hash(body)
            if distinct:
                if digest in seen:
                    continue
                seen.add(digest)
            index = len(chunks)
            page = end_page = None
            if pages:
                page = pages[max(0, bisect.bisect_right(page_starts, start) - 1)][1]
                # A chunk can run over a page break: cite the range, not just where it starts.
                end_page = pages[max(0, bisect.bisect_right(page_starts, end - 1) - 1)][1]
            chunks.append(
                Chunk(
                    id=chunk_id(source, index, digest),
                    text=body,
                    source=source,
                    root=root,
                    heading=block.heading,
                    index=index,
                    start_char=start,
                    end_char=end,
                    start_line=bisect.bisect_right(line_starts, start),
                    end_line=bisect.bisect_right(line_starts, end - 1),
                    page=page,
                    mtime=mtime,
                    content_hash=digest,
                    language=code_language or _chunk_language(body, file_language),
                    end_page=end_page,
                )
            )
    return chunks


def _chunk_language(body: str, file_language: str) -> str:
    """The chunk's own language, except that a chunk of a Chinese (Japanese, Korean) file that
    is mostly command lines but still has some CJK text stays with the file's language: the
    keyword index must segment its CJK words."""
    language = detect_language(body)
    if language in ("en", "other") and file_language in _CJK and _has_cjk(body):
        return file_language
    return language


_CJK = frozenset({"zh", "ja", "ko"})


def _has_cjk(text: str) -> bool:
    return not text.isascii() and any(
        "\u3040" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af" for c in text
    )


def _split_block(
    text: str, block: Block, settings: ChunkSettings, *, code: bool
) -> list[tuple[int, int]]:
    spans = split_span(
        text,
        block.start,
        block.end,
        size=settings.chunk_size,
        overlap=settings.chunk_overlap,
        code=code,
    )
    kept: list[tuple[int, int]] = []
    for span in spans:
        start, end = trim(text, *span)
        if start >= end:
            continue
        # Trimming whitespace-only atoms can leave an overlap chunk that starts where the
        # previous one does, or ends inside it; keep only the larger of two nested spans.
        if kept and end <= kept[-1][1]:
            continue
        if kept and start <= kept[-1][0]:
            kept[-1] = (start, end)
            continue
        kept.append((start, end))
    return kept


def _sections(
    text: str, fmt: str, lines: list[str], line_starts: list[int], settings: ChunkSettings
) -> list[Section]:
    if fmt in ("markdown", "html"):
        return markdown_sections(text, lines, line_starts)
    if fmt == "rst":
        return rst_sections(text, lines, line_starts)
    if fmt == "org":
        return org_sections(text, lines, line_starts)
    if fmt.startswith("code:"):
        return code_sections(text, fmt[5:], lines, line_starts, max_chars=settings.chunk_size)
    return [Section(0, len(text), ())]
