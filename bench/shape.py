"""`python -m bench.shape`: the code's shape in numbers (issue 24's before/after).

Static, no import of the package: the five largest files, function sizes (p95, max), import
circles and arrows running back up the core's floors, `except Exception` outside the helpers
that exist to catch everything, and `# type: ignore` in the tests. The import graph here is
also what `tests/unit/test_layers.py` checks its contracts against, so the numbers and the
guard read the code the same way.

An import counts wherever it stands (module top, inside a function, under TYPE_CHECKING): a
lazy import is still an arrow a reader has to follow, and the circles issue 24 names are lazy.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("assistant", "indexing", "tui")

# The core's floors, top first: a package may import its own floor and any floor below it;
# an arrow to a floor above is a back-up arrow. Modules not named (config, paths, context, …)
# are shared ground, outside this count.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"cli", "mcp"}),
    frozenset({"chat"}),
    frozenset({"erasure"}),
    frozenset({"memory", "conversations", "events", "retrieval"}),
    frozenset({"sessions", "llm"}),
)

# Modules whose job is to catch everything a worker raises (log it, show it once): the TUI's
# workers, and start_daemon for every thread of ours.
CATCH_ALL_HELPERS = frozenset({"tui/workers.py", "indexing/threads.py"})


@dataclass(frozen=True)
class Arrow:
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    path: str  # file of the importing module, relative to ROOT
    line: int


def python_files(package: str, root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known_modules(root: Path) -> set[str]:
    return {module_name(p, root) for package in PACKAGES for p in python_files(package, root)}


def _resolve(name: str, known: set[str]) -> str | None:
    """The longest known module that `name` is or lies inside (None: not ours)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _imported_names(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            # `from a import b` is a.b when b is a module, else a name inside a.
            yield f"{base}.{alias.name}" if alias.name != "*" else base
        yield base


def arrows(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> list[Arrow]:
    known = _known_modules(root)
    found: dict[tuple[str, str, int], Arrow] = {}
    for package in packages:
        for path in python_files(package, root):
            module = module_name(path, root)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                targets = {_resolve(n, known)
                           for n in _imported_names(node, module, path.name == "__init__.py")}
                # `from a import b` resolves to both a and a.b: keep the deepest only.
                targets.discard(None)
                deepest = {t for t in targets if t is not None
                           and not any(o != t and o.startswith(t + ".") for o in targets if o)}
                for target in deepest:
                    if target != module:
                        rel = str(path.relative_to(root))
                        found[(module, target, node.lineno)] = Arrow(module, target, rel,
                                                                     node.lineno)
    return sorted(found.values(), key=lambda a: (a.path, a.line, a.target))


def core_package(module: str) -> str | None:
    """`assistant.chat.engine` → `chat`; `assistant.config` → `config`; outside → None."""
    parts = module.split(".")
    if parts[0] != "assistant" or len(parts) < 2:
        return None
    return parts[1]


def package_edges(found: Iterable[Arrow]) -> dict[tuple[str, str], list[Arrow]]:
    edges: dict[tuple[str, str], list[Arrow]] = {}
    for arrow in found:
        source, target = core_package(arrow.source), core_package(arrow.target)
        if source and target and source != target:
            edges.setdefault((source, target), []).append(arrow)
    return edges


def circles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def floor_of(package: str) -> int | None:
    for level, members in enumerate(FLOORS):
        if package in members:
            return level
    return None


def back_up_arrows(edges: dict[tuple[str, str], list[Arrow]]) -> list[tuple[str, str]]:
    """Package arrows from a lower floor to a higher one (a lower index is higher up)."""
    up = []
    for source, target in edges:
        low, high = floor_of(source), floor_of(target)
        if high is not None and low is not None and high < low:
            up.append((source, target))
    return sorted(up)


def function_sizes(root: Path = ROOT) -> list[tuple[int, str]]:
    sizes = []
    for package in PACKAGES:
        for path in python_files(package, root):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    rel = path.relative_to(root)
                    sizes.append((length, f"{rel}:{node.lineno} {node.name}"))
    return sorted(sizes)


def file_sizes(root: Path = ROOT) -> list[tuple[int, str]]:
    return sorted((len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root)))
                  for package in PACKAGES for p in python_files(package, root))


def catch_alls(root: Path = ROOT) -> list[str]:
    """`except Exception` / `except BaseException` / bare `except` outside the helpers."""
    found = []
    for package in PACKAGES:
        for path in python_files(package, root):
            rel = str(path.relative_to(root))
            if rel in CATCH_ALL_HELPERS:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ExceptHandler) and _catches_all(node.type):
                    found.append(f"{rel}:{node.lineno}")
    return found


def _catches_all(kind: ast.expr | None) -> bool:
    if kind is None:
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException") for n in names)


def test_type_ignores(root: Path = ROOT) -> int:
    return sum(line.count("type: ignore")
               for p in sorted((root / "tests").rglob("*.py"))
               for line in p.read_text(encoding="utf-8").splitlines())


def _percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(root: Path = ROOT) -> dict[str, object]:
    found = arrows(root)
    edges = package_edges(found)
    module_edges = [(a.source, a.target) for a in found
                    if a.source.startswith("assistant.") and a.target.startswith("assistant.")]
    sizes = function_sizes(root)
    lengths = [n for n, _ in sizes]
    return {
        "largest_files": [f"{path} {n}" for n, path in file_sizes(root)[-5:][::-1]],
        "functions": len(sizes),
        "function_lines_p95": _percentile(lengths, 0.95),
        "function_lines_max": sizes[-1][0],
        "largest_functions": [f"{where} {n}" for n, where in sizes[-5:][::-1]],
        "functions_over_80": sum(1 for n in lengths if n > 80),
        "package_circles": circles(edges),
        "module_circles": circles(module_edges),
        "back_up_arrows": [f"{a} -> {b}" for a, b in back_up_arrows(edges)],
        "except_exception_outside_helpers": len(catch_alls(root)),
        "type_ignores_in_tests": test_type_ignores(root),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    report = measure()
    if "--json" in argv:
        print(json.dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  {' ⇄ '.join(item) if isinstance(item, list) else item}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
