"""Token counting: the WordPiece approximation and the CJK-aware fallback."""

from __future__ import annotations

import pytest

from assistant.llm import tokens
from assistant.llm.tokens import MESSAGE_OVERHEAD, count_message, count_tokens, heuristic_count


def test_empty_text_is_zero_tokens() -> None:
    assert count_tokens("") == 0
    assert heuristic_count("") == 0
    assert count_message("") == MESSAGE_OVERHEAD


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        # Reference counts from Llama-3/Qwen BPE tokenizers for the same strings.
        ("Hello world, how are you doing today?", 9, 12),
        ("git stash push -m 'work in progress'", 9, 14),
        ("def foo_bar(x):\n    return x ** 2\n", 12, 20),
        ("我喜欢用Python写代码，你呢？", 10, 16),
    ],
)
def test_counts_are_close_to_chat_model_tokenizers(text: str, low: int, high: int) -> None:
    assert low <= count_tokens(text) <= high


def test_long_text_is_not_truncated() -> None:
    # The bundled tokenizer truncates at 512 for the embedding model; counting must not.
    text = "word " * 3000
    assert count_tokens(text) >= 3000


def test_newlines_count() -> None:
    assert count_tokens("a\n\n\n\nb") > count_tokens("a b")


def test_chinese_counts_about_one_token_per_character() -> None:
    text = "知识库里的笔记需要被检索到" * 10
    assert len(text) <= count_tokens(text) <= 1.3 * len(text)


def test_heuristic_fallback_when_the_tokenizer_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_wordpiece", lambda: None)
    count_tokens.cache_clear()
    try:
        assert count_tokens("abcd" * 100) == heuristic_count("abcd" * 100)
        assert 100 <= count_tokens("abcd" * 100) <= 120
        assert 50 <= count_tokens("中" * 50) <= 60
    finally:
        count_tokens.cache_clear()  # later tests must not see heuristic counts
