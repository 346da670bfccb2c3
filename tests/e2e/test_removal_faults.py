"""Removals and rebuilds, killed or starved at many points, leave nothing behind (issue 22).

Each removal (`folders rm`, `memory rm --forever`, `sessions rm`, `sessions forget-all`,
`memory forget-all`, `events rm`, `events forget-all`) runs in a copy of one filled home
(index, vectors, embedding cache, saved sources of an answer, retrieval log, memories,
profile, conversation index, agent events) and is SIGKILLed
just before a seeded random Python call of its own run, drawn from where its intent is
written to its end (tests/e2e/killpoints.py). Then:

- the next, unrelated command finishes the interrupted erasure and says so on stderr; no
  trace marker of the removed content survives in any byte of any file under the home (WAL
  and free pages, Chroma's files, the cache) — unless the kill came before the removal began,
  and then the home is exactly as before;
- running the same removal again is accepted (rc 0) and the home equals a clean run's.

`brain index --rebuild` killed at random points leaves the old index serving every search.
The same removals on a small tmpfs that fills up midway complete or finish once space is
back; a read-only home searches, and fails to write with one line, never a traceback.
The fake Ollama serves the embeddings, so a run costs a fork, not a model load.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, brain_env, run_brain, write_config
from tests.e2e.killpoints import KillWorker, Outcome
from tests.e2e.stores import dump, knowledge_state
from tests.e2e.traces import find_traces
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SEED = 20261201
KILLS = max(10, int(os.environ.get("BRAIN_FAULT_KILLS", "10")))
EMBEDDING = "ollama:nomic-embed-text"
FOLDER_MARKER = "privfolderqwzx"  # the removed folder's name: in every path under it
DOC_MARKER = "Zanzibarquokka"  # only in the removed folder's notes
HEADING_MARKER = "Marmalade Vaultkeeper"
KEPT_MARKER = "Heliotropewombat"  # the folder that stays
MEMORY_MARKER = "Quixotelantern"  # memories forgotten by forget-all
PURGED_MARKER = "Obsidianpelican"  # the memory erased for good
SESSION_MARKER = "Ultramarinegecko"  # only in the doomed session's question
ASKED_MARKER = "Cobaltmarmoset"  # only in the other session's question
EVENT_MARKER = "Tangerinenarwhal"  # only in the erased agent event
LOGGED_MARKER = "Periwinkleaxolotl"  # only in the other agent event (forget-all erases it)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, fake: FakeOllamaServer) -> dict[str, Any]:
    """One home with every store filled; tests copy it."""
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")
    base = tmp_path_factory.mktemp("filled")
    private, kept = base / FOLDER_MARKER, base / "garden"
    (private / "sub").mkdir(parents=True)
    kept.mkdir()
    for i in range(4):
        (private / "sub" / f"passport{i}.md").write_text(
            f"# {HEADING_MARKER} {i}\n\nMy passport copy {i} is kept in the {DOC_MARKER} "
            "drawer of the study, behind the atlas and the old maps.\n", encoding="utf-8")
    (kept / "tomatoes.md").write_text(
        f"# Tomatoes\n\nWater the tomatoes every evening; the {KEPT_MARKER} hose is in the "
        "shed.\n", encoding="utf-8")
    home = base / "home"
    write_config(home, fake, embedding=EMBEDDING, extra="[memory]\nextract_every_turns = 0\n")
    run_brain(home, "index", str(private), str(kept)).ok()
    # The user's own words (queries, questions) and the answers stay: no marker in them.
    run_brain(home, "search", "where is the passport copy kept").ok()
    run_brain(home, "memory", "add", f"My reading lamp is a {MEMORY_MARKER}").ok()
    purged = run_brain(home, "memory", "add", f"My bike is an {PURGED_MARKER}").ok().out.split()[0]
    fake.script_chat("It is in the drawer of the study [1].")
    run_brain(home, "ask", f"{ASKED_MARKER}: where is my passport kept?").ok()
    fake.script_chat("No idea.")
    run_brain(home, "ask", f"What does {SESSION_MARKER} mean?", "--no-knowledge").ok()
    sessions = json.loads(run_brain(home, "sessions", "list", "--json").ok().out)["sessions"]
    doomed = next(s["id"] for s in sessions if SESSION_MARKER in (s.get("title") or "")
                  or SESSION_MARKER in json.dumps(s))
    _set_profile(home, f"Owns a bike called {PURGED_MARKER} and a lamp {MEMORY_MARKER}.")
    event = _log_events(home)
    run_brain(home, "events", "search", "deployment checklist").ok()  # embeds them too
    for marker in (DOC_MARKER, FOLDER_MARKER, PURGED_MARKER, MEMORY_MARKER, SESSION_MARKER,
                   EVENT_MARKER, LOGGED_MARKER):
        assert find_traces(home, [marker]), f"{marker} never stored: nothing tested"
    return {"home": home, "private": str(private), "purged": purged, "doomed": doomed,
            "event": event}


def _log_events(home: Path) -> str:
    """Two agent events, as `brain mcp`'s log_event stores them; returns the doomed one's id."""
    from assistant.events.model import EventType, NewEvent
    from assistant.events.store import EventStore

    store = EventStore.open(resolve_paths(home).events_db)
    try:
        goal = store.log(NewEvent(EventType.GOAL, f"ship the {LOGGED_MARKER} deployment "
                                  "checklist", agent="claude-code", session="deploy"))
        doomed = store.log(NewEvent(EventType.ACTION, f"ran the {EVENT_MARKER} deployment "
                                    "checklist step", session="deploy", parent=goal.id))
    finally:
        store.close()
    return doomed.id


def _set_profile(home: Path, text: str) -> None:
    """A model-written profile built from every memory (as `memory profile --refresh` writes
    it), written straight into the store."""
    import sqlite3

    conn = sqlite3.connect(resolve_paths(home).memory_db)
    try:
        with conn:
            conn.execute("INSERT OR REPLACE INTO profile (id, text, updated_at, edited_by_user) "
                         "VALUES (1, ?, ?, 0)", (text, _DEC_1))
    finally:
        conn.close()


_DEC_1 = 1796083200.0  # 2026-12-01T00:00:00Z: memory.sqlite3 stores Unix seconds


def _removals(filled: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    return {
        "folder": (["folders", "rm", filled["private"]],
                   [DOC_MARKER, HEADING_MARKER, FOLDER_MARKER]),
        "memory": (["memory", "rm", filled["purged"], "--forever"], [PURGED_MARKER]),
        "session": (["sessions", "rm", filled["doomed"]], [SESSION_MARKER]),
        "all-sessions": (["sessions", "forget-all", "--yes"], [SESSION_MARKER, ASKED_MARKER]),
        "all-memories": (["memory", "forget-all", "--yes"], [MEMORY_MARKER, PURGED_MARKER]),
        "event": (["events", "rm", filled["event"]], [EVENT_MARKER]),
        "all-events": (["events", "forget-all", "--yes"], [EVENT_MARKER, LOGGED_MARKER]),
    }


def _copy(filled: dict[str, Any], to: Path) -> Path:
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(filled["home"], to, symlinks=True)
    return to


def _counts(home: Path) -> dict[str, Any]:
    """What every store holds, to compare a recovered home with a clean run's."""
    import sqlite3

    from tests.e2e.stores import memory_rows

    paths = resolve_paths(home)

    def rows(db: Path, sql: str) -> list[Any]:
        if not db.exists():
            return []
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    return {
        "knowledge": knowledge_state(home),
        "memories": sorted(r["id"] for r in memory_rows(home)),
        "sessions": rows(paths.sessions_db, "SELECT id FROM sessions ORDER BY id"),
        "turns": rows(paths.sessions_db, "SELECT count(*) FROM turns"),
        "log": rows(paths.retrieval_log_db, "SELECT count(*) FROM entries"),
        "events": rows(paths.events_db, "SELECT id FROM events ORDER BY id"),
        "pending": sorted(os.listdir(paths.data_dir / "removals"))
        if (paths.data_dir / "removals").is_dir() else [],
    }


