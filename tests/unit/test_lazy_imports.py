"""Our own modules are imported at the top, except where laziness buys start-up time (issue 24
item 5). A function-level `import assistant…` / `indexing…` / `tui…` is allowed when:

- the module it imports loads a heavy package at import time (`HEAVY`, each with its cost:
  `brain --help`, the TUI's first paint and a cold `brain search` must not pay for it —
  bench/startup.py measures them);
- the importing module sits on a start-up path where each piece loads on first use
  (`STARTUP_PATHS`, each with its reason);
- a top-level import would close an import circle (the imported module imports the importer);
- it must wait for a reason a static reading cannot see (`STAYS_LAZY`, each with its reason).

Any other function-level import of ours fails here: move it to the top. (A list,
`NOT_HOISTED_YET` once counted the ones not moved yet: 85 when the check came in, none since
issue 24.)

Read statically, like bench/shape.py: "loads at import time" is the module-level import
statements (not under TYPE_CHECKING, not inside functions), followed transitively. An import
is judged by the module it brings in: `from indexing import vectors` imports
`indexing.vectors` (each name that is a module counts, the others count as the package).
"""

from __future__ import annotations

import ast
from collections import Counter
from functools import cache
from pathlib import Path

from bench.shape import PACKAGES, ROOT, module_name, python_files

OWN = frozenset({"assistant", "indexing", "tui", "themes"})

# Third-party packages worth a lazy import, with what they cost at start-up.
HEAVY: dict[str, str] = {
    "numpy": "vector maths: ~100 ms before anything is shown",
    "chromadb": "the vector store client: seconds (its telemetry, its sqlite schema)",
    "llama_index": "1-3 s of imports; only the LlamaIndex-facing pipelines need it",
    "torch": "the model stack: seconds and hundreds of MB",
    "transformers": "the model stack: seconds",
    "sentence_transformers": "the model stack: seconds",
    "onnxruntime": "the embedding runtime: loaded once the first embedding is needed",
    "onnx": "only the one-time export of the embedding model",
    "tokenizers": "the embedding tokenizer: loaded with the model",
    "jieba": "Chinese word splitting: its dictionary takes a second to load",
    "httpx": "the HTTP client (~100 ms): only a command that talks to a server needs it",
    "ollama": "the Ollama SDK pulls in httpx and pydantic",
    "mcp": "the MCP SDK (pydantic, anyio): only `brain mcp` needs it",
    "textual": "only the TUI draws; its dialogs load when first opened",
    "rich": "terminal rendering: the TUI's, not a plain CLI command's",
    "tree_sitter": "code parsing grammars: only indexing code needs them",
    "pypdf": "PDF reading: only indexing a PDF needs it",
    "watchfiles": "the folder watcher: only a live sync needs it",
    "pathspec": "ignore-file matching: only indexing needs it",
    "Stemmer": "the keyword stemmer: only keyword indexing and search need it",
    "diskcache": "the embedding cache: only embedding needs it",
    "threadpoolctl": "BLAS thread control: only the dense search needs it",
    "charset_normalizer": "text encoding detection: only reading files to index needs it",
}

# Importing modules (by prefix) whose lazy imports are the point: each piece on first use.
STARTUP_PATHS: dict[str, str] = {
    "assistant.cli.": "`brain CMD` loads only what CMD runs (`brain --help` is the baseline)",
    "tui.": "the first paint loads only the main screen; dialogs and backends on first use",
    "assistant.mcp.": "the MCP server answers `initialize` before a tool's modules load",
    "assistant.doctor": "each check loads only the subsystem it checks (one may be broken)",
    "assistant.services": "the composition root opens a store on first use: `brain sessions "
    "list` must not load the retriever, the chat or the LLM link",
}

# Lazy imports that must stay lazy for a reason the check cannot see, by (importing module,
# imported module): why. Each costs every command's start-up if hoisted (CPU medians of
# interleaved `brain --help` runs when the last of the list was hoisted: 133 ms before).
STAYS_LAZY: dict[tuple[str, str], str] = {
    ("assistant.context", "assistant.llm.provider"):
        "every command imports the context, `brain --help` too; the provider brings asyncio "
        "(its transports) and logging.handlers (+17 ms on --help, +8 ms on the TUI's import): "
        "only a command that talks to a model server needs it",
    ("assistant.config_load", "assistant.theme_names"):
        "the theme catalogue (3-4 ms of every command) is read only when the config sets "
        "ui.theme",
}

FILES: dict[str, Path] = {module_name(p): p for package in PACKAGES for p in python_files(package)}


