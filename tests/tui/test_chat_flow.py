"""Ask → streamed answer → sources with scores → preview; Esc cancels; feedback; copy."""

from __future__ import annotations

import threading

from textual.widgets import DataTable

from tests.tui.helpers import answer_finished, ask, wait_until
from tui.screens.source_preview import SourcePreview
from tui.widgets.chat_input import ChatInput
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane

SIZE = (140, 40)


async def test_ask_streams_answer_and_lists_sources(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "how do I apply a stash?")
        await wait_until(pilot, lambda: answer_finished(app), what="answer finished")
        answer = app.query_one(AnswerMessage)
        assert "git stash pop" in answer.text
        assert answer.text.endswith("```\n")
        assert "qwen3:4b" in str(answer.query_one(".answer-status").render())
        assert backend.chat.asked == [(None, "how do I apply a stash?", "qwen3:4b")]
        # The memory pane shows the memories this answer used.
        from tui.widgets.memory_pane import MemoryPane

        used = [i.memory.id for i in app.query_one(MemoryPane).items]
        assert used == ["m1", "m2"]
        assert app.chat_screen.chat.session_id == "s1"
        # The sources pane lists the retrieved files with their scores, cited marked.
        table = app.query_one(SourcesPane).table
        assert table.row_count == 3
        first = table.get_row_at(0)
        assert first[0] == "1"
        assert first[1].plain == "git/stash.md\nStash > Apply"
        assert first[2:] == ["82%", "0.91", "1", "✓⏱"]
        assert table.get_row_at(1)[5] == " "  # neither cited nor recent
        assert table.get_row_at(2)[2] == "—"  # keyword-only hit has no vector score
        # Selecting a source opens the preview with path:line and the matching terms.
        table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SourcePreview), what="preview")
        preview = app.screen
        assert "/notes/git/stash.md:12-15" in str(preview.query_one("#preview-path").render())
        spans = preview.query_one("#preview-text").render()
        assert any("stash" in spans.plain[s.start:s.end].lower() for s in spans.spans)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SourcePreview))
        # The input is empty again and remembers the question (Up recalls it).
        chat_input = app.query_one(ChatInput)
        chat_input.focus()
        assert chat_input.text == ""
        await pilot.press("up")
        assert chat_input.text == "how do I apply a stash?"


async def test_citation_key_jumps_to_source(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "stash?")
        await wait_until(pilot, lambda: answer_finished(app))
        answer = app.query_one(AnswerMessage)
        answer.focus()
        await pilot.press("2")
        await wait_until(pilot, lambda: isinstance(app.screen, SourcePreview))
        assert app.screen.source.relpath == "git/branch.md"
        await pilot.press("escape")
        assert app.query_one(SourcesPane).query_one(DataTable).cursor_row == 1
        # Clicking the rendered [1] link does the same.
        from textual.widgets import Markdown

        assert "(cite:1)" in answer.body.source
        answer.body.post_message(Markdown.LinkClicked(answer.body, "cite:1"))
        await wait_until(pilot, lambda: isinstance(app.screen, SourcePreview))
        assert app.screen.source.relpath == "git/stash.md"


async def test_escape_cancels_stream_and_keeps_partial(make_app, backend) -> None:
    gate = threading.Event()
    backend.chat.script.gate = gate
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "long answer please")
        await wait_until(pilot, lambda: app.query(AnswerMessage) and
                         app.query_one(AnswerMessage).text, what="first token")
        assert app.chat_screen.chat.generating is not None
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.query_one(AnswerMessage).finished, what="cancel")
        gate.set()
        answer = app.query_one(AnswerMessage)
        assert backend.chat.cancelled.is_set()
        assert answer.text == "Use "
        assert "interrupted" in str(answer.query_one(".answer-status").render())
        assert app.chat_screen.chat.generating is None
        # A new question works after a cancel.
        backend.chat.script.gate = None
        await ask(pilot, "again")
        await wait_until(pilot, lambda: len(app.query(AnswerMessage)) == 2
                         and app.query(AnswerMessage)[-1].finished)


