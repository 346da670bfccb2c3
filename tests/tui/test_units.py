"""Pure pieces of the TUI: themes as data, persisted state, citations, highlighting, keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.actions import ACTION_NAMES, validate_keymap
from tui.highlight import highlight, query_terms
from tui.screens.index_manager import format_rate
from tui.screens.source_preview import editor_command
from tui.state import UiState, load_state, save_state
from tui.themes import ThemeError, load_themes, theme_from_toml
from tui.widgets.message import cited_numbers, code_blocks, linkify_citations


def test_bundled_themes_are_valid_and_varied() -> None:
    loaded = load_themes()
    names = loaded.names()
    assert {"brain-dark", "brain-light", "high-contrast"} <= set(names)
    assert len(names) >= 4
    assert loaded.errors == ()
    by_name = {t.name: t for t in loaded.themes}
    assert by_name["brain-dark"].dark and not by_name["brain-light"].dark


def test_user_theme_overrides_and_bad_one_is_reported(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#ff0000"\n')
    (tmp_path / "brain-dark.toml").write_text('name = "brain-dark"\nprimary = "#00ff00"\n')
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = "not a colour"\n')
    (tmp_path / "typo.toml").write_text('name = "typo"\nprimary = "#fff"\nprimray = "#000"\n')
    loaded = load_themes(tmp_path)
    themes = {t.name: t for t in loaded.themes}
    assert themes["mine"].primary == "#ff0000"
    assert themes["brain-dark"].primary == "#00ff00"
    assert "broken" not in themes and "typo" not in themes
    assert any("broken.toml: primary: not a colour" in e for e in loaded.errors)
    assert any("unknown theme key(s) primray" in e for e in loaded.errors)


def test_theme_needs_primary(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n')
    with pytest.raises(ThemeError, match="missing required key 'primary'"):
        theme_from_toml(path)


def test_state_round_trip_and_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "ui_state.json"
    assert load_state(path) == UiState()
    state = UiState(theme="brain-light", side_width=70, sources_share=40, show_sources=False,
                    last_session="abc")
    save_state(path, state)
    assert load_state(path) == state
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    assert load_state(path) == UiState()
    path.write_text('{"side_width": 5000, "sources_share": "x", "show_memories": 1}')
    loaded = load_state(path)
    assert loaded.side_width == 120  # clamped
    assert loaded.sources_share == UiState().sources_share  # wrong type: default
    assert loaded.show_memories is True


def test_citations_become_links_outside_code() -> None:
    text = "Use pop [1] and apply [2].\n\n```\narr[1] = 2\n```\nInline `x[3]` stays."
    linked = linkify_citations(text)
    assert "[\\[1\\]](cite:1)" in linked and "[\\[2\\]](cite:2)" in linked
    assert "arr[1] = 2" in linked and "`x[3]`" in linked
    assert cited_numbers("see [2], [1] and [2]") == (2, 1)
    assert code_blocks(text) == ["arr[1] = 2"]


def test_query_terms_and_highlight() -> None:
    assert query_terms("How do I apply a git-stash?") == ["git-stash", "apply"]
    assert "配置" in query_terms("如何配置代理")
    rich_text = highlight("Run git-stash to APPLY changes", "apply git-stash")
    marked = [rich_text.plain[s.start:s.end] for s in rich_text.spans]
    assert marked == ["git-stash", "APPLY"]


def test_editor_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "nvim -u NONE")
    assert editor_command("/a b/c.md", 12) == ["nvim", "-u", "NONE", "+12", "/a b/c.md"]
    monkeypatch.setenv("VISUAL", "code --wait")
    assert editor_command("/x.py", 3) == ["code", "--wait", "--goto", "/x.py:3"]


def test_keymap_validation() -> None:
    good, problems = validate_keymap({"help": "f13", "nope": "x", "quit": " "})
    assert good == {"help": "f13"}
    assert problems == ["ui.keybindings: unknown action 'nope'", "ui.keybindings.quit: empty key"]
    # Issue 23: a key no terminal sends, or one another action has, was accepted silently.
    good, problems = validate_keymap({"help": "f99", "sessions": "f9", "models": "ctrl+plus"})
    assert good == {"models": "ctrl+plus"}
    assert problems == [
        "ui.keybindings.help: 'f99' is not a key (keys look like f1…f24, ctrl+x, alt+left, "
        "escape); the default is kept",
        "ui.keybindings.sessions: 'f9' is already the key of 'continue_answer'; the default is "
        "kept"]
    assert {"quit", "help", "sessions", "index_manager", "forget_all"} <= ACTION_NAMES


def test_format_rate() -> None:
    assert format_rate(0, 10, 0.0) == "0/10 files"
    assert format_rate(5, 10, 2.0) == "5/10 files · 2.5 files/s · ETA 2 s"


def test_theme_css_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "ledger.toml").write_text(
        'name = "ledger"\nprimary = "#884400"\ncss = "#status { text-style: bold; }"\n'
    )
    (tmp_path / "bad.toml").write_text('name = "bad"\nprimary = "#000"\ncss = 3\n')
    loaded = load_themes(tmp_path)
    assert loaded.css["ledger"] == "#status { text-style: bold; }"
    assert "library-amber" in loaded.css  # a bundled theme with extra CSS
    assert "brain-dark" not in loaded.css
    assert any("bad.toml: css: expected a string" in e for e in loaded.errors)


def test_source_label_counts_the_files_folded_chunks() -> None:
    from tui.views import SourceView
    from tui.widgets.sources_pane import source_label

    view = SourceView(1, "c1", "/n/kill.md", "kill.md", "kill", "kill -9 PID", 1, 3, 0.8, 1.0,
                      1, False)
    assert source_label(view).plain == "kill.md\nkill"
    folded = SourceView(1, "c1", "/n/kill.md", "kill.md", "", "kill -9 PID", 1, 3, 0.8, 1.0, 1,
                        False, more_from_file=2)
    assert source_label(folded).plain == "kill.md\n—  +2 more from this file"


def test_a_pdf_source_row_names_its_page(ctx) -> None:
    """Issue 23: the PDF row in the sources pane had no page (the answer cites `p. 3`)."""
    from assistant.sessions.turn import KnowledgeItem, Source
    from tui.backend.convert import source_view
    from tui.widgets.sources_pane import source_label

    def row(page: int | None, end_page: int | None) -> str:
        item = KnowledgeItem("c1", "text", "/docs/paper.pdf", "paper.pdf", "Intro", 0.5,
                             page=page, end_page=end_page)
        view = source_view(Source(1, item), ctx)
        return source_label(view).plain.splitlines()[0]

    assert row(3, None) == "paper.pdf p. 3"
    assert row(1, 2) == "paper.pdf p. 1–2"
    assert row(None, None) == "paper.pdf"
