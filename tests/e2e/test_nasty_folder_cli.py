"""The nasty folder (tests/fixtures/nasty_folder.py) through the installed `brain index`: every
file is indexed or skipped with the right reason, ignored files never appear, odd names (newline,
emoji, non-UTF-8 bytes) survive the report and the JSON, and a 50 MB sparse file is skipped
without being read. Then the index answers from the GBK and UTF-16 files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from indexing.sources import SkipReason
from tests.e2e.conftest import BRAIN, run_brain, write_config
from tests.fake_ollama import FakeOllamaServer
from tests.fixtures.nasty_folder import build_nasty_folder

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_nasty_folder_through_brain_index(tmp_path: Path, fake_ollama: FakeOllamaServer) -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")
    nasty = build_nasty_folder(tmp_path)
    huge = nasty.root / "logs-big" / "fifty-megabytes.txt"
    with open(huge, "wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: costs no disk
    expected_skips = {**nasty.skipped, "logs-big/fifty-megabytes.txt": SkipReason.too_large}
    expected_added = set(nasty.indexed)
    if os.geteuid() == 0:  # chmod 000 does not stop root: the file is simply readable
        expected_skips.pop(nasty.unreadable)
        expected_added.add(nasty.unreadable)

    home = tmp_path / "home"
    write_config(home, fake_ollama, embedding="ollama:nomic-embed-text")
    ran = run_brain(home, "index", "--json", str(nasty.root)).ok()
    ran.out.encode("utf-8")  # valid UTF-8 even with a non-UTF-8 file name in it
    report = json.loads(ran.out)
    bad = [item["path"] for item in report["skipped"]["undecodable"] if "bad-" in item["path"]]
    assert bad and b"bad-\xff-name.md" in os.fsencode(bad[0])  # the exact bytes come back
    added = {nasty.rel(p) for p in report["added"]}
    skipped = {nasty.rel(item["path"]): reason
               for reason, items in report["skipped"].items() for item in items}
    assert added == expected_added
    assert skipped == {rel: str(reason) for rel, reason in expected_skips.items()}
    assert not (added | set(skipped)) & nasty.ignored
    assert all(item["detail"] for items in report["skipped"].values() for item in items)

    # The human report prints every odd name without crashing on a pipe.
    verbose = run_brain(home, "index", "--sync", "-v").ok()
    assert "Skipped (too_large): 2" in verbose.out
    assert "emoji 🎉 party.md" in verbose.out or "unchanged" in verbose.out

    hits = json.loads(run_brain(home, "search", "--json", "必须被正确读取").ok().out)["hits"]
    assert hits and nasty.rel(hits[0]["source"]) == "enc/gbk.md"
    hits = json.loads(run_brain(home, "search", "--json", "UTF-16 text héllo").ok().out)["hits"]
    assert any(nasty.rel(h["source"]) == "enc/utf16.txt" for h in hits)
