"""Code chunking: one section per top-level definition, headings like "class Foo > def bar"."""

from __future__ import annotations

import itertools

import pytest

from indexing.chunking import ChunkSettings, chunk_text
from indexing.types import Chunk
from tests.unit.test_chunking import check_invariants

# min_chunk_chars=0: every definition stays its own chunk, so headings are easy to check.
SEPARATE = ChunkSettings(chunk_size=400, chunk_overlap=50, min_chunk_chars=0)


def code(text: str, language: str, settings: ChunkSettings = SEPARATE) -> list[Chunk]:
    chunks = chunk_text(text, fmt=f"code:{language}", settings=settings, source="/src/x")
    check_invariants(text, chunks, settings)
    assert {c.language for c in chunks} <= {f"code:{language}"}
    return chunks


def headings(chunks: list[Chunk]) -> list[str]:
    return [c.heading for c in chunks]


PYTHON = '''"""Module docstring."""

import os
from typing import Any

CONSTANT = 3


# Helper comment stays with its function.
@cache
def helper(x: int) -> int:
    return x * CONSTANT


class Greeter:
    """Says hello."""

    def greet(self, name: str) -> str:
        return f"hello {name}"


if __name__ == "__main__":
    print(helper(2))
'''


def test_python_definitions() -> None:
    chunks = code(PYTHON, "python")
    assert headings(chunks) == ["", "def helper", "class Greeter", ""]
    assert chunks[0].text.startswith('"""Module docstring."""') and "CONSTANT = 3" in chunks[0].text
    assert chunks[1].text.startswith("# Helper comment stays with its function.\n@cache")
    assert chunks[3].text.startswith('if __name__ == "__main__":')


def test_python_small_file_with_default_settings_is_one_chunk() -> None:
    (chunk,) = code(PYTHON, "python", ChunkSettings())
    assert chunk.heading in ("def helper, class Greeter", "class Greeter", "def helper")


def test_big_class_is_opened_into_methods() -> None:
    methods = "\n".join(
        f"    def method_{i}(self) -> int:\n" + "".join(f"        x{j} = {j}\n" for j in range(8))
        for i in range(6)
    )
    text = f"class Big:\n    '''A big class.'''\n\n{methods}\n\ndef after():\n    pass\n"
    chunks = code(
        text, "python", ChunkSettings(chunk_size=400, chunk_overlap=50, min_chunk_chars=100)
    )
    assert headings(chunks)[0] == "class Big > def method_0"
    assert chunks[0].text.startswith("class Big:")  # the header rides with the first method
    assert [f"class Big > def method_{i}" for i in range(6)] == headings(chunks)[:6]
    assert headings(chunks)[-1] == "def after"


def test_oversized_function_splits_at_line_boundaries() -> None:
    body = "".join(f"    value_{i} = compute({i}, 'some argument text')\n" for i in range(60))
    text = f"def huge():\n{body}    return value_0\n"
    chunks = code(text, "python")
    assert len(chunks) > 3
    assert set(headings(chunks)) == {"def huge"}
    for chunk in chunks:
        assert text[chunk.start_char - 1] in "\n " or chunk.start_char == 0
        assert text[chunk.end_char] == "\n"
    for a, b in itertools.pairwise(chunks):
        assert b.start_char < a.end_char  # overlap inside one definition


