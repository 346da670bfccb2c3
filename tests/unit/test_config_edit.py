"""Issue 23 (9): one setting changed from the TUI is written to the config file by the file's own
rules (assistant/config_edit.py): the one line changes, comments and other keys stay, and a
value the file would refuse is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.config import ConfigError
from assistant.config_edit import prepare, save
from assistant.config_load import load_config
from assistant.config_render import render_config, settings_table


def _edit(path: Path, name: str, raw: str) -> str:
    section, key = name.split(".", 1)
    save(path, prepare(path, section, key, raw))
    return path.read_text(encoding="utf-8")


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new), "lines were added or removed"
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_the_first_runs_file_changes_one_commented_default(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(render_config(), encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    after = _edit(path, "ollama.temperature", "0.9")
    assert _changed_lines(before, after) == [("# temperature = 0.3", "temperature = 0.9")]
    assert load_config(path).ollama.temperature == 0.9
    after2 = _edit(path, "indexing.watch", "off")  # yes/no/on/off/true/false
    assert _changed_lines(after, after2) == [("# watch = true", "watch = false")]


def test_a_users_file_keeps_its_comments_and_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# my settings\n[ollama]\nmodel = "phi4:14b"  # the big one\n'
                    'temperature = 0.3   # warm\n\n[ui]\ntheme = "brain-dark"\n',
                    encoding="utf-8")
    text = _edit(path, "ollama.temperature", "1.1")
    assert text == ('# my settings\n[ollama]\nmodel = "phi4:14b"  # the big one\n'
                    'temperature = 1.1   # warm\n\n[ui]\ntheme = "brain-dark"\n')
    text = _edit(path, "ollama.think", "off")  # a key the section lacks: added to it
    assert 'temperature = 1.1   # warm\nthink = "off"\n\n[ui]' in text
    text = _edit(path, "chat.history_turns", "4")  # a section the file lacks: appended
    assert text.endswith('theme = "brain-dark"\n\n[chat]\nhistory_turns = 4\n')
    config = load_config(path)
    assert (config.ollama.model, config.ollama.think, config.chat.history_turns) == (
        "phi4:14b", "off", 4)


@pytest.mark.parametrize(("name", "raw", "error"), [
    ("ollama.temperature", "5", "between 0 and 2"),
    ("ollama.temperature", "warm", "expected number"),
    ("chat.max_answer_tokens", "4096", "at most chat.answer_reserve"),
    ("ollama.think", "maybe", "expected one of auto, on, off"),
    ("ui.theme", "no-such-theme", "unknown theme"),
    ("indexing.watch", "sometimes", "expected true or false"),
    ("indexing.exclude", "*.tmp", "brain config edit"),
    ("ollama.colour", "red", "no such setting"),
])
def test_a_value_the_file_would_refuse_is_refused_and_nothing_is_written(
    tmp_path: Path, name: str, raw: str, error: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(render_config(), encoding="utf-8")
    before = path.read_bytes()
    section, key = name.split(".", 1)
    with pytest.raises(ConfigError, match=error) as caught:
        prepare(path, section, key, raw)
    assert "\n" not in caught.value.message
    assert path.read_bytes() == before


def test_a_line_it_cannot_read_safely_is_left_to_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = '[ollama]\nkeep_alive = """10m"""\n'  # valid TOML, not a one-line value
    path.write_text(original, encoding="utf-8")
    with pytest.raises(ConfigError, match="brain config edit"):
        prepare(path, "ollama", "keep_alive", "30m")
    assert path.read_text(encoding="utf-8") == original


_SCALAR_SETTINGS = [f"{s}.{k}" for s, k, v, _ in settings_table()
                    if isinstance(v, (bool, int, float, str))]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(_SCALAR_SETTINGS),
       raw=st.text(max_size=30) | st.sampled_from(["0", "1", "-1", "0.5", "1e9", "true", "off"]))
def test_any_value_is_saved_as_typed_or_refused_in_one_line(
    tmp_path: Path, name: str, raw: str
) -> None:
    """Whatever is typed for any setting: saved and loaded back as that value, or one line of
    error with the file byte for byte as it was."""
    path = tmp_path / "config.toml"
    path.write_text(render_config(), encoding="utf-8")
    before = path.read_bytes()
    section, key = name.split(".", 1)
    try:
        edit = prepare(path, section, key, raw)
    except ConfigError as exc:
        assert "\n" not in exc.message and path.read_bytes() == before
        return
    save(path, edit)
    assert getattr(getattr(load_config(path), section), key) == edit.value
    path.write_bytes(before)