async def test_feedback_and_copy(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "stash?")
        await wait_until(pilot, lambda: answer_finished(app))
        answer = app.query_one(AnswerMessage)
        answer.focus()
        await pilot.press("minus")
        await wait_until(pilot, lambda: backend.chat.feedback_log == [("log-1", -1)])
        await pilot.press("k")
        assert app.clipboard == "git stash pop"
        await pilot.press("y")
        assert app.clipboard == answer.text


async def test_failure_keeps_question_in_input(make_app, backend) -> None:
    from assistant.errors import UserError

    backend.chat.script.fail_with = UserError("model 'qwen3:4b' not found",
                                              "ollama pull qwen3:4b")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "my precious question")
        await wait_until(pilot, lambda: answer_finished(app))
        status = str(app.query_one(AnswerMessage).query_one(".answer-status").render())
        assert "ollama pull qwen3:4b" in status
        assert app.query_one(ChatInput).text == "my precious question"


async def test_preview_opens_editor_at_the_line(make_app, tmp_path, monkeypatch) -> None:
    import contextlib
    import dataclasses

    from tests.tui.fake_backend import sample_sources

    note = tmp_path / "stash.md"
    note.write_text("line\n" * 20)
    record = tmp_path / "args.txt"
    editor = tmp_path / "fake-editor"
    editor.write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    source = dataclasses.replace(sample_sources()[0], source=str(note))
    app = make_app()
    # Headless tests cannot hand the terminal over; the real app suspends itself here.
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(SourcePreview(source, "stash"))
        await pilot.pause()
        await pilot.press("e")
        await wait_until(pilot, lambda: record.exists(), what="editor started")
        assert record.read_text().split() == ["+12", str(note)]
        # A file deleted since indexing: a clear message, no editor.
        app.pop_screen()
        gone = dataclasses.replace(source, source=str(tmp_path / "gone.md"))
        app.push_screen(SourcePreview(gone, "stash"))
        await pilot.pause()
        await pilot.press("e")
        await wait_until(pilot, lambda: any("no longer exists" in m for m in app.notified))


async def test_an_editor_that_fails_oddly_is_said_and_logged_in_full(
    make_app, tmp_path, monkeypatch, caplog
) -> None:
    """A key action's catch-all: the app stays up, says what broke, and a failure nobody
    foresaw (not the terminal's SuspendNotSupported or an OSError) leaves its traceback."""
    import dataclasses
    import logging

    from tests.tui.fake_backend import sample_sources

    note = tmp_path / "stash.md"
    note.write_text("line\n" * 20)
    source = dataclasses.replace(sample_sources()[0], source=str(note))
    app = make_app()

    class BrokenSuspend:
        def __enter__(self) -> None:
            raise RuntimeError("the driver broke")

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(app, "suspend", BrokenSuspend)
    with caplog.at_level(logging.INFO, logger="tui.screens.source_preview"):
        async with app.run_test(size=SIZE) as pilot:
            app.push_screen(SourcePreview(source, "stash"))
            await pilot.pause()
            await pilot.press("e")
            await wait_until(pilot, lambda: any("Cannot open an editor here: the driver broke"
                                                in m for m in app.notified),
                             what="the failure said")
    [record] = [r for r in caplog.records if r.name == "tui.screens.source_preview"]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


async def test_watch_mode_shows_in_status_bar(make_app) -> None:
    app = make_app(watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "watching 0 folders" in app.chat_screen.status_bar.activity)


async def test_low_confidence_is_flagged(make_app, backend) -> None:
    backend.chat.script.low_confidence = True
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "what is the airspeed of a swallow?")
        await wait_until(pilot, lambda: answer_finished(app))
        status = app.query_one(AnswerMessage).query_one(".answer-status")
        assert "low confidence" in str(status.render()) and status.has_class("-warn")
        pane = app.query_one(SourcesPane)
        assert pane.has_class("-low")
        assert "low confidence" in str(pane.query_one(".pane-caption").render())


