"""The dense ranking of turns with their neighbours' meaning (assistant/conversations/
dense_context.py): scoring, the neighbours a turn has, and its effect on search."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from assistant.conversations.dense_context import context_scores
from assistant.conversations.importing import import_conversations
from assistant.conversations.index import ConversationIndex
from assistant.conversations.search import SearchSettings, search_conversations
from assistant.timeflags import range_from_flags

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_turn_among_related_turns_outranks_an_equally_close_lone_turn() -> None:
    query = unit(1, 0, 0)
    vectors = {"lone": unit(1, 1, 0), "mid": unit(1, 0, 1), "a": unit(1, 0, 0.2),
               "b": unit(1, 0.2, 0), "far1": unit(0, 1, 0), "far2": unit(0, 0, 1)}
    scored = context_scores(query, ["lone", "mid"], vectors,
                            {"mid": ["a", "b"], "lone": ["far1", "far2"]}, share=0.5)
    assert [s[0] for s in scored] == ["mid", "lone"]
    # the own cosine is kept as it is (shown to the user, read by the chat's recall gate)
    assert scored[0][2] == pytest.approx(float(vectors["mid"] @ query))
    assert scored[1][2] == pytest.approx(scored[0][2])
    # the score: the mean of the own cosine and the window's
    window = vectors["mid"] + vectors["a"] + vectors["b"]
    expected = 0.5 * scored[0][2] + 0.5 * float(window @ query) / float(np.linalg.norm(window))
    assert scored[0][1] == pytest.approx(expected)


def test_without_neighbours_or_share_the_score_is_the_cosine() -> None:
    query = unit(1, 2, 0)
    vectors = {"s:x": unit(1, 0, 0), "t:1": unit(0, 1, 0), "t:2": unit(0, 0, 1)}
    alone = context_scores(query, ["s:x", "missing"], vectors, {}, share=0.5)
    assert [(i, round(s, 5)) for i, s, _ in alone] == [("s:x", round(float(query[0]), 5))]
    own_only = context_scores(query, ["t:1"], vectors, {"t:1": ["t:2"]}, share=0.0)
    assert own_only[0][1] == pytest.approx(float(query[1]))


def line(session: str, role: str, text: str, when: str, ref: str) -> str:
    return json.dumps({"session": session, "role": role, "text": text, "created_at": when,
                       "ref": ref})


# The "garden" session talks about tomatoes over three turns; "market" mentions them once
# among unrelated turns. The market's middle turn is the closer one by its own words (one
# shared word, one word fewer), only the neighbours of the garden's make it the better hit.
LINES = [
    line("garden", "user", "Tomatoes need sun and water daily", "2026-03-01T09:00:00Z", "g1"),
    line("garden", "assistant", "Yes tomatoes like warm soil", "2026-03-01T09:00:01Z", "g2"),
    line("garden", "user", "My plants grow really fast now that spring is here",
         "2026-03-01T09:01:00Z", "g3"),
    line("garden", "assistant", "Tomatoes ripen in late summer", "2026-03-01T09:01:01Z", "g4"),
    line("garden", "user", "Water tomatoes at dawn and give sun", "2026-03-01T09:02:00Z", "g5"),
    line("garden", "assistant", "Tomatoes and basil grow well", "2026-03-01T09:02:01Z", "g6"),
    line("market", "user", "Which train goes to town", "2026-03-05T09:00:00Z", "m1"),
    line("market", "assistant", "The blue line leaves hourly", "2026-03-05T09:00:01Z", "m2"),
    line("market", "user", "My bread goes stale fast", "2026-03-05T09:01:00Z", "m3"),
    line("market", "assistant", "Tomatoes cost two euros", "2026-03-05T09:01:01Z", "m4"),
    line("market", "user", "Where do I park the bike", "2026-03-05T09:02:00Z", "m5"),
    line("market", "assistant", "Racks stand by the door", "2026-03-05T09:02:01Z", "m6"),
]


@pytest.fixture
def passages(conversation_index: ConversationIndex) -> ConversationIndex:
    report, errors = import_conversations(conversation_index, LINES, name="fixture")
    assert not errors and report.turns == 6
    return conversation_index


def test_neighbours_are_the_adjacent_turns_of_the_same_session(
        passages: ConversationIndex) -> None:
    ids = {h.refs[0]: h.unit_id for h in search_conversations(
        passages, "tomatoes train bread bike plants water", now=NOW, top_k=6).hits}
    near = passages.neighbours([ids["g1"], ids["g3"], ids["m1"], "s:garden"])
    assert near[ids["g1"]] == [ids["g3"]]
    assert near[ids["g3"]] == [ids["g1"], ids["g5"]]
    assert near[ids["m1"]] == [ids["m3"]]  # never a turn of another session
    assert "s:garden" not in near


def test_dense_search_prefers_the_turn_in_a_passage_about_the_question(
        passages: ConversationIndex) -> None:
    dense_only = SearchSettings(keyword_weight=0.0)
    hits = search_conversations(passages, "tomatoes", now=NOW, top_k=6,
                                settings=dense_only).hits
    by_ref = {h.refs[0]: h for h in hits}
    # alone, the market turn is the closer one (fewer words besides "tomatoes")...
    assert by_ref["m3"].vector is not None and by_ref["g3"].vector is not None
    assert by_ref["m3"].vector > by_ref["g3"].vector
    # ...but the garden turn sits between two turns about tomatoes
    assert by_ref["g3"].rank < by_ref["m3"].rank
    own_only = search_conversations(passages, "tomatoes", now=NOW, top_k=6, settings=SearchSettings(
        keyword_weight=0.0, context_share=0.0)).hits
    order = [h.refs[0] for h in own_only]
    assert order.index("m3") < order.index("g3")


def test_a_neighbour_outside_the_date_range_is_never_a_hit(
        passages: ConversationIndex) -> None:
    late = [line("late", "user", "Tomatoes again today", "2026-03-04T09:00:00Z", "l1"),
            line("late", "assistant", "Tomatoes are cheap", "2026-03-04T09:00:01Z", "l2"),
            line("late", "user", "What about the bike", "2026-03-06T09:00:00Z", "l3"),
            line("late", "assistant", "It is fixed", "2026-03-06T09:00:01Z", "l4")]
    report, errors = import_conversations(passages, late, name="late")
    assert not errors and report.turns == 2
    rng = range_from_flags("2026-03-05T12:00:00", None, NOW)
    hits = search_conversations(passages, "tomatoes bike", now=NOW, top_k=10,
                                time_range=rng).hits
    assert {h.refs[0] for h in hits} == {"l3"}
