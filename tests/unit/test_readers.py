"""Reading files: formats, encodings, binary detection, PDF pages, skip reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.languages import detect_language, format_for_path
from indexing.readers import DecodedFile, SkipFile, decode_bytes, read_file
from indexing.sources import SkipReason

MAX = 1024 * 1024


def make_pdf(pages: list[str], *, encrypt_marker: bool = False) -> bytes:
    """A minimal valid PDF with one Helvetica text line per page (xref offsets computed)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    page_ids = [4 + 2 * i for i in range(n_pages)]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids).encode()
    objects.append(
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(n_pages).encode() + b" >>"
    )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        content_id = page_ids[i] + 1
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
            b" >> >> /Contents " + str(content_id).encode() + b" 0 R >>"
        )
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode("latin-1")
        objects.append(
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _read(tmp_path: Path, name: str, data: bytes | str) -> DecodedFile:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return read_file(path, max_bytes=MAX)


def _skip(tmp_path: Path, name: str, data: bytes | str) -> SkipFile:
    with pytest.raises(SkipFile) as info:
        _read(tmp_path, name, data)
    return info.value


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.md", "markdown"),
        ("a.MARKDOWN", "markdown"),
        ("notes.txt", "text"),
        ("README", "text"),
        ("doc.rst", "rst"),
        ("todo.org", "org"),
        ("page.html", "html"),
        ("paper.pdf", "pdf"),
        ("x.json", "data:json"),
        ("x.yaml", "data:yaml"),
        ("x.toml", "data:toml"),
        ("x.ini", "data:ini"),
        ("x.csv", "data:csv"),
        ("x.py", "code:python"),
        ("x.tsx", "code:tsx"),
        ("x.ts", "code:typescript"),
        ("x.jsx", "code:javascript"),
        ("x.go", "code:go"),
        ("x.rs", "code:rust"),
        ("X.java", "code:java"),
        ("x.h", "code:c"),
        ("x.hpp", "code:cpp"),
        ("x.zsh", "code:bash"),
        ("x.rb", "code:ruby"),
        ("x.kt", "code:kotlin"),
        ("x.sql", "code:sql"),
        ("Makefile", "code:make"),
        ("Dockerfile", "code:docker"),
        ("photo.JPG", "binary"),
        ("lib.so", "binary"),
        ("letter.docx", "unsupported"),
        ("weird.unknownext", "text"),
    ],
)
def test_format_for_path(name: str, fmt: str) -> None:
    assert format_for_path(Path(name)) == fmt


def test_markdown_utf8(tmp_path: Path) -> None:
    decoded = _read(tmp_path, "a.md", "# Title\r\n\r\nBody\rmore\n")
    assert decoded == DecodedFile("# Title\n\nBody\nmore\n", "utf-8", "markdown", None)


def test_bom_is_stripped(tmp_path: Path) -> None:
    decoded = _read(tmp_path, "a.md", b"\xef\xbb\xbf# Hi\n")
    assert decoded.text == "# Hi\n"
    assert decoded.encoding == "utf-8-sig"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_32_with_bom(tmp_path: Path, codec: str) -> None:
    text = "Wide text: héllo 中文\n"
    data = text.encode(codec)
    if codec == "utf-16-be":
        data = b"\xfe\xff" + data
    decoded = _read(tmp_path, "a.txt", data)
    assert decoded.text == text


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom(tmp_path: Path, codec: str) -> None:
    text = "Exported from Windows: notes, 中文 and café.\n" * 3
    decoded = _read(tmp_path, "w.txt", text.encode(codec))
    assert (decoded.text, decoded.encoding) == (text, codec)
    # Real binaries with many NULs are still binary.
    blob = bytes([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0]) + bytes(range(256)) * 8
    assert _skip(tmp_path, "b.txt", blob).reason is SkipReason.binary