def _settled(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "pending": [p for p in state["pending"] if p.endswith(".json")]}


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillWorker]:
    with KillWorker.started(brain_env(), tmp_path_factory.mktemp("scratch")) as kill:
        yield kill


@pytest.mark.parametrize("kind", ["folder", "memory", "session", "all-sessions",
                                  "all-memories", "event", "all-events"])
def test_killed_removal_is_finished_by_the_next_command(
        kind: str, filled: dict[str, Any], worker: KillWorker, tmp_path: Path) -> None:
    args, markers = _removals(filled)[kind]
    clean = _copy(filled, tmp_path / "clean")
    before = _settled(_counts(clean))
    ran = worker.run(clean, *args, count=True)
    assert ran.code == 0, ran.output
    assert find_traces(clean, markers) == {}, "even an uninterrupted removal left traces"
    after = _settled(_counts(clean))
    # Kill points from where the intent is written (from the start for a build without one).
    start = (ran.first or {}).get("recorded", 1)
    rng = random.Random(f"{SEED}-{kind}")
    points = sorted(rng.sample(range(max(1, start - 10), ran.calls), KILLS))
    outcomes: list[str] = []
    for point in points:
        home = _copy(filled, tmp_path / "killed")
        killed = worker.run(home, *args, kill_at=point)
        assert killed.killed or killed.code == 0, killed.output
        nxt = worker.run(home, "config", "path")  # the cheapest next command
        assert nxt.code == 0, nxt.output
        assert "Traceback" not in nxt.output
        finished = "finished an interrupted removal" in nxt.output
        left = find_traces(home, markers)
        if left:  # only a kill before anything was removed may leave the home as it was
            assert not finished and _settled(_counts(home)) == before, \
                f"kill at call {point}: traces left\n{left}\n{dump(_counts(home))}"
        again = worker.run(home, *args)
        assert again.code == 0, f"kill at call {point}: the re-run was refused:\n{again.output}"
        assert find_traces(home, markers) == {}, f"kill at call {point}: traces after re-run"
        assert _settled(_counts(home)) == after, f"kill at call {point}:\n{dump(_counts(home))}"
        outcomes.append("finished-next" if finished else "before" if left else
                        "killed-after" if killed.killed else "completed")
    print(f"{kind}: {len(points)} kills at calls {points} of {ran.calls}: {outcomes}")
    assert "finished-next" in outcomes, f"no kill interrupted the erasure: {outcomes}"


