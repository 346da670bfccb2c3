"""A synthetic notes folder of a chosen size for the scale benchmark (issue 25).

Unique texts (every sentence carries its note's and its own number, so no two chunks share a
text and the embedding cache cannot help), a notes-like size distribution (log-normal, median
~1.4 KB, a long tail to ~40 KB, so some notes are one chunk and a few are dozens), Markdown
headings every few paragraphs, and 15% of the notes in Chinese. Words follow Zipf's law over a
large vocabulary (a few common words, a long tail of rare ones) as real text does: with a small
vocabulary every query word would match every chunk and the keyword search would rank them all.
Deterministic for a seed.
"""

from __future__ import annotations

import random
import re
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
_SYLLABLE_LIST = "ka lo mi ne ru sa ti vo zen dar pel quo bri ston ful ing ex or tra mon"
_SYLLABLES = _SYLLABLE_LIST.split()
_HAN = (  # common characters, combined into two- and three-character words
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着"
    "去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主"
    "行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二"
    "理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走"
    "电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市"
    "眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提"
    "感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它"
    "许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青"
    "管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步"
    "完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持"
    "取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯"
    "专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴切尔"
)


def note_sizes(chunks: int, rng: random.Random) -> list[int]:
    """Character counts whose sum is about `chunks` chunks' worth."""
    budget = chunks * CHARS_PER_CHUNK
    sizes: list[int] = []
    while budget > 0:
        size = int(min(40_000, max(120, rng.lognormvariate(7.25, 0.9))))
        sizes.append(min(size, max(120, budget)))
        budget -= sizes[-1]
    return sizes


_CJK = re.compile("[\u4e00-\u9fff]+")


class Vocabulary:
    """Words ranked by frequency (Zipf: the word at rank r has weight 1/r)."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        total, cumulative = 0.0, []
        for rank in range(len(words)):
            total += 1 / (rank + 1)
            cumulative.append(total)
        self.cumulative = cumulative

    def pick(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=k)


def vocabularies(seed: int = 24) -> tuple[Vocabulary, Vocabulary]:
    """(English, Chinese): the common words first, then ~20k / ~12k rarer ones."""
    rng = random.Random(seed)
    latin = {"".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))) for _ in range(30_000)}
    han = {"".join(rng.choices(_HAN, k=rng.choice((2, 2, 3)))) for _ in range(14_000)}
    english = _EN + sorted(latin - set(_EN))
    chinese = _ZH + sorted(han - set(_ZH))
    rng.shuffle(english_tail := english[len(_EN):])
    rng.shuffle(chinese_tail := chinese[len(_ZH):])
    return Vocabulary(_EN + english_tail), Vocabulary(_ZH + chinese_tail)


def _sentence(words: Vocabulary, rng: random.Random, tag: str, chinese: bool) -> str:
    picked = words.pick(rng, rng.randint(6, 14))
    if chinese:
        return "".join(picked) + f"{tag}。"
    picked[0] = picked[0].capitalize()
    return " ".join(picked) + f" {tag}."


def note_text(number: int, size: int, rng: random.Random, *, chinese: bool,
              words: Vocabulary) -> str:
    parts = [f"# {'笔记' if chinese else 'Note'} {number}: {' '.join(words.pick(rng, 3))}\n"]
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
                parts.append(f"## {' '.join(words.pick(rng, 2))} {sentence}\n")
    if paragraph:
        parts.append(("" if chinese else " ").join(paragraph) + "\n")
    return "\n".join(parts)


def write_corpus(folder: Path, chunks: int, *, seed: int = 25) -> list[Path]:
    """Write the notes (100 per sub-folder) and return their paths."""
    rng = random.Random(seed)
    english, chinese_words = vocabularies()
    paths: list[Path] = []
    for number, size in enumerate(note_sizes(chunks, rng)):
        chinese = rng.random() < CHINESE_SHARE
        words = chinese_words if chinese else english
        path = folder / f"d{number // 100:04d}" / f"note-{number:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = note_text(number, size, rng, chinese=chinese, words=words)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def queries(paths: list[Path], count: int, *, seed: int = 27) -> list[str]:
    """Queries as a user types them: a few words of some note (Chinese: a phrase of one)."""
    rng = random.Random(seed)
    out: list[str] = []
    for path in rng.sample(paths, min(count, len(paths))):
        body = path.read_text(encoding="utf-8").split("\n", 1)[-1]
        if _CJK.search(body[:200]):
            runs = [r for r in _CJK.findall(body) if len(r) >= 6]
            run = rng.choice(runs) if runs else body[:6]
            start = rng.randrange(max(1, len(run) - 5))
            out.append(run[start : start + rng.randint(3, 6)])
        else:
            words = [w for w in re.findall(r"[A-Za-z]+", body) if len(w) > 2]
            out.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 4)))).lower())
    return out


def change_notes(paths: list[Path], share: float, *, seed: int = 26) -> list[Path]:
    """Append a new unique paragraph to `share` of the notes (the 1% re-sync)."""
    rng = random.Random(seed)
    changed = rng.sample(paths, max(1, round(len(paths) * share)))
    for path in changed:
        with path.open("a", encoding="utf-8") as out:
            out.write(f"\nEdited {rng.getrandbits(64):x}: {' '.join(rng.choices(_EN, k=10))}.\n")
    return changed
