"""The TOML config: strict validation with one clear line per mistake, and a commented default
file that round-trips."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.cli.main import main
from assistant.config import DEFAULT_PERSONAS, Config, ConfigError, range_text
from assistant.config_load import load_config
from assistant.config_render import ensure_config_file, render_config, settings_table
from assistant.paths import resolve_paths

_SETTING_LINE = re.compile(r"^# (\w+ = .*)$")


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "config.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str | bytes) -> str:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "\n" not in message, "config errors are one line"
    assert message.startswith(f"{path}: ")
    return message[len(f"{path}: "):]


def test_good_file(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[ollama]
host = "http://127.0.0.1:9999"
model = "llama3.2:3b"
timeout = 30            # an integer is fine for a number
persona = "concise"

[indexing]
chunk_size = 800
chunk_overlap = 100
exclude = ["*.log", "node_modules/"]

[retrieval]
top_k = 8
score_threshold = 0.4

[store]
vector_store = "http://127.0.0.1:8000"

[ui]
theme = "brain-light"
keybindings = { focus_sources = "ctrl+s" }
""")
    config = load_config(path)
    assert config.source == path
    assert config.ollama.host == "http://127.0.0.1:9999"
    assert config.ollama.model == "llama3.2:3b"
    assert config.ollama.timeout == 30.0 and isinstance(config.ollama.timeout, float)
    assert config.indexing.exclude == ["*.log", "node_modules/"]
    assert (config.indexing.chunk_size, config.indexing.chunk_overlap) == (800, 100)
    assert config.retrieval.top_k == 8
    assert config.store.vector_store == "http://127.0.0.1:8000"
    assert config.ui.keybindings == {"focus_sources": "ctrl+s"}
    assert config.system_prompt() == DEFAULT_PERSONAS["concise"]
    # Untouched settings keep their defaults.
    assert config.memory == Config().memory


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")
    assert config.source is None
    assert config == Config()


def test_bad_toml_names_file_and_line(tmp_path: Path) -> None:
    message = _error(tmp_path, "[ollama]\nmodel = qwen3\n")
    assert message.startswith("invalid TOML:")
    assert "line 2" in message


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    message = _error(tmp_path, "[ollama]\nmodle = \"x\"\n")
    assert message.startswith("[ollama] unknown key 'modle' (did you mean 'model'?)")
    assert "known: context_window, first_token_timeout, host" in message


def test_removed_settings_still_load_and_do_nothing(tmp_path: Path) -> None:
    """retrieval.rewrite_queries and memory.profile_every_sessions never did anything and
    were removed; a file that still sets them must keep loading."""
    path = tmp_path / "config.toml"
    path.write_text("[retrieval]\nrewrite_queries = true\ntop_k = 4\n"
                    "[memory]\nprofile_every_sessions = 3\n", encoding="utf-8")
    config = load_config(path)
    assert config.retrieval.top_k == 4
    assert not hasattr(config.retrieval, "rewrite_queries")
    assert not hasattr(config.memory, "profile_every_sessions")


def test_unknown_section_and_setting_outside_its_section(tmp_path: Path) -> None:
    assert "unknown section or key 'olama' (did you mean 'ollama'?)" in _error(
        tmp_path, "[olama]\nmodel = \"x\"\n"
    )
    assert "did you mean top_k under the [retrieval] header?" in _error(tmp_path, "top_k = 3\n")


@pytest.mark.parametrize(("text", "expected"), [
    ('[ollama]\ntimeout = "soon"\n', "ollama.timeout: expected number, got str 'soon'"),
    ("[retrieval]\ntop_k = 2.5\n", "retrieval.top_k: expected integer, got float 2.5"),
    ("[retrieval]\ntop_k = true\n", "retrieval.top_k: expected integer, got bool True"),
    ("[ollama]\ntools = 1\n", "ollama.tools: expected boolean, got int 1"),
    ('[indexing]\nexclude = "*.log"\n', "indexing.exclude: expected list of string, got str"),
    ("[indexing]\nexclude = [1]\n", "indexing.exclude[0]: expected string, got int 1"),
    ("[ui]\nkeybindings = { quit = 3 }\n", "ui.keybindings.quit: expected string, got int 3"),
    ("ollama = 3\n", "ollama: expected a [ollama] table, got int"),
    ("[personas]\nshort = 5\n", "personas.short: expected string, got int 5"),
])
def test_wrong_types(tmp_path: Path, text: str, expected: str) -> None:
    assert _error(tmp_path, text).startswith(expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("[retrieval]\ntop_k = 0\n", "retrieval.top_k: expected integer between 1 and 200, got 0"),
    ("[ollama]\ntemperature = 3.5\n", "ollama.temperature: expected number between 0 and 2"),
    ("[memory]\nbudget_share = 1.0\n", "memory.budget_share: expected number between 0 and 0.9"),
    ("[indexing]\nchunk_size = 500\nchunk_overlap = 500\n",
     "indexing.chunk_overlap: expected integer smaller than indexing.chunk_size (500)"),
    ('[retrieval]\nfusion = "RRF "\n', "retrieval.fusion: expected one of convex, rrf, got 'RRF '"),
])
def test_ranges(tmp_path: Path, text: str, expected: str) -> None:
    assert _error(tmp_path, text).startswith(expected)


