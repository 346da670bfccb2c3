"""`brain search`, `brain eval` and `brain log` end to end through the CLI entry point.

The fast tests run the real commands over an in-memory knowledge base (patched in where the
commands open the index); the `real_index` tests build a real index (SQLite + Chroma + the
bundled model) on a tiny corpus to check the empty-index and changed-model errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from assistant.cli.main import main
from assistant.retrieval.contract import SEARCH_RESULT_SCHEMA
from assistant.retrieval.hybrid import HybridRetriever
from assistant.retrieval.log import RetrievalLog
from tests.fakes import HashEmbedder
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk

CORPUS = {
    "git/git-stash.md": ("git stash", "Stash the changes in a dirty working directory away."),
    "git/git-commit.md": ("git commit", "Record changes to the repository with a message."),
    "tickets/ABC-001.md": ("ABC-001", "Login page crashes when the password field is empty."),
    "linux/tar.md": ("tar", "Archiving utility: create, list and extract tar archives."),
    "linux/df.md": ("df", "Display free disk space on mounted file systems."),
    "zh/tar.md": ("tar", "归档实用程序。创建存档并将其写入文件，解压缩存档。"),
    "zh/df.md": ("df", "显示文件系统的磁盘可用空间。"),
}


@pytest.fixture
def corpus_kb(tmp_path: Path) -> FakeKnowledgeBase:
    root = tmp_path / "notes"
    kb = FakeKnowledgeBase(HashEmbedder())
    for rel, (heading, text) in CORPUS.items():
        source = str(root / rel)
        kb.add(make_chunk(source, f"# {heading}\n\n{text}", root=str(root), heading=heading,
                          language="zh" if rel.startswith("zh/") else "en"))
    return kb


@pytest.fixture
def cli(
    home: Path, corpus_kb: FakeKnowledgeBase, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """Run `brain ARGS…` in-process over the fake knowledge base; returns (code, out, err)."""
    import assistant.retrieval.open as opener

    def fake_open(ctx, *, origin="cli", log=None):
        return HybridRetriever(corpus_kb, corpus_kb.embedder, ctx.config.retrieval,
                               log=log, origin=origin, parallel=False)

    monkeypatch.setattr(opener, "open_retriever", fake_open)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["--home", str(home), *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run


def test_search_json_follows_the_contract(cli: Callable[..., tuple[int, str, str]]) -> None:
    code, out, _ = cli("search", "stash", "my", "changes", "--json", "--top-k", "3")
    assert code == 0
    obj = json.loads(out)
    jsonschema.validate(obj, SEARCH_RESULT_SCHEMA)
    assert obj["query"] == "stash my changes"
    assert len(obj["hits"]) == 3 and [h["rank"] for h in obj["hits"]] == [1, 2, 3]
    assert obj["hits"][0]["source"].endswith("/notes/git/git-stash.md")
    assert obj["hits"][0]["heading"] == "git stash"
    assert "dirty working directory" in obj["hits"][0]["text"]
    assert obj["hits"][0]["score"] > 0.5  # normalised, not a raw RRF value
    assert all(h["more_from_file"] == 0 for h in obj["hits"])  # one chunk per file here
    assert obj["low_confidence"] is False


def test_search_json_folds_a_files_extra_chunks_into_more_from_file(
    cli: Callable[..., tuple[int, str, str]], corpus_kb: FakeKnowledgeBase, tmp_path: Path,
) -> None:
    long = str(tmp_path / "notes" / "linux" / "tar-guide.md")
    corpus_kb.add(*(make_chunk(long, f"tar archive extract guide, part {n}", index=n,
                               root=str(tmp_path / "notes"), heading="tar guide")
                    for n in range(5)))
    code, out, _ = cli("search", "tar", "archive", "extract", "--json", "--top-k", "5")
    assert code == 0
    obj = json.loads(out)
    jsonschema.validate(obj, SEARCH_RESULT_SCHEMA)
    guide = [h for h in obj["hits"] if h["source"] == long]
    assert len(guide) == 2  # retrieval.per_file
    assert [h["more_from_file"] for h in guide] == [3, 0]  # on the file's best hit only
    assert len(obj["hits"]) == 5 and {h["source"] for h in obj["hits"]} - {long}


def test_a_time_phrase_in_the_query_narrows_file_dates(
    cli: Callable[..., tuple[int, str, str]], corpus_kb: FakeKnowledgeBase, tmp_path: Path,
) -> None:
    """Issue 16: without --since/--until, "last week"-style words narrow the file dates, leave
    the text the retrievers see, and the range is shown (stderr; `time_range` in --json)."""
    import time

    notes = tmp_path / "notes"
    recent = str(notes / "budget" / "march.md")
    corpus_kb.add(make_chunk(recent, "# budget\n\nstash the spare money for the boat",
                             root=str(notes), heading="budget", index=0,
                             mtime=time.time() - 2 * 86400))
    code, out, err = cli("search", "stash", "in", "the", "past", "week", "--json")
    assert code == 0, err
    obj = json.loads(out)
    jsonschema.validate(obj, SEARCH_RESULT_SCHEMA)
    assert obj["query"] == "stash in the past week"
    assert obj["time_range"]["origin"] == "query" and obj["time_range"]["applied"] is True
    assert obj["time_range"]["phrase"] == "in the past week"
    assert [h["source"] for h in obj["hits"]] == [recent]  # git-stash.md is older (mtime 0)

    code, out, err = cli("search", "stash", "in", "the", "past", "week")
    assert code == 0 and recent.replace(str(Path.home()), "~") in out
    assert "files modified " in err and "(in the past week)" in err

    # Nothing modified then: every date, the words as typed, and the output says so.
    code, out, err = cli("search", "stash", "changes", "in", "1999", "--json")
    obj = json.loads(out)
    assert obj["time_range"]["applied"] is False
    assert obj["hits"][0]["source"].endswith("/notes/git/git-stash.md")
    code, _, err = cli("search", "stash", "changes", "in", "1999")
    assert code == 0 and "all dates searched" in err

    # --all-dates: the phrase is the topic; flags still filter and win over a phrase.
    code, out, _ = cli("search", "stash", "in", "the", "past", "week", "--all-dates", "--json")
    obj = json.loads(out)
    assert obj["time_range"] is None
    assert any(h["source"].endswith("/git/git-stash.md") for h in obj["hits"])
    code, out, _ = cli("search", "stash", "in", "1999", "--since", "2w", "--json")
    obj = json.loads(out)
    assert obj["time_range"]["origin"] == "flag" and obj["time_range"]["applied"] is True
    assert [h["source"] for h in obj["hits"]] == [recent]
    code, _, err = cli("search", "stash", "--all-dates", "--since", "2w")
    assert code != 0 and "--all-dates" in err

    # Batch lines narrow one by one; each line's query comes back as typed.
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "stash in the past week"}\n{"query": "stash changes"}\n',
                       encoding="utf-8")
    code, out, _ = cli("search", "--queries", str(queries))
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["time_range"]["applied"] and second["time_range"] is None
    assert [h["source"] for h in first["hits"]] == [recent]


def test_the_schema_rejects_contract_breaks() -> None:
    good: dict[str, Any] = {"query": "q", "low_confidence": False, "hits": [{
        "rank": 1, "source": "/a.md", "heading": "", "text": "t", "score": 0.5,
        "scores": {"vector": None, "keyword": 0.2, "fused": 0.03}, "chunk_id": "c1"}]}
    jsonschema.validate(good, SEARCH_RESULT_SCHEMA)
    for broken in (
        {**good, "extra": 1},
        {**good, "hits": [{**good["hits"][0], "source": "relative.md"}]},
        {**good, "hits": [{**good["hits"][0], "scores": {"vector": 1, "fused": 0.1}}]},
        {**good, "hits": [{**good["hits"][0], "more_from_file": -1}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SEARCH_RESULT_SCHEMA)


def test_human_output_shows_file_heading_scores_and_snippet(
    cli: Callable[..., tuple[int, str, str]],
) -> None:
    code, out, _ = cli("search", "ABC-001", "--top-k", "2")
    assert code == 0
    assert "2 results for 'ABC-001'" in out
    first = out.split("\n 2. ")[0]
    assert "tickets/ABC-001.md:1" in first
    assert "match " in first and "%" in first and "keyword 1.00" in first
    assert "#1 fused (meaning #" in first and "keyword #1" in first
    assert "Login page crashes" in first
    assert "0.016" not in out


def test_in_filter_and_chinese_query(cli: Callable[..., tuple[int, str, str]], home: Path) -> None:
    code, out, _ = cli("search", "磁盘可用空间", "--json", "--in", "*.md", "--top-k", "1")
    assert code == 0 and json.loads(out)["hits"][0]["source"].endswith("zh/df.md")
    notes = str(home.parent / "notes")
    code, out, _ = cli("search", "tar", "--json", "--in", f"{notes}/zh")
    hits = json.loads(out)["hits"]
    assert hits and all("/notes/zh/" in h["source"] for h in hits)
    code, _, err = cli("search", "tar", "--in", f"{notes}/nowhere")
    assert code == 1 and "no indexed files under" in err


def test_batch_queries_keep_order_and_validate_first(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path,
) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "df"}\n\n{"query": "git-stash"}\n{"query": "归档"}\n')
    code, out, _ = cli("search", "--queries", str(batch), "--top-k", "2")
    assert code == 0
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["query"] for o in objs] == ["df", "git-stash", "归档"]
    for o in objs:
        jsonschema.validate(o, SEARCH_RESULT_SCHEMA)
        assert len(o["hits"]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "df"}\n{"q": "oops"}\n')
    code, out, err = cli("search", "--queries", str(bad))
    assert code == 1 and out == "" and f"{bad}:2" in err


def test_batch_queries_from_stdin(
    cli: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 15 snag 9: `--queries -` looked for a file named "-"."""
    import io

    stdin = io.TextIOWrapper(io.BytesIO('{"query": "df"}\n{"query": "归档"}\n'.encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    code, out, err = cli("search", "--queries", "-", "--top-k", "1")
    assert code == 0, err
    assert [json.loads(line)["query"] for line in out.splitlines()] == ["df", "归档"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"q": 1}\n')))
    code, out, err = cli("search", "--queries", "-")
    assert code == 1 and "<stdin>:1" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("search",), "nothing to search for"),
        (("search", "x", "--queries", "f.jsonl"), "either a QUERY or --queries"),
        (("search", "--queries", "/nonexistent.jsonl"), "no such file"),
        (("log", "--export", "x.jsonl"), "with --disliked"),
        (("eval", "/nonexistent.jsonl"), "no such file"),
    ],
)
def test_bad_input_is_a_clear_error(
    cli: Callable[..., tuple[int, str, str]], argv: tuple[str, ...], message: str,
) -> None:
    code, _, err = cli(*argv)
    assert code == 1 and message in err and "Traceback" not in err


