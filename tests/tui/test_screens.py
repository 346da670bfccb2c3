"""Sessions, model picker, help, settings, index manager, memory pane, layout and keys."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import DataTable, Input, OptionList, ProgressBar, TextArea

from assistant.context import AppContext
from tests.tui.fake_backend import FakeBackend
from tests.tui.helpers import answer_finished, ask, open_sessions, wait_until
from tui.screens.confirm import ConfirmScreen
from tui.screens.help import HelpScreen
from tui.screens.index_manager import IndexManager
from tui.screens.memory_editor import MemoryEditor
from tui.screens.memory_history import MemoryHistory
from tui.screens.model_picker import ModelPicker
from tui.screens.settings import SettingsScreen
from tui.screens.text_prompt import TextPrompt
from tui.state import load_state
from tui.widgets.chat_input import ChatInput
from tui.widgets.memory_pane import MemoryItem, MemoryPane
from tui.widgets.message import AnswerMessage, QuestionMessage
from tui.widgets.sources_pane import SourcesPane

SIZE = (140, 40)


async def test_sessions_resume_rename_delete_export(make_app, backend, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sessions(pilot)
        assert [s.title for s in screen.sessions] == ["Git questions", "Rust lifetimes"]
        await pilot.press("down")  # from the search box to the list
        # Rename the first.
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one(Input).value = "Git stash notes"
        await pilot.press("enter")
        await wait_until(pilot, lambda: backend.sessions.sessions["s1"].title == "Git stash notes")
        await wait_until(pilot, lambda: screen.sessions[0].title == "Git stash notes")
        # Export it to Markdown.
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        target = tmp_path / "out.md"
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await wait_until(pilot, lambda: target.exists(), what="export written")
        assert target.read_text() == "# Git stash notes\n"
        # A path in a missing folder is refused in the prompt, nothing is lost.
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one(Input).value = str(tmp_path / "missing" / "x.md")
        await pilot.press("enter")
        await pilot.pause()
        assert "does not exist" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        # Delete the second (asks first).
        screen.query_one(DataTable).move_cursor(row=1)
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: "s2" not in backend.sessions.sessions)
        await wait_until(pilot, lambda: len(screen.sessions) == 1)
        # Resume the remaining one: its turns fill the chat and the panes.
        await pilot.press("enter")
        chat = app.chat_screen.chat
        await wait_until(pilot, lambda: chat.session_id == "s1" and app.query(AnswerMessage))
        assert app.query_one(QuestionMessage).text == "How do I apply a stash?"
        await wait_until(pilot, lambda: app.query_one(SourcesPane).table.row_count == 3,
                         what="the last answer's sources")
    assert load_state(app.ctx.paths.ui_state_file).last_session == "s1"


async def test_last_session_is_reopened(ctx: AppContext, make_app) -> None:
    from tui.state import UiState, save_state

    save_state(ctx.paths.ui_state_file, UiState(last_session="s1"))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.query(AnswerMessage), what="turns restored")
        assert app.chat_screen.chat.session_id == "s1"


async def test_missing_last_session_starts_fresh(ctx: AppContext, make_app) -> None:
    from tui.state import UiState, save_state

    save_state(ctx.paths.ui_state_file, UiState(last_session="gone"))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id is None,
                         what="session forgotten")
        assert any("no session gone" in m for m in app.notified)
    assert load_state(ctx.paths.ui_state_file).last_session is None


async def test_model_picker_switches_model(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker)
                         and app.screen.query_one(OptionList).option_count == 2)
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: app.chat_screen.chat.model == "llama3.2:3b")
        assert app.chat_screen.status_bar.model == "llama3.2:3b"
        # Loaded at once (at start, then on the change), in the session it belongs to.
        await wait_until(pilot, lambda: app.chat_screen.status.preloaded == "llama3.2:3b")
        assert [m for _s, m in backend.chat.preloaded] == ["qwen3:4b", "llama3.2:3b"]
        await ask(pilot, "hi")
        await wait_until(pilot, lambda: backend.chat.asked)
        assert backend.chat.asked[0][2] == "llama3.2:3b"


async def test_help_lists_keys_with_config_override(home: Path, backend: FakeBackend) -> None:
    from tests.tui.conftest import BrainTestApp

    config = home / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[ui]\nkeybindings = { help = "f13", bogus = "x" }\n', encoding="utf-8"
    )
    ctx = AppContext.load(str(home))
    app = BrainTestApp(ctx, backend, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("unknown action 'bogus'" in m for m in app.notified))
        await pilot.press("f13")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["anywhere", "F13", "Keys", "help"] in rows
        assert any(r[0] == "memory pane" and r[2] == "Undo" for r in rows)
        await pilot.press("escape")
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        table = app.screen.query_one(DataTable)
        keys = [table.get_row_at(i)[0] for i in range(table.row_count)]
        assert "ollama.model" in keys and "retrieval.top_k" in keys


async def test_index_manager_progress_then_counts(make_app, backend, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a.md", "b.md", "c.txt", "logo.bin"):
        (notes / name).write_text("x")
    gate = threading.Event()
    backend.knowledge.sync_gate = gate
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await wait_until(pilot, lambda: isinstance(app.screen, IndexManager))
        manager = app.screen
        app.chat_screen.indexing.add_folder(notes)
        bar = manager.query_one(ProgressBar)
        await wait_until(pilot, lambda: bar.display and bar.progress == 1, what="progress shown")
        label = str(manager.query_one("#sync-label").render())
        assert "1/3 files" in label and "a.md" in label
        assert "indexing" in app.chat_screen.status_bar.activity
        gate.set()
        await wait_until(pilot, lambda: manager.folders and manager.folders[0].files == 3,
                         what="counts")
        assert not bar.display
        assert "3 added" in str(manager.query_one("#sync-summary").render())
        skipped = manager.query_one("#skipped", DataTable)
        assert skipped.display and str(skipped.get_row_at(0)[1]) == "unsupported file type"
        await wait_until(pilot, lambda: "3 files / 6 chunks" in app.chat_screen.status_bar.index)
        # Remove asks first, then the folder is gone.
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: not manager.folders)
        assert backend.knowledge.folders_ == {}


async def test_memory_pane_pin_history_new_forget(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+r")
        pane = app.query_one(MemoryPane)
        await wait_until(pilot, lambda: len(pane.items) == 3)
        pane.list_view.focus()
        pane.list_view.index = 1
        await pilot.press("p")
        await wait_until(pilot, lambda: backend.memory.items["m2"].pinned)
        await wait_until(pilot, lambda: pane.items[1].memory.pinned)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryHistory))
        assert app.screen.query_one(DataTable).row_count == 1
        await pilot.press("escape")
        # Filter by type and text.
        pane.query_one("#memory-filter", Input).value = "rust"
        await wait_until(pilot, lambda: [i.memory.id for i in pane.items] == ["m2"])
        pane.query_one("#memory-filter", Input).value = ""
        await wait_until(pilot, lambda: len(pane.items) == 3)
        # A new memory written by the user.
        pane.list_view.focus()
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryEditor))
        await pilot.press("ctrl+s")  # empty: refused with a message, editor stays open
        assert "cannot be empty" in str(app.screen.query_one("#memory-editor-error").render())
        app.screen.query_one(TextArea).load_text("Uses fish shell")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: any(m.text == "Uses fish shell"
                                            for m in backend.memory.items.values()))
        await wait_until(pilot, lambda: any(i.memory.text == "Uses fish shell"
                                            for i in pane.items))
        # Memories from background extraction appear live, highlighted.
        backend.memory.add("Drinks oolong", "preference", actor="assistant")
        await wait_until(pilot, lambda: any(i.memory.text == "Drinks oolong"
                                            and i.has_class("-fresh")
                                            for i in pane.query(MemoryItem)))
        # Forget everything: cancel keeps all, confirm removes all.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"forget")
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await pilot.pause()
        assert backend.memory.count() == 5
        app.chat_screen.action_forget_all()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: backend.memory.count() == 0)
        await wait_until(pilot, lambda: not pane.items)
        await wait_until(pilot, lambda: app.chat_screen.status_bar.memories == 0)


async def test_layout_and_theme_survive_restart(ctx: AppContext, make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f6")  # hide sources
        await pilot.press("alt+left", "alt+left")  # wider side column
        await pilot.press("f8")  # next theme
        await pilot.pause()
        theme = app.theme
        assert theme != "brain-dark"
        assert not app.query_one(SourcesPane).display
        assert app.query_one("#side").styles.width.value == 64
    state = load_state(ctx.paths.ui_state_file)
    assert (state.show_sources, state.side_width, state.theme) == (False, 64, theme)
    again = make_app()
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == theme
        assert not again.query_one(SourcesPane).display
        assert again.query_one("#side").styles.width.value == 64


async def test_search_works_without_ollama(make_app, backend) -> None:
    backend.ollama.up = False
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat_screen.banner.display, what="offline banner")
        app.chat_screen.chat_input.load_text("stash")
        await pilot.press("ctrl+f")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.row_count == 3)
        assert "Search: stash" in str(pane.query_one(".pane-caption").render())
        # Asking fails clearly and keeps the question; recovery hides the banner.
        await ask(pilot, "how do I stash?")
        await wait_until(pilot, lambda: answer_finished(app))
        assert app.query_one(ChatInput).text == "how do I stash?"
        backend.ollama.up = True
        await wait_until(pilot, lambda: not app.chat_screen.banner.display, what="banner hidden")


async def test_input_newlines_and_history(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        box = app.chat_screen.chat_input
        box.focus()
        await pilot.press("a", "ctrl+j", "b")
        assert box.text == "a\nb"
        await pilot.press("enter")
        await wait_until(pilot, lambda: answer_finished(app))
        await pilot.press("h", "i", "enter")
        await wait_until(pilot, lambda: len(app.query(AnswerMessage)) == 2
                         and app.query(AnswerMessage)[-1].finished)
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert box.text == "hi"
        await pilot.press("up")
        assert box.text == "a\nb"
        await pilot.press("down", "down")
        assert box.text == "draft"


async def test_new_session_clears_chat(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "first")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id == "s1")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: not app.query(AnswerMessage))
        assert app.chat_screen.chat.session_id is None
        assert app.query_one(SourcesPane).table.row_count == 0
        app.chat_screen.chat_input.load_text("second")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(backend.chat.asked) == 2)
        assert backend.chat.asked[1][0] is None  # a new session, not s1


async def test_quit_finishes_pending_writes(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: backend.chat.closed, what="chat closed")
    assert app.return_value == 0


async def test_theme_extra_css_applies_and_bad_css_is_ignored(
    home: Path, backend: FakeBackend
) -> None:
    from tests.tui.conftest import BrainTestApp

    themes = home / "config" / "themes"
    themes.mkdir(parents=True)
    (themes / "ledger.toml").write_text(
        'name = "ledger"\nprimary = "#884400"\ncss = "#status { text-style: bold; }"\n'
    )
    (themes / "broken.toml").write_text(
        'name = "broken"\nprimary = "#000000"\ncss = "#status { colour: nope; }"\n'
    )
    app = BrainTestApp(AppContext.load(str(home)), backend, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        status = app.chat_screen.status_bar

        def bold() -> bool:  # read afresh: an asserted attribute would stay narrowed
            return bool(status.styles.text_style.bold)

        assert not bold()
        app.theme = "ledger"
        await pilot.pause()
        assert bold()
        app.theme = "brain-dark"  # the extra CSS goes with its theme
        await pilot.pause()
        assert not bold()
        app.theme = "broken"
        await wait_until(pilot, lambda: any("css is invalid" in m for m in app.notified))
        assert app.theme == "broken"  # colours still apply; only the CSS was dropped


async def test_theme_restored_at_startup_renders_like_a_live_switch(
    home: Path, ctx: AppContext, backend: FakeBackend
) -> None:
    # The saved theme is applied before the first frame (no restyle after mounting): its
    # colours and extra CSS must be exactly what switching to it live gives.
    from tests.tui.conftest import BrainTestApp

    themes = home / "config" / "themes"
    themes.mkdir(parents=True)
    (themes / "ledger.toml").write_text(
        'name = "ledger"\nprimary = "#884400"\ncss = "#status { text-style: bold; }"\n'
    )
    def settled(app: BrainTestApp) -> bool:
        # The status line changes as the start-up checks finish: compare the settled screens.
        status = app.chat_screen.status
        return bool(status.model_ready and status.ollama_ok
                    and app.chat_screen.status_bar.memories is not None)

    live = BrainTestApp(AppContext.load(str(home)), backend, watch=False)
    async with live.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: settled(live), what="start-up checks")
        live.theme = "ledger"
        await pilot.pause()
        switched = live.export_screenshot()
    assert load_state(ctx.paths.ui_state_file).theme == "ledger"
    restored = BrainTestApp(AppContext.load(str(home)), backend, watch=False)
    async with restored.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: settled(restored), what="start-up checks")
        await pilot.pause()
        assert restored.theme == "ledger"
        assert restored.chat_screen.status_bar.styles.text_style.bold
        assert restored.export_screenshot() == switched
