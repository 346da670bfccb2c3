"""Reading a config file: TOML to a validated `Config`, strict about every key and value.

Unknown keys and wrong types are errors with the file, key and expected type named: a typo in a
config file must never be silently ignored. The schema is config.py.
"""

from __future__ import annotations

import tomllib
import types
import typing
from collections.abc import Iterable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from assistant.config import (
    DEFAULT_PERSONAS,
    FUSIONS,
    MIN_ANSWER_TOKENS,
    PROVIDERS,
    RANGES,
    RETIRED_KEYS,
    SECTION_TYPES,
    SECTIONS,
    Config,
    ConfigError,
    LlmConfig,
    format_number,
)


def type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is list:
        return f"list of {type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return f"table of {type_name(typing.get_args(tp)[1])}"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(tp, str(tp))


def _check_value(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        raise TypeError("unions are not used in config")  # pragma: no cover - developer error
    ok: bool
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            value = float(value)
    elif tp is str:
        ok = isinstance(value, str)
    elif origin is list:
        (item_tp,) = typing.get_args(tp)
        ok = isinstance(value, list)
        if ok:
            value = [_check_value(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
    elif origin is dict:
        _, item_tp = typing.get_args(tp)
        ok = isinstance(value, dict)
        if ok:
            value = {k: _check_value(v, item_tp, f"{where}.{k}") for k, v in value.items()}
    else:  # pragma: no cover - developer error
        raise TypeError(f"unsupported config type {tp!r}")
    if not ok:
        raise ConfigError(
            f"{where}: expected {type_name(tp)}, got {type(value).__name__} {value!r}"
        )
    return value


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _top_level_hint(key: str) -> str:
    """A setting written above any [section] header: say which section it belongs in."""
    owners = [s for s in SECTIONS if key in {f.name for f in fields(SECTION_TYPES[s])}]
    if owners:
        return f" (did you mean {key} under the [{owners[0]}] header?)"
    return _did_you_mean(key, [*SECTIONS, "personas"])


def _build_section(cls: type, data: dict[str, Any], section: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if section == "llm" and key == "api_key":
            # Config files get copied, synced and pasted into bug reports: a key in one leaks.
            raise ConfigError(
                "[llm] api_key: the API key must not be stored in the config file",
                "remove it; set api_key_env = \"OPENAI_API_KEY\" (and export that variable) "
                "or api_key_file = a file only you can read (chmod 600)",
            )
        if f"{section}.{key}" in RETIRED_KEYS:
            continue
        if key not in known:
            raise ConfigError(
                f"[{section}] unknown key {key!r}{_did_you_mean(key, known)} "
                f"(known: {', '.join(sorted(known))})"
            )
        hints = typing.get_type_hints(cls)
        value = _check_value(value, hints[key], f"{section}.{key}")
        bounds = RANGES.get(f"{section}.{key}")
        if bounds and not bounds[0] <= value <= bounds[1]:
            raise ConfigError(
                f"{section}.{key}: expected {type_name(hints[key])} between "
                f"{format_number(bounds[0])} and {format_number(bounds[1])}, got {value!r}"
            )
        kwargs[key] = value
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> Config:
    hints = typing.get_type_hints(Config)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "personas":
            personas = dict(DEFAULT_PERSONAS)
            personas.update(_check_value(value, dict[str, str], "personas"))
            kwargs["personas"] = personas
            continue
        if key not in SECTIONS:
            raise ConfigError(
                f"unknown section or key {key!r}{_top_level_hint(key)} "
                f"(sections: {', '.join(SECTIONS)}, personas)"
            )
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a [{key}] table, got {type(value).__name__}")
        kwargs[key] = _build_section(hints[key], value, key)
    config = Config(**kwargs)
    if config.indexing.chunk_overlap >= config.indexing.chunk_size:
        raise ConfigError(
            "indexing.chunk_overlap: expected integer smaller than indexing.chunk_size "
            f"({config.indexing.chunk_size}), got {config.indexing.chunk_overlap}"
        )
    memory = config.memory
    if memory.weight_similarity + memory.weight_importance + memory.weight_freshness <= 0:
        raise ConfigError(
            "memory.weight_similarity, weight_importance, weight_freshness: expected at least "
            "one above 0 (recall ranks memories by them), got all 0"
        )
    chat = config.chat
    if 0 < chat.max_answer_tokens < MIN_ANSWER_TOKENS:
        raise ConfigError(
            f"chat.max_answer_tokens: expected 0 (the answer reserve) or at least "
            f"{MIN_ANSWER_TOKENS}, got {chat.max_answer_tokens}"
        )
    if chat.max_answer_tokens > chat.answer_reserve:
        raise ConfigError(
            f"chat.max_answer_tokens: expected at most chat.answer_reserve "
            f"({chat.answer_reserve}: the room the prompt leaves for the answer), "
            f"got {chat.max_answer_tokens}"
        )
    events = config.events
    if events.weight_relevance + events.weight_importance + events.weight_recency <= 0:
        raise ConfigError(
            "events.weight_relevance, weight_importance, weight_recency: expected at least one "
            "above 0 (event search ranks by them), got all 0"
        )
    if config.ollama.think not in ("auto", "on", "off"):
        raise ConfigError(
            f"ollama.think: expected one of auto, on, off, got {config.ollama.think!r}"
        )
    if config.retrieval.fusion not in FUSIONS:
        raise ConfigError(
            f"retrieval.fusion: expected one of {', '.join(FUSIONS)}, "
            f"got {config.retrieval.fusion!r}"
        )
    if config.ollama.persona not in config.personas:
        raise ConfigError(
            f"ollama.persona: expected one of {', '.join(sorted(config.personas))}, "
            f"got {config.ollama.persona!r}"
        )
    store = config.store.vector_store.strip()
    if store and not _is_http_url(store):
        raise ConfigError(
            "store.vector_store: expected empty (embedded store) or a Chroma server URL like "
            f"http://127.0.0.1:8000, got {store!r}"
        )
    _check_llm(config.llm)
    host = config.ollama.host.strip()
    if not host or any(c.isspace() for c in host) or ("://" in host and not _is_http_url(host)):
        raise ConfigError(
            f"ollama.host: expected a URL like http://localhost:11434, got {config.ollama.host!r}"
        )
    return config


def _check_llm(llm: LlmConfig) -> None:
    if llm.provider not in PROVIDERS:
        raise ConfigError(
            f"llm.provider: expected one of {', '.join(PROVIDERS)}, got {llm.provider!r}"
        )
    url = llm.base_url.strip()
    if url and not _is_http_url(url):
        raise ConfigError(
            f"llm.base_url: expected a URL like http://127.0.0.1:8080/v1, got {llm.base_url!r}"
        )
    if llm.provider == "openai" and not url:
        raise ConfigError(
            "llm.base_url: provider `openai` needs the server's URL, e.g. "
            "http://127.0.0.1:8080/v1 (llama-server) or http://127.0.0.1:1234/v1 (LM Studio)"
        )
    env = llm.api_key_env.strip()
    if env and not env.replace("_", "a").isalnum():
        raise ConfigError(
            f"llm.api_key_env: expected the NAME of an environment variable (like "
            f"OPENAI_API_KEY), got {llm.api_key_env!r}",
            "the key itself goes in that variable, never in this file",
        )


def _is_http_url(text: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def load_config(path: Path) -> Config:
    """Read and validate `path`; a missing file means the defaults."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config(source=None)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    try:
        # utf-8-sig: editors on Windows save a BOM, which is not a TOML syntax error to the user.
        data = tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: config is not UTF-8 text ({exc.reason})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    try:
        config = config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return config_of_file(config, path)


def config_of_file(config: Config, path: Path) -> Config:
    """`config`, read from `path`, after the checks that need the file's place (the themes/
    folder beside it). One set of rules for a loaded file and an edited one (config_edit.py)."""
    _check_theme(config.ui.theme, path.parent / "themes", path)
    return replace(config, source=path)


def _check_theme(name: str, user_themes: Path, path: Path) -> None:
    """ui.theme must name a bundled theme or one in the config dir's themes/ (a typo used to
    be ignored silently: the default theme showed and nothing said why)."""
    from assistant.theme_names import known_theme_names

    known = known_theme_names(user_themes)
    if name not in known:
        raise ConfigError(
            f"{path}: ui.theme: unknown theme {name!r} (known: {', '.join(known)})"
        )
