"""Read-only resources of `brain mcp`: the memory profile, the registered folders and each
indexed file by its file:// URI, so a client can open a source that search_knowledge cited.
Only files in the index can be read: the URI scheme is not a way to read any file the user can.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

import mcp_types as types

from assistant.errors import UserError

if TYPE_CHECKING:
    from assistant.mcp.handlers import BrainTools
    from indexing.knowledge import KnowledgeBase

PROFILE_URI = "brain://memory/profile"
FOLDERS_URI = "brain://folders"
LISTED_FILES = 500  # files named in resources/list; any indexed file can be read by its URI


def file_uri(path: str) -> str:
    return "file://" + quote(path)


def list_resources(tools: BrainTools) -> list[types.Resource]:
    found = [
        types.Resource(uri=PROFILE_URI, name="memory profile", mime_type="text/markdown",
                       description="What is known about the user, in short"),
        types.Resource(uri=FOLDERS_URI, name="indexed folders", mime_type="application/json",
                       description="The folders the user indexed, with file and chunk counts"),
    ]
    for path in knowledge(tools).manifest.source_paths()[:LISTED_FILES]:
        found.append(types.Resource(uri=file_uri(path), name=os.path.basename(path),
                                    description=path, mime_type="text/plain"))
    return found


def list_templates() -> list[types.ResourceTemplate]:
    return [types.ResourceTemplate(
        uri_template="file://{path}", name="indexed file", mime_type="text/plain",
        description="Any indexed file by its absolute path (the `source` of a search hit)")]


def read_resource(tools: BrainTools, uri: str) -> tuple[str, str]:
    """(text, mime type) of a resource; UserError for an unknown or unreadable one."""
    if uri == PROFILE_URI:
        return tools.memory().store.profile().text or "(no profile yet)", "text/markdown"
    if uri == FOLDERS_URI:
        folders = [{"path": f.path, "files": f.files, "chunks": f.chunks,
                    "last_sync": f.last_sync.isoformat() if f.last_sync else None}
                   for f in knowledge(tools).folders()]
        return json.dumps({"folders": folders}, ensure_ascii=False), "application/json"
    parts = urlsplit(uri)
    if parts.scheme != "file":
        raise UserError(f"unknown resource {uri!r} (resources: {PROFILE_URI}, {FOLDERS_URI}, "
                        "file://<indexed file>)")
    path = unquote(parts.path)
    if path not in set(knowledge(tools).manifest.source_paths()):
        raise UserError(f"{path} is not an indexed file (only indexed files can be read)")
    return _read(path), "text/plain"


def _read(path: str) -> str:
    from pathlib import Path

    from indexing.readers import SkipFile, read_file

    try:
        return read_file(Path(path), max_bytes=50 * 1024 * 1024).text
    except SkipFile as exc:
        raise UserError(f"cannot read {path}: {exc.detail or exc.reason}") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def knowledge(tools: BrainTools) -> KnowledgeBase:
    """The knowledge base without the embedding model (listing and reading files)."""
    return tools.plain_knowledge()
