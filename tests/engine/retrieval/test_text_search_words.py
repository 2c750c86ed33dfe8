"""What full-text search is given: under text_search_words=content (the default) the query's content words, so a
turn that shares only "what", "does", "do" with the question is no full-text hit; under all (llmemory) the query as
it is. A hop records what its full-text search was given when it differs from its query; a replay, which searches
nothing, keeps the record.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from engine import MemoryEngine, Settings
from engine.presets import PRESETS
from engine.retrieval.text import text_search_query
from engine.trace.codec import trace_json
from tests.support.stored_trace import empty_trace
from ui.trace_timing import span_io

NOW = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("What does Melanie do to destress?", "Melanie destress"),
        ("How much did I pay for my bike repair?", "much pay bike repair"),
        ("What books has Melanie read?", "books Melanie read"),
        # nothing but question and function words: the query as it is, rather than no full-text search at all
        ("What did you do?", "What did you do?"),
        ("", ""),
    ],
)
def test_the_full_text_query_is_the_querys_content_words(query, words):
    assert text_search_query(query) == words


USER = "fts-words"
QUESTION = "What does Melanie do to destress?"
ONLY_QUESTION_WORDS = 'Caroline said, "What does it mean to you? What do you do all day?"'
ANSWER = 'Melanie said, "Running is how I destress after work."'


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


@pytest.fixture(scope="module")
def ids(engine: MemoryEngine) -> dict[str, str]:
    return {
        "asks": engine.items.remember(USER, ONLY_QUESTION_WORDS).id,
        "answer": engine.items.remember(USER, ANSWER).id,
        "other": engine.items.remember(USER, "The gym on Fifth Street opens at six.").id,
    }


def found_by(trace, item_id: str) -> str:
    return next(c.found_by for c in trace.hops[0].candidates if c.id == item_id)


def test_a_turn_sharing_only_question_words_is_no_full_text_hit_and_the_hop_says_what_search_was_given(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, now=NOW)
    assert trace.settings.retrieval.text_search_words == "content"
    assert trace.hops[0].text_query == "Melanie destress"
    assert found_by(trace, ids["asks"]) == "vector"  # the vector search still returns it: the store is small
    assert found_by(trace, ids["answer"]) == "both"
    inputs, _ = span_io(trace, "hop1.search")  # the span tree's search stage
    assert ("full-text query", "Melanie destress") in inputs
    # llmemory's way: the question as it is, and "what does ... do" matches the turn that only asks
    raw = engine.retrieval.retrieve(USER, QUESTION, overrides={"text_search_words": "all"}, now=NOW)
    assert raw.hops[0].text_query is None
    assert found_by(raw, ids["asks"]) == "both"
    assert "text_query" not in json.loads(trace_json(raw))["hops"][0]


def test_the_record_survives_storage_and_replay(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, now=NOW)
    stored = engine.traces.get(trace.trace_id)
    assert stored.hops[0].text_query == "Melanie destress"
    assert json.loads(trace_json(trace))["hops"][0]["text_query"] == "Melanie destress"
    replayed = engine.retrieval.replay_trace(stored)
    assert replayed.hops[0].text_query == "Melanie destress"
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # A replay searches nothing: under "all" its candidates, and what their search was given, stay as recorded
    assert stored.hops[0].candidates
    again = engine.retrieval.replay_trace(stored, overrides={"text_search_words": "all"})
    assert again.hops[0].text_query == "Melanie destress"
    assert [c.found_by for c in again.hops[0].candidates] == [c.found_by for c in stored.hops[0].candidates]


def test_older_traces_and_the_llmemory_preset_give_full_text_search_the_query_as_it_is():
    settings = empty_trace({"top_k": 10, "now": NOW.isoformat()}, NOW).settings
    assert settings.retrieval.text_search_words == "all" and "text_search_words" not in settings.absent
    assert Settings().with_overrides(PRESETS["llmemory"]).text_search_words == "all"
    assert Settings().text_search_words == "content"


def test_a_hard_forget_takes_the_forgotten_words_out_of_what_full_text_search_was_given(engine):
    text = "Quillon keeps the spare key under the blue mat"
    secret = engine.items.remember(USER, text)
    trace = engine.retrieval.retrieve(USER, f'Is it true that "{text}"?', now=NOW)
    assert "Quillon" in trace.hops[0].text_query
    engine.forgetting.forget(USER, "semantic", [secret.id], reason="privacy request", mode="hard")
    stored = engine.traces.get(trace.trace_id)
    assert "Quillon" not in json.dumps(stored.to_dict())
    # what search was given now reads as the redacted query's content words
    assert stored.hops[0].text_query == text_search_query(stored.hops[0].query)
    assert secret.id in stored.hops[0].text_query
    engine.admin.purges.wait(60)
