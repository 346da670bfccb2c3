"""Sections of source code: one per top-level definition, via tree-sitter grammars.

Definitions get a heading ("class Foo", "def bar", "func Run", "impl Parser"); a class (impl,
namespace …) too long for one chunk is opened and its members become sections of their own
("class Foo > def bar"). Comments directly above a definition belong to it. Code between
definitions (imports, constants, `if __name__ == ...`) is kept as heading-less sections.
Languages without a grammar here use a blank-line/indentation fallback.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from indexing.chunk_section import Section
from indexing.errors import log_failure

log = logging.getLogger(__name__)

# Node type → keyword of its heading; "" means "name()" (C-family functions and methods).
_DEFINITIONS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "def", "class_definition": "class"},
    "javascript": {
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "class_declaration": "class",
        "method_definition": "",
        "lexical_declaration": "const",
        "variable_declaration": "var",
    },
    "go": {
        "function_declaration": "func",
        "method_declaration": "func",
        "type_declaration": "type",
    },
    "rust": {
        "function_item": "fn",
        "impl_item": "impl",
        "struct_item": "struct",
        "enum_item": "enum",
        "trait_item": "trait",
        "mod_item": "mod",
        "macro_definition": "macro_rules!",
        "union_item": "union",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "@interface",
        "method_declaration": "",
        "constructor_declaration": "",
    },
    "c": {
        "function_definition": "",
        "struct_specifier": "struct",
        "union_specifier": "union",
        "enum_specifier": "enum",
        "type_definition": "typedef",
    },
    "cpp": {
        "function_definition": "",
        "class_specifier": "class",
        "struct_specifier": "struct",
        "union_specifier": "union",
        "enum_specifier": "enum",
        "namespace_definition": "namespace",
        "type_definition": "typedef",
    },
    "bash": {"function_definition": "function"},
}
_DEFINITIONS["typescript"] = {
    **_DEFINITIONS["javascript"],
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "module",
    "function_signature": "function",
}
_DEFINITIONS["tsx"] = _DEFINITIONS["typescript"]
# Wrappers whose one definition child is what matters (decorators, export, template<>, …).
_WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "declaration",
        "ambient_declaration",
    }
)
_TYPE_SPECIFIERS = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
)
_TRAILING_SEMICOLON = re.compile(r"[ \t]*;")
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_BODY_TYPES = frozenset(
    {"block", "class_body", "declaration_list", "field_declaration_list", "interface_body",
     "enum_body", "statement_block", "object_type", "enum_class_body", "compound_statement"}
)  # fmt: skip
_CONTAINERS = frozenset(
    {"class", "interface", "impl", "trait", "mod", "namespace", "module", "struct", "enum",
     "record"}
)  # fmt: skip


# Languages whose grammar failed to load in this process (`cache` keeps no exceptions).
_UNLOADABLE: set[str] = set()


@cache
def _parser(language: str) -> Any:
    from tree_sitter import Language, Parser

    loaders: dict[str, Callable[[], Any]] = {
        "python": lambda: __import__("tree_sitter_python").language(),
        "javascript": lambda: __import__("tree_sitter_javascript").language(),
        "typescript": lambda: __import__("tree_sitter_typescript").language_typescript(),
        "tsx": lambda: __import__("tree_sitter_typescript").language_tsx(),
        "go": lambda: __import__("tree_sitter_go").language(),
        "rust": lambda: __import__("tree_sitter_rust").language(),
        "java": lambda: __import__("tree_sitter_java").language(),
        "c": lambda: __import__("tree_sitter_c").language(),
        "cpp": lambda: __import__("tree_sitter_cpp").language(),
        "bash": lambda: __import__("tree_sitter_bash").language(),
    }
    return Parser(Language(loaders[language]()))


def code_sections(
    text: str, language: str, lines: list[str], line_starts: list[int], *, max_chars: int
) -> list[Section]:
    if language not in _DEFINITIONS:
        return fallback_sections(text, lines, line_starts)
    try:
        parser = _parser(language)
    except Exception as exc:  # a broken grammar wheel must not stop indexing
        if language not in _UNLOADABLE:  # said once a language, not once a file
            _UNLOADABLE.add(language)
            log_failure(log, f"the {language} grammar cannot be loaded (plain sections)", exc)
        return fallback_sections(text, lines, line_starts)
    data = text.encode("utf-8", "surrogatepass")
    tree = parser.parse(data)
    offsets = _Offsets(text, data, lines, line_starts)
    walker = _Walker(language, offsets, max_chars, text)
    return walker.sections(tree.root_node.children, 0, len(text), ())


class _Offsets:
    """Tree-sitter speaks UTF-8 byte offsets; chunks speak str indices."""

    def __init__(self, text: str, data: bytes, lines: list[str], line_starts: list[int]) -> None:
        self.ascii = len(data) == len(text)
        self.lines = lines
        self.line_starts = line_starts

    def char(self, byte: int, point: Any) -> int:
        if self.ascii:
            return byte
        row: int = point[0]
        column: int = point[1]
        prefix = self.lines[row].encode("utf-8", "surrogatepass")[:column]
        return self.line_starts[row] + len(prefix.decode("utf-8", "ignore"))

    def start(self, node: Any) -> int:
        return self.char(node.start_byte, node.start_point)

    def end(self, node: Any) -> int:
        return self.char(node.end_byte, node.end_point)


class _Walker:
    def __init__(self, language: str, offsets: _Offsets, max_chars: int, text: str) -> None:
        self.text = text
        self.kinds = _DEFINITIONS[language]
        self.offsets = offsets
        self.max_chars = max_chars

    def sections(
        self, nodes: list[Any], start: int, end: int, parent: tuple[str, ...]
    ) -> list[Section]:
        out: list[Section] = []
        pos = start
        pending_comment: int | None = None  # start of comments right above the next node
        last_end_row = -2
        for node in nodes:
            if node.type in _COMMENTS:
                adjacent = pending_comment is not None and node.start_point[0] <= last_end_row + 1
                if not adjacent:
                    pending_comment = self.offsets.start(node)
                last_end_row = node.end_point[0]
                continue
            found = self._definition(node)
            if found is None:
                pending_comment = None
                last_end_row = node.end_point[0]
                continue
            definition, label = found
            node_start = self.offsets.start(node)
            if pending_comment is not None and node.start_point[0] <= last_end_row + 1:
                node_start = pending_comment
            node_end = self.offsets.end(node)
            # `struct point {…};` in C parses as the struct and a separate `;`.
            trailing = _TRAILING_SEMICOLON.match(self.text, node_end)
            if trailing:
                node_end = trailing.end()
            if node_start > pos:
                out.append(Section(pos, node_start, parent))
            out.extend(self._definition_sections(definition, label, node_start, node_end, parent))
            pos = max(pos, node_end)
            pending_comment = None
            last_end_row = node.end_point[0]
        if pos < end:
            out.append(Section(pos, end, parent))
        return out

    def _definition_sections(
        self, definition: Any, label: str, start: int, end: int, parent: tuple[str, ...]
    ) -> list[Section]:
        heading = (*parent, label)
        keyword = label.split(" ", 1)[0]
        body = self._body(definition)
        if end - start <= self.max_chars or keyword not in _CONTAINERS or body is None:
            return [Section(start, end, heading)]
        members = body.children
        body_start = self.offsets.start(body)
        inner = self.sections(members, body_start, self.offsets.end(body), heading)
        # The header (signature, docstring start) opens the container's first section.
        head = [Section(start, body_start, heading)] if body_start > start else []
        tail_end = self.offsets.end(body)
        tail = [Section(tail_end, end, heading)] if end > tail_end else []
        return head + inner + tail

    def _body(self, node: Any) -> Any | None:
        body = node.child_by_field_name("body")
        if body is not None:
            return body
        for child in node.named_children:
            if child.type in _BODY_TYPES:
                return child
        return None

    def _definition(self, node: Any) -> tuple[Any, str] | None:
        """(definition node, heading label) if `node` is, or wraps, a definition."""
        if node.type in self.kinds:
            label = self._label(node)
            return (node, label) if label else None
        if node.type in _WRAPPERS:
            for child in node.named_children:
                found = self._definition(child)
                if found is not None:
                    return found
        return None

    def _label(self, node: Any) -> str | None:
        keyword = self.kinds[node.type]
        name = _name(node)
        if node.type in ("lexical_declaration", "variable_declaration"):
            # Only `const f = () => …` / `= function` / `= class` are definitions worth a heading.
            declarator = next(
                (c for c in node.named_children if c.type == "variable_declarator"), None
            )
            value = declarator.child_by_field_name("value") if declarator is not None else None
            if value is None or value.type not in (
                "arrow_function", "function", "function_expression", "class", "generator_function"
            ):  # fmt: skip
                return None
            name = _name(declarator)
        bodyless = node.child_by_field_name("body") is None
        if node.type in _TYPE_SPECIFIERS and bodyless:  # `struct foo x;` uses, not defines
            return None
        if not name:
            if node.type == "impl_item":
                name = _text(node.child_by_field_name("type"))
            elif node.type == "type_declaration":
                spec = next((c for c in node.named_children if c.type.startswith("type_")), None)
                name = _name(spec) if spec is not None else None
            elif node.type == "type_definition":
                name = _text(node.child_by_field_name("declarator"))
        if not name:
            return keyword or None
        if not keyword:
            return f"{name}()"
        return f"{keyword} {name}"


def _name(node: Any) -> str | None:
    """The identifier a definition introduces, digging through C declarators."""
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    declarator = node.child_by_field_name("declarator")
    depth = 0
    while declarator is not None and depth < 8:
        if declarator.type in (
            "identifier", "field_identifier", "qualified_identifier", "destructor_name",
            "operator_name", "type_identifier",
        ):  # fmt: skip
            return _text(declarator)
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in declarator.named_children if "identifier" in c.type), None)
        declarator = inner
        depth += 1
    return None


def _text(node: Any) -> str | None:
    if node is None or node.text is None:
        return None
    text = node.text.decode("utf-8", "replace")
    return " ".join(text.split())[:80] or None


_TOP_LEVEL_DEF = re.compile(
    r"^(?:export\s+|pub\s+|public\s+|private\s+|protected\s+|static\s+|async\s+|local\s+)*"
    r"(def|class|module|function|func|fn|sub|struct|interface|impl|trait|object|procedure|"
    r"create\s+(?:or\s+replace\s+)?(?:table|view|function|procedure|index)|defun|defmacro|"
    r"defn|let|val|data|type|macro)\b\s*([^\s(:{=<]*)",
    re.IGNORECASE,
)


def fallback_sections(text: str, lines: list[str], line_starts: list[int]) -> list[Section]:
    """A new section at each unindented line after a blank line: top-level blocks in most
    languages (Ruby, Lua, SQL, Kotlin, shell-like configs…)."""
    cuts = [0]
    for i in range(1, len(lines)):
        line = lines[i]
        if line and not line[0].isspace() and not lines[i - 1].strip():
            cuts.append(line_starts[i])
    cuts.append(len(text))
    out: list[Section] = []
    for a, b in itertools.pairwise(cuts):
        if a >= b:
            continue
        first = text[a:b].lstrip().split("\n", 1)[0]
        match = _TOP_LEVEL_DEF.match(first)
        heading: tuple[str, ...] = ()
        if match and match.group(2):
            heading = (f"{match.group(1).split()[0].lower()} {match.group(2)}",)
        out.append(Section(a, b, heading))
    return out
