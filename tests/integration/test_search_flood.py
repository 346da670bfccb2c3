"""No file drowns the others (issue 13): a 3.6 MB file of one repeated line, under the size
limit, once became ~3,900 identical chunks that filled every result list, hid the file holding
the exact sentence searched for, and was not marked low confidence.

Through the real CLI and a real index (SQLite + FTS5 + Chroma), with the fast HashEmbedder.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from assistant.config import RetrievalConfig
from tests.fakes import HashEmbedder
from tests.fixtures.knowledge import note_text
from tests.fixtures.retrieval import CliRun

REPEATED = "status: the weekly report was archived and the backup finished without errors\n"
SENTENCE = "The weekly report moves to Friday afternoon because the auditors arrive on Thursday."
TOP_K = 6


def _notes(root: Path) -> Path:
    root.mkdir()
    copies = 3_600_000 // len(REPEATED)
    (root / "status.log").write_text(REPEATED * copies, encoding="utf-8")
    assert 3_500_000 < (root / "status.log").stat().st_size < 5 * 1024 * 1024
    (root / "plans.md").write_text(
        "# Plans for the quarter\n\n"
        "Hiring: two engineers join in March; the onboarding checklist lives in the wiki.\n\n"
        f"{SENTENCE}\n\n"
        "The offsite is booked for the second week of June, near the lake.\n",
        encoding="utf-8",
    )
    for name, text in {
        "garden.md": "# Garden\n\nWater the tomatoes every morning and prune the roses in May.\n",
        "bread.md": "# Bread\n\nKnead the dough for ten minutes, then let it rise overnight.\n",
        "bikes.md": "# Bikes\n\nCheck the tyre pressure before every ride and oil the chain.\n",
    }.items():
        (root / name).write_text(text, encoding="utf-8")
    for n in range(30):  # enough other notes for BM25's document frequencies to mean something
        (root / f"note-{n:02d}.md").write_text(note_text(f"Note {n}", 2, seed=n), encoding="utf-8")
    return root


@pytest.fixture
def cli(real_cli: tuple[CliRun, dict[str, object]]) -> CliRun:
    run, model = real_cli
    # Wide enough that hash collisions do not pass for meaning (64 dimensions gave 0.45).
    model["embedder"] = HashEmbedder(dimension=512, model_id="test:hash-512")
    return run


def _search(run: CliRun, query: str) -> dict[str, object]:
    code, out, err = run("search", query, "--json", "--top-k", str(TOP_K))
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def test_one_repetitive_file_neither_floods_the_index_nor_the_results(
    cli: CliRun, tmp_path: Path, home: Path
) -> None:
    run = cli
    notes = _notes(tmp_path / "notes")
    code, _out, err = run("index", str(notes))
    assert code == 0, err

    # Identical chunks are stored once per file.
    from assistant.paths import resolve_paths

    with sqlite3.connect(resolve_paths(home).knowledge_db) as conn:
        stored = conn.execute(
            "SELECT count(*), count(DISTINCT text) FROM chunks WHERE source = ?",
            (str((notes / "status.log").resolve()),),
        ).fetchone()
    assert stored[0] == stored[1] <= 3, stored

    cap = RetrievalConfig().per_file
    big = str((notes / "status.log").resolve())
    for query in (SENTENCE, "weekly report moves to friday", "when was the weekly report archived"):
        result = _search(run, query)
        hits = result["hits"]
        assert isinstance(hits, list) and hits
        sources = [h["source"] for h in hits]
        # One file may hold at most `retrieval.per_file` of the top results...
        assert sources.count(big) <= cap, (query, sources)
        # ...and the file with the exact sentence is found, first.
        if query == SENTENCE:
            assert sources[0] == str((notes / "plans.md").resolve()), sources
            assert result["low_confidence"] is False
        # The gate vouches only with evidence from what it shows.
        if not result["low_confidence"]:
            cfg = RetrievalConfig()
            assert any(
                (h["scores"]["vector"] or 0) >= cfg.score_threshold
                or (h["scores"]["keyword"] or 0) >= cfg.keyword_threshold
                for h in hits
            ), result


@pytest.mark.parametrize(
    "query", ["banana bread recipe with walnuts", "the backup of my banana bread recipe"]
)
def test_the_gate_holds_over_a_repetitive_file(cli: CliRun, tmp_path: Path, query: str) -> None:
    """Weak matches (one shared word, or nothing) stay low confidence, however many copies of
    the matching line the big file holds."""
    run = cli
    notes = _notes(tmp_path / "notes")
    assert run("index", str(notes))[0] == 0
    result = _search(run, query)
    assert result["low_confidence"] is True, result