def test_non_ascii_before_definitions_keeps_offsets_right() -> None:
    text = '# 中文注释 — ünïcode\nNAME = "名字"\n\n\ndef 函数():\n    return "好"\n'
    chunks = code(text, "python")
    assert headings(chunks) == ["", "def 函数"]
    assert chunks[1].text == 'def 函数():\n    return "好"'


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "javascript",
            'import x from "y";\n\n// Adds.\nexport function add(a, b) {\n  return a + b;\n}\n\n'
            "const mul = (a, b) => a * b;\n\nclass Calc {\n  plus(n) { return n; }\n}\n",
            ["", "function add", "const mul", "class Calc"],
        ),
        (
            "typescript",
            "interface Point { x: number }\ntype Id = string;\nexport class Shape {\n"
            "  area(): number { return 0; }\n}\nenum Color { Red }\n",
            ["interface Point", "type Id", "class Shape", "enum Color"],
        ),
        (
            "tsx",
            "export function App(): JSX.Element {\n  return <div>Hi</div>;\n}\n",
            ["function App"],
        ),
        (
            "go",
            'package main\n\nimport "fmt"\n\ntype Point struct { X int }\n\n'
            "func (p Point) Norm() int { return p.X }\n\nfunc main() {\n\tfmt.Println(1)\n}\n",
            ["", "type Point", "func Norm", "func main"],
        ),
        (
            "rust",
            "use std::fmt;\n\npub struct Parser { pos: usize }\n\nimpl Parser {\n"
            "    fn new() -> Self { Parser { pos: 0 } }\n}\n\npub fn run() {}\n",
            ["", "struct Parser", "impl Parser", "fn run"],
        ),
        (
            "java",
            "package a;\n\nimport java.util.List;\n\npublic class Greeter {\n"
            '    String greet() { return "hi"; }\n}\n',
            ["", "class Greeter"],
        ),
        (
            "c",
            "#include <stdio.h>\n\nstruct point { int x; };\n\nstatic int add(int a, int b) {\n"
            "    return a + b;\n}\n",
            ["", "struct point", "add()"],
        ),
        (
            "cpp",
            "#include <vector>\nnamespace geo {\nclass Shape {};\n}\n"
            "template <typename T> T twice(T x) { return x * 2; }\n"
            "int Shape::count() { return 1; }\n",
            ["", "namespace geo", "twice()", "Shape::count()"],
        ),
        (
            "bash",
            '#!/bin/bash\nset -e\n\ngreet() {\n  echo "hi $1"\n}\n\nfunction main {\n'
            "  greet world\n}\nmain\n",
            ["", "function greet", "function main", ""],
        ),
    ],
)
def test_tree_sitter_languages(language: str, text: str, expected: list[str]) -> None:
    assert headings(code(text, language)) == expected


def test_java_methods_get_class_prefix_when_class_is_big() -> None:
    methods = "\n".join(
        f"    public int m{i}() {{\n"
        + "".join(f"        int v{j} = {j};\n" for j in range(8))
        + "        return 0;\n    }\n"
        for i in range(4)
    )
    text = f"public class Big {{\n{methods}}}\n"
    chunks = code(text, "java")
    assert [f"class Big > m{i}()" for i in range(4)] == [
        h for h in headings(chunks) if h != "class Big"
    ]


def test_fallback_for_languages_without_a_grammar() -> None:
    text = (
        'require "json"\n\nclass Foo\n  def bar\n    1\n  end\nend\n\ndef helper(x)\n  x * 2\nend\n'
    )
    assert headings(code(text, "ruby")) == ["", "class Foo", "def helper"]
    sql = "CREATE TABLE users (\n  id int\n);\n\nSELECT * FROM users;\n"
    assert headings(code(sql, "sql")) == ["create users", ""]


def test_a_grammar_that_fails_to_load_falls_back_and_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken grammar wheel must not stop indexing, nor log a traceback for every file."""
    import logging

    from indexing import chunk_code

    def broken(language: str) -> object:
        raise OSError(f"cannot load the {language} grammar")

    monkeypatch.setattr(chunk_code, "_parser", broken)
    monkeypatch.setattr(chunk_code, "_UNLOADABLE", set())
    with caplog.at_level(logging.INFO, logger="indexing.chunk_code"):
        for _ in range(3):  # three files
            assert "".join(c.text for c in code(PYTHON, "python")).strip()
    said = [r for r in caplog.records if r.name == "indexing.chunk_code"]
    assert [r.getMessage() for r in said] == [
        "the python grammar cannot be loaded (plain sections): cannot load the python grammar"]
    assert said[0].exc_info is not None  # not a kind anyone named: in full


def test_syntax_errors_still_cover_everything() -> None:
    text = "def ok():\n    return 1\n\ndef broken(:\n    ???\n\nclass Fine:\n    pass\n"
    chunks = code(text, "python")
    assert "def ok" in headings(chunks)


def test_data_files_split_on_lines() -> None:
    text = "{\n" + ",\n".join(f'  "key_{i}": "value number {i}"' for i in range(100)) + "\n}\n"
    settings = ChunkSettings(chunk_size=300, chunk_overlap=60)
    chunks = chunk_text(text, fmt="data:json", settings=settings)
    check_invariants(text, chunks, settings)
    assert all(text[c.end_char] == "\n" for c in chunks)
    assert {c.language for c in chunks} == {"en"}
