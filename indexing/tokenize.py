"""The one keyword tokenizer shared by every BM25 index (knowledge chunks and memories).

English words are lower-cased, Snowball-stemmed and stop words dropped. Code identifiers are
kept whole *and* split into their parts, so a search for `stash` finds `git-stash` and a search
for `git-stash` prefers the page that names it exactly. Chinese (and Japanese kana) runs are
segmented with jieba in search mode, which also emits the shorter words inside long ones.

The output is deterministic and the functions never raise: the keyword index stores these
tokens, and a tokenizer that behaved differently at query time would silently miss matches.
Bump `TOKENIZER_VERSION` whenever the output for some input changes, so stored indexes know
they must be rebuilt.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

TOKENIZER_VERSION = 1

# Han (basic, extension A, compatibility) plus kana: scripts written without spaces.
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
# A word: letters/digits/underscore (not CJK), optionally joined by - or . into one identifier
# such as `git-stash`, `config.toml`, `ABC-001`, `v1.2.3`. A trailing full stop is not included
# because a joiner must be followed by another word character.
_WORD_CHARS = f"[^\\W{_CJK_CLASS}]"
_WORD = re.compile(f"{_WORD_CHARS}+(?:[-.]{_WORD_CHARS}+)*")
_JOINERS = re.compile(r"[-._]+")
# camelCase / PascalCase / HTTPServer boundaries; digits stay with the preceding letters.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_HAS_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")

# Small on purpose: BM25's IDF already discounts frequent words; these only add noise.
_ENGLISH_STOP = """
    a an and are as at be been but by can could did do does doing for from had has have
    how i if in into is it its me my of on or our s so t than that the their them then there
    these they this those to too was we were what when where which who whom why will with
    would you your"""
ENGLISH_STOP_WORDS = frozenset(_ENGLISH_STOP.split())
# Function words and question words that carry no topic. Single characters not listed here
# (猫, 书, 删…) are meaningful and kept.
_CHINESE_STOP = """
    的 了 是 在 和 与 及 或 也 就 都 而 且 把 被 让 给 对 从 向 于 之 其 这 那 个 些 吗 呢 吧
    啊 呀 么 着 过 地 得 我 你 他 她 它 们 要 会 能 有 怎么 怎样 如何 什么 哪个 哪些 哪里
    为什么 我们 你们 他们 一个 这个 那个 这些 那些 以及 如果 可以 能够 请问 一下"""
CHINESE_STOP_WORDS = frozenset(_CHINESE_STOP.split())

_jieba_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    """jieba with its dictionary loaded (~1 s), once per process and quietly."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


_stemmers = threading.local()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # Stemmer objects are not thread-safe; one per thread, results shared through the cache.
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return str(stemmer.stemWord(word))


def _simple_word(word: str, out: list[str]) -> None:
    """A word without joiners or case changes: lower-case, drop stop words, stem."""
    lower = word.lower()
    if lower in ENGLISH_STOP_WORDS:
        return
    if lower.isascii() and lower.isalpha():
        out.append(_stem(lower))
    else:
        out.append(lower)


def _identifier_parts(word: str) -> list[str]:
    parts: list[str] = []
    for piece in _JOINERS.split(word):
        if not piece:
            continue
        if _HAS_CAMEL.search(piece):
            parts.extend(_CAMEL_PART.findall(piece) or [piece])
        else:
            parts.append(piece)
    return parts


def _latin(segment: str, out: list[str]) -> None:
    for word in _WORD.findall(segment):
        out.extend(_latin_word(word))


@lru_cache(maxsize=200_000)
def _latin_word(word: str) -> tuple[str, ...]:
    # Per distinct word, not per occurrence: words repeat, and splitting, lower-casing and
    # stemming each occurrence again was a third of a `--rebuild` (issue 25).
    parts = _identifier_parts(word)
    out: list[str] = []
    if len(parts) > 1:
        # Kept whole (unstemmed: an identifier is a name, not an English word) plus parts.
        out.append(word.lower().strip("_"))
        for part in parts:
            _simple_word(part, out)
    elif parts:
        _simple_word(parts[0], out)
    return tuple(out)


def _cjk(run: str, out: list[str], *, search_mode: bool) -> None:
    jieba = _segmenter()
    words = jieba.lcut_for_search(run) if search_mode else jieba.lcut(run)
    kept = [w for w in words if w.strip() and w not in CHINESE_STOP_WORDS]
    if not kept and len(run) == 1:
        # A lone character query such as "猫" or even "的" must still find something.
        kept = [run]
    out.extend(kept)


def _tokens(text: str, *, search_mode: bool) -> list[str]:
    if not isinstance(text, str) or not text:
        return []
    # Full-width Latin and digits (common in Chinese text) become their ASCII forms.
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    pos = 0
    for run in _CJK_RUN.finditer(text):
        if run.start() > pos:
            _latin(text[pos : run.start()], out)
        _cjk(run.group(), out, search_mode=search_mode)
        pos = run.end()
    if pos < len(text):
        _latin(text[pos:], out)
    return out


def tokenize(text: str) -> list[str]:
    """Index-side tokens of `text`, in order, with repeats (term frequency matters to BM25)."""
    return _tokens(text, search_mode=True)


def query_tokens(text: str) -> list[str]:
    """Query-side tokens: the same analysis, each distinct token once (first occurrence order).

    Search-mode segmentation is kept on the query side too: a query naming 中华人民共和国 must
    also match documents that only say 共和国. De-duplication keeps a repeated query word from
    counting twice in the BM25 sum.
    """
    return list(dict.fromkeys(_tokens(text, search_mode=True)))