def test_gbk_chinese(tmp_path: Path) -> None:
    text = "# 笔记\n\n这是用GBK编码保存的中文笔记。第二句话！\n"
    decoded = _read(tmp_path, "zh.md", text.encode("gbk"))
    assert decoded.text == text
    assert decoded.encoding == "gb18030"


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Crème brûlée, café, naïve façade. Straße und Übung.\n", "latin-1"),
        ("café\n", "latin-1"),
        ("He said “hello” – that’s fine… it costs €5.\n", "cp1252"),
    ],
)
def test_western_single_byte(tmp_path: Path, text: str, codec: str) -> None:
    assert _read(tmp_path, "w.txt", text.encode(codec)).text == text


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("這是一個繁體中文檔案，我們需要正確解碼它。第二句。\n" * 3, "big5"),
        ("これは日本語のファイルです。正しく読めますか？\n" * 3, "shift_jis"),
        ("Привет, это русский текст в кодировке windows-1251.\n" * 3, "cp1251"),
    ],
)
def test_other_encodings_via_detector(tmp_path: Path, text: str, codec: str) -> None:
    assert _read(tmp_path, "o.txt", text.encode(codec)).text == text


def test_slightly_damaged_utf8_keeps_the_text(tmp_path: Path) -> None:
    data = ("A long note about gardening. " * 20).encode() + b"\xff\xfe" + b" Tomatoes.\n"
    decoded = _read(tmp_path, "d.txt", data)
    assert "Tomatoes." in decoded.text
    assert decoded.text.count("\ufffd") == 2
    assert "replaced" in decoded.encoding


def test_garbage_is_undecodable(tmp_path: Path) -> None:
    garbage = bytes([0x81, 0x9D, 0x8F, 0x90, 0xC3, 0x28, 0xA0, 0xA1, 0xE2, 0x28] * 40)
    assert _skip(tmp_path, "g.txt", garbage).reason is SkipReason.undecodable


def test_binary_sniffing(tmp_path: Path) -> None:
    assert _skip(tmp_path, "x.txt", b"abc\x00def").reason is SkipReason.binary
    controls = bytes([1, 2, 3, 4, 5, 6, 7, 14, 15, 16]) * 20 + b"text"
    assert _skip(tmp_path, "y.txt", controls).reason is SkipReason.binary
    assert _skip(tmp_path, "z.png", b"not even opened").reason is SkipReason.binary
    # Colours in a terminal log are text, not binary.
    assert "ok" in _read(tmp_path, "c.log", "\x1b[32mok\x1b[0m\tdone\n").text


def test_empty_and_whitespace_only(tmp_path: Path) -> None:
    assert _skip(tmp_path, "e.md", b"").reason is SkipReason.empty
    assert _skip(tmp_path, "w.md", " \n\t\n").reason is SkipReason.empty


def test_too_large_is_checked_while_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 101)
    with pytest.raises(SkipFile) as info:
        read_file(path, max_bytes=100)
    assert info.value.reason is SkipReason.too_large
    assert read_file(path, max_bytes=101).text == "x" * 101


