"""Every numeric setting has a validated range: both bounds accepted, one step beyond refused
with a line naming the setting and its range. Driven by the config schema itself, so a new
numeric setting without a range fails here (issue 13: memory.capacity = -5 was accepted and
the next extraction would have archived every memory)."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from assistant.config import RANGES, SECTIONS, Config, ConfigError
from assistant.config_load import config_from_dict, load_config
from assistant.config_render import render_config

# Settings whose bounds only hold together with another value.
_COMPANIONS: dict[str, dict[str, typing.Any]] = {
    "indexing.chunk_overlap": {"chunk_size": 100_000},
    "indexing.chunk_size": {"chunk_overlap": 0},
    "chat.max_answer_tokens": {"answer_reserve": 1_000_000},  # the cap fits in the reserve
}


def _numeric_settings() -> list[tuple[str, str, type]]:
    out = []
    config = Config()
    for section in SECTIONS:
        hints = typing.get_type_hints(type(getattr(config, section)))
        out += [(section, key, tp) for key, tp in hints.items() if tp in (int, float)]
    return out


NUMERIC = _numeric_settings()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def test_the_schema_has_numeric_settings() -> None:
    assert len(NUMERIC) >= 25


@pytest.mark.parametrize(("section", "key", "tp"), NUMERIC, ids=[f"{s}.{k}" for s, k, _ in NUMERIC])
def test_every_numeric_setting_has_a_range_and_both_bounds_hold(
    section: str, key: str, tp: type
) -> None:
    name = f"{section}.{key}"
    assert name in RANGES, f"{name} has no range in assistant.config.RANGES"
    low, high = RANGES[name]
    default = getattr(getattr(Config(), section), key)
    assert low <= default <= high, f"the default of {name} is outside its own range"
    step: float = 1 if tp is int else max((high - low) * 1e-3, 1e-6)
    companions = _COMPANIONS.get(name, {})
    for good in (low, high):
        value = tp(good)
        config = config_from_dict({section: {key: value, **companions}})
        assert getattr(getattr(config, section), key) == value
    for bad in (low - step, high + step):
        value = tp(bad) if tp is int else bad
        with pytest.raises(ConfigError) as err:
            config_from_dict({section: {key: value, **companions}})
        message = str(err.value)
        assert message.startswith(f"{name}: expected")
        assert f"between {_number(low)} and {_number(high)}" in message


def test_ranges_name_only_real_settings() -> None:
    assert set(RANGES) <= {f"{s}.{k}" for s, k, _ in NUMERIC}


def test_negative_capacity_is_refused_with_the_file_named(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[memory]\ncapacity = -5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.toml: memory.capacity: expected integer "
                                          r"between 10 and 10000000, got -5"):
        load_config(path)


def test_all_recall_weights_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least one above 0"):
        config_from_dict({"memory": {"weight_similarity": 0, "weight_importance": 0,
                                     "weight_freshness": 0}})


def test_the_default_file_states_each_range() -> None:
    text = render_config()
    assert "Range: 10–10000000." in text and "Range: 0–2." in text
