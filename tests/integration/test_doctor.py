"""`brain doctor` against the fake Ollama: up, down, slow, model missing, broken local state."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import namedtuple
from pathlib import Path

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from tests.fake_ollama import FakeOllamaServer
from tests.fakes import HashEmbedder

CHECK_NAMES = ["config", "ollama", "chat model", "embedding", "vector store", "data dir",
               "disk space"]


@pytest.fixture
def fast_embedder(monkeypatch: pytest.MonkeyPatch) -> HashEmbedder:
    """Doctor logic tests use the hash embedder; the real model is checked once below."""
    embedder = HashEmbedder(dimension=384, model_id="test:hash-384")
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    return embedder


def _write_config(home: Path, text: str) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text, encoding="utf-8")


def _doctor_json(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = main(["doctor", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _in_order(names: list[str]) -> bool:
    """Every core check is reported, in the documented order (other checks may be added)."""
    return [n for n in names if n in CHECK_NAMES] == CHECK_NAMES


def _by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_all_good(ollama_home: Path, fast_embedder: HashEmbedder,
                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    positions = []
    for name in CHECK_NAMES:
        index = next(i for i, line in enumerate(out) if line[2:].startswith(name + " "))
        assert out[index].startswith("✓"), out[index]
        positions.append(index)
    assert positions == sorted(positions)
    text = "\n".join(out)
    assert "Ollama 0.12.6 at http://127.0.0.1:" in text
    assert "qwen3:4b (4.0B, context 262144, tools" in text
    assert "test:hash-384 (384-d" in text
    # A fresh home has no store yet, and the (read-only) doctor does not create one.
    assert f"no vector store yet at {ollama_home / 'data' / 'chroma'}" in text
    from indexing.vectors import VectorStore

    VectorStore.open(ollama_home / "data" / "chroma", "knowledge-x", model_id="m", dimension=4)
    assert main(["doctor"]) == 0
    assert f"embedded Chroma at {ollama_home / 'data' / 'chroma'}" in capsys.readouterr().out


def test_json_schema(ollama_home: Path, fast_embedder: HashEmbedder,
                     capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _doctor_json(capsys)
    assert code == 0 and report["ok"] is True
    assert _in_order([c["name"] for c in report["checks"]])
    for check in report["checks"]:
        assert set(check) == {"name", "ok", "detail", "hint", "essential"}
        assert isinstance(check["ok"], bool) and isinstance(check["essential"], bool)
        assert isinstance(check["detail"], str) and check["detail"]
    assert _by_name(report)["disk space"]["essential"] is False


def test_ollama_down_is_fast_and_clear(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                       fast_embedder: HashEmbedder,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\ntimeout = 10.0\n')
    fake_ollama.stop()
    start = time.monotonic()
    code = main(["doctor"])
    elapsed = time.monotonic() - start
    assert code == 1
    assert elapsed < 5, f"doctor took {elapsed:.1f} s with a 10 s timeout"
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    for name in CHECK_NAMES:  # every check still reported
        assert any(line[2:].startswith(name + " ") for line in lines), name
    ollama_line = next(line for line in lines if " ollama " in line)
    assert ollama_line.startswith("✗")
    assert f"Ollama is not running at {fake_ollama.url}" in ollama_line
    assert "ollama serve" in ollama_line
    assert "✓ vector store" in captured.out and "✓ data dir" in captured.out
    assert "essential check(s) failed: ollama, chat model" in captured.err


def test_slow_model_load_is_bounded_and_ollama_reported_first(
        ollama_home: Path, fake_ollama: FakeOllamaServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.doctor import MIN_CHECK_SECONDS, run_doctor

    release = threading.Event()

    class SlowEmbedder(HashEmbedder):
        def embed_query(self, text: str):
            release.wait(30)  # a model load that outlasts the timeout
            return super().embed_query(text)

    embedder = SlowEmbedder(dimension=384, model_id="test:slow")
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\ntimeout = 1.0\n')
    fake_ollama.stop()
    seen: list[tuple[str, float]] = []
    start = time.monotonic()
    try:
        report = run_doctor(on_check=lambda c: seen.append((c.name, time.monotonic() - start)))
    finally:
        release.set()
    elapsed = time.monotonic() - start
    assert elapsed < MIN_CHECK_SECONDS + 1.5
    emitted = dict(seen)
    assert _in_order([name for name, _ in seen])
    assert emitted["ollama"] < 1.5  # the verdict that matters is shown at once
    check = {c.name: c for c in report.checks}["embedding"]
    assert check.ok and "still loading after 3 s" in check.detail
    assert not report.ok  # Ollama is down


def test_slow_ollama_answers_within_the_timeout(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                                fast_embedder: HashEmbedder,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\ntimeout = 0.5\n')
    fake_ollama.script("/api/version", delay=5)
    start = time.monotonic()
    code, report = _doctor_json(capsys)
    assert time.monotonic() - start < 3
    assert code == 1
    check = _by_name(report)["ollama"]
    assert not check["ok"] and "did not answer within 0.5 s" in check["detail"]


def test_model_missing_says_pull(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                 fast_embedder: HashEmbedder,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.remove_model("qwen3:4b")
    code, report = _doctor_json(capsys)
    assert code == 1 and report["ok"] is False
    checks = _by_name(report)
    assert checks["ollama"]["ok"] is True
    model = checks["chat model"]
    assert model["ok"] is False and model["essential"] is True
    assert model["hint"] == "ollama pull qwen3:4b"
    # What could chat instead: the embedding model installed is no alternative.
    assert model["detail"] == "qwen3:4b is not pulled (chat models installed: none)"
    fake_ollama.add_model("llama3.2:1b", capabilities=("completion",))
    _code, report = _doctor_json(capsys)
    assert _by_name(report)["chat model"]["detail"] == (
        "qwen3:4b is not pulled (chat models installed: llama3.2:1b)")


def test_tools_setting_on_a_model_without_tools(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                                fast_embedder: HashEmbedder,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.add_model("gemma3:1b", family="gemma3", parameter_size="1B",
                          context_length=32768, capabilities=("completion",))
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\nmodel = "gemma3:1b"\n'
                               "tools = true\n")
    code, report = _doctor_json(capsys)
    check = _by_name(report)["chat model"]
    assert code == 0 and check["ok"]
    assert check["detail"] == ("gemma3:1b (1B, context 32768); it cannot use tools, so "
                               "[ollama] tools = true has no effect")


def test_embedding_model_as_chat_model_is_refused(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                                  fast_embedder: HashEmbedder,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\n'
                               'model = "nomic-embed-text"\n')
    code, report = _doctor_json(capsys)
    assert code == 1
    assert "cannot chat" in _by_name(report)["chat model"]["detail"]


def test_bad_config_still_reports_everything(home: Path, fast_embedder: HashEmbedder,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(home, "[ollama]\ntimeout = \"soon\"\n")
    code, report = _doctor_json(capsys)
    assert code == 1
    assert _in_order([c["name"] for c in report["checks"]])
    config = _by_name(report)["config"]
    assert not config["ok"]
    assert "ollama.timeout: expected number, got str 'soon'" in config["detail"]
    assert "config.toml" in config["detail"]


def test_embedding_failure_is_reported(ollama_home: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from assistant.errors import UserError

    def broken(self: AppContext) -> None:
        raise UserError("embedding model 'x' is not in the local cache", "pick another model")

    monkeypatch.setattr(AppContext, "embedder", broken)
    code, report = _doctor_json(capsys)
    assert code == 1
    check = _by_name(report)["embedding"]
    assert check["detail"] == "embedding model 'x' is not in the local cache"
    assert check["hint"] == "pick another model"


def test_data_dir_unusable(home: Path, fake_ollama: FakeOllamaServer, fast_embedder: HashEmbedder,
                           capsys: pytest.CaptureFixture[str]) -> None:
    home.mkdir(parents=True)
    (home / "data").write_text("not a directory")
    _write_config(home, f'[ollama]\nhost = "{fake_ollama.url}"\n')
    code, report = _doctor_json(capsys)
    assert code == 1
    checks = _by_name(report)
    assert not checks["data dir"]["ok"] and "cannot create" in checks["data dir"]["detail"]
    assert checks["ollama"]["ok"]  # unrelated checks unaffected


def test_open_permissions_and_low_disk_are_warnings(ollama_home: Path,
                                                    fast_embedder: HashEmbedder,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import shutil  # the doctor's (the module is one object)

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10**10, 10**10, 300_000_000))
    (ollama_home / "data").mkdir(parents=True, exist_ok=True)
    os.chmod(ollama_home / "data", 0o755)
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0  # warnings do not fail the doctor
    assert "! disk space" in out and "0.3 GB free" in out
    assert "! data dir" in out and "chmod 700" in out


def test_damaged_embedded_store(ollama_home: Path, fast_embedder: HashEmbedder,
                                capsys: pytest.CaptureFixture[str]) -> None:
    store = ollama_home / "data" / "chroma"
    store.mkdir(parents=True)
    (store / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    code, report = _doctor_json(capsys)
    check = _by_name(report)["vector store"]
    assert code == 1 and not check["ok"]
    assert f"{store / 'chroma.sqlite3'} is damaged (not a SQLite database)" in check["detail"]
    assert "brain index --rebuild" in check["hint"]
    databases = _by_name(report)["databases"]  # the same file, found by the databases check
    assert not databases["ok"] and str(store / "chroma.sqlite3") in databases["detail"]


def test_chroma_server_unreachable(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                   fast_embedder: HashEmbedder,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\n'
                               f'[store]\nvector_store = "http://127.0.0.1:{_free_port()}"\n')
    code, report = _doctor_json(capsys)
    assert code == 1
    check = _by_name(report)["vector store"]
    assert not check["ok"] and "no Chroma server" in check["detail"]
    assert "chroma run" in check["hint"]


def test_not_a_chroma_server(ollama_home: Path, fake_ollama: FakeOllamaServer,
                             fast_embedder: HashEmbedder,
                             capsys: pytest.CaptureFixture[str]) -> None:
    # The fake Ollama is a web server that is not Chroma: its 404 must be recognised.
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\n'
                               f'[store]\nvector_store = "{fake_ollama.url}"\n')
    _, report = _doctor_json(capsys)
    assert "is not a Chroma server" in _by_name(report)["vector store"]["detail"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the real embedding code path (indexing.embedder) ------------------------------------------

def test_bundled_model_loads_offline(ollama_home: Path, real_embedder,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    # The session's one real model load stands in for ctx.embedder()'s (same spec, same code).
    monkeypatch.setattr(AppContext, "embedder", lambda self: real_embedder)
    code, report = _doctor_json(capsys)
    check = _by_name(report)["embedding"]
    assert check["ok"], check
    assert "all-MiniLM-L6-v2" in check["detail"] and "(384-d" in check["detail"]
    assert code == 0


def test_embedding_through_ollama(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\n'
                               '[embedding]\nmodel = "ollama:nomic-embed-text"\n')
    code, report = _doctor_json(capsys)
    check = _by_name(report)["embedding"]
    assert check["ok"] and "768-d" in check["detail"], check
    assert code == 0
    assert fake_ollama.requests_to("/api/embed")  # really embedded through the server


def test_missing_embedding_model_folder(ollama_home: Path, fake_ollama: FakeOllamaServer,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    missing = ollama_home / "no-such-model"
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\n'
                               f'[embedding]\nmodel = "{missing}"\n')
    code, report = _doctor_json(capsys)
    check = _by_name(report)["embedding"]
    assert code == 1 and not check["ok"]
    assert str(missing) in check["detail"] and "\n" not in check["detail"]
    assert check["hint"]


# --- read-only (issue 15 snag 10) ---------------------------------------------------------------

def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def test_doctor_without_home_creates_nothing_in_the_user_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_ollama: FakeOllamaServer,
    fast_embedder: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run as a new user would, in the platform dirs: it used to create the config, data and
    cache dirs, the config file and a probe file there."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.delenv("BRAIN_HOME", raising=False)
    monkeypatch.setenv("HOME", str(user))
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(var, str(user / sub))
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "config" in out and "not created yet" in out
    assert list(user.iterdir()) == []
    assert code == 1  # Ollama is not at the default address; the rest is fine
    assert "✓ data dir" in out and "✓ vector store" in out


def test_doctor_leaves_an_existing_home_untouched(
    ollama_home: Path, fast_embedder: HashEmbedder, tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nSomething worth finding.\n", encoding="utf-8")
    assert main(["index", str(notes)]) == 0
    assert main(["memory", "add", "I like tea."]) == 0
    before = _tree(ollama_home)
    capsys.readouterr()
    code, report = _doctor_json(capsys)
    assert code == 0, report
    assert _tree(ollama_home) == before


def test_a_thinking_only_model_is_named_with_faster_alternatives(
    ollama_home: Path, fake_ollama: FakeOllamaServer, fast_embedder: HashEmbedder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, report = _doctor_json(capsys)  # the default qwen3:4b is Qwen3-4B-Thinking-2507
    thinking = _by_name(report)["thinking"]
    assert code == 0 and report["ok"] is True  # a warning, not a failure
    assert thinking["ok"] is False and thinking["essential"] is False
    assert "qwen3:4b is thinking-only" in thinking["detail"]
    assert "qwen3:4b-instruct-2507" in thinking["hint"] and "gemma3" in thinking["hint"]


def test_a_switchable_thinking_model_and_think_off(
    ollama_home: Path, fake_ollama: FakeOllamaServer, fast_embedder: HashEmbedder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_ollama.add_model("qwen3:8b", reasoning="hybrid")
    _write_config(ollama_home, f'[ollama]\nhost = "{fake_ollama.url}"\nmodel = "qwen3:8b"\n'
                               'think = "off"\n')
    _, report = _doctor_json(capsys)
    thinking = _by_name(report)["thinking"]
    assert thinking["ok"] is True and "thinking is off (faster)" in thinking["detail"]


def test_a_host_from_ollama_host_is_blamed_on_the_environment(
    ollama_home: Path, fake_ollama: FakeOllamaServer, fast_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 (9): the host came from OLLAMA_HOST, so the advice names OLLAMA_HOST, not a
    config file that never set it; a host the file sets is still the file's."""
    _write_config(ollama_home, "[ollama]\ntimeout = 5.0\n")
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.url)
    fake_ollama.stop()
    assert main(["doctor"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if " ollama " in x)
    assert f"Ollama is not running at {fake_ollama.url} (from OLLAMA_HOST)" in line, line
    assert "check OLLAMA_HOST in your environment" in line, line
    _write_config(ollama_home, '[ollama]\nhost = "http://127.0.0.1:9"\ntimeout = 5.0\n')
    assert main(["doctor"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if " ollama " in x)
    assert "OLLAMA_HOST" not in line and "[ollama] host in `brain config edit`" in line, line
