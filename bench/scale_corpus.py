"""A synthetic notes folder of a chosen size for the scale benchmark (issue 25).

Unique texts (every sentence carries its note's and its own number, so no two chunks share a
text and the embedding cache cannot help), a notes-like size distribution (log-normal, median
~1.4 KB, a long tail to ~40 KB, so some notes are one chunk and a few are dozens), Markdown
headings every few paragraphs, and 15% of the notes in Chinese. Deterministic for a seed.
"""

from __future__ import annotations

import random
from pathlib import Path

CHARS_PER_CHUNK = 640  # measured: the default chunker (1200 max) averages ~640 chars here
CHINESE_SHARE = 0.15

_EN_WORDS = (
    "note meeting project deadline review backup server config cache index search query "
    "garden recipe travel budget invoice python module test release branch merge deploy "
    "kernel disk network latency memory thread socket shell script docker image volume "
    "book chapter idea draft outline summary question answer insight habit morning plan "
    "weekly goal health sleep walk coffee music film paper reference citation method result"
)
_ZH_WORDS = (
    "笔记 会议 项目 截止 审查 备份 服务器 配置 缓存 索引 搜索 查询 花园 食谱 旅行 预算 发票 "
    "模块 测试 发布 分支 合并 部署 内核 磁盘 网络 延迟 内存 线程 脚本 镜像 书籍 章节 想法 草稿 "
    "大纲 总结 问题 答案 习惯 早晨 计划 目标 健康 睡眠 散步 咖啡 音乐 电影 论文 方法 结果"
)
_EN = _EN_WORDS.split()
_ZH = _ZH_WORDS.split()


def note_sizes(chunks: int, rng: random.Random) -> list[int]:
    """Character counts whose sum is about `chunks` chunks' worth."""
    budget = chunks * CHARS_PER_CHUNK
    sizes: list[int] = []
    while budget > 0:
        size = int(min(40_000, max(120, rng.lognormvariate(7.25, 0.9))))
        sizes.append(min(size, max(120, budget)))
        budget -= sizes[-1]
    return sizes


def _sentence(words: list[str], rng: random.Random, tag: str, chinese: bool) -> str:
    picked = rng.choices(words, k=rng.randint(6, 14))
    if chinese:
        return "".join(picked) + f"{tag}。"
    picked[0] = picked[0].capitalize()
    return " ".join(picked) + f" {tag}."


def note_text(number: int, size: int, rng: random.Random, *, chinese: bool) -> str:
    words = _ZH if chinese else _EN
    parts = [f"# {'笔记' if chinese else 'Note'} {number}: {' '.join(rng.choices(words, k=3))}\n"]
    length, sentence, paragraph = len(parts[0]), 0, []
    while length < size:
        sentence += 1
        text = _sentence(words, rng, f"n{number}s{sentence}", chinese)
        paragraph.append(text)
        length += len(text) + 1
        if len(paragraph) >= rng.randint(3, 6):
            parts.append(("" if chinese else " ").join(paragraph) + "\n")
            paragraph = []
            if rng.random() < 0.3:
                parts.append(f"## {' '.join(rng.choices(words, k=2))} {sentence}\n")
    if paragraph:
        parts.append(("" if chinese else " ").join(paragraph) + "\n")
    return "\n".join(parts)


def write_corpus(folder: Path, chunks: int, *, seed: int = 25) -> list[Path]:
    """Write the notes (100 per sub-folder) and return their paths."""
    rng = random.Random(seed)
    paths: list[Path] = []
    for number, size in enumerate(note_sizes(chunks, rng)):
        chinese = rng.random() < CHINESE_SHARE
        path = folder / f"d{number // 100:04d}" / f"note-{number:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(number, size, rng, chinese=chinese), encoding="utf-8")
        paths.append(path)
    return paths


def change_notes(paths: list[Path], share: float, *, seed: int = 26) -> list[Path]:
    """Append a new unique paragraph to `share` of the notes (the 1% re-sync)."""
    rng = random.Random(seed)
    changed = rng.sample(paths, max(1, round(len(paths) * share)))
    for path in changed:
        with path.open("a", encoding="utf-8") as out:
            out.write(f"\nEdited {rng.getrandbits(64):x}: {' '.join(rng.choices(_EN, k=10))}.\n")
    return changed
