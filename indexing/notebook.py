"""Jupyter notebooks as Markdown: markdown cells as they are, code cells fenced, no outputs.

Outputs (images, tables, tracebacks) are mostly base64 and noise for search; the cells are what
the user wrote. Markdown headings in cells then give the chunks their heading paths.
"""

from __future__ import annotations

import json
from typing import Any


def notebook_to_markdown(raw: str) -> str | None:
    """The notebook's cells as Markdown, or None if `raw` is not a notebook we understand."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None
    language = _language(data)
    parts: list[str] = []
    for cell in data["cells"]:
        if not isinstance(cell, dict):
            continue
        source = _source(cell.get("source"))
        if not source.strip():
            continue
        kind = cell.get("cell_type")
        if kind == "markdown":
            parts.append(source.strip("\n"))
        elif kind == "code":
            fence = "````" if "```" in source else "```"
            parts.append(f"{fence}{language}\n{source.strip(chr(10))}\n{fence}")
        elif kind == "raw":
            parts.append(source.strip("\n"))
    return "\n\n".join(parts) + "\n" if parts else ""


def _source(value: Any) -> str:
    if isinstance(value, str):
        return value.replace("\r\n", "\n")
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str)).replace("\r\n", "\n")
    return ""


def _language(data: dict[str, Any]) -> str:
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        info = metadata.get("language_info")
        if isinstance(info, dict) and isinstance(name := info.get("name"), str):
            return name
        kernel = metadata.get("kernelspec")
        if isinstance(kernel, dict) and isinstance(language := kernel.get("language"), str):
            return language
    return ""
