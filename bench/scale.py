"""Scale (issue 25): a synthetic notes folder at 1k, 4k, 16k and 32k chunks (100k with
`--scale-max`), measured with the real `brain` CLI in child processes, each against a baseline
from the same run.

Per size: cold index (the real model at 1k/4k; above, `bench.scale_standin`: the real CLI with
only the model's arithmetic replaced, labelled "stand-in") against the raw encode of the same
chunk texts; re-sync with nothing changed and with 1% of the notes changed; peak RSS of each;
knowledge, conversation and memory search p50/p95 over 100 queries with one busy process beside
it (the "other core busy" of the target) against a bare Chroma query and a bare FTS5 query on
the same data; the search process's RSS when idle after them; disk per component against the
corpus. At the largest size, the TUI's RSS (bench/scale_tui.py) once the index is loaded and
after a live sync that adds 1% new notes. `brain --help` is the cold-start baseline.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, Report, timer
from bench.scale_corpus import change_notes, write_corpus

SIZES = (1000, 4000, 16000, 32000)
QUICK_SIZES = (500, 2000)
MAX_SIZE = 100_000
MAX_ENV = "SCALE_MAX"  # `python -m bench --scale-max scale` sets it
REAL_MODEL_UP_TO = 4000
REAL_ENV = "SCALE_REAL_UP_TO"  # e.g. 0: the stand-in at every size (a loaded machine, no time)
MEMORIES_UP_TO = 10_000  # memories imported per size: a third of the chunks, at most this
TURNS_UP_TO = 10_000  # conversation turns imported per size: the same share and bound
TURNS_PER_SESSION = 10
TUI_TARGET_MB = 450
TUI_IDLE_SECONDS = 10  # the TUI probe's embedding.idle_unload_seconds (300 by default)
QUERIES = 100


def run(quick: bool) -> Report:
    report = Report("scale", quick)
    sizes = list(QUICK_SIZES if quick else SIZES)
    if os.environ.get(MAX_ENV) and not quick:
        sizes.append(MAX_SIZE)
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        help_seconds = min(_brain(workdir / "help-home", ["--help"], standin=False)[0]
                           for _ in range(3))
        report.add("brain_help_seconds", help_seconds, unit="s")
        p95s: list[tuple[int, float, float]] = []
        for size in sizes:
            real = size <= int(os.environ.get(REAL_ENV, REAL_MODEL_UP_TO)) and not quick
            chunks, knowledge_p95, memory_p95, conversation_p95 = _one_size(
                report, workdir / f"n{size}", size, real=real, help_seconds=help_seconds,
                tui=size == sizes[-1])
            p95s.append((chunks, knowledge_p95, memory_p95, conversation_p95))
            report.write()  # each size as it finishes: the largest take tens of minutes
        for name, column in (("knowledge", 1), ("memory", 2), ("conversation", 3)):
            exponent = _growth_exponent([(p[0], p[column]) for p in p95s])
            if exponent is not None:
                report.add(f"{name}_search_p95_growth_exponent", exponent,
                           notes=f"k in p95 ~ n^k from {p95s[0][0]} to {p95s[-1][0]} chunks")
        report.details["sizes"] = sizes
        report.details["load_average"] = os.getloadavg()
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _one_size(report: Report, root: Path, size: int, *, real: bool, help_seconds: float,
              tui: bool) -> tuple[int, float, float, float]:
    notes, home = root / "notes", root / "home"
    paths = write_corpus(notes, size)
    _write_config(home)
    label = f"{size // 1000}k" if size >= 1000 else str(size)
    how = "real model" if real else "stand-in encoder"
    standin = not real
    seconds, rss = _brain(home, ["index", str(notes)], standin=standin)[:2]
    texts = _chunk_texts(home)
    raw = _raw_encode_seconds(texts, real=real)
    report.add(f"{label}_cold_index_seconds", seconds, unit="s", baseline=raw,
               baseline_name=f"raw encode ({how})", notes=f"{len(texts)} chunks, {how}")
    report.add(f"{label}_non_model_index_seconds", max(0.0, seconds - raw), unit="s",
               notes=f"cold index minus raw encode, {how}")
    report.add(f"{label}_cold_index_peak_rss_mb", rss, unit="MB")
    seconds, rss = _brain(home, ["index", "--sync"], standin=standin)[:2]
    report.add(f"{label}_resync_unchanged_seconds", seconds, unit="s", baseline=help_seconds,
               baseline_name="brain --help")
    change_notes(paths, 0.01)
    seconds, rss = _brain(home, ["index", "--sync"], standin=standin)[:2]
    report.add(f"{label}_resync_1pct_seconds", seconds, unit="s", baseline=help_seconds,
               baseline_name="brain --help")
    target = "<= 600 MB" if size >= 32000 else None
    report.add(f"{label}_resync_1pct_peak_rss_mb", rss, unit="MB", target=target,
               passed=rss <= 600 if target else None)
    memories = min(len(texts) // 3, MEMORIES_UP_TO)
    memory_file = root / "memories.jsonl"
    _write_memories(memory_file, memories)
    _brain(home, ["memory", "import", str(memory_file)], standin=standin)
    turns = min(len(texts) // 3, TURNS_UP_TO)
    turns_file = root / "conversations.jsonl"
    _write_conversations(turns_file, turns)
    _brain(home, ["sessions", "import", str(turns_file)], standin=standin)
    probe = _probe(home, root / "queries.json", paths, standin=standin)
    k_target = "<= 40 ms" if size >= 32000 else None
    report.add(f"{label}_knowledge_search_p50_ms", probe["knowledge"][0], unit="ms",
               baseline=probe["chroma"][0], baseline_name="bare Chroma query")
    report.add(f"{label}_knowledge_search_p95_ms", probe["knowledge"][1], unit="ms",
               baseline=probe["chroma"][1], baseline_name="bare Chroma query",
               target=k_target, passed=probe["knowledge"][1] <= 40 if k_target else None,
               notes=f"other core busy; bare FTS5 p95 {probe['fts'][1]:.1f} ms")
    m_target = "<= 25 ms" if memories >= MEMORIES_UP_TO else None
    report.add(f"{label}_memory_search_p50_ms", probe["memory"][0], unit="ms",
               notes=f"{memories} memories")
    report.add(f"{label}_memory_search_p95_ms", probe["memory"][1], unit="ms",
               target=m_target, passed=probe["memory"][1] <= 25 if m_target else None,
               notes=f"{memories} memories, other core busy")
    report.add(f"{label}_memory_recall_p95_ms", probe["recall"][1], unit="ms",
               notes=f"{memories} memories, other core busy; p50 {probe['recall'][0]:.1f} ms")
    report.add(f"{label}_conversation_search_p50_ms", probe["conversation"][0], unit="ms",
               notes=f"{turns} turns in {_sessions(turns)} sessions")
    report.add(f"{label}_conversation_search_p95_ms", probe["conversation"][1], unit="ms",
               notes=f"{turns} turns, other core busy")
    report.add(f"{label}_search_idle_rss_mb", probe["idle_rss_mb"], unit="MB",
               notes=f"peak {probe['peak_rss_mb']:.0f} MB")
    disk = _disk(home)
    corpus = sum(p.stat().st_size for p in paths)
    total = sum(disk.values())
    report.add(f"{label}_home_disk_mb", total / 1e6, unit="MB", baseline=corpus / 1e6,
               baseline_name="corpus", target="<= 8x corpus" if size >= 32000 else None,
               passed=total <= 8 * corpus if size >= 32000 else None,
               notes=", ".join(f"{k} {v / 1e6:.1f}" for k, v in disk.items()))
    if tui:
        _tui_rss(report, label, root, home, len(texts), standin=standin)
    shutil.rmtree(root, ignore_errors=True)
    return len(texts), probe["knowledge"][1], probe["memory"][1], probe["conversation"][1]


def _tui_rss(report: Report, label: str, root: Path, home: Path, chunks: int, *,
             standin: bool) -> None:
    """The TUI's RSS with this index loaded, then after a live sync adding 1% new notes."""
    extra = root / "new-notes"
    write_corpus(extra, max(20, chunks // 100), seed=99)
    env = os.environ | {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                        "BENCH_IDLE_UNLOAD_SECONDS": str(TUI_IDLE_SECONDS)}
    out = subprocess.run(
        [sys.executable, "-m", "bench.scale_tui", str(home), "standin" if standin else "real",
         str(extra)], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        timeout=3600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"TUI probe failed: {out.stderr.strip()[-800:]}")
    tui = json.loads(lines[-1])
    if "error" in tui:
        raise RuntimeError(f"TUI probe: the index did not load: {tui['error']}")
    how = "real model" if not standin else "stand-in encoder (no model weights)"
    report.add(f"{label}_tui_open_rss_mb", tui["open_rss_mb"], unit="MB",
               notes=f"index loaded, idle; {chunks} chunks, {how}")
    target = f"<= {TUI_TARGET_MB} MB" if chunks >= 32000 * 0.95 else None
    after = tui["after_sync_rss_mb"]
    report.add(f"{label}_tui_after_sync_rss_mb", after, unit="MB", target=target,
               passed=after <= TUI_TARGET_MB if target else None,
               notes=f"live sync: {tui['sync']}, {tui['sync_seconds']:.0f} s, peak "
                     f"{tui['peak_rss_mb']:.0f} MB; {how}")
    if "after_release_rss_mb" in tui:  # only a model that can be unloaded (not the stand-in)
        report.add(f"{label}_tui_after_idle_release_rss_mb", tui["after_release_rss_mb"],
                   unit="MB", notes=f"the model freed after {TUI_IDLE_SECONDS} s idle")


def _brain(home: Path, argv: list[str], *, standin: bool) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one `brain` child process."""
    module = "bench.scale_standin" if standin else "assistant.cli.main"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", module, "--home", str(home), *argv],
                                 cwd=ROOT, env=env, stdout=out, stderr=err)
        # wait4, not wait: the child's own peak RSS (RUSAGE_CHILDREN keeps the largest ever).
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"brain {' '.join(argv)} failed: {err.read().strip()[-500:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def _write_config(home: Path) -> None:
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[memory]\ncapacity = 100000\n", encoding="utf-8")


def _chunk_texts(home: Path) -> list[str]:
    with sqlite3.connect(home / "data" / "knowledge.sqlite3") as conn:
        return [str(row[0]) for row in conn.execute("SELECT text FROM chunks ORDER BY rowid")]


def _raw_encode_seconds(texts: list[str], *, real: bool) -> float:
    if real:
        from bench.indexing import _raw_encode_seconds as encode
        from bench.indexing import _raw_model

        return encode(_raw_model(), texts)
    from bench.scale_standin import StandInModel

    with timer() as t:
        StandInModel().encode_documents(texts)
    return float(t["seconds"])


def _vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zen", "dar", "pel", "quo"]
    words = {"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


def _write_memories(path: Path, count: int) -> None:
    # Zipf-distributed words from a few thousand: a memory matches few of any query's words.
    rng = random.Random(count)
    words = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            text = " ".join(rng.choices(words, weights, k=rng.randint(6, 16)))
            out.write(json.dumps({"text": f"The user {text} (m{i})"}) + "\n")


def _sessions(turns: int) -> int:
    return -(-turns // TURNS_PER_SESSION)


def _write_conversations(path: Path, turns: int) -> None:
    """`brain sessions import` JSONL: sessions of ten question/answer turns over the past year,
    in the memories' Zipf words (a turn matches few of any query's words)."""
    rng = random.Random(turns + 1)
    words = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    start = time.time() - 365 * 86400
    step = 365 * 86400 / max(1, turns)
    with path.open("w", encoding="utf-8") as out:
        for i in range(turns):
            session = f"s{i // TURNS_PER_SESSION:05d}"
            when = start + i * step
            for role, low, high in (("user", 5, 14), ("assistant", 20, 60)):
                text = " ".join(rng.choices(words, weights, k=rng.randint(low, high)))
                out.write(json.dumps({"session": session, "role": role, "text": f"{text} (t{i})",
                                      "created_at": when + (30 if role == "assistant" else 0)})
                          + "\n")


def _queries(paths: list[Path]) -> dict[str, list[str]]:
    from bench.scale_corpus import queries

    words = _vocabulary(random.Random(0))
    weights = [1 / (rank + 1) for rank in range(len(words))]
    rng = random.Random(25)
    memory = [" ".join(rng.choices(words, weights, k=3)) for _ in range(QUERIES)]
    conversation = [" ".join(rng.choices(words, weights, k=rng.randint(2, 5)))
                    for _ in range(QUERIES)]
    return {"knowledge": queries(paths, QUERIES), "memory": memory,
            "conversation": conversation}


def _probe(home: Path, queries_file: Path, paths: list[Path], *, standin: bool
           ) -> dict[str, Any]:
    queries_file.write_text(json.dumps(_queries(paths)), encoding="utf-8")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-m", "bench.scale_probe", str(home), str(queries_file),
             "standin" if standin else "real"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    finally:
        busy.kill()
        busy.wait()
    if out.returncode != 0:
        raise RuntimeError(f"search probe failed: {out.stderr.strip()[-800:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _disk(home: Path) -> dict[str, int]:
    def size(path: Path) -> int:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    data, cache = home / "data", home / "cache"
    snapshots = sum(size(p) for p in (data / "chroma").glob("dense-*.npz"))
    parts = {
        "knowledge.sqlite3": size(data / "knowledge.sqlite3"),
        "chroma": size(data / "chroma") - snapshots,
        "dense snapshot": snapshots,
        "embedding cache": size(cache / "embeddings") if (cache / "embeddings").exists() else 0,
        "memory": sum(size(p) for p in data.glob("memory*")),
    }
    parts["other"] = size(home) - sum(parts.values())
    return parts


def _growth_exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(latency) over log(size)."""
    usable = [(math.log(n), math.log(v)) for n, v in points if n > 0 and v > 0]
    if len(usable) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    var = sum((x - mx) ** 2 for x, _ in usable)
    return sum((x - mx) * (y - my) for x, y in usable) / var if var else None