@pytest.mark.parametrize(("text", "expected"), [
    ('[store]\nvector_store = "/srv/chroma"\n',
     "store.vector_store: expected empty (embedded store) or a Chroma server URL"),
    ('[store]\nvector_store = "http://:8000"\n', "store.vector_store: expected empty"),
    ('[store]\nvector_store = "http://h:notaport"\n', "store.vector_store: expected empty"),
    ('[ollama]\nhost = ""\n', "ollama.host: expected a URL like http://localhost:11434"),
    ('[ollama]\nhost = "local host"\n', "ollama.host: expected a URL"),
    ('[ollama]\nhost = "ftp://x:1"\n', "ollama.host: expected a URL"),
])
def test_urls_are_checked_when_loading(tmp_path: Path, text: str, expected: str) -> None:
    assert _error(tmp_path, text).startswith(expected)


def test_accepted_urls(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, '[store]\nvector_store = "https://chroma.lan:8443"\n'
                                          '[ollama]\nhost = "gpu-box:11434"\n'))
    assert config.store.vector_store == "https://chroma.lan:8443"
    assert config.ollama.host == "gpu-box:11434"  # the client adds http:// as Ollama does


def test_personas_merge_and_select(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, """
[ollama]
persona = "pirate"
[personas]
pirate = "Answer like a pirate."
concise = "Shorter than short."
"""))
    assert config.system_prompt() == "Answer like a pirate."
    assert config.personas["teacher"] == DEFAULT_PERSONAS["teacher"]  # defaults kept
    assert config.personas["concise"] == "Shorter than short."  # and overridable
    message = _error(tmp_path, '[ollama]\npersona = "nobody"\n')
    assert message == "ollama.persona: expected one of concise, default, teacher, got 'nobody'"


def test_utf8(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, '[personas]\n"中文" = "用中文简洁地回答。"\n'
                                          '[ollama]\npersona = "中文"\n'))
    assert config.system_prompt() == "用中文简洁地回答。"
    # `config show` writes such names quoted, so its output stays valid TOML.
    shown = tomllib.loads(render_config(config, commented=False))
    assert shown["personas"]["中文"] == "用中文简洁地回答。"
    assert "not UTF-8" in _error(tmp_path, b"[ollama]\nmodel = \"\xff\xfe\"\n")
    # A BOM (Windows editors) is not an error.
    bom = load_config(_write(tmp_path, "\ufeff[ollama]\nmodel = \"m\"\n".encode()))
    assert bom.ollama.model == "m"


def test_unreadable_config_is_a_config_error(tmp_path: Path) -> None:
    directory = tmp_path / "config.toml"
    directory.mkdir()
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(directory)


# --- the commented default file -------------------------------------------------------------

def test_commented_default_parses_to_the_defaults(tmp_path: Path) -> None:
    text = render_config()
    assert tomllib.loads(text) == {section: {} for section in
                                   [*(s for s, *_ in settings_table()), "personas"]}
    assert replace(load_config(_write(tmp_path, text)), source=None) == Config()


def test_every_setting_is_documented_in_the_default_file() -> None:
    text = render_config()
    for section, key, _value, help_text in settings_table():
        assert f"[{section}]" in text
        assert help_text, f"{section}.{key} has no help text"
        allowed = range_text(section, key)
        documented = f"# {help_text}" + (f" Range: {allowed}." if allowed else "")
        assert f"{documented}\n# {key} = " in text


def test_uncommenting_the_defaults_gives_the_defaults(tmp_path: Path) -> None:
    lines = [_SETTING_LINE.sub(r"\1", line) for line in render_config().splitlines()]
    uncommented = "\n".join(lines) + "\n"
    assert "# timeout = " not in uncommented
    assert replace(load_config(_write(tmp_path, uncommented)), source=None) == Config()


def test_uncommenting_one_value_changes_it(tmp_path: Path) -> None:
    text = render_config().replace('# model = "qwen3:4b"', 'model = "mistral:7b"', 1)
    text = text.replace("# top_k = 6", "top_k = 3", 1)
    config = load_config(_write(tmp_path, text))
    assert config.ollama.model == "mistral:7b"
    assert config.retrieval.top_k == 3
    assert config.embedding == Config().embedding


