"""PDF text extraction with pypdf, keeping which character starts which page."""

from __future__ import annotations

import io
import logging

from indexing.errors import log_failure
from indexing.sources import SkipReason

log = logging.getLogger(__name__)

PAGE_SEPARATOR = "\n\n"
# What pypdf raises for a broken file, besides its own PdfReadError.
_BROKEN = (ValueError, KeyError, TypeError, AttributeError, OSError)


def read_pdf(data: bytes) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(text, ((start_char, page_number), …)); raises SkipFile for broken/encrypted/scanned PDFs.

    Pages without text still get an entry so page numbers stay true to the document.
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    from indexing.readers import SkipFile, normalise_newlines

    # pypdf logs every malformed object it repairs; that is noise for a user syncing a folder.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    raise SkipFile(SkipReason.unreadable, "encrypted PDF (needs a password)")
            except SkipFile:
                raise
            except Exception as exc:  # pypdf's decryption raises many kinds: one skip reason
                log_failure(log, "decrypting a PDF failed", exc, level=logging.INFO,
                            foreseen=(PdfReadError,))
                raise SkipFile(SkipReason.unreadable, "encrypted PDF (needs a password)") from exc
        parts: list[str] = []
        pages: list[tuple[int, int]] = []
        offset = 0
        said = False  # a broken page's traceback once a document, not once a page
        for number, page in enumerate(reader.pages, start=1):
            try:
                page_text = page.extract_text() or ""
            except Exception as exc:  # one bad page should not lose the rest of the document
                if not said:
                    log_failure(log, f"pypdf could not read page {number}", exc,
                                level=logging.DEBUG, foreseen=(PdfReadError, *_BROKEN))
                    said = True
                page_text = ""
            page_text = normalise_newlines(page_text).strip("\n")
            if parts:
                parts.append(PAGE_SEPARATOR)
                offset += len(PAGE_SEPARATOR)
            pages.append((offset, number))
            parts.append(page_text)
            offset += len(page_text)
    except SkipFile:
        raise
    except (PdfReadError, *_BROKEN) as exc:
        raise SkipFile(SkipReason.undecodable, f"broken PDF: {exc}") from exc
    text = "".join(parts)
    if not text.strip():
        raise SkipFile(SkipReason.empty, "no text layer (a scanned PDF?)")
    return text, tuple(pages)