async def test_idle_time_runs_memory_extraction_once(make_app, backend) -> None:
    app = make_app(extract_idle_seconds=0.5)
    async with app.run_test(size=SIZE) as pilot:
        # Idle time on a clock the test moves (a busy machine stretches real gaps between keys
        # past any threshold): it stands still until the test says time has passed.
        clock = ManualClock()
        app.activity.clock = clock
        app.activity.touch()
        await ask(pilot, "I moved to Lisbon")
        await wait_until(pilot, lambda: answer_finished(app), what="answer finished")
        await checks_ran(pilot)
        assert backend.chat.extract_calls == 0  # no time has passed since the answer
        # 0.4 s between keys is typing, never idle.
        chat_input = app.query_one(ChatInput)
        for _ in range(4):
            clock.now += 0.4
            await pilot.press("x")
            await checks_ran(pilot)
        assert backend.chat.extract_calls == 0
        clock.now += 0.6  # the user stopped typing
        await wait_until(pilot, lambda: backend.chat.extract_calls == 1, what="idle extraction")
        assert backend.chat.extracted_through == 1
        assert chat_input.text == "xxxx"  # nothing the user typed was touched
        # Idle again with nothing new to extract: no second call.
        clock.now += 5.0
        await checks_ran(pilot)
        assert backend.chat.extract_calls == 1


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def checks_ran(pilot) -> None:
    """Real time for the idle check (every 0.125 s at a 0.5 s window) to run a few times."""
    import time

    until = time.monotonic() + 0.5
    await wait_until(pilot, lambda: time.monotonic() > until, what="idle checks")


async def test_idle_time_extracts_what_an_earlier_run_left(make_app, backend) -> None:
    """Quitting does not extract: the next run does, at its first idle moment, unasked."""
    backend.chat.left_pending = 2
    app = make_app(extract_idle_seconds=0.3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: backend.chat.extract_calls == 1, what="idle extraction")
        assert backend.chat.left_pending == 0 and backend.chat.asked == []


async def test_idle_extraction_off_with_zero(make_app, backend) -> None:
    import time

    app = make_app(extract_idle_seconds=0)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "I moved to Lisbon")
        await wait_until(pilot, lambda: answer_finished(app), what="answer finished")
        quiet_until = time.monotonic() + 0.5
        await wait_until(pilot, lambda: time.monotonic() > quiet_until, what="quiet time")
        assert backend.chat.extract_calls == 0


async def test_cut_off_answer_shows_a_warning(make_app, backend) -> None:
    backend.chat.script.notice = "answer cut off at the length limit"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "explain everything")
        await wait_until(pilot, lambda: answer_finished(app), what="answer finished")
        status = app.query_one(AnswerMessage).query_one(".answer-status")
        await wait_until(pilot, lambda: "⚠ answer cut off at the length limit"
                         in str(status.render()), what="cut-off note")
        assert status.has_class("-warn")


async def test_retrieval_warnings_show_in_the_status_line(make_app, backend) -> None:
    warning = ("the vector store holds no vectors for the 6 indexed chunks (was it deleted?): "
               "searching by keywords only; repair with `brain index --sync`")
    backend.chat.script.warnings = (warning,)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "when do backups run?")
        await wait_until(pilot, lambda: answer_finished(app))
        bar = app.chat_screen.status_bar
        await wait_until(pilot, lambda: "searching by keywords only" in bar.activity,
                         what="warning in the status line")
        assert "brain index --sync" in app.chat_screen.status_bar.activity


async def test_the_model_is_preloaded_again_when_ollama_comes_back(make_app, backend) -> None:
    backend.ollama.up = False
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        status = app.chat_screen.status
        await wait_until(pilot, lambda: backend.chat.preloaded and status.ollama_ok is False,
                         what="a preload that failed, Ollama down")
        assert status.preloaded is None
        # The banner says Ollama is down: no second message about the preload.
        assert not any("Could not load" in n.message for n in app._notifications)
        backend.ollama.up = True
        await wait_until(pilot, lambda: status.preloaded == "qwen3:4b",
                         what="the model preloaded once Ollama is back")
        assert [m for _s, m in backend.chat.preloaded] == ["qwen3:4b", "qwen3:4b"]