def test_rendered_custom_config_round_trips(tmp_path: Path) -> None:
    custom = replace(Config(), personas={**DEFAULT_PERSONAS, "q": 'say "hi"\nthen stop'})
    custom.ollama.model = "phi4:14b"
    custom.indexing.exclude = ["*.tmp", "中文/"]
    custom.ui.keybindings = {"quit": "ctrl+q", "focus sources": "ctrl+s"}
    parsed = load_config(_write(tmp_path, render_config(custom, commented=False)))
    assert replace(parsed, source=None) == custom


def test_ollama_host_default_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    assert Config().ollama.host == "http://127.0.0.1:11500"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box")
    assert Config().ollama.host == "http://gpu-box:11434"
    monkeypatch.delenv("OLLAMA_HOST")
    assert Config().ollama.host == "http://localhost:11434"


def test_first_run_writes_a_private_commented_file_once(home: Path) -> None:
    paths = resolve_paths(str(home)).ensure()
    path = ensure_config_file(paths)
    assert path.read_text(encoding="utf-8") == render_config()
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text('[ollama]\nmodel = "mine"\n', encoding="utf-8")
    ensure_config_file(paths)
    assert load_config(path).ollama.model == "mine"  # never overwritten


# --- `brain config …` ---------------------------------------------------------------------

def test_config_path_and_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "path"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == home / "config" / "config.toml"
    path.write_text('[retrieval]\ntop_k = 9\n', encoding="utf-8")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {path}\n")
    shown = tomllib.loads(out)
    assert shown["retrieval"]["top_k"] == 9
    assert shown["ollama"]["model"] == "qwen3:4b"  # effective values, not just the file's
    # Nothing is commented out in `show`, so the template's advice would be wrong there.
    assert "uncomment" not in out


def test_an_unknown_theme_is_an_error_naming_the_known_ones(home: Path) -> None:
    """Issue 15 snag 9: `ui.theme = "nope"` was silently ignored."""
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[ui]\ntheme = "nope"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}: ui.theme: unknown theme 'nope' "
        "(known: brain-dark, brain-light, high-contrast, library-amber)"
    )
    themes = home / "config" / "themes"
    themes.mkdir()
    (themes / "nope.toml").write_text('primary = "#ff0000"\n', encoding="utf-8")
    assert load_config(path).ui.theme == "nope"  # the user's own theme, by file name
    (themes / "named.toml").write_text('name = "solar"\n', encoding="utf-8")
    path.write_text('[ui]\ntheme = "solar"\n', encoding="utf-8")
    assert load_config(path).ui.theme == "solar"  # or by its name key


def test_config_show_markdown(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| setting | value | meaning |"
    rows = {line.split(" | ")[0].strip("| `"): line for line in lines[2:]}
    assert set(rows) == {f"{s}.{k}" for s, k, *_ in settings_table()} | {"personas.<name>"}
    assert rows["ollama.model"] == (
        '| `ollama.model` | `"qwen3:4b"` | Chat model, as listed by `ollama list`. |'
    )
    assert "$OLLAMA_HOST, else" in rows["ollama.host"]
    assert all(line.count(" | ") == 2 for line in lines)  # no stray column separators


def test_bad_config_is_one_line_and_exit_1(home: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[retrieval]\ntop_k = \"many\"\n", encoding="utf-8")
    assert main(["config", "show"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"brain: error: {path}: retrieval.top_k: expected integer, got str 'many'\n"
    )


def test_config_edit_validates_the_result(home: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    def editor(old: str, new: str) -> str:
        """An $EDITOR that replaces `old` with `new` in the file it is given."""
        script = ("import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
                  f"p.write_text(p.read_text().replace({old!r}, {new!r}))")
        return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"

    monkeypatch.setenv("VISUAL", editor("# history_turns = 8", "history_turns = 3"))
    assert main(["config", "edit"]) == 0
    assert capsys.readouterr().out.strip().endswith("config.toml: OK")
    assert load_config(home / "config" / "config.toml").chat.history_turns == 3
    monkeypatch.setenv("VISUAL", editor("history_turns = 3", "bogus = 1"))
    assert main(["config", "edit"]) == 1
    assert "unknown key 'bogus'" in capsys.readouterr().err
    # A broken config can still be located and re-opened: that is how the user fixes it.
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(home / "config" / "config.toml")
    monkeypatch.setenv("VISUAL", "no-such-editor-binary")
    assert main(["config", "edit"]) == 1
    assert "cannot start editor" in capsys.readouterr().err


def test_first_run_writes_the_real_default_host_not_the_environments(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 (9): OLLAMA_HOST at first run is not baked into the file as "the default"
    (uncommenting the line would pin a host the user never chose); it still applies."""
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    path = ensure_config_file(resolve_paths(str(home)).ensure())
    text = path.read_text(encoding="utf-8")
    assert 'host = "http://localhost:11434"' in text and "gpu-box" not in text
    assert "$OLLAMA_HOST" in text  # the comment says the environment overrides the default
    assert load_config(path).ollama.host == "http://gpu-box:11500"
