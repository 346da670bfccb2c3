"""Property-based bad-input tests for the parsers that face user files and model output.

- The config parser: any bytes in config.toml give a Config or a ConfigError (never a
  traceback), and any text the user puts in string settings survives a render → load round trip.
- Memory extraction's model-JSON parser: any reply gives memory objects or InvalidReply; every
  object the model returned is either kept or rejected with a reason (none silently dropped),
  and kept text is the model's text with whitespace normalised.
- `brain memory import` lines: any line gives a memory or a readable ValueError, text verbatim.
(The tokenizer and chunkers have their own property tests in tests/unit.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assistant.config import SECTIONS, Config, ConfigError
from assistant.config_load import config_from_dict, load_config
from assistant.config_render import render_config, toml_value
from assistant.memory.extraction import MAX_MEMORIES, InvalidReply, parse_reply, validate
from assistant.memory.restate import in_third_person
from assistant.memory.secrets import find_secret
from assistant.memory.transfer import parse_line

PROPS = settings(max_examples=100, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)  # typed: hypothesis takes category literals
# Text a user could type into a file: any code point except lone surrogates (not encodable).
user_text = st.text(alphabet=st.characters(blacklist_categories=SURROGATES), max_size=80)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | user_text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(user_text, inner, max_size=4),
    max_leaves=12,
)


# --- config ----------------------------------------------------------------------------------

@PROPS
@given(raw=st.binary(max_size=400) | user_text.map(lambda t: t.encode("utf-8")))
def test_any_config_file_gives_a_config_or_a_config_error(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(raw)
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert str(path) in str(exc)  # the message names the file
    else:
        assert isinstance(config, Config)


section_keys = st.sampled_from([*SECTIONS, "personas", "olama", "model"])
field_keys = st.sampled_from(["host", "model", "timeout", "top_k", "chunk_size", "theme",
                              "keybindings", "enabled", "vector_store", "nope"])


@PROPS
@given(data=st.dictionaries(section_keys, st.dictionaries(field_keys, json_values, max_size=4)
                            | json_values, max_size=4))
def test_any_parsed_toml_tree_gives_a_config_or_a_config_error(data: dict[str, Any]) -> None:
    try:
        config = config_from_dict(data)
    except ConfigError as exc:
        assert str(exc).strip()
    else:
        assert isinstance(config, Config)


persona_names = st.text(alphabet=st.characters(blacklist_categories=SURROGATES), min_size=1,
                        max_size=20)


@PROPS
@given(personas=st.dictionaries(persona_names, user_text, min_size=1, max_size=4),
       theme=user_text, keys=st.dictionaries(persona_names, user_text, max_size=3))
def test_string_settings_survive_render_and_load(
    tmp_path: Path, personas: dict[str, str], theme: str, keys: dict[str, str]
) -> None:
    """What the app writes back (render_config) reads back exactly: no text lost or mangled."""
    config = Config()
    config.personas.update(personas)
    config.ui.theme = theme
    config.ui.keybindings = keys
    path = tmp_path / "config.toml"
    path.write_text(render_config(config, commented=False), encoding="utf-8")
    # ui.theme must name a theme: the user's own theme file carries this one's name.
    (tmp_path / "themes").mkdir(exist_ok=True)
    (tmp_path / "themes" / "mine.toml").write_text(f"name = {toml_value(theme)}\n",
                                                   encoding="utf-8")
    if not theme:
        with pytest.raises(ConfigError, match=r"ui\.theme"):
            load_config(path)
        return
    loaded = load_config(path)
    assert loaded.personas == config.personas
    assert loaded.ui.theme == theme
    assert loaded.ui.keybindings == keys


# --- memory extraction: the model's JSON -----------------------------------------------------

@PROPS
@given(reply=user_text | json_values.map(json.dumps))
def test_any_model_reply_gives_items_or_invalid_reply(reply: str) -> None:
    try:
        items = parse_reply(reply)
    except InvalidReply as exc:
        assert str(exc)
    else:
        assert all(isinstance(item, dict) for item in items)


memory_objects = st.fixed_dictionaries(
    {"text": user_text},
    optional={
        "type": st.sampled_from(["fact", "preference", "episode", "instruction", "bogus"])
        | json_scalars,
        "key": json_scalars,
        "confidence": json_scalars,
        "importance": json_scalars,
    },
)


@PROPS
@given(items=st.lists(memory_objects, max_size=8), fenced=st.booleans(), bare=st.booleans())
def test_every_returned_memory_is_kept_verbatim_or_rejected_with_a_reason(
    items: list[dict[str, Any]], fenced: bool, bare: bool
) -> None:
    payload = json.dumps(items if bare else {"memories": items}, ensure_ascii=False)
    reply = f"```json\n{payload}\n```" if fenced else payload
    parsed = parse_reply(reply)
    assert parsed == items  # the parser hands on exactly what the model said
    user_turns = [item["text"] for item in items] or ["hello"]
    kept, rejected = validate(parsed, user_turns)
    assert len(kept) + len(rejected) == min(len(items), MAX_MEMORIES)
    kept_texts = [m.text for m in kept]
    said = [" ".join(i["text"].split()) for i in items[:MAX_MEMORIES]]
    # kept as said, or as said with the person changed ("I …" → "The user …")
    normalised = said + [in_third_person(text) for text in said]
    for text in kept_texts:
        assert text in normalised
        assert not find_secret(text)
        assert min(m.confidence for m in kept) >= 0.0 and max(m.importance for m in kept) <= 1.0
    for _text, reason in rejected:
        assert reason


# --- memory import lines ---------------------------------------------------------------------

@PROPS
@given(line=user_text | json_values.map(lambda v: json.dumps(v, ensure_ascii=False)))
def test_any_import_line_gives_a_memory_or_a_readable_error(line: str) -> None:
    try:
        memory, _session = parse_line(line)
    except ValueError as exc:
        assert str(exc)
    else:
        assert memory.text.strip()


@PROPS
@given(text=user_text)
def test_imported_text_is_stored_verbatim(text: str) -> None:
    assume(text.strip() and not find_secret(text))
    memory, _ = parse_line(json.dumps({"text": text, "type": "fact"}, ensure_ascii=False))
    assert memory.text == text.strip()