def test_erased_memory_never_reaches_a_prompt_again(
        filled: dict[str, Any], fake: FakeOllamaServer, tmp_path: Path) -> None:
    """The profile used the memory: after `memory rm --forever` the next system prompt holds
    no word of it (the profile is emptied until rewritten without it)."""
    home = _copy(filled, tmp_path / "home")
    run_brain(home, "memory", "rm", filled["purged"], "--forever").ok()
    fake.clear_requests()
    fake.script_chat("Fine.")
    run_brain(home, "ask", "Tell me about my bike and what I own.", "--no-knowledge").ok()
    prompts = [json.dumps(r, ensure_ascii=False) for r in fake.chat_requests]
    assert prompts, "no prompt was sent"
    assert all(PURGED_MARKER.lower() not in p.lower() for p in prompts), \
        "the erased memory reached the prompt"
    assert find_traces(home, [PURGED_MARKER]) == {}


def _search_ok(home: Path, worker: KillWorker) -> Outcome:
    return worker.run(home, "search", f"tomatoes hose {KEPT_MARKER}", "--json")


def test_killed_rebuild_leaves_the_old_index_serving(
        filled: dict[str, Any], worker: KillWorker, tmp_path: Path) -> None:
    clean = _copy(filled, tmp_path / "clean")
    before = knowledge_state(clean)
    ran = worker.run(clean, "index", "--rebuild", count=True)
    assert ran.code == 0, ran.output
    assert knowledge_state(clean) == before
    start = (ran.first or {}).get("sync_folders", 1)
    rng = random.Random(f"{SEED}-rebuild")
    points = sorted(rng.sample(range(start, ran.calls), KILLS))
    for point in points:
        home = _copy(filled, tmp_path / "killed")
        worker.run(home, "index", "--rebuild", kill_at=point)
        found = _search_ok(home, worker)
        assert found.code == 0, found.output
        hits = json.loads(found.output.splitlines()[-1] if found.output.strip().startswith("{")
                          else found.output[found.output.index("{"):])["hits"]
        assert any(KEPT_MARKER in json.dumps(h) for h in hits), \
            f"kill at call {point}: the old index is not serving:\n{found.output[:800]}"
        listed = worker.run(home, "folders", "--json")
        assert listed.code == 0 and "\"files\": 0" not in listed.output, listed.output
        assert worker.run(home, "index", "--sync").code == 0
        assert knowledge_state(home) == before, f"kill at call {point}: did not converge"
    print(f"rebuild: {len(points)} kills at calls {points} of {ran.calls}")


# --- a full disk and a read-only home ---------------------------------------------------------


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode:
        # Skipped only where mounting is not allowed (no CAP_SYS_ADMIN: a container, a user);
        # CI runs as root on a fresh machine, where a failing mount is a failure.
        if _may_mount():
            pytest.fail(f"mounting a tmpfs failed although allowed: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")


