"""File formats by name, and the natural language of a piece of text."""

from __future__ import annotations

import re
from pathlib import Path

# Source code by extension → language name used in "code:<lang>".
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash",
    ".fish": "fish",
    ".rb": "ruby", ".php": "php", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".scala": "scala", ".lua": "lua", ".sql": "sql", ".r": "r", ".jl": "julia",
    ".pl": "perl", ".pm": "perl", ".cs": "csharp", ".fs": "fsharp", ".hs": "haskell",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".clj": "clojure", ".dart": "dart",
    ".m": "objc", ".mm": "objc", ".vim": "vim", ".el": "elisp", ".lisp": "lisp", ".ml": "ocaml",
    ".zig": "zig", ".nim": "nim", ".v": "verilog", ".vue": "vue", ".svelte": "svelte",
    ".css": "css", ".scss": "scss", ".less": "less", ".ps1": "powershell", ".bat": "batch",
    ".cmake": "cmake", ".gradle": "groovy", ".groovy": "groovy", ".tf": "terraform",
    ".proto": "protobuf", ".graphql": "graphql", ".nix": "nix",
}  # fmt: skip
CODE_FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "docker",
    "CMakeLists.txt": "cmake", "Rakefile": "ruby", "Gemfile": "ruby", "Justfile": "make",
    "Vagrantfile": "ruby", "Jenkinsfile": "groovy",
}  # fmt: skip
PROSE_EXTENSIONS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".mdx": "markdown",
    ".txt": "text", ".text": "text", ".log": "text", "": "text",
    ".rst": "rst", ".rest": "rst",
    ".org": "org",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".json": "data:json", ".jsonl": "data:json", ".ndjson": "data:json", ".ipynb": "notebook",
    ".yaml": "data:yaml", ".yml": "data:yaml",
    ".toml": "data:toml", ".ini": "data:ini", ".cfg": "data:ini", ".conf": "data:ini",
    ".properties": "data:ini",
    ".csv": "data:csv", ".tsv": "data:csv",
    ".xml": "data:xml", ".svg": "data:xml",
    ".tex": "text", ".bib": "text", ".adoc": "text", ".asciidoc": "text",
}  # fmt: skip
BINARY_EXTENSIONS = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".icns",
        ".webp",
        ".tif",
        ".tiff",
        ".heic",
        ".psd",
        ".raw",
        ".cr2",
        ".nef",
        ".mp3",
        ".wav",
        ".flac",
        ".ogg",
        ".m4a",
        ".aac",
        ".mp4",
        ".mkv",
        ".mov",
        ".avi",
        ".webm",
        ".wmv",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".deb",
        ".rpm",
        ".dmg",
        ".iso",
        ".img",
        ".exe",
        ".dll",
        ".so",
        ".dylib",
        ".o",
        ".a",
        ".lib",
        ".obj",
        ".class",
        ".pyc",
        ".pyo",
        ".wasm",
        ".bin",
        ".dat",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".pkl",
        ".pickle",
        ".npy",
        ".npz",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".gguf",
        ".parquet",
        ".arrow",
        ".h5",
        ".ttf",
        ".otf",
        ".woff",
        ".woff2",
        ".eot",
        ".swp",
    ]
)
UNSUPPORTED_EXTENSIONS = frozenset(
    [
        ".doc",
        ".docx",
        ".xls",
        ".xlsx",
        ".ppt",
        ".pptx",
        ".odt",
        ".ods",
        ".odp",
        ".rtf",
        ".epub",
        ".pages",
        ".numbers",
        ".key",
    ]
)


def format_for_path(path: Path) -> str:
    """The reader format for a file name (see `DecodedFile.format`), "binary" or "unsupported".

    Unknown extensions are read as plain text: the content sniffing in the reader still rejects
    binaries, and README-like files without a known extension are common.
    """
    name = path.name
    if name in CODE_FILENAMES:
        return "code:" + CODE_FILENAMES[name]
    suffix = path.suffix.lower()
    if suffix in BINARY_EXTENSIONS:
        return "binary"
    if suffix in UNSUPPORTED_EXTENSIONS:
        return "unsupported"
    if suffix in CODE_EXTENSIONS:
        # ".h" is C unless the folder is C++; it parses fine with the C grammar either way.
        return "code:" + CODE_EXTENSIONS[suffix]
    return PROSE_EXTENSIONS.get(suffix, "text")


def code_language(path: Path) -> str | None:
    """ "python", "rust", … for source files, else None."""
    fmt = format_for_path(path)
    return fmt[5:] if fmt.startswith("code:") else None


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_URL = re.compile(r"<?https?://\S+")
_ASCII_LETTERS = bytes(range(65, 91)) + bytes(range(97, 123))
_DROP_ASCII = dict.fromkeys(range(128))
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_ACCENTED = re.compile(r"[\u00c0-\u024f]")


def detect_language(text: str) -> str:
    """ "en", "zh", "ja", "ko", "ru" or "other": a script count, cheap enough for every chunk.

    One Han character carries about as much as a short English word, so Chinese wins well
    before it is the majority of letters (tldr's Chinese pages are half command lines).
    """
    sample = text[:4000]
    if sample.isascii():  # the common case, decided without a regex pass
        return "en" if any(c.isalpha() for c in sample) else "other"
    # Inline code, fenced code and URLs are not the language of the text around them (a
    # Chinese tldr page is half command lines).
    prose = _URL.sub(" ", _CODE.sub(" ", sample))
    if prose.strip():
        sample = prose
    ascii_part = sample.encode("ascii", "ignore")
    latin = len(ascii_part) - len(ascii_part.translate(None, _ASCII_LETTERS))
    rest = sample.translate(_DROP_ASCII)  # the regexes below then scan only non-ASCII text
    han = len(_HAN.findall(rest))
    kana = len(_KANA.findall(rest))
    hangul = len(_HANGUL.findall(rest))
    cyrillic = len(_CYRILLIC.findall(rest))
    accented = len(_ACCENTED.findall(rest))
    cjk = han + kana + hangul
    letters = cjk + latin + cyrillic + accented
    if letters == 0:
        return "other"
    if cjk * 4 >= latin + cyrillic + accented and cjk:
        if kana * 5 >= cjk:
            return "ja"
        if hangul > han:
            return "ko"
        return "zh"
    if cyrillic > latin:
        return "ru"
    if latin and accented * 20 < latin:
        return "en"
    return "other"
