"""A tool that fails never ends the turn: the model reads the error, the log keeps a bug's
traceback and a user-facing failure (a HintedError) in one line."""

from __future__ import annotations

import logging

import pytest

from assistant.chat.tools import run_tool
from assistant.errors import UserError
from assistant.sessions.turn import Retrieval


def _search(query: str, top_k: int) -> Retrieval:
    raise KeyError("a search bug")


def _search_busy(query: str, top_k: int) -> Retrieval:
    raise UserError("the index is busy", hint="wait for the sync")


def _remember(text: str, kind: str) -> str:
    return f"Remembered ({kind}): {text}"


def test_a_failing_tool_is_reported_to_the_model_and_a_bug_logged_in_full(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="assistant.chat.tools"):
        searched = run_tool("search_knowledge", {"query": "kernels"}, next_n=1, search=_search,
                            remember=_remember)
        busy = run_tool("search_knowledge", {"query": "kernels"}, next_n=1,
                        search=_search_busy, remember=_remember)
    assert searched.content == "error: search_knowledge failed: 'a search bug'"
    assert not searched.use.ok
    assert busy.content.startswith("error: search_knowledge failed: the index is busy")
    said = [r for r in caplog.records if r.name == "assistant.chat.tools"]
    assert [(r.levelno, r.exc_info is not None) for r in said] == [
        (logging.WARNING, True), (logging.WARNING, False)]
    assert said[0].exc_info is not None and said[0].exc_info[0] is KeyError
