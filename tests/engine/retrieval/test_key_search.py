"""The key search of a hop (engine/retrieval/key_search.py), on a small store where every number can be checked by
hand from what the trace records.

With ``memory_keys`` on, a hop also searches the memories' extra keys by vector and full text. A memory a key
matched carries the match (the best key by cosine and by BM25: kind, text, source, score) in its candidate; its
cosine in the fusion is the better of its own and its key's, and ``key_bm25_weight`` times its key's BM25 adds to its
own BM25 (``bm25_raw``). A memory only a key found joins with ``found_by`` "key" and its own text (the context never
shows a key). The stage has its own timing; the trace's JSON keeps the matches; a replay scores them again exactly,
and without keys drops what only they found. With ``memory_keys`` off nothing of this happens.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine import MemoryEngine, Settings
from engine.trace.codec import trace_from_dict, trace_json
from engine.trace.key_links import REDACTED_KEY
from ui.trace_data import candidate_rows

Q = 'Caroline said, "Where did you go last weekend?"'
A = 'Melanie said, "We camped at the lake in Oregon."'
FILLERS = [  # two near the question's topic, so that q's own vector is not among the nearest two
    "Pack the tent and sleeping bags for the mountain trip.",
    "Fishing season on the river opens in April.",
    "The quarterly budget review moved to Thursday afternoon.",
    "Remember to water the basil on the kitchen windowsill.",
]
NOW = "2026-01-01T00:00:00+00:00"
# The hybrid score is the fusion's cosine alone (bm25_weight 0) or the BM25 alone (1): each readable by hand.
# q is a short question: question_turn_penalty 0 keeps its hybrid its cosine.
BY_COSINE = {
    "memory_keys": "all",
    "top_k": 1,
    "fusion": "weighted",
    "bm25_weight": 0.0,
    "relevance_filter": "off",
    "question_turn_penalty": 0.0,
}
QUESTION = "Which state has the lake Melanie camped at, Oregon?"


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    engine = MemoryEngine.open(
        settings=dataclasses.replace(module_settings, graph_extraction="offline", memory_keys_write=True),
        embedder=embedder,
    )
    engine.items.remember_many(
        [
            {"user_id": "u", "id": "q", "content": Q, "created_at": "2025-06-01T00:00:00+00:00"},
            {"user_id": "u", "id": "a", "content": A, "preceding_text": Q, "created_at": "2025-06-01T00:00:00+00:00"},
        ]
        + [{"user_id": "u", "id": f"f{n}", "content": t} for n, t in enumerate(FILLERS)]
    )
    return engine


def candidates(trace):
    return {c.id: c for c in trace.hops[0].candidates}


def test_a_memory_only_its_next_key_found_joins_with_its_own_text(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, overrides={**BY_COSINE, "top_k": 2}, now=NOW, save=False)
    found = candidates(trace)
    q = found["q"]
    assert q.found_by == "key" and q.key is not None and q.key.brought_in
    assert q.text == Q  # its own text, never the key's
    assert (q.key.cosine_kind, q.key.cosine_text, q.key.cosine_source) == ("next", A, "a")
    # the fusion's cosine is the better of its own and its key's
    assert q.key.cosine is not None and q.key.cosine > q.scores.vector_similarity
    assert q.scores.hybrid == pytest.approx(q.key.cosine, abs=1e-6)
    assert "keys" in dict(trace.hops[0].timings_ms.stages)
    without = engine.retrieval.retrieve(
        "u", QUESTION, overrides={**BY_COSINE, "top_k": 2, "memory_keys": "off"}, now=NOW, save=False
    )
    assert "q" not in candidates(without)
    assert all(c.key is None for c in candidates(without).values())
    assert "keys" not in dict(without.hops[0].timings_ms.stages)


def test_a_keys_bm25_adds_to_its_memorys_own_at_its_weight(engine: MemoryEngine) -> None:
    for weight in (0.5, 2.0):
        trace = engine.retrieval.retrieve(
            "u", QUESTION, overrides={**BY_COSINE, "bm25_weight": 1.0, "key_bm25_weight": weight}, now=NOW, save=False
        )
        a = candidates(trace)["a"]
        assert a.key is not None and a.key.bm25 is not None and a.scores.fts_score is not None
        assert a.key.bm25_kind == "facts" and a.key.bm25_text == "Oregon, Melanie, camped, lake"
        assert a.scores.bm25_raw == pytest.approx(a.scores.fts_score + weight * a.key.bm25, abs=1e-6)
    off = engine.retrieval.retrieve("u", QUESTION, overrides={**BY_COSINE, "memory_keys": "off"}, now=NOW, save=False)
    a = candidates(off)["a"]
    assert a.scores.bm25_raw == pytest.approx(a.scores.fts_score or 0.0, abs=1e-6)


def test_a_memory_its_own_search_found_takes_its_keys_cosine_when_nearer(engine: MemoryEngine) -> None:
    a = candidates(engine.retrieval.retrieve("u", QUESTION, overrides=BY_COSINE, now=NOW, save=False))["a"]
    assert a.found_by != "key" and a.key is not None and a.key.cosine is not None
    assert a.scores.hybrid == pytest.approx(max(a.scores.vector_similarity, a.key.cosine), abs=1e-6)


def test_the_trace_keeps_the_matches_and_replays_them(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, overrides={**BY_COSINE, "top_k": 2}, now=NOW)
    back = trace_from_dict(json.loads(trace_json(trace)))
    assert candidates(back)["q"].key == candidates(trace)["q"].key
    # why-not and the trace page's table say which key matched
    said = engine.traces.why_not(trace, "q").rows[0]["what happened"]
    assert "found by key" in said and f"next key by vector (cosine {candidates(trace)['q'].key.cosine:.3f})" in said
    row = next(r for r in candidate_rows(trace.hops[0]) if r["id"] == "q")
    assert row["key_match"].startswith("next key by vector")
    same = engine.retrieval.replay(trace.trace_id)
    assert [(r.id, r.final) for r in same.ranking] == [(r.id, r.final) for r in trace.ranking]
    no_keys = engine.retrieval.replay(trace.trace_id, overrides={"memory_keys": "off"})
    assert "q" not in candidates(no_keys)
    # without keys, the memory search found scores by its own cosine again
    a = candidates(no_keys)["a"]
    assert a.scores.hybrid == pytest.approx(a.scores.vector_similarity, abs=1e-6)


def test_a_hard_forget_of_the_reply_redacts_the_key_that_quotes_it(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, overrides={**BY_COSINE, "top_k": 2}, now=NOW)
    engine.forgetting.forget("u", "semantic", ["a"], "test", mode="hard")
    stored = candidates(engine.traces.get(trace.trace_id))
    assert stored["q"].key is not None
    assert stored["q"].key.cosine_text == REDACTED_KEY
    assert stored["q"].key.cosine == candidates(trace)["q"].key.cosine  # the scores stay, to explain the ranking
    # and retrieval no longer finds q by the forgotten reply's words
    again = engine.retrieval.retrieve("u", QUESTION, overrides={**BY_COSINE, "top_k": 2}, now=NOW, save=False)
    assert all(c.key is None or c.key.cosine_source != "a" for c in candidates(again).values())
