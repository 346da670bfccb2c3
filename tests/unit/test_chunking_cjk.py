"""Chinese (and other CJK) prose is cut between sentences, never in the middle of one."""

from __future__ import annotations

import itertools
import re

from indexing.chunking import ChunkSettings, chunk_text
from tests.unit.test_chunking import check_invariants

SENTENCES = [
    "第二大脑是一个离线的个人助手。",
    "它会读取你的笔记、文档和代码！",
    "你可以问它问题吗？",
    "当然可以；它会引用来源。",
    "所有数据都保存在本机上，不会上传到任何服务器。",
    "“引号里的句子也要完整。”",
    "最后一句话（带括号）。",
]
SETTINGS = ChunkSettings(chunk_size=60, chunk_overlap=20, min_chunk_chars=10)


def test_chinese_chunks_end_on_sentence_punctuation() -> None:
    text = "# 简介\n\n" + "".join(SENTENCES * 6) + "\n"
    chunks = chunk_text(text, fmt="markdown", settings=SETTINGS)
    check_invariants(text, chunks, SETTINGS)
    assert len(chunks) > 5
    for chunk in chunks:
        assert re.search(r"[。！？；」”）]$", chunk.text), chunk.text
        assert chunk.language == "zh"
        assert chunk.heading == "简介"
    for chunk in chunks[1:]:
        body = chunk.text
        assert any(body.startswith(s) for s in SENTENCES), body


def test_chinese_overlap_repeats_whole_sentences() -> None:
    text = "".join(SENTENCES * 6)
    chunks = chunk_text(text, fmt="text", settings=SETTINGS)
    check_invariants(text, chunks, SETTINGS)
    overlapping = [(a, b) for a, b in itertools.pairwise(chunks) if b.start_char < a.end_char]
    assert overlapping, "expected some overlap"
    for a, b in overlapping:
        shared = text[b.start_char : a.end_char]
        assert a.end_char - b.start_char <= SETTINGS.chunk_overlap
        assert re.search(r"[。！？；」”）]$", shared), shared


def test_long_chinese_sentence_falls_back_to_commas_then_characters() -> None:
    clause = "这个句子非常非常长而且没有句号只有逗号"
    text = "，".join([clause] * 12) + "。"
    settings = ChunkSettings(chunk_size=50, chunk_overlap=0, min_chunk_chars=0)
    chunks = chunk_text(text, fmt="text", settings=settings)
    check_invariants(text, chunks, settings)
    assert all(c.text.endswith(("，", "。")) for c in chunks)
    no_punctuation = "字" * 130
    chunks = chunk_text(no_punctuation, fmt="text", settings=settings, distinct=False)
    check_invariants(no_punctuation, chunks, settings)
    assert [len(c.text) for c in chunks] == [50, 50, 30]


def test_mixed_chinese_and_commands_like_tldr_zh() -> None:
    page = (
        "# tar\n\n> 归档实用程序。\n> 通常与压缩方法结合使用，例如 `gzip` 或 `bzip2`。\n\n"
        "- 创建一个归档文件并写入[f]文件：\n\n`tar cf {{path/to/target.tar}} {{path/to/file1}}`\n"
    )
    (chunk,) = chunk_text(page, fmt="markdown", settings=ChunkSettings())
    assert chunk.language == "zh"
    assert chunk.heading == "tar"


def test_japanese_and_full_width_question_marks() -> None:
    text = "これは文です。" * 10 + "本当ですか？" * 10
    settings = ChunkSettings(chunk_size=50, chunk_overlap=0, min_chunk_chars=0)
    chunks = chunk_text(text, fmt="text", settings=settings)
    check_invariants(text, chunks, settings)
    assert all(c.text.endswith(("。", "？")) for c in chunks)
    assert {c.language for c in chunks} == {"ja"}


def test_command_heavy_chunk_of_a_chinese_file_stays_chinese() -> None:
    command = "`yt-dlp --output '{{%(uploader)s/%(title)s.%(ext)s}}' {{https://example.com/list}}`"
    page = "# yt-dlp\n\n> 下载视频的工具。\n\n" + "".join(
        f"- 下载第{i}个：\n\n{command}\n\n" for i in range(12)
    )
    settings = ChunkSettings(chunk_size=400, chunk_overlap=100)
    chunks = chunk_text(page, fmt="markdown", settings=settings)
    check_invariants(page, chunks, settings)
    assert len(chunks) > 2
    assert {c.language for c in chunks} == {"zh"}
    english = chunk_text("# Notes\n\n" + command * 3 + " 中", fmt="markdown", settings=settings)
    assert english[0].language == "en"
