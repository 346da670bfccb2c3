"""ARCHITECTURE.md names only what exists: every file it mentions (`engine.py`,
`assistant/chat/engine.py`) is in the repository, and every `path.py:name` (a function or a
class, `path.py:Class.method` for a method) is defined in that file. A doc that kept a module or
a function after it was renamed or deleted fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "ARCHITECTURE.md"
SKIP = {".git", ".venv", "node_modules", "__pycache__"}

# A file name: `engine.py`, `tui/app.tcss`, `memory/data/bip39_english.txt`, optionally
# followed by `:name` or `:Class.method`.
NAMED = re.compile(r"(?<![\w/.*-])([\w/.-]*\w\.(?:py|tcss|toml|txt))(?::([A-Za-z_]\w*(?:\.\w+)?))?")


def _files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
            if p.is_file() and not SKIP & set(p.relative_to(ROOT).parts)]


def _resolve(name: str, files: list[str]) -> list[str]:
    """The repository files a doc's name may mean: the path itself, or any file ending in it
    (a bare `store.py` within its section's folder)."""
    name = name.lstrip("./")
    return [f for f in files if f == name or f.endswith("/" + name)]


def _defines(path: str, name: str) -> bool:
    text = (ROOT / path).read_text(encoding="utf-8")
    owner, _, member = name.partition(".")
    if member:
        return bool(re.search(rf"^class {owner}\b", text, re.M)
                    and re.search(rf"^\s+(?:async )?def {member}\b", text, re.M))
    return bool(re.search(rf"^\s*(?:async )?(?:def|class) {owner}\b", text, re.M))


def test_named_files_and_functions_exist() -> None:
    files = _files()
    text = DOC.read_text(encoding="utf-8")
    missing: list[str] = []
    for found in NAMED.finditer(text):
        name, member = found.group(1), found.group(2)
        if name.startswith("*"):
            continue
        candidates = _resolve(name, files)
        if not candidates:
            missing.append(name)
        elif member and not any(c.endswith(".py") and _defines(c, member) for c in candidates):
            missing.append(f"{name}:{member}")
    assert not missing, f"ARCHITECTURE.md names what does not exist: {sorted(set(missing))}"


def test_the_check_sees_a_missing_name() -> None:
    """The pattern reads the forms the doc uses, and a wrong name is told apart."""
    files = _files()
    assert _resolve("assistant/chat/engine.py", files) == ["assistant/chat/engine.py"]
    assert not _resolve("assistant/chat/no_such_module.py", files)
    assert _defines("assistant/chat/engine.py", "ChatEngine.send")
    assert not _defines("assistant/chat/engine.py", "ChatEngine.no_such_method")
    assert not _defines("assistant/chat/engine.py", "no_such_function")
    found = NAMED.search("see `indexing/sync.py:Syncer._flush` here")
    assert found is not None and found.groups() == ("indexing/sync.py", "Syncer._flush")