def _may_mount() -> bool:
    """Whether this process holds CAP_SYS_ADMIN (bit 21 of its effective capabilities)."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        return False
    caps = next((line.split()[1] for line in status.splitlines()
                 if line.startswith("CapEff:")), "0")
    return bool(int(caps, 16) >> 21 & 1)


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(where: Path, leave: int) -> Path:
    """Fill the filesystem until `leave` bytes are free."""
    filler = where / "filler"
    free = shutil.disk_usage(where).free
    with open(filler, "wb") as out:
        remaining = max(0, free - leave)
        chunk = b"\0" * (1 << 20)
        while remaining > 0:
            try:
                out.write(chunk[: min(len(chunk), remaining)])
                out.flush()
            except OSError:
                break
            remaining -= min(len(chunk), remaining)
    return filler


@pytest.mark.parametrize("kind", ["folder", "memory", "all-memories"])
def test_removal_on_a_full_disk_completes_or_finishes_later(
        kind: str, filled: dict[str, Any], worker: KillWorker, tmp_path: Path) -> None:
    args, markers = _removals(filled)[kind]
    mount = tmp_path / "disk"
    size = sum(p.stat().st_size for p in Path(filled["home"]).rglob("*") if p.is_file())
    results: list[str] = []
    for leave in (4_096, 64_000, 256_000, 1_000_000, 3_000_000):
        _mount_tmpfs(mount, f"{size * 3 + 8_000_000}")
        try:
            home = _copy(filled, mount / "home")
            filler = _fill(mount, leave)
            ran = worker.run(home, *args)
            assert "Traceback" not in ran.output, ran.output
            if ran.code:
                assert len(ran.output.strip().splitlines()) <= 2, ran.output  # message + hint
                results.append(f"{leave}:refused")
            else:
                results.append(f"{leave}:done")
                assert find_traces(home, markers) == {}, f"free {leave}: done with traces"
            filler.unlink()
            nxt = worker.run(home, "config", "path")  # the cheapest next command
            assert nxt.code == 0, nxt.output
            again = worker.run(home, *args)
            assert again.code == 0, again.output
            assert find_traces(home, markers) == {}, f"free {leave}: traces left"
        finally:
            _umount(mount)
    print(f"{kind} on a full disk: {results}")


def test_read_only_home_searches_and_refuses_writes_in_one_line(
        filled: dict[str, Any], fake: FakeOllamaServer, worker: KillWorker, tmp_path: Path) -> None:
    """Searching needs no write access: on a read-only mount every search answers (the
    databases opened read-only, Chroma replaced by the dense snapshot or, for memories and
    chats, by keywords, said on stderr); what must write (saving an answer, a removal) fails
    in one line naming the read-only filesystem; no traceback, no "damaged", the cache kept."""
    mount = tmp_path / "ro"
    size = sum(p.stat().st_size for p in Path(filled["home"]).rglob("*") if p.is_file())
    _mount_tmpfs(mount, f"{size * 2 + 4_000_000}")
    try:
        home = _copy(filled, mount / "home")
        cache = resolve_paths(home).embedding_cache_dir
        cached = sorted(p.name for p in cache.iterdir())
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        for command, found in ((["search", f"tomatoes hose {KEPT_MARKER}"], KEPT_MARKER),
                               (["memory", "search", "reading lamp"], MEMORY_MARKER),
                               (["sessions", "search", "passport"], ASKED_MARKER)):
            ran = worker.run(home, *command)
            assert ran.code == 0 and found in ran.output, f"{command}: {ran.output}"
            assert "Traceback" not in ran.output and "damaged" not in ran.output.lower()
        fake.script_chat("The hose is in the shed.")
        ran = worker.run(home, "ask", "where is the hose?")
        assert "Traceback" not in ran.output, ran.output
        if ran.code:  # the answer was given; saving it cannot be done
            lines = ran.output.rstrip().splitlines()
            first, *rest = lines[next(i for i, line in enumerate(lines)
                                      if line.startswith("brain:")):]
            assert "read-only" in first and all(r.startswith("  hint:") for r in rest), \
                ran.output
        assert "damaged" not in ran.output.lower(), ran.output
        removed = worker.run(home, *_removals(filled)["folder"][0])
        assert removed.code == 1 and "Traceback" not in removed.output, removed.output
        assert "read-only" in removed.output and "damaged" not in removed.output.lower(), \
            removed.output
        assert sorted(p.name for p in cache.iterdir()) == cached, "the cache was moved"
    finally:
        _umount(mount)
