"""The config as TOML text: the commented default file written on first run, `brain config
show`, and the README's settings table, all from the schema's help texts (config.py)."""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from assistant.config import SECTIONS, Config, default_ollama_host, range_text
from assistant.ollama_host import DEFAULT_HOST
from assistant.paths import FILE_MODE, AppPaths


def toml_key(key: str) -> str:
    """Bare keys are ASCII letters, digits, - and _; anything else (中文, spaces) is quoted."""
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_value(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        import json

        # JSON escapes every control character TOML forbids except DEL.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }"
    raise TypeError(value)  # pragma: no cover


def settings_table(config: Config | None = None) -> list[tuple[str, str, Any, str]]:
    """(section, key, value, help) for every setting: for `config show` and the README."""
    config = config or Config()
    rows: list[tuple[str, str, Any, str]] = []
    for section in SECTIONS:
        obj = getattr(config, section)
        for f in fields(obj):
            rows.append((section, f.name, getattr(obj, f.name), f.metadata.get("help", "")))
    return rows


def render_markdown(config: Config | None = None) -> str:
    """A Markdown table of every setting (value and meaning), for the README."""
    config = config or Config()
    rows = ["| setting | value | meaning |", "| --- | --- | --- |"]
    for section, key, value, help_text in settings_table(config):
        shown = toml_value(value)
        if (section, key) == ("ollama", "host") and value == default_ollama_host():
            shown = f"$OLLAMA_HOST, else {shown}"
        cells = [f"`{section}.{key}`", f"`{shown}`", help_text]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    names = ", ".join(f"`{name}`" for name in config.personas)
    rows.append(f"| `personas.<name>` | {names} | System prompt presets; pick one with "
                "`ollama.persona`. |")
    return "\n".join(rows) + "\n"


def render_config(config: Config | None = None, *, commented: bool = True) -> str:
    """TOML text for `config`; with `commented`, every setting is a commented-out default."""
    config = config or Config()
    prefix = "# " if commented else ""
    if commented:  # the file written on first run
        out = [
            "# second-brain configuration.",
            "# Every setting is shown with its default value; uncomment a line to change it.",
            "# Run `brain config show` to see the values in effect.",
            "",
        ]
    else:  # `brain config show`: the values in effect, nothing to uncomment
        out = ["# The settings in effect (defaults, then this file's changes).", ""]
    current = None
    for section, key, value, help_text in settings_table(config):
        if section != current:
            if current is not None:
                out.append("")
            out.append(f"[{section}]")
            current = section
        allowed = range_text(section, key)
        out.append(f"# {help_text}" + (f" Range: {allowed}." if allowed else ""))
        if commented and (section, key) == ("ollama", "host"):
            # The file outlives this shell: the default written is the real one, not whatever
            # OLLAMA_HOST is now (which keeps applying as long as the line stays commented).
            value = DEFAULT_HOST if value == default_ollama_host() else value
        out.append(f"{prefix}{key} = {toml_value(value)}")
    out += ["", "# System prompt presets; choose one with ollama.persona.", "[personas]"]
    for name, prompt in config.personas.items():
        out.append(f"{prefix}{toml_key(name)} = {toml_value(prompt)}")
    return "\n".join(out) + "\n"


def ensure_config_file(paths: AppPaths) -> Path:
    """Write the commented default config on first run; never overwrite the user's file."""
    path = paths.config_file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A per-process temp name: the TUI and a CLI command may both be on their first run.
        tmp = path.with_suffix(f".toml.{os.getpid()}.tmp")
        tmp.write_text(render_config(), encoding="utf-8")
        tmp.chmod(FILE_MODE)
        tmp.replace(path)
    return path
