"""Bytes on disk → decoded text with a known format, or a `SkipFile` with the reason.

Text is always returned with `\\n` newlines and no BOM; chunk spans index into exactly this text.
HTML is reduced to its visible text with headings rewritten as Markdown `#` lines, so the
Markdown chunker can give HTML chunks heading paths too. PDFs keep a page table.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from indexing.html_text import html_to_text
from indexing.languages import format_for_path
from indexing.notebook import notebook_to_markdown
from indexing.open_inside import NotRegularFile, OutsideFolder, open_inside
from indexing.sources import SkipReason

SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class DecodedFile:
    text: str
    encoding: str  # "utf-8", "utf-8-sig", "gb18030", "cp1252", …; "pdf" for PDFs
    # "markdown", "text", "rst", "org", "html", "pdf", "data:<kind>", "code:<lang>"; Jupyter
    # notebooks arrive as "markdown" (cells converted, outputs dropped).
    format: str
    pages: tuple[tuple[int, int], ...] | None = None  # PDF: (start_char, 1-based page), sorted


class SkipFile(Exception):
    """The file cannot be indexed; `reason` goes into the sync summary."""

    def __init__(self, reason: SkipReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


def read_file(path: Path, *, max_bytes: int, inside: Path | None = None) -> DecodedFile:
    """Read and decode one file; raises `SkipFile` for anything that is not indexable text.

    With `inside` (the registered folder), what the open reaches must be a regular file in it:
    a file swapped for a link to elsewhere after the walk is skipped, never read.
    """
    fmt = format_for_path(path)
    if fmt == "binary":
        raise SkipFile(SkipReason.binary, f"{path.suffix.lower() or 'file'} is a binary format")
    if fmt == "unsupported":
        raise SkipFile(SkipReason.unsupported, f"{path.suffix.lower()} documents are not supported")
    data = _read_bytes(path, max_bytes, inside)
    if not data:
        raise SkipFile(SkipReason.empty, "0 bytes")
    if fmt == "pdf":
        from indexing.pdf import read_pdf

        text, pages = read_pdf(data)
        return DecodedFile(text=text, encoding="pdf", format="pdf", pages=pages)
    text, encoding = decode_bytes(data)
    text = normalise_newlines(text)
    if fmt == "html":
        text = html_to_text(text)
    elif fmt == "notebook":
        converted = notebook_to_markdown(text)
        # Not a readable notebook (hand-edited, truncated): index the raw JSON instead.
        text, fmt = (converted, "markdown") if converted is not None else (text, "data:json")
    if not text.strip():
        raise SkipFile(SkipReason.empty, "only whitespace")
    return DecodedFile(text=text, encoding=encoding, format=fmt, pages=None)


def _read_bytes(path: Path, max_bytes: int, inside: Path | None = None) -> bytes:
    try:
        # stat first: opening a FIFO for reading would block until someone writes to it.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SkipFile(SkipReason.not_a_file, "not a regular file")
        with open(path, "rb") if inside is None else open_inside(path, inside) as f:
            data = _read_sized(f, max_bytes)
    except SkipFile:
        raise
    except OutsideFolder as exc:
        raise SkipFile(SkipReason.symlink_outside, str(exc)) from exc
    except NotRegularFile as exc:
        raise SkipFile(SkipReason.not_a_file, "not a regular file") from exc
    except FileNotFoundError as exc:
        raise SkipFile(SkipReason.vanished, "deleted before it could be read") from exc
    except IsADirectoryError as exc:
        raise SkipFile(SkipReason.not_a_file, "is a folder") from exc
    except PermissionError as exc:
        raise SkipFile(SkipReason.unreadable, "permission denied") from exc
    except OSError as exc:
        raise SkipFile(SkipReason.unreadable, exc.strerror or str(exc)) from exc
    if len(data) > max_bytes:
        raise SkipFile(SkipReason.too_large, f"larger than the {max_bytes}-byte limit")
    return data


def _read_sized(f: BinaryIO, max_bytes: int) -> bytes:
    """At most `max_bytes + 1` bytes (one more than the limit tells a file too large).

    Asked for the file's own size, not the limit: `read(max_bytes + 1)` allocates (and the kernel
    zero-fills) a limit-sized buffer for every file, 5 MB by default, which was half of the
    non-model pipeline's time (issue 25). A file that grew since `fstat` is read on to the limit.
    """
    want = min(os.fstat(f.fileno()).st_size, max_bytes) + 1
    data = f.read(want)
    if len(data) == want and want <= max_bytes:
        data += f.read(max_bytes + 1 - want)
    return data


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE, whose BOM is its prefix
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control bytes that do not appear in text (tab, LF, FF, CR and ESC for ANSI colours do).
_CONTROL = bytes(b for b in range(32) if b not in (8, 9, 10, 12, 13, 27))
_CONTROL_TABLE = bytes.maketrans(b"", b"")


def decode_bytes(data: bytes) -> tuple[str, str]:
    """(text, encoding) or SkipFile(binary | undecodable). Does not normalise newlines."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                decoded = data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise SkipFile(SkipReason.undecodable, f"invalid {encoding} after its BOM") from exc
            return decoded.lstrip("\ufeff"), encoding
    if looks_binary(data):
        wide = _try_bomless_utf16(data)
        if wide is not None:
            return wide
        raise SkipFile(SkipReason.binary, "contains NUL or control bytes")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    text = _try_gb18030(data)
    if text is not None:
        return text, "gb18030"
    text = _try_western(data)
    if text is not None:
        return text, "cp1252"
    text = _try_damaged_utf8(data)
    if text is not None:
        return text, "utf-8 (damaged bytes replaced)"
    guess = _try_charset_normalizer(data)
    if guess is not None:
        return guess
    raise SkipFile(SkipReason.undecodable, "not UTF-8, UTF-16, GB18030 or a recognisable encoding")