def _resolve(name: str) -> str | None:
    parts = name.split(".")
    while parts:
        if (candidate := ".".join(parts)) in FILES:
            return candidate
        parts.pop()
    return None


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    anchor = module.split(".")
    anchor = anchor if FILES[module].name == "__init__.py" else anchor[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _imported(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """Dotted names an import statement loads (`from a import b`: a, and a.b if a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _absolute(node, module)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _runs_at_import(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when imported: not under TYPE_CHECKING, not in a
    function or class body."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            test = node.test
            checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            found += _runs_at_import(node.orelse if checking else node.body + node.orelse)
        elif isinstance(node, ast.Try):
            found += _runs_at_import(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                found += _runs_at_import(handler.body)
        elif isinstance(node, ast.With):
            found += _runs_at_import(node.body)
    return found


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(FILES[module].read_text(encoding="utf-8"))


@cache
def _direct(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(own modules, third-party top-level packages) `module` imports when it is imported,
    its parent packages included (Python runs their __init__ first)."""
    own: set[str] = set()
    third: set[str] = set()
    for node in _runs_at_import(_tree(module).body):
        for name in _imported(node, module):
            if name.split(".")[0] in OWN:
                if (target := _resolve(name)) is not None and target != module:
                    own.add(target)
            elif name:
                third.add(name.split(".")[0])
    parts = module.split(".")
    own.update(p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in FILES)
    return frozenset(own), frozenset(third)


@cache
def _loads(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """Every own module and third-party package importing `module` loads, transitively."""
    seen, todo = {module}, [module]
    third: set[str] = set()
    while todo:
        own, packages = _direct(todo.pop())
        third |= packages
        for target in own - seen:
            seen.add(target)
            todo.append(target)
    return frozenset(seen), frozenset(third)


def _in_functions(node: ast.AST, inside: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """The import statements inside a function body (each once, nested functions too)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for child in ast.iter_child_nodes(node):
        if inside and isinstance(child, ast.Import | ast.ImportFrom):
            found.append(child)
        found += _in_functions(child, inside or isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The own modules an import statement brings in, each once: `from a import b` brings in
    a.b when that is a module, else a (b is a name defined in a)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _absolute(node, module)
        names = [f"{base}.{alias.name}" for alias in node.names]
    own = (_resolve(name) for name in names if name.split(".")[0] in OWN)
    return list(dict.fromkeys(target for target in own if target is not None))


def _lazy_in(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for each own module a function body of `tree` imports."""
    return [(node.lineno, target)
            for node in _in_functions(tree) for target in _targets(node, module)]


@cache
def _lazy_imports() -> tuple[tuple[str, int, str], ...]:
    """(importing module, line, imported module) for each function-level own import."""
    return tuple((module, line, target)
                 for module in sorted(FILES) for line, target in _lazy_in(_tree(module), module))


def _seen_to_wait(module: str, target: str) -> bool:
    """What the reading itself sees: a heavy target, a circle, a start-up path."""
    own, third = _loads(target)
    return (bool(third & HEAVY.keys()) or module in own
            or any(module.startswith(prefix) for prefix in STARTUP_PATHS))


def _explained(module: str, target: str) -> bool:
    return (module, target) in STAYS_LAZY or _seen_to_wait(module, target)


def _unexplained() -> Counter[str]:
    return Counter(module for module, _, target in _lazy_imports()
                   if not _explained(module, target))


def test_own_modules_are_imported_at_the_top_unless_laziness_buys_time() -> None:
    counts = _unexplained()
    where = [f"{FILES[m].relative_to(ROOT)}:{line} imports {target}"
             for m, line, target in _lazy_imports() if not _explained(m, target)]
    assert not counts, ("a function-level import of a light module of ours: move it to the "
                       "top (or say in HEAVY / STARTUP_PATHS / STAYS_LAZY why it must wait):\n"
                       + "\n".join(where))


def test_every_stays_lazy_entry_explains_an_import() -> None:
    lazy = {(module, target) for module, _, target in _lazy_imports()}
    # An entry whose import is gone, or that the reading explains anyway, would excuse the
    # next such import unasked.
    needless = [key for key in STAYS_LAZY if key not in lazy or _seen_to_wait(*key)]
    assert not needless, f"STAYS_LAZY entries with nothing to explain: {needless}"


def test_the_check_sees_what_it_should() -> None:
    """The reading itself: a module with numpy at its top is heavy, a leaf of dataclasses is
    light, a TYPE_CHECKING import loads nothing, and a function-level import is judged by the
    module it brings in (`from indexing import vectors` is indexing.vectors, with numpy; read
    as the `indexing` package it looked light)."""
    assert "numpy" in _loads("indexing.vectors")[1]
    assert not _loads("indexing.filesystem")[1] & HEAVY.keys()
    assert "assistant.timerange" not in _loads("assistant.sessions.turn")[0]
    probe = ast.parse(
        "def f():\n"
        "    from indexing import filesystem, vectors\n"
        "    from indexing.vectors import VectorStore\n"
        "    from indexing import NOT_A_MODULE, ALSO_NOT\n"
        "    def g():\n"
        "        from . import base\n"
        "import indexing.chunking\n")
    assert _lazy_in(probe, "indexing.embedders.onnx_store") == [
        (2, "indexing.filesystem"), (2, "indexing.vectors"), (3, "indexing.vectors"),
        (4, "indexing"), (6, "indexing.embedders.base")]
    assert _explained("indexing.embedders.onnx_store", "indexing.vectors")
    assert not _explained("indexing.embedders.onnx_store", "indexing.filesystem")
    # The walk over the real code finds lazy imports (not an empty package path).
    assert any(_seen_to_wait(m, target) for m, _, target in _lazy_imports())