def test_top_k_must_be_positive(cli: Callable[..., tuple[int, str, str]]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli("search", "tar", "--top-k", "0")
    assert exc.value.code == 2


def test_eval_reports_metrics_per_language_and_misses(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path,
) -> None:
    cases = tmp_path / "golden.jsonl"
    cases.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in [
        {"query": "stash dirty working directory", "expected": ["git-stash"], "lang": "en"},
        {"query": "ABC-001", "expected": ["tickets/ABC-001.md"], "lang": "en"},
        {"query": "磁盘可用空间", "expected": ["zh/df.md"], "lang": "zh"},
        {"query": "a question with an impossible answer", "expected": ["missing.md"],
         "lang": "en"},
        {"query": "not yet annotated", "expected": []},
    ]) + "\n")
    code, out, err = cli("eval", str(cases))
    assert code == 0
    assert "4 questions" in out and "1 unlabeled case not scored" in out
    # An expected file that is not indexed is a miss that can never be fixed by tuning: said.
    assert "expected 'missing.md' matches no indexed file" in err
    assert "git-stash" not in err
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line[:3] in
             ("all", "en ", "zh ")}
    assert lines["all"][1:3] == ["4", "0.750"]  # n, hit@1
    assert lines["zh"][1:3] == ["1", "1.000"]
    assert "impossible answer" in out.split("Not found")[1]
    code, out, _ = cli("eval", str(cases), "--json", "--top-k", "3")
    report = json.loads(out)
    assert report["metrics"]["count"] == 4 and report["metrics"]["hit@1"] == 0.75
    assert report["by_lang"]["zh"]["mrr@10"] == 1.0
    first = report["queries"][0]
    assert first["rank"] == 1 and first["sources"][0].endswith("git-stash.md")
    assert len(first["sources"]) == 3 and len(set(first["sources"])) == 3
    assert report["queries"][3]["rank"] is None


