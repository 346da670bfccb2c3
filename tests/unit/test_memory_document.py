"""The text a memory is found by: search text for the keyword index, a shorter head of it for
the embedding model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypedDict

from assistant.memory.document import (
    EMBED_CHARS,
    date_words,
    embedding_text,
    episode_context,
    search_text,
)
from assistant.memory.model import MemoryType


class Fields(TypedDict):
    """The keyword arguments `search_text` and `embedding_text` share, typed so `**args`
    is checked against their signatures."""

    type: MemoryType
    key: str | None
    context: str
    created_at: float | None


MAY_8 = datetime(2023, 5, 8, tzinfo=UTC).timestamp()  # stored times are Unix seconds
TURNS = ["I adopted a dog.", "What breed?", "A beagle, her name is Luna.", "Cute!", "Thanks"]


def test_date_words_spell_the_day_month_and_weekday() -> None:
    assert date_words(MAY_8 + 13 * 3600 + 56 * 60) == "8 May 2023, Monday, May 2023"
    assert date_words(MAY_8 + 86400 - 1) == "8 May 2023, Monday, May 2023"  # the day in UTC
    assert date_words(None) == ""
    assert date_words(1e20) == ""  # beyond what a date can hold


def test_episode_context_takes_two_turns_before_and_one_after_nearest_first() -> None:
    assert episode_context(TURNS, 2) == "What breed? | Cute! | I adopted a dog."
    assert episode_context(TURNS, 0) == "What breed?"
    assert episode_context(["alone"], 0) == ""


def test_search_text_repeats_the_memory_only_when_context_follows() -> None:
    plain = search_text("likes tea", type=MemoryType.PREFERENCE, key="drink", context="",
                        created_at=None)
    assert plain == "likes tea\ndrink"
    episode = search_text("A beagle.", type=MemoryType.EPISODE, key=None, context="What breed?",
                          created_at=MAY_8)
    assert episode.split("\n") == ["A beagle.", "A beagle.", "(8 May 2023, Monday, May 2023)",
                                   "What breed?"]


def test_embedding_text_is_search_text_when_short() -> None:
    args: Fields = {"type": MemoryType.EPISODE, "key": None, "context": "What breed?",
            "created_at": MAY_8}
    assert embedding_text("A beagle.", **args) == search_text("A beagle.", **args)


def test_embedding_text_cuts_long_context_at_a_word_boundary() -> None:
    context = " ".join(f"word{i}" for i in range(300))
    args: Fields = {"type": MemoryType.EPISODE, "key": None, "context": context,
            "created_at": MAY_8}
    full = search_text("A beagle.", **args)
    cut = embedding_text("A beagle.", **args)
    assert len(cut) <= EMBED_CHARS
    assert full.startswith(cut)
    assert full[len(cut)] == " "  # ends on a whole word
    assert cut.startswith("A beagle.\nA beagle.\n(8 May 2023")


def test_embedding_text_never_cuts_the_memory_itself() -> None:
    long_text = "x" * (EMBED_CHARS + 50)
    args: Fields = {"type": MemoryType.EPISODE, "key": "pet", "context": "neighbour turn " * 40,
            "created_at": MAY_8}
    cut = embedding_text(long_text, **args)
    assert cut == "\n".join([long_text, long_text, "pet", "(8 May 2023, Monday, May 2023)"])
    no_context = embedding_text(long_text, type=MemoryType.FACT, key=None, context="",
                                created_at=None)
    assert no_context == long_text
