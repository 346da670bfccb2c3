"""The shared keyword tokenizer: English stemming, code identifiers, Chinese, robustness."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from indexing.tokenize import query_tokens, tokenize


def test_english_is_lowercased_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("The Running of the Files") == ["run", "file"]
    # Inflections meet at one stem, so "deleting" finds "deletes".
    assert tokenize("deleting")[0] == tokenize("deletes")[0] == tokenize("Deleted")[0]


def test_stop_words_only_gives_nothing() -> None:
    assert tokenize("how do I do this with the") == []


def test_hyphenated_command_kept_whole_and_split() -> None:
    assert tokenize("git-stash") == ["git-stash", "git", "stash"]


def test_snake_case_kept_whole_and_split() -> None:
    assert tokenize("snake_case") == ["snake_case", "snake", "case"]


def test_camel_case_kept_whole_and_split() -> None:
    assert tokenize("camelCase") == ["camelcase", "camel", "case"]
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]
    assert tokenize("base64Encode") == ["base64encode", "base64", "encod"]


def test_ticket_ids_and_file_names() -> None:
    assert tokenize("ABC-001") == ["abc-001", "abc", "001"]
    assert tokenize("see config.toml.") == ["see", "config.toml", "config", "toml"]


def test_identifier_whole_is_not_stemmed_but_its_parts_are() -> None:
    assert tokenize("list-files")[:1] == ["list-files"]
    assert "file" in tokenize("list-files")


def test_chinese_is_segmented_into_words() -> None:
    tokens = tokenize("删除文件的命令")
    assert tokens == ["删除", "文件", "命令"]


def test_chinese_search_mode_emits_inner_words() -> None:
    tokens = tokenize("中华人民共和国")
    assert "中华人民共和国" in tokens
    assert "共和国" in tokens


def test_chinese_stop_characters_dropped_but_meaningful_single_chars_kept() -> None:
    tokens = tokenize("我的猫")
    assert "的" not in tokens
    assert "猫" in tokens


def test_lone_character_query_still_yields_a_token() -> None:
    assert tokenize("的") == ["的"]
    assert tokenize("猫") == ["猫"]


def test_mixed_english_and_chinese() -> None:
    tokens = tokenize("用 git-stash 暂存修改，然后列出所有的文件。Listing files")
    for expected in ["git-stash", "git", "stash", "暂存", "修改", "文件", "list", "file"]:
        assert expected in tokens
    assert "的" not in tokens
    assert "，" not in "".join(tokens)


def test_full_width_latin_is_normalised() -> None:
    assert tokenize("ＡＢＣ-００１") == tokenize("ABC-001")


def test_empty_and_punctuation_only() -> None:
    assert tokenize("") == []
    assert tokenize("  ,.;!?()[]{} ——。，") == []


def test_query_tokens_deduplicate_in_order() -> None:
    assert query_tokens("files files FILE git-stash") == ["file", "git-stash", "git", "stash"]


def test_tokenize_keeps_repeats_for_term_frequency() -> None:
    assert tokenize("file file") == ["file", "file"]


def test_deterministic_across_threads() -> None:
    text = "用 git-stash 暂存修改 Running camelCase 的 文件"
    expected = tokenize(text)
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(50):
            results.append(tokenize(text))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    assert all(r == expected for r in results)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_unicode(text: str) -> None:
    tokens = tokenize(text)
    assert all(isinstance(t, str) and t and not t.isspace() for t in tokens)
    assert all(" " not in t for t in tokens)
    assert set(query_tokens(text)) == set(tokens)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_tokens_survive_as_single_fts_tokens(text: str) -> None:
    # The keyword index's FTS5 `ascii` tokenizer splits only on ASCII characters other than
    # letters, digits and the joiners - _ . ; tokens must never contain one.
    for token in tokenize(text):
        assert all(not ch.isascii() or ch.isalnum() or ch in "-_." for ch in token), token
        assert not any(ch.isspace() for ch in token), token


def test_each_distinct_word_is_analysed_once(monkeypatch) -> None:
    # issue 25: splitting and stemming every occurrence again was a third of a `--rebuild`.
    import indexing.tokenize as tok

    calls: list[str] = []
    real = tok._identifier_parts

    def counted(word: str) -> list[str]:
        calls.append(word)
        return real(word)

    monkeypatch.setattr(tok, "_identifier_parts", counted)
    text = "zorblax-quux glimmerwing " * 50
    first = tokenize(text)
    assert first == ["zorblax-quux", "zorblax", "quux", "glimmerw"] * 50
    assert tokenize(text) == first
    assert sorted(calls) == ["glimmerwing", "zorblax-quux"]