def test_log_lists_searches_and_exports_disliked(
    cli: Callable[..., tuple[int, str, str]], home: Path, tmp_path: Path,
) -> None:
    code, out, _ = cli("log")
    assert code == 0 and "no searches logged yet" in out
    cli("search", "git-stash")
    cli("search", "tar", "--json")
    code, out, _ = cli("log")
    assert code == 0
    assert out.index("'tar'") < out.index("'git-stash'")  # newest first
    assert "git-stash.md  (match" in out
    with RetrievalLog.open(home / "data" / "retrieval_log.sqlite3") as log:
        stash = log.recent(10)[1]
        log.rate(stash.id, -1, correct_sources=["git/git-stash.md"])
    code, out, _ = cli("log", "--disliked")
    assert "'git-stash'" in out and "'tar'" not in out and "👎" in out
    export = tmp_path / "failures.jsonl"
    code, out, _ = cli("log", "--disliked", "--export", str(export))
    assert code == 0 and "wrote 1 eval case" in out
    assert json.loads(export.read_text()) == {
        "query": "git-stash", "expected": ["git/git-stash.md"]
    }
    code, out, _ = cli("eval", str(export))  # the exported case runs as an eval case
    assert code == 0 and "1 question" in out
    code, out, _ = cli("log", "--json", "--limit", "1")
    entry = json.loads(out)
    assert entry["query"] == "tar" and entry["hits"][0]["chunk_id"]
    assert "text" not in entry["hits"][0]


