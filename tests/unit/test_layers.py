"""The shape's contracts, checked on every import statement (issue 24, import-linter's job).

Read statically by `bench/shape.py` (the same graph `python -m bench.shape` counts), so an
import inside a function or under TYPE_CHECKING counts too: those are the arrows that built
the old circles. Complements `test_import_hygiene.py`, which imports everything and watches
what actually loads.

- layers: tui → assistant → indexing, never back up;
- only tui/ imports Textual;
- the core's floors (`bench.shape.FLOORS`): cli/mcp → chat → erasure → memory, conversations,
  events, retrieval → sessions, llm; no arrow to a floor above;
- no import circle between the core's packages below the chat.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.shape import (
    FLOORS,
    ROOT,
    Arrow,
    arrows,
    back_up_arrows,
    circles,
    floor_of,
    package_edges,
    python_files,
)

# Arrows against tui → assistant → indexing, each with why it stays.
ALLOWED_LAYER: dict[tuple[str, str], str] = {
    ("assistant.cli.main", "tui.app"): "`brain` without a command starts the TUI (lazy)",
}

# Arrows to a floor above, each with why it stays (import-linter's `ignore_imports`).
# (Empty: MemoryItem.memory is typed by a protocol of sessions/turn.py, not by memory's model.)
ALLOWED_UP: dict[tuple[str, str], str] = {}

# Floors below the chat: no circle among them (issue 24 item 1).
BELOW_CHAT = ("sessions", "memory", "conversations", "erasure", "events", "retrieval")


@pytest.fixture(scope="module")
def graph() -> list[Arrow]:
    return arrows()


def _layer(module: str) -> int:
    return {"tui": 2, "assistant": 1, "indexing": 0}[module.split(".")[0]]


def test_layers_point_one_way(graph: list[Arrow]) -> None:
    up = [f"{a.path}:{a.line} {a.source} -> {a.target}" for a in graph
          if _layer(a.target) > _layer(a.source) and (a.source, a.target) not in ALLOWED_LAYER]
    assert not up, "imports against tui → assistant → indexing:\n" + "\n".join(up)


def test_only_tui_imports_textual() -> None:
    found = []
    for package in ("assistant", "indexing"):
        for path in python_files(package):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                if any(n.split(".")[0] in ("textual", "rich_pixels") for n in names):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"Textual imported outside tui/: {found}"


def test_no_arrow_back_up_the_floors(graph: list[Arrow]) -> None:
    edges = package_edges(graph)
    up = [f"{arrow.path}:{arrow.line} {source} -> {target} ({arrow.target})"
          for source, target in back_up_arrows(edges) for arrow in edges[(source, target)]
          if (arrow.source, arrow.target) not in ALLOWED_UP]
    assert not up, "imports from a lower floor to a higher one:\n" + "\n".join(up)


def test_allowed_arrows_still_exist(graph: list[Arrow]) -> None:
    """An exception whose import is gone must leave its list (no stale permissions)."""
    present = {(a.source, a.target) for a in graph}
    assert set(ALLOWED_UP) | set(ALLOWED_LAYER) <= present


def test_no_circle_below_the_chat(graph: list[Arrow]) -> None:
    edges = package_edges(graph)
    core = set(BELOW_CHAT)
    inside = [edge for edge in edges if edge[0] in core and edge[1] in core]
    assert circles(inside) == []


def test_no_package_circle_in_the_core(graph: list[Arrow]) -> None:
    """Across every package of the core, floors or shared ground (message_kind, timerange, …):
    the last circle, memory ⇄ message_kind ⇄ sessions, ran through modules outside the floors."""
    assert circles(package_edges(graph)) == []


def test_the_floors_name_real_packages() -> None:
    """A renamed package must not silently drop out of the contracts."""
    named = {p for floor in FLOORS for p in floor}
    real = {p.name for p in (ROOT / "assistant").iterdir() if (p / "__init__.py").exists()}
    assert named <= real, f"FLOORS names packages that do not exist: {sorted(named - real)}"
    assert all(floor_of(p) is not None for p in BELOW_CHAT)


def test_contracts_see_a_violation(tmp_path: Path) -> None:
    """The checks read the code they are given: an arrow up and a circle are found."""
    for package, body in {
        "assistant/chat": "",
        "assistant/sessions": "from assistant.chat import engine\n",
        "assistant/memory": "def f():\n    from assistant.conversations import x\n",
        "assistant/conversations": "from assistant.memory import y\n",
        "indexing": "from assistant.sessions import store\n",
        "tui": "",
    }.items():
        folder = tmp_path / package
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text(body, encoding="utf-8")
        for leaf in ("engine", "store", "x", "y"):
            (folder / f"{leaf}.py").write_text("", encoding="utf-8")
    (tmp_path / "assistant" / "__init__.py").write_text("", encoding="utf-8")
    found = arrows(tmp_path)
    edges = package_edges(found)
    assert ("sessions", "chat") in back_up_arrows(edges)
    assert circles(edges) == [["conversations", "memory"]]
    assert any(_layer(a.target) > _layer(a.source) for a in found)