def _try_bomless_utf16(data: bytes) -> tuple[str, str] | None:
    """UTF-16 without a BOM (some Windows exports): ASCII-range text puts a NUL in every
    other byte, which would otherwise look binary."""
    head = data[:SNIFF_BYTES]
    if len(head) < 4 or len(data) % 2:
        return None
    even_nuls = head[0::2].count(0) / (len(head) // 2)
    odd_nuls = head[1::2].count(0) / (len(head) // 2)
    if odd_nuls >= 0.4 and even_nuls < 0.05:
        encoding = "utf-16-le"
    elif even_nuls >= 0.4 and odd_nuls < 0.05:
        encoding = "utf-16-be"
    else:
        return None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    if "\x00" in text or looks_binary(text.encode("utf-8")) or not _plausible(text):
        return None
    return text, encoding


def looks_binary(data: bytes) -> bool:
    head = data[:SNIFF_BYTES]
    if b"\x00" in head:
        return True
    if not head:
        return False
    controls = len(head) - len(head.translate(_CONTROL_TABLE, _CONTROL))
    return controls / len(head) > 0.05


def normalise_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _non_ascii(text: str) -> list[str]:
    return [c for c in text if ord(c) > 127]


def _try_gb18030(data: bytes) -> str | None:
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    chars = _non_ascii(text)
    if not chars:
        return None
    # GB18030 accepts many byte pairs, so Latin-1 text like "é" + "a" decodes to rare hanzi.
    # Real Chinese text is overwhelmingly made of GB2312 characters (the 6.7k common ones).
    common = 0
    for c in chars:
        try:
            c.encode("gb2312")
            common += 1
        except UnicodeEncodeError:
            pass
    return text if common / len(chars) >= 0.9 else None


# Single-byte Western guesses from charset-normalizer are unreliable on short files (it picks
# cp1250/cp775/cp437 for plain French); Western text is handled by `_try_western`, and only
# these encodings, which a Western reading cannot produce, are taken from the detector.
_DETECTOR_NAMES = """big5 big5hkscs cp950 cp932 shift_jis shift_jis_2004 shift_jisx0213 euc_jp
    euc_jis_2004
    euc_jisx0213 iso2022_jp iso2022_jp_2 iso2022_kr euc_kr cp949 johab gb2312 gbk hz
    cp1251 koi8_r koi8_u iso8859_5 mac_cyrillic cp866 cp1253 iso8859_7 cp1255 iso8859_8 cp1256
    iso8859_6 cp874 tis_620 cp1254 iso8859_9 cp1250 iso8859_2"""
_DETECTOR_ENCODINGS = frozenset(_DETECTOR_NAMES.split())
# Non-ASCII characters of Western European text: accented letters and typographic punctuation.
_WESTERN = frozenset(
    [chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7)]
    + list("“”‘’–—…€£¥©®°§¶·«»¿¡¢ªº±²³µ¼½¾\u00a0•™")
)


def _try_western(data: bytes) -> str | None:
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None  # cp1252 leaves five bytes undefined; Latin-1 puts controls there
    chars = _non_ascii(text)
    if not chars or not _plausible(text):
        return None
    western = sum(1 for c in chars if c in _WESTERN)
    # Accented letters sit alone between ASCII letters; CJK bytes read as cp1252 come in runs.
    runs = len(re.findall(r"[^\x00-\x7f]+", text))
    return text if western / len(chars) >= 0.8 and len(chars) / runs < 1.5 else None


def _try_charset_normalizer(data: bytes) -> tuple[str, str] | None:
    from charset_normalizer import from_bytes

    best = from_bytes(data[: 256 * 1024]).best()
    if best is None or best.encoding not in _DETECTOR_ENCODINGS or best.chaos > 0.2:
        return None
    try:
        text = data.decode(best.encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    if not _plausible(text):
        return None
    return text, best.encoding.replace("_", "-")


def _try_damaged_utf8(data: bytes) -> str | None:
    """Mostly valid UTF-8 with a few corrupt bytes (a bad copy, a truncated write): keep the
    text and mark the damage with U+FFFD rather than losing the whole file."""
    text = data.decode("utf-8", errors="replace")
    damaged = text.count("\ufffd")
    return text if damaged <= max(8, len(text) // 100) and _plausible(text) else None


# Unicode categories of ordinary text: letters, marks, digits, punctuation, spaces, currency.
_TEXT_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Nd", "Nl", "No", "Pc",
                              "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Zs", "Sc", "Sm"})  # fmt: skip


def _plausible(text: str) -> bool:
    """Mostly letters, digits, spaces and punctuation, no C1 controls: reads like text."""
    if not text:
        return False
    if any("\x80" <= c <= "\x9f" for c in text):
        return False
    sample = text[:20000]
    odd = sum(
        1
        for c in sample
        if ord(c) > 127 and unicodedata.category(c) not in _TEXT_CATEGORIES and c != "\ufffd"
    )
    return odd / len(sample) <= 0.1