# --- a real index (SQLite manifest + FTS5 + embedded Chroma) -----------------------------------

def _write_corpus(root: Path) -> None:
    for rel, (heading, text) in CORPUS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {heading}\n\n{text}\n", encoding="utf-8")


def test_empty_index_is_a_clear_message(real_cli) -> None:
    run, _ = real_cli
    code, out, err = run("search", "anything at all")
    assert code == 1 and out == ""
    assert "index is empty" in err and "brain index PATH" in err and "Traceback" not in err


def test_real_index_search_and_changed_model(real_cli, tmp_path: Path) -> None:
    run, model = real_cli
    notes = tmp_path / "notes"
    _write_corpus(notes)
    code, _, err = run("index", str(notes))
    assert code == 0, err
    code, out, err = run("search", "ABC-001", "--json", "--top-k", "3")
    assert code == 0, err
    obj = json.loads(out)
    jsonschema.validate(obj, SEARCH_RESULT_SCHEMA)
    assert obj["hits"][0]["source"] == str((notes / "tickets/ABC-001.md").resolve())
    assert obj["hits"][0]["scores"]["vector"] is not None
    code, out, _ = run("search", "tar", "--json", "--in", str(notes / "zh"))
    assert {Path(h["source"]).parent.name for h in json.loads(out)["hits"]} == {"zh"}

    model["embedder"] = HashEmbedder(dimension=32, model_id="test:hash-b")
    code, out, err = run("search", "ABC-001")
    assert code == 1 and out == ""
    assert "test:hash-a" in err and "test:hash-b" in err and "brain index --sync" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_real_model_eval_on_a_tiny_corpus(
    real_cli, real_embedder, tmp_path: Path,
) -> None:
    """The bundled model end to end: paraphrases, identifiers and Chinese find their files."""
    run, model = real_cli
    model["embedder"] = real_embedder
    notes = tmp_path / "notes"
    _write_corpus(notes)
    assert run("index", str(notes))[0] == 0
    cases = tmp_path / "golden.jsonl"
    cases.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in [
        {"query": "put my unfinished work aside temporarily", "expected": ["git-stash"],
         "lang": "en"},
        {"query": "how much room is left on my drives", "expected": ["linux/df.md"],
         "lang": "en"},
        {"query": "ABC-001", "expected": ["ABC-001"], "lang": "en"},
        {"query": "save my changes to the repository", "expected": ["git-commit"],
         "lang": "en"},
        {"query": "磁盘还剩多少空间", "expected": ["zh/df.md"], "lang": "zh"},
        {"query": "解压缩存档", "expected": ["zh/tar.md"], "lang": "zh"},
    ]) + "\n")
    code, out, err = run("eval", str(cases), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["metrics"]["hit@3"] == 1.0, report["queries"]
    assert report["by_lang"]["zh"]["hit@1"] == 1.0
    code, out, _ = run("search", "banana bread recipe with walnuts", "--json")
    assert json.loads(out)["low_confidence"] is True


def test_thumbs_down_to_eval_is_no_dead_end(
    cli: Callable[..., tuple[int, str, str]], home: Path, tmp_path: Path, corpus_kb: object,
) -> None:
    """Issue 15 snag 3: a 👎 export wrote `"expected": []` and `brain eval` refused the file.
    Now the right source is named with `brain log rate ID --correct PATH`, exported, scored;
    unlabeled cases are reported, not an error."""
    cli("search", "archive utility")
    cli("search", "stash my work")
    with RetrievalLog.open(home / "data" / "retrieval_log.sqlite3") as log:
        archive, stash = sorted(e.id for e in log.recent(10))
    code, out, err = cli("log", "rate", str(archive), "--down")
    assert code == 0 and "rated 👎" in out, err
    export = tmp_path / "cases.jsonl"
    code, out, _ = cli("log", "--disliked", "--export", str(export))
    assert code == 0 and "without a right source" in out and "log rate ID --correct" in out
    assert json.loads(export.read_text()) == {"query": "archive utility", "expected": []}
    code, out, err = cli("eval", str(export))
    assert code == 0, err
    assert "1 unlabeled case (no expected sources), nothing to score" in out
    assert "brain log rate ID --correct PATH" in out
    code, out, _ = cli("log", "--disliked")
    assert f"brain log rate {archive} --correct PATH" in out

    right = tmp_path / "notes" / "linux" / "tar.md"
    right.parent.mkdir(parents=True)
    right.write_text("# tar\n", encoding="utf-8")
    code, out, err = cli("log", "rate", str(archive), "--correct", str(right))
    assert code == 0 and f"right source: {right}" in out, err
    code, out, _ = cli("log", "rate", str(stash), "--up")
    assert code == 0 and "rated 👍" in out
    code, out, _ = cli("log", "--disliked", "--export", str(export))
    assert code == 0 and "wrote 1 eval case" in out and "without a right source" not in out
    assert json.loads(export.read_text()) == {"query": "archive utility",
                                              "expected": [str(right)]}
    code, out, err = cli("eval", str(export), "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"]["count"] == 1
    assert json.loads(out)["queries"][0]["rank"] is not None

    code, _, err = cli("log", "rate", str(archive), "--correct", str(tmp_path / "nope.md"))
    assert code == 1 and "no such file" in err
    code, _, err = cli("log", "rate", "999", "--down")
    assert code == 1 and "no retrieval log entry 999" in err
    code, _, err = cli("log", "rate", str(archive))
    assert code == 1 and "--up, --down or --correct" in err


def test_log_json_times_are_iso_8601(cli: Callable[..., tuple[int, str, str]], home: Path) -> None:
    """Issue 15 snag 9: every other --json uses ISO 8601; `brain log --json` used epoch seconds."""
    import re

    cli("search", "tar")
    with RetrievalLog.open(home / "data" / "retrieval_log.sqlite3") as log:
        log.rate(log.recent(1)[0].id, -1)
    _code, out, _ = cli("log", "--json")
    entry = json.loads(out)
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert re.fullmatch(iso, entry["time"]) and re.fullmatch(iso, entry["rated_at"])


def test_a_pdf_chunk_over_a_page_break_is_cited_with_its_page_range(
    real_cli, tmp_path: Path
) -> None:
    """Issue 15 snag 5: the range survives the index (manifest), the search output and JSON,
    the chat's citation label and a stored session."""
    from assistant.chat.service import item_from_hit
    from assistant.sessions.store import SessionStore
    from assistant.sessions.turn import Source
    from tests.unit.test_readers import make_pdf

    run, _ = real_cli
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "paper.pdf").write_bytes(make_pdf(["Rotation starts on page one", "logrotate"]))
    code, _, err = run("index", str(notes))
    assert code == 0, err
    code, out, err = run("search", "logrotate", "--json")
    assert code == 0, err
    [hit] = json.loads(out)["hits"]
    jsonschema.validate(json.loads(out), SEARCH_RESULT_SCHEMA)
    assert hit["pages"] == [1, 2]
    code, out, _ = run("search", "logrotate")
    assert "paper.pdf:1 (pages 1–2)" in out

    from assistant.context import AppContext
    from assistant.retrieval.open import close_retriever, open_retriever

    ctx = AppContext.load(str(tmp_path / "home"))
    retriever = open_retriever(ctx)
    try:
        result = retriever.search("logrotate")
    finally:
        close_retriever(retriever)
    item = item_from_hit(result.hits[0])
    assert item.location == "paper.pdf p. 1–2"
    store = SessionStore.open(tmp_path / "sessions.sqlite3")
    session = store.create(model="m")
    turn = store.add_turn(session.id, "q", "a [1]", status="complete", model="m",
                          sources=[Source(1, item, True)], memories=[])
    assert store.turn(turn.id).sources[0].item.location == "paper.pdf p. 1–2"
    store.close()
