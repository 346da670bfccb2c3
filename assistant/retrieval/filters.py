"""`--in PATH`: restrict retrieval to a folder, a file or a glob of indexed files."""

from __future__ import annotations

import glob as globlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from assistant.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from assistant.timerange import TimeRange


class SourceLister(Protocol):
    def sources_under(self, path_or_glob: str) -> list[str]: ...


class ModifiedLister(Protocol):
    def sources_modified(self, since: float | None, until: float | None) -> list[str]: ...


def _is_glob(text: str) -> bool:
    return globlib.has_magic(text)


def normalise_filter(in_path: str, cwd: Path | None = None) -> str:
    """An absolute folder/file path or an absolute glob for `KnowledgeBase.sources_under`.

    Relative paths are relative to the working directory, like any shell argument. A bare
    pattern without a slash (`*.md`) is passed on as is: the knowledge base matches it against
    file names anywhere, which is what people mean.
    """
    text = in_path.strip()
    if not text:
        raise UserError("--in needs a folder, file or glob, got an empty value")
    text = os.path.expanduser(text)
    base = cwd or Path.cwd()
    if _is_glob(text):
        if os.path.isabs(text):
            return text
        if "/" not in text and os.sep not in text:
            return text
        return os.path.normpath(str(base / text))
    return str((base / text).resolve())


def allowed_sources(kb: SourceLister, in_path: str, cwd: Path | None = None) -> list[str]:
    """The indexed files under `in_path`; a clear error when there are none."""
    target = normalise_filter(in_path, cwd)
    sources = kb.sources_under(target)
    if not sources:
        raise UserError(
            f"no indexed files under {in_path!r}",
            hint="check the path (relative paths start at the current folder) or list the "
            "indexed folders with `brain folders`",
        )
    return sorted(set(sources))


class NothingInRange(UserError):
    """No indexed file was modified in the range asked for (a time phrase in the query falls
    back to every date on this; a flag the user typed reports it)."""


def modified_sources(
    kb: ModifiedLister, modified: TimeRange, within: Sequence[str] | None = None
) -> list[str]:
    """The indexed files last modified in `modified` (and under `within`, when given)."""
    found = set(kb.sources_modified(*modified.bounds))
    if within is not None:
        found &= set(within)
    if not found:
        raise NothingInRange(
            f"no indexed files were modified in {modified.describe()}",
            hint="widen --since/--until (file times are as of the last `brain index`)",
        )
    return sorted(found)
