"""Follow-ups are retrieved with what the conversation is about (issue 21): the previous
question and the heading of the source its answer cited, over a small tldr-like corpus, with
the real bundled embedding model (all-MiniLM-L6-v2) and the real hybrid retriever."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from assistant.chat.retrieval_history import retrieval_history
from assistant.config import RetrievalConfig
from assistant.retrieval.hybrid import HybridRetriever
from assistant.sessions.turn import KnowledgeItem, Source, Turn
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk

FOLLOW_UP = "And how do I list its contents without extracting it?"
# Pages in the style of tldr: several of them list an archive "without extracting" it, which
# is what a follow-up searched on its own words finds instead of tar (unrar, 7z, unzip).
PAGES = {
    "tar.md": (
        "# tar\n"
        "\n"
        "Archiving utility. Often combined with a compression method, such as gzip or "
        "bzip2.\n"
        "\n"
        "- Create an archive and write it to a file: tar cf target.tar file1 file2\n"
        "- Extract a (compressed) archive file into the current directory verbosely: tar "
        "xvf source.tar[.gz|.bz2|.xz]\n"
        "- List the contents of a tar file verbosely: tar tvf source.tar\n"
        "- Extract files matching a pattern from an archive file: tar xf source.tar "
        "--wildcards '*.html'"
    ),
    "od.md": (
        "# od\n"
        "\n"
        "Display file contents in octal, decimal or hexadecimal format.\n"
        "\n"
        "- Display file using default settings: octal format, 8 bytes per line: od "
        "path/to/file\n"
        "- Display file in verbose mode, without replacing duplicate lines with *: od -v "
        "path/to/file\n"
        "- Display file in hexadecimal format (2-byte units), with byte offsets in "
        "decimal: od --format=x --address-radix=d -v path/to/file\n"
        "- Read only 100 bytes of a file starting from the 500th byte: od --read-bytes "
        "100 --skip-bytes=500 -v path/to/file"
    ),
    "zip.md": (
        "# zip\n"
        "\n"
        "Package and compress (archive) files into zip archive.\n"
        "\n"
        "- Add files/directories to a specific archive (recursively): zip -r "
        "path/to/compressed.zip path/to/file_or_directory\n"
        "- Remove files/directories from a specific archive: zip -d "
        "path/to/compressed.zip path/in/archive\n"
        "- Archive a directory and its contents with the highest level of compression: "
        "zip -r -9 path/to/compressed.zip path/to/directory"
    ),
    "unzip.md": (
        "# unzip\n"
        "\n"
        "Extract files/directories from ZIP archives.\n"
        "\n"
        "- Extract all files/directories from specific archives into the current "
        "directory: unzip path/to/archive1.zip\n"
        "- Extract files/directories from archives to a specific path: unzip "
        "path/to/archive.zip -d path/to/output\n"
        "- List the contents of a specific archive without extracting them: unzip -l "
        "path/to/archive.zip"
    ),
    "cat.md": (
        "# cat\n"
        "\n"
        "Print and concatenate files.\n"
        "\n"
        "- Print the contents of a file to stdout: cat path/to/file\n"
        "- Concatenate several files into an output file: cat path/to/file1 path/to/file2"
        " > path/to/output_file\n"
        "- Number all output lines: cat -n path/to/file"
    ),
    "ls.md": (
        "# ls\n"
        "\n"
        "List directory contents.\n"
        "\n"
        "- List files one per line: ls -1\n"
        "- List all files, including hidden files: ls -a\n"
        "- Long format list (permissions, ownership, size, and modification date) of all "
        "files: ls -la"
    ),
    "gzip.md": (
        "# gzip\n"
        "\n"
        "Compress/uncompress files with gzip compression (LZ77).\n"
        "\n"
        "- Compress a file, replacing it with a gzipped compressed version: gzip "
        "path/to/file\n"
        "- Decompress a file, replacing it with the original uncompressed version: gzip "
        "-d path/to/file.gz\n"
        "- List the contents of a compressed file: gzip -l path/to/file.gz"
    ),
    "unrar.md": (
        "# unrar\n"
        "\n"
        "Extract RAR archives.\n"
        "\n"
        "- Extract files with original directory structure: unrar x compressed.rar\n"
        "- Extract files to a specified path: unrar e compressed.rar path/to/extract\n"
        "- List files inside a compressed file without extracting them: unrar l "
        "compressed.rar"
    ),
    "7z.md": (
        "# 7z\n"
        "\n"
        "File archiver with a high compression ratio.\n"
        "\n"
        "- Add a file or directory to a new or existing archive: 7z a path/to/archive.7z "
        "path/to/file_or_directory\n"
        "- Extract an archive preserving the original directory structure: 7z x "
        "path/to/archive.7z\n"
        "- List the contents of an archive file without extracting it: 7z l "
        "path/to/archive.7z"
    ),
    "jar.md": (
        "# jar\n"
        "\n"
        "Java applications/libraries packager.\n"
        "\n"
        "- Unzip a .jar/.war file to the current directory: jar -xvf path/to/file.jar\n"
        "- List a .jar/.war file content: jar tf path/to/file.jar\n"
        "- List a .jar/.war file content with verbose output: jar tvf path/to/file.jar"
    ),
    "zipinfo.md": (
        "# zipinfo\n"
        "\n"
        "List detailed information about the contents of a .zip file.\n"
        "\n"
        "- List all files in a .zip file in long format (permissions, ownership, size, "
        "and modification date): zipinfo path/to/archive.zip\n"
        "- List all files in a .zip file: zipinfo -1 path/to/archive.zip"
    ),
    "head.md": (
        "# head\n"
        "\n"
        "Output the first part of files.\n"
        "\n"
        "- Output the first few lines of a file: head -n count path/to/file\n"
        "- Output the first few bytes of a file: head -c count path/to/file"
    ),
}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    from indexing.embedder import make_embedder

    embedder = make_embedder("bundled", cache_dir=tmp_path_factory.mktemp("embeddings"))
    kb = FakeKnowledgeBase(embedder)
    for name, text in PAGES.items():
        kb.add(make_chunk(f"/notes/{name}", text, root="/notes", heading=name[:-3]))
    return HybridRetriever(kb, embedder, RetrievalConfig(), log=None, parallel=False)


def turn(question: str, cited: str) -> Turn:
    item = KnowledgeItem(f"c-{cited}", PAGES[f"{cited}.md"], f"/notes/{cited}.md",
                         f"{cited}.md", cited, 0.8)
    return Turn(1, "s", 1, question, f"Use {cited} [1].", "complete", time.time(),
                sources=(Source(1, item, cited=True),))


def top3(retriever: HybridRetriever, message: str, history: list[str]) -> list[str]:
    result = retriever.search(message, top_k=3, history=history)
    return [Path(h.source).name for h in result.hits]


@pytest.mark.parametrize("question", [
    "How do I extract a tar archive?",  # the topic is in the question
    "How do I pack a folder into one file?",  # only the cited source's heading names it
])
def test_a_follow_up_retrieves_the_previous_topics_page(
    retriever: HybridRetriever, question: str
) -> None:
    history = retrieval_history([turn(question, "tar")], 3)
    assert "tar.md" in top3(retriever, FOLLOW_UP, history)


def test_a_self_contained_question_is_searched_on_its_own(retriever: HybridRetriever) -> None:
    history = retrieval_history([turn("How do I extract a tar archive?", "tar")], 3)
    assert retriever.search_query_for("How do I list the files in a zip archive without "
                                      "unpacking the zip?", history).startswith("How do I list")
    assert top3(retriever, "how do I print a file with line numbers?", history)[0] == "cat.md"
