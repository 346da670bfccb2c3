"""A file (or a folder on its way) swapped for a symlink between the walk and the read is never
read through the link (issue 22, finding 5): the reader checks what it opened, not the name."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import indexing.sync as sync_module
from indexing.readers import read_file as real_read  # what sync_module.read_file names
from tests.fixtures.knowledge import KnowledgeHarness, note_text

SECRET = "outsidesecretmarker"


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text(note_text(SECRET, seed=SECRET) + f"\n{SECRET}\n")
    return outside


def _indexed_text(kb: Any) -> str:
    return "\n".join(c.text for c in kb.get_chunks(kb.chunk_ids()).values())


def _swap_to_link(path: Path, target: Path) -> None:
    link = path.with_name(path.name + ".swap")
    link.unlink(missing_ok=True)
    os.symlink(target, link)
    os.replace(link, path)  # atomic: the name now leads outside


@pytest.mark.parametrize("what", ["file", "folder"])
def test_swap_between_walk_and_read_is_never_followed(
    knowledge: KnowledgeHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    outside = _outside(tmp_path)
    note = knowledge.write("sub/note.md", note_text("inside note"))
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)

    def swap_then_read(path: Path, **kwargs: Any) -> Any:
        # The walk has classified `path` as a regular file inside the folder; now swap it.
        if what == "file":
            _swap_to_link(note, outside / "secret.md")
        else:
            moved = note.parent.with_name("sub.orig")
            note.parent.rename(moved)
            (outside / "note.md").write_text((outside / "secret.md").read_text())
            os.symlink(outside, note.parent)
        return real_read(path, **kwargs)

    monkeypatch.setattr(sync_module, "read_file", swap_then_read)
    report = kb.sync(knowledge.settings())
    assert SECRET not in _indexed_text(kb)
    skipped = {path for path, _ in report.skipped.get("symlink_outside", ())}
    assert str(note) in skipped


def test_threaded_swapper_never_gets_an_outside_file_indexed(
    knowledge: KnowledgeHarness, tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    inside_text = note_text("inside note")
    note = knowledge.write("note.md", inside_text)
    original = note.with_name("note.real")
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        toggle = False
        while not stop.is_set():
            toggle = not toggle
            if toggle:
                _swap_to_link(note, outside / "secret.md")
            else:
                # A fresh regular file each time: new mtime, so every sync reads it again.
                original.write_text(inside_text + f"\nround {swaps}\n")
                os.replace(original, note)
            swaps += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaked = 0
    try:
        for _ in range(100):
            kb.sync(knowledge.settings())
            leaked += SECRET in _indexed_text(kb)
    finally:
        stop.set()
        thread.join()
    assert swaps > 100  # the swapper really raced the syncs
    assert leaked == 0
