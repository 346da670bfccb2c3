"""One root for every user-facing error, so the CLI and the TUI map them with one `except`."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.errors import HintedError, UserError


def user_facing_errors() -> list[type[BaseException]]:
    from assistant.config import ConfigError
    from assistant.llm.errors import ChatError
    from assistant.llm.ollama_client import OllamaError
    from assistant.memory.store import SecretRejected
    from indexing.embedders.base import EmbeddingModelError
    from indexing.keywords import KeywordIndexError
    from indexing.knowledge_types import FolderError, KnowledgeError, ReembedNeeded
    from indexing.lock import IndexBusy
    from indexing.manifest import ManifestError
    from indexing.vector_errors import EmbeddingModelMismatch, VectorStoreError

    return [
        UserError, ChatError, ConfigError, SecretRejected, OllamaError, EmbeddingModelError,
        KeywordIndexError, KnowledgeError, FolderError, ReembedNeeded, IndexBusy, ManifestError,
        VectorStoreError, EmbeddingModelMismatch,
    ]


@pytest.mark.parametrize("error", user_facing_errors(), ids=lambda e: e.__name__)
def test_every_user_facing_error_is_a_hinted_error(error: type[BaseException]) -> None:
    assert issubclass(error, HintedError)


def test_theme_errors_share_the_root() -> None:
    from tui.themes import ThemeError

    assert issubclass(ThemeError, HintedError)


def test_message_and_hint_stay_apart() -> None:
    error = UserError("the index is busy", hint="wait for it")
    assert error.message == "the index is busy"
    assert str(error) == "the index is busy\n  hint: wait for it"


def test_the_cli_reports_an_indexing_error_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """indexing's errors used to need a translation table to reach the user untraced."""
    from assistant.cli.main import main

    notes = tmp_path / "notes"
    notes.mkdir()
    code = main(["--home", str(tmp_path / "home"), "folders", "rm", str(notes)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("brain: error: ") and "is not a registered folder" in err
    assert "Traceback" not in err


def test_a_boundary_logs_a_bugs_traceback_and_a_foreseen_failure_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`log_failure`: what a catch-all that goes on leaves in the log (issue 24 item 4)."""
    import logging

    from indexing.errors import log_failure

    log = logging.getLogger("tests.boundary")
    with caplog.at_level(logging.DEBUG, logger="tests.boundary"):
        log_failure(log, "hinted", UserError("the index is busy", hint="wait"))
        log_failure(log, "foreseen", OSError("disk full"), foreseen=(OSError,))
        log_failure(log, "bug", KeyError("oops"))
        log_failure(log, "quiet bug", ValueError("odd"), level=logging.DEBUG)
        log_failure(log, "quiet foreseen", ValueError("odd"), level=logging.DEBUG,
                    foreseen=(ValueError,))
    seen = [(r.getMessage().split(":")[0], r.levelno, r.exc_info is not None)
            for r in caplog.records]
    assert seen == [
        ("hinted", logging.WARNING, False),
        ("foreseen", logging.WARNING, False),
        ("bug", logging.WARNING, True),
        # Below what the log file keeps (INFO): a bug is raised to INFO so it reaches it.
        ("quiet bug", logging.INFO, True),
        ("quiet foreseen", logging.DEBUG, False),
    ]
    assert caplog.records[2].exc_info is not None and caplog.records[2].exc_info[0] is KeyError