def test_vanished_and_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SkipFile) as info:
        read_file(tmp_path / "missing.md", max_bytes=MAX)
    assert info.value.reason is SkipReason.vanished
    path = tmp_path / "secret.md"
    path.write_text("x\n")

    def denied(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(SkipFile) as info:
        read_file(path, max_bytes=MAX)
    assert info.value.reason is SkipReason.unreadable
    assert "permission" in info.value.detail


def test_folder_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(SkipFile) as info:
        read_file(tmp_path / "dir.md", max_bytes=MAX)
    assert info.value.reason is SkipReason.not_a_file


def test_html_visible_text_and_headings(tmp_path: Path) -> None:
    html = """<!doctype html><html><head><title>T</title><style>body{color:red}</style>
    <script>var secret = 1;</script></head><body>
    <h1>Guide</h1><p>Intro &amp; overview.</p><script>alert("x")</script>
    <h2>Install</h2><ul><li>Step one</li><li>Step two</li></ul>
    <pre>  indented
    code</pre></body></html>"""
    decoded = _read(tmp_path, "page.html", html)
    assert decoded.format == "html"
    text = decoded.text
    assert "# Guide\n" in text
    assert "## Install\n" in text
    assert "Intro & overview." in text
    assert "- Step one" in text
    assert "  indented\n" in text
    assert "secret" not in text and "alert" not in text and "color" not in text


def test_pdf_pages(tmp_path: Path) -> None:
    decoded = _read(tmp_path, "p.pdf", make_pdf(["First page text", "", "Third page (last)"]))
    assert decoded.format == "pdf"
    assert decoded.pages is not None
    assert [page for _, page in decoded.pages] == [1, 2, 3]
    starts = dict((page, start) for start, page in decoded.pages)
    assert decoded.text[starts[1] :].startswith("First page text")
    assert decoded.text[starts[3] :].startswith("Third page (last)")


def test_broken_and_textless_pdfs(tmp_path: Path) -> None:
    assert _skip(tmp_path, "b.pdf", b"%PDF-1.4\ngarbage").reason is SkipReason.undecodable
    assert _skip(tmp_path, "s.pdf", make_pdf(["", ""])).reason is SkipReason.empty


def test_jupyter_notebook_becomes_markdown(tmp_path: Path) -> None:
    import json

    notebook = {
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "markdown", "source": ["# Analysis\n", "\n", "Load the data."]},
            {
                "cell_type": "code",
                "source": "import pandas as pd\ndf = pd.read_csv('x.csv')",
                "outputs": [{"data": {"image/png": "iVBORw0KGgo" * 50}}],
            },
            {"cell_type": "markdown", "source": "## Results"},
            {"cell_type": "code", "source": []},
        ],
    }
    decoded = _read(tmp_path, "n.ipynb", json.dumps(notebook))
    assert decoded.format == "markdown"
    assert decoded.text == (
        "# Analysis\n\nLoad the data.\n\n```python\nimport pandas as pd\n"
        "df = pd.read_csv('x.csv')\n```\n\n## Results\n"
    )
    broken = _read(tmp_path, "b.ipynb", '{"cells": [')
    assert broken.format == "data:json"
    assert broken.text == '{"cells": ['
    assert _skip(tmp_path, "e.ipynb", '{"cells": []}').reason is SkipReason.empty


def test_code_and_data_keep_their_text(tmp_path: Path) -> None:
    source = "def f():\n    return 1\n"
    assert _read(tmp_path, "m.py", source) == DecodedFile(source, "utf-8", "code:python", None)
    assert _read(tmp_path, "c.json", '{"a": 1}\n').format == "data:json"


def test_decode_bytes_never_raises_other_errors() -> None:
    for data in (b"\xff", b"\xfe\xff\x00", b"\xff\xfe\x00", b"\xef\xbb\xbf", b"\x80" * 3):
        try:
            text, _ = decode_bytes(data)
            assert isinstance(text, str)
        except SkipFile as exc:
            assert exc.reason in (SkipReason.binary, SkipReason.undecodable)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The quick brown fox jumps over the lazy dog.", "en"),
        ("这是一个中文句子，用来测试语言检测。", "zh"),
        ("使用 tar 命令创建归档文件：tar cf target.tar file1 file2", "zh"),
        ("これは日本語の文です。", "ja"),
        ("이것은 한국어 문장입니다.", "ko"),
        ("Это русское предложение.", "ru"),
        ("Ça été très élégant, à côté de l'évêché où naît ôté.", "other"),
        ("12345 -- 678 ::", "other"),
    ],
)
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_a_small_file_is_read_without_a_limit_sized_buffer(tmp_path: Path) -> None:
    # issue 25: `read(max_bytes + 1)` allocated the whole limit (5 MB by default) for every file.
    import tracemalloc

    path = tmp_path / "note.md"
    path.write_text("# a note\n\n" + "words " * 2000, encoding="utf-8")
    tracemalloc.start()
    try:
        decoded = read_file(path, max_bytes=64 * MAX)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded.text.startswith("# a note")
    assert peak < 2 * MAX


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_file_longer_than_its_stat_size_is_read_to_the_end() -> None:
    # /proc files report size 0 (as does a file that grows after `fstat`): read on to the limit.
    decoded = read_file(Path("/proc/self/status"), max_bytes=MAX)
    assert "Name:" in decoded.text and "VmRSS" in decoded.text
    with pytest.raises(SkipFile) as info:
        read_file(Path("/proc/self/status"), max_bytes=16)
    assert info.value.reason is SkipReason.too_large
