"""Where ONNX copies of sentence-transformers models live, found without importing torch.

An export is a directory named by the *content* fingerprint of the model's files, holding
`model.onnx` and `meta.json`. Hashing the 90 MB of weights costs ~0.2 s, too much for every
`brain search`, so `meta.json` also remembers the cheap stat signatures (name, size, mtime) of
the folders it was made from: a start-up only stats a dozen files. The content hash is computed
only when no signature matches (a reinstall touched the files), and then an export of the same
bytes is still found.

Two roots are searched: the home's model cache (written at run time, the first time a model is
needed) and the install's own copy (`<sys.prefix>/share/second-brain/models`, written once by
`make` after installing, so a fresh user's first search never waits for an export).

Publishing is crash- and race-safe: an export is built in a private temporary directory and
renamed into place in one step; a lock file makes a second process wait for the first one's
export instead of doing the same work, and even without the lock (a timeout, a network
filesystem) two exports only race to rename complete directories.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexing.lock import IndexBusy, IndexLock

# Bump when the exported graph or its meta change: older exports are then ignored (rebuilt).
EXPORT_FORMAT = 1
ONNX_FILE = "model.onnx"
META_FILE = "meta.json"
LOCK_FILE = ".export.lock"
MAX_SIGNATURES = 8  # distinct installs remembered per export (several venvs share one home)
EXPORT_LOCK_SECONDS = 600.0  # how long a second exporter waits for the first one
# Files that do not change what the model computes; a README edit must not force a re-export.
_IGNORED = {"README.md", ".gitattributes", "data_config.json"}


def install_root() -> Path:
    """The install's read-only copy of exports, made by `make` next to the venv's packages."""
    return Path(sys.prefix) / "share" / "second-brain" / "models"


@dataclass(frozen=True, slots=True)
class FoundExport:
    directory: Path
    fingerprint: str

    @property
    def onnx_file(self) -> Path:
        return self.directory / ONNX_FILE


def _model_files(folder: Path) -> list[Path]:
    files = [
        p for p in folder.rglob("*")
        if p.is_file() and p.name not in _IGNORED and not any(
            part.startswith(".") for part in p.relative_to(folder).parts
        )
    ]
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def signature(folder: Path) -> list[list[Any]]:
    """[relative path, size, mtime_ns] of every model file: cheap, changes on reinstall."""
    out: list[list[Any]] = []
    for path in _model_files(folder):
        stat = path.stat()
        out.append([path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns])
    return out


def fingerprint(folder: Path) -> str:
    """sha256 over every model file's name and content (~0.2 s for MiniLM's 90 MB)."""
    total = hashlib.sha256(f"format {EXPORT_FORMAT}\n".encode())
    for path in _model_files(folder):
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        total.update(f"{path.relative_to(folder).as_posix()}\0{digest.hexdigest()}\n".encode())
    return total.hexdigest()


def _read_meta(directory: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
        return None
    if not (directory / ONNX_FILE).is_file():
        return None
    return meta


def _entries(root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    try:
        children = sorted(root.iterdir())
    except OSError:
        return
    for child in children:
        if child.name.startswith(".") or not child.is_dir():
            continue
        meta = _read_meta(child)
        if meta is not None:
            yield child, meta


def find_export(folder: Path, roots: Sequence[Path]) -> FoundExport | None:
    """The export of `folder`'s model in the first root that has it, or None.

    By stat signature first (no hashing); by content fingerprint when the files were
    reinstalled. A signature learnt that way is remembered where the root is writable.
    """
    folder = folder.resolve()
    current = signature(folder)
    for root in roots:
        for directory, meta in _entries(root):
            if current in meta.get("signatures", []):
                return FoundExport(directory, str(meta.get("fingerprint", "")))
    content = fingerprint(folder)
    for root in roots:
        directory = root / content[:32]
        found = _read_meta(directory)
        if found is not None and found.get("fingerprint") == content:
            with contextlib.suppress(OSError):
                remember_signature(directory, current)
            return FoundExport(directory, content)
    return None


def remember_signature(directory: Path, current: list[list[Any]]) -> None:
    meta = _read_meta(directory)
    if meta is None:
        return
    known = [s for s in meta.get("signatures", []) if s != current]
    meta["signatures"] = [current, *known][:MAX_SIGNATURES]
    write_json_atomic(directory / META_FILE, meta)


def write_json_atomic(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(obj, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


Builder = Callable[[Path, Path], dict[str, Any]]  # (model folder, out dir) -> extra meta


def publish(folder: Path, root: Path, build: Builder) -> FoundExport:
    """Export `folder`'s model into `root` (unless another process just did) and return it.

    `build(folder, out_dir)` writes `model.onnx` into the empty `out_dir` and returns extra
    meta (e.g. how the export was verified). Raises whatever `build` raises; nothing partial
    is ever visible under `root`.
    """
    folder = folder.resolve()
    root.mkdir(parents=True, exist_ok=True)
    lock = IndexLock(root / LOCK_FILE, timeout=EXPORT_LOCK_SECONDS)
    try:
        lock.acquire()
        locked = True
    except IndexBusy:  # a stuck exporter must not block us forever; the rename stays safe
        locked = False
    try:
        found = find_export(folder, [root])
        if found is not None:
            return found
        content = fingerprint(folder)
        work = Path(tempfile.mkdtemp(prefix=f".export-{os.getpid()}-", dir=root))
        try:
            extra = build(folder, work)
            if not (work / ONNX_FILE).is_file():
                raise RuntimeError(f"the exporter wrote no {ONNX_FILE}")
            meta = {
                "format": EXPORT_FORMAT,
                "fingerprint": content,
                "source": str(folder),
                "signatures": [signature(folder)],
                **extra,
            }
            write_json_atomic(work / META_FILE, meta)
            _fsync_dir(work)
            target = root / content[:32]
            try:
                os.rename(work, target)  # atomic; fails if another process got there first
            except OSError:
                if _read_meta(target) is None:
                    raise
            else:
                _fsync_dir(root)
            return FoundExport(target, content)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if locked:
            lock.release()


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
