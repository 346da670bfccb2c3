"""Checking a tool's arguments against its JSON schema, with one-line reasons.

Only the schema features our tools use: an object of named properties (no others allowed),
required names, and per property a type (string, integer, number, boolean, array of strings),
`enum`, `minimum`/`maximum`, `minLength`/`maxLength`, `maxItems` and a `default`. A client sends
whatever it likes; a model reads the reason and fixes its call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assistant.errors import UserError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,),
}


class ToolInputError(UserError):
    """An argument a tool cannot take; the message names it and says what is expected."""


def check_arguments(schema: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments with defaults filled in; raises ToolInputError for the first problem."""
    args = dict(given or {})
    props: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    unknown = sorted(set(args) - set(props))
    if unknown:
        known = ", ".join(props) or "none"
        raise ToolInputError(f"unknown argument {unknown[0]!r} (this tool takes: {known})")
    for name in schema.get("required", ()):
        if args.get(name) is None:
            raise ToolInputError(f"missing required argument {name!r}")
    out: dict[str, Any] = {}
    for name, spec in props.items():
        value = args.get(name)
        if value is None:
            out[name] = spec.get("default")
            continue
        out[name] = _check(name, value, spec)
    return out


def _check(name: str, value: Any, spec: Mapping[str, Any]) -> Any:
    kind = spec["type"]
    ok = isinstance(value, _TYPES[kind]) and not (isinstance(value, bool) and kind != "boolean")
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True  # 5.0 from a JSON encoder that writes every number so
    if not ok:
        raise ToolInputError(f"{name} must be {_a(kind)}, got {_describe(value)}")
    if kind in ("integer", "number"):
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ToolInputError(f"{name} must be between {low} and {high}, got {value}")
    if kind == "string":
        _check_string(name, value, spec)
    if kind == "array":
        limit = spec.get("maxItems")
        if limit is not None and len(value) > limit:
            raise ToolInputError(f"{name} takes at most {limit} items, got {len(value)}")
        item = spec["items"]
        value = [_check(f"{name}[{i}]", v, item) for i, v in enumerate(value)]
    return value


def _check_string(name: str, value: str, spec: Mapping[str, Any]) -> None:
    if "enum" in spec and value not in spec["enum"]:
        raise ToolInputError(
            f"{name} must be one of {', '.join(spec['enum'])}, got {_describe(value)}")
    longest = spec.get("maxLength")
    if longest is not None and len(value) > longest:
        raise ToolInputError(f"{name} is {len(value):,} characters long; at most "
                             f"{longest:,} are accepted")
    if spec.get("minLength", 0) > 0 and not value.strip():
        raise ToolInputError(f"{name} must not be empty")


def _a(kind: str) -> str:
    return {"integer": "an integer", "array": "an array of strings"}.get(kind, f"a {kind}")


def _describe(value: Any) -> str:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{type(value).__name__} {shown}"
