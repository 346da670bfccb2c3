"""Which files of a registered folder get indexed: ignore rules, symlinks, size limit, skips.

`walk` yields every candidate file (`SourceFile`) or the reason one could not be taken
(`Skipped`); ignored files (`.gitignore`, default folders, exclude globs) are not skips, they are
simply never yielded. `is_ignored` answers the same question for one path, for the watcher: a
file that became ignored must have its chunks removed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pathspec

# Folders no user wants indexed: VCS metadata, dependency trees, caches and build outputs.
DEFAULT_IGNORED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        "venv",
        "build",
        "dist",
        "target",
        "out",
        "site-packages",
        "bower_components",
    }
)
# Generated dependency pins: long, machine-written, and they drown real hits in search.
DEFAULT_IGNORED_FILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "uv.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
    }
)
GITIGNORE = ".gitignore"


class SkipReason(StrEnum):
    """Why a file the user might expect in the index is not there (shown in the sync summary)."""

    too_large = "too_large"
    binary = "binary"
    unreadable = "unreadable"  # permissions, I/O errors, encrypted PDF
    undecodable = "undecodable"  # text in no encoding we can recognise
    empty = "empty"  # 0 bytes, only whitespace, or a PDF without a text layer
    vanished = "vanished"  # deleted (or replaced) while we were looking at it
    symlink_outside = "symlink_outside"  # points out of the registered folder
    symlink_loop = "symlink_loop"  # a symlink cycle, or a link to one of its own parents
    broken_symlink = "broken_symlink"  # points at nothing
    unsupported = "unsupported"  # a document format we cannot read (docx, xlsx, …)
    not_a_file = "not_a_file"  # fifo, socket, device


@dataclass(frozen=True, slots=True)
class SourceSettings:
    include: tuple[str, ...] = ()  # gitignore-style globs; when set, only matching files
    exclude: tuple[str, ...] = ()  # gitignore-style globs for files and folders
    respect_gitignore: bool = True
    max_file_bytes: int = 5 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path  # absolute, inside `root` (a symlink inside root keeps its own path)
    root: Path  # the registered folder, absolute
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class Skipped:
    path: Path
    reason: SkipReason
    detail: str


def is_ignored(path: Path, root: Path, settings: SourceSettings) -> bool:
    """Whether `path` (under `root`, existing or not) is excluded by the ignore rules.

    Does not look at size or content; those give skips, not ignores. A path outside `root` is
    ignored. The watcher calls this for every changed path, so it reads only the .gitignore
    files on the way from `root` to `path`.
    """
    root = Path(os.path.abspath(root))
    path = Path(os.path.abspath(path))
    try:
        rel = path.relative_to(root)
    except ValueError:
        # The watcher may report a path through another spelling of the root (a symlink).
        try:
            real = Path(os.path.realpath(path.parent), path.name)
            rel = real.relative_to(os.path.realpath(root))
        except ValueError:
            return True
    parts = rel.parts
    if not parts:
        return False
    rules = _Rules(root, settings)
    current = root
    for i, name in enumerate(parts):
        is_last = i == len(parts) - 1
        rel_posix = "/".join(parts[: i + 1])
        child = current / name
        if is_last:
            # A folder event (created, or renamed into place) gets folder rules.
            if child.is_dir() and not child.is_symlink():
                return rules.dir_ignored(child, rel_posix)
            return rules.file_ignored(child, rel_posix)
        if rules.dir_ignored(child, rel_posix):
            return True
        rules.enter(child, rel_posix)
        current = child
    return False


def walk(root: Path, settings: SourceSettings) -> Iterator[SourceFile | Skipped]:
    """Every indexable file under `root`, in a deterministic (sorted, depth-first) order.

    Paths are `root` (made absolute, not resolved) joined with the names found; `root` of each
    `SourceFile` is that absolute root. Symlinks are judged against the resolved root.
    """
    root = Path(os.path.abspath(root))
    real_root = Path(os.path.realpath(root))
    if not real_root.exists():
        yield Skipped(root, SkipReason.vanished, "folder does not exist")
        return
    if not real_root.is_dir():
        yield Skipped(root, SkipReason.not_a_file, "not a folder")
        return
    rules = _Rules(root, settings)
    yield from _walk_dir(root, "", real_root, rules, settings)


def _walk_dir(
    directory: Path, rel: str, real_root: Path, rules: _Rules, settings: SourceSettings
) -> Iterator[SourceFile | Skipped]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        yield Skipped(directory, SkipReason.vanished, "folder disappeared during the walk")
        return
    except NotADirectoryError:
        yield Skipped(directory, SkipReason.vanished, "folder was replaced during the walk")
        return
    except OSError as exc:
        yield Skipped(directory, SkipReason.unreadable, _os_detail(exc))
        return
    rules.enter(directory, rel)
    for entry in entries:
        path = Path(entry.path)
        entry_rel = f"{rel}/{entry.name}" if rel else entry.name
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            yield Skipped(path, SkipReason.unreadable, _os_detail(exc))
            continue
        if not _valid_name(entry.name):
            # Paths must round-trip through SQLite, Chroma metadata and the terminal as UTF-8.
            if not (
                rules.dir_ignored(path, entry_rel)
                if is_dir
                else rules.file_ignored(path, entry_rel)
            ):
                yield Skipped(path, SkipReason.undecodable, "name is not valid UTF-8; rename it")
            continue
        if is_link:
            yield from _symlink(path, entry_rel, real_root, rules, settings)
        elif is_dir:
            if not rules.dir_ignored(path, entry_rel):
                yield from _walk_dir(path, entry_rel, real_root, rules, settings)
        elif not rules.file_ignored(path, entry_rel):
            yield _stat_file(path, real_root, settings, directory_root=rules.root)


def _symlink(
    path: Path, rel: str, real_root: Path, rules: _Rules, settings: SourceSettings
) -> Iterator[SourceFile | Skipped]:
    # Decide ignore rules on the link's own name first: an ignored link is not a skip.
    try:
        target = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        if not rules.file_ignored(path, rel):
            try:
                detail = f"points to {os.readlink(path)!r}, which does not exist"
            except OSError:
                detail = "points to nothing"
            yield Skipped(path, SkipReason.broken_symlink, detail)
        return
    except OSError as exc:  # ELOOP: a cycle of links
        if not rules.file_ignored(path, rel):
            yield Skipped(path, SkipReason.symlink_loop, _os_detail(exc))
        return
    target_is_dir = target.is_dir()
    if target_is_dir and rules.dir_ignored(path, rel):
        return
    if not target_is_dir and rules.file_ignored(path, rel):
        return
    if target != real_root and real_root not in target.parents:
        yield Skipped(path, SkipReason.symlink_outside, f"points outside the folder, to {target}")
        return
    if target_is_dir:
        link_dir_real = Path(os.path.realpath(path.parent))
        if target == link_dir_real or target in link_dir_real.parents:
            yield Skipped(path, SkipReason.symlink_loop, f"points to its own parent {target}")
        # Any other folder inside the root is walked at its real location; following the link
        # too would index it twice (and links between siblings can still form cycles).
        return
    if not is_ignored(target, real_root, settings):
        return  # indexed at its real location; a second copy would only duplicate results
    yield _stat_file(path, real_root, settings, directory_root=rules.root)


def _stat_file(
    path: Path, real_root: Path, settings: SourceSettings, *, directory_root: Path
) -> SourceFile | Skipped:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Skipped(path, SkipReason.vanished, "deleted during the walk")
    except OSError as exc:
        return Skipped(path, SkipReason.unreadable, _os_detail(exc))
    if not stat.S_ISREG(st.st_mode):
        return Skipped(path, SkipReason.not_a_file, "not a regular file")
    if st.st_size == 0:
        return Skipped(path, SkipReason.empty, "0 bytes")
    if st.st_size > settings.max_file_bytes:
        return Skipped(
            path,
            SkipReason.too_large,
            f"{_human_bytes(st.st_size)} ({st.st_size:,} bytes) is over the"
            f" {_human_bytes(settings.max_file_bytes)} limit",
        )
    return SourceFile(path=path, root=directory_root, size=st.st_size, mtime=st.st_mtime)


class _Rules:
    """Ignore rules for one walk; caches the parsed .gitignore of every folder entered."""

    def __init__(self, root: Path, settings: SourceSettings) -> None:
        self.root = root
        self.settings = settings
        self._gitignores: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._exclude = _spec(settings.exclude)
        self._include = _spec(settings.include)

    def enter(self, directory: Path, rel: str) -> None:
        if self.settings.respect_gitignore:
            self._load(rel)

    def _load(self, base: str) -> pathspec.GitIgnoreSpec | None:
        if base not in self._gitignores:
            folder = self.root / base if base else self.root
            lines = _read_lines(folder / GITIGNORE)
            if not base:
                # The repository's private ignore list comes first: .gitignore overrides it.
                lines = _read_lines(folder / ".git" / "info" / "exclude") + lines
            useful = any(line.strip() and not line.startswith("#") for line in lines)
            self._gitignores[base] = pathspec.GitIgnoreSpec.from_lines(lines) if useful else None
        return self._gitignores[base]

    def dir_ignored(self, path: Path, rel: str) -> bool:
        name = path.name
        if name.startswith(".") or name in DEFAULT_IGNORED_DIRS:
            return True
        if _is_file(path / "pyvenv.cfg"):  # a virtualenv under any name
            return True
        if self._exclude is not None and self._exclude.match_file(rel + "/"):
            return True
        return self._gitignored(rel + "/")

    def file_ignored(self, path: Path, rel: str) -> bool:
        if path.name.startswith(".") or path.name in DEFAULT_IGNORED_FILES:
            return True
        if self._exclude is not None and self._exclude.match_file(rel):
            return True
        if self._include is not None and not self._include.match_file(rel):
            return True
        return self._gitignored(rel)

    def _gitignored(self, rel: str) -> bool:
        if not self.settings.respect_gitignore:
            return False
        # The deepest .gitignore with a matching pattern decides, as in git.
        parts = rel.rstrip("/").split("/")
        for depth in range(len(parts) - 1, -1, -1):
            base = "/".join(parts[:depth])
            spec = self._load(base)
            if spec is None:
                continue
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub)
            if result.include is not None:
                return bool(result.include)
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # EACCES (/proc/1/fdinfo): the folder's own scandir reports it as a skip
        return False


def _read_lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except OSError:  # missing, unreadable or a folder: no rules from it
        return []
    return raw.decode("utf-8", errors="replace").splitlines()


def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec | None:
    return pathspec.GitIgnoreSpec.from_lines(list(patterns)) if patterns else None


def _valid_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates (surrogateescape)
        return False
    return True


def _os_detail(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
