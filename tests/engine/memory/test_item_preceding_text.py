"""An item's preceding_text: what came right before it where it was said (e.g. the previous turn of a conversation).

It is stored with the item, travels through export and ingest, and its vector is ``normalise(e(text) +
preceding_text_weight * e(preceding_text))`` so a reply is found by the question it answers; full-text search sees the
text only, and the query's words in the preceding text add to the item's BM25 at ``preceding_bm25_weight``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from engine import InvalidInput, MemoryEngine, Verdict
from engine.trace.traces import Traces
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"
QUESTION = 'Alice said, "Have you ever been to Lisbon?"'
REPLY = 'Bob said, "Yes, twice last year, and I loved the trams."'


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def vector_score(engine: MemoryEngine, query: str, item_id: str) -> float:
    hits = engine.retrieval.search(U, query, kind="semantic", limit=50, mode="vector")
    return next(h.score for h in hits if h.id == item_id)


def test_the_preceding_text_is_stored_with_the_item_and_returned(empty_engine):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    assert item.preceding_text == QUESTION
    assert empty_engine.items.get(U, item.id).preceding_text == QUESTION
    assert empty_engine.items.list_items(U).rows[0].preceding_text == QUESTION


def test_an_item_without_one_has_an_empty_preceding_text_and_blank_counts_as_none(empty_engine):
    assert empty_engine.items.remember(U, "said out of the blue").preceding_text == ""
    assert empty_engine.items.remember(U, "blank preceding text", preceding_text="   ").preceding_text == ""


def test_the_vector_embeds_the_text_plus_the_weighted_preceding_text(empty_engine, embedder):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    text_vec, before_vec = embedder.embed([REPLY, QUESTION])
    query_vec = embedder.embed(["trams in Lisbon"])[0]
    expected = unit(text_vec + 0.4 * before_vec)
    assert vector_score(empty_engine, "trams in Lisbon", item.id) == pytest.approx(
        float(query_vec @ expected), abs=1e-5
    )


def test_a_reply_is_found_by_the_question_it_answers(settings, embedder, tmp_path):
    with_question = MemoryEngine.open(settings=settings, embedder=embedder)
    bare = MemoryEngine.open(settings=replace(settings, store=str(tmp_path / "bare")), embedder=embedder)
    a = with_question.items.remember(U, REPLY, preceding_text=QUESTION)
    b = bare.items.remember(U, REPLY)
    query = "Has Bob been to Lisbon?"
    assert vector_score(with_question, query, a.id) > vector_score(bare, query, b.id) + 0.05


def test_weight_zero_stores_the_preceding_text_but_embeds_only_the_text(settings, embedder):
    engine = MemoryEngine.open(settings=replace(settings, preceding_text_weight=0.0), embedder=embedder)
    item = engine.items.remember(U, REPLY, preceding_text=QUESTION)
    assert engine.items.get(U, item.id).preceding_text == QUESTION
    text_vec, query_vec = embedder.embed([REPLY])[0], embedder.embed(["trams in Lisbon"])[0]
    assert vector_score(engine, "trams in Lisbon", item.id) == pytest.approx(float(query_vec @ text_vec), abs=1e-5)


def test_full_text_search_matches_the_text_not_the_preceding_text(empty_engine):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    assert [h.id for h in empty_engine.retrieval.search(U, "trams", kind="semantic", mode="fts")] == [item.id]
    assert empty_engine.retrieval.search(U, "Alice", kind="semantic", mode="fts") == []


def test_a_batch_of_conversation_turns_embeds_each_turn_with_the_one_before(empty_engine, embedder):
    turns = [
        'Alice said, "What did you cook on Sunday?"',
        'Bob said, "A mushroom risotto."',
        'Alice said, "Sounds lovely."',
    ]
    items = empty_engine.items.remember_many(
        {"user_id": U, "id": f"t{n}", "content": t, "preceding_text": turns[n - 1] if n else None}
        for n, t in enumerate(turns)
    )
    assert [i.preceding_text for i in items] == ["", turns[0], turns[1]]
    vecs, query_vec = embedder.embed(turns), embedder.embed(["risotto"])[0]
    for n in (1, 2):
        expected = unit(vecs[n] + 0.4 * vecs[n - 1])
        assert vector_score(empty_engine, "risotto", f"t{n}") == pytest.approx(float(query_vec @ expected), abs=1e-5)


def test_reindex_rebuilds_the_same_vectors(empty_engine):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    before = vector_score(empty_engine, "Has Bob been to Lisbon?", item.id)
    empty_engine.admin.reindex()
    assert vector_score(empty_engine, "Has Bob been to Lisbon?", item.id) == pytest.approx(before, abs=1e-5)


def test_export_and_ingest_carry_the_preceding_text(empty_engine, settings, embedder, tmp_path):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    plain = empty_engine.items.remember(U, "a fact said out of the blue")
    lines = [json.dumps(r) for r in empty_engine.admin.export(U)]
    exported = {r["id"]: r for r in map(json.loads, lines) if r["kind"] == "item"}
    assert exported[item.id]["preceding_text"] == QUESTION
    assert "preceding_text" not in exported[plain.id]
    other = MemoryEngine.open(settings=replace(settings, store=str(tmp_path / "copy")), embedder=embedder)
    other.admin.ingest_lines(lines)
    assert other.items.get(U, item.id).preceding_text == QUESTION
    query = "Has Bob been to Lisbon?"
    assert vector_score(other, query, item.id) == pytest.approx(vector_score(empty_engine, query, item.id), abs=1e-5)


@pytest.mark.parametrize(
    "bad, message",
    [
        (42, "preceding_text must be text"),
        ("x" * 40_000, "item preceding_text is 40,000 characters"),
        ("bad\x00byte", "NUL"),
    ],
)
def test_a_bad_preceding_text_is_refused_and_nothing_is_written(empty_engine, bad, message):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput, match=message):
        empty_engine.items.remember(U, REPLY, preceding_text=bad)
    with pytest.raises(InvalidInput, match=message):
        empty_engine.items.remember_many(
            [{"user_id": U, "content": "fine"}, {"user_id": U, "content": REPLY, "preceding_text": bad}]
        )
    assert snapshot(empty_engine) == before


def test_an_ingest_line_with_a_bad_preceding_text_names_its_line_and_writes_nothing(empty_engine):
    before = snapshot(empty_engine)
    lines = [
        json.dumps({"kind": "item", "user_id": U, "content": "first"}),
        json.dumps({"kind": "item", "user_id": U, "content": REPLY, "preceding_text": ["not", "text"]}),
    ]
    with pytest.raises(InvalidInput, match="line 2.*preceding_text must be text"):
        empty_engine.admin.ingest_lines(lines)
    assert snapshot(empty_engine) == before


def test_a_trace_keeps_each_candidates_preceding_text_through_storage_and_replay(empty_engine):
    item = empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    plain = empty_engine.items.remember(U, "Bob's favourite city is Lisbon.")
    empty_engine.episodes.record(
        U,
        [{"observation": "asked about Lisbon", "action": "answered", "result": "ok"}],
        summary="Talked about Lisbon trips",
    )
    trace = empty_engine.retrieval.retrieve(U, "Has Bob been to Lisbon?")
    by_id = {c.id: c for c in trace.hops[0].candidates}
    assert by_id[item.id].preceding_text == QUESTION
    assert by_id[plain.id].preceding_text == ""
    assert all(c.preceding_text == "" for c in by_id.values() if c.kind != "semantic")
    stored = empty_engine.traces.get(trace.trace_id)
    assert {c.id: c.preceding_text for c in stored.hops[0].candidates} == {
        c.id: c.preceding_text for c in trace.hops[0].candidates
    }
    replayed = empty_engine.retrieval.replay(trace.trace_id, {"bm25_weight": 0.5})
    assert {c.id: c.preceding_text for c in replayed.hops[0].candidates}[item.id] == QUESTION
    exported = json.loads(empty_engine.traces.export(trace.trace_id))["hops"][0]["candidates"]
    assert {c["id"]: c["preceding_text"] for c in exported}[item.id] == QUESTION


def test_a_reply_passes_the_relevance_filter_on_the_words_of_the_question_it_answered(empty_engine):
    reply = empty_engine.items.remember(
        U,
        'Omar said, "Me, on the first Monday of each month."',
        preceding_text='Lena said, "Who defrosts the lab freezer?"',
    )
    for n in range(6):  # more than relevance_keep_all_max candidates, so the filter judges each one
        empty_engine.items.remember(U, f"Unrelated note number {n} about printer toner.")
    # llmemory's weighted score leaves the reply below 0.5, so the word rule decides
    trace = empty_engine.retrieval.retrieve(U, "Who defrosts the freezer in the lab?", preset="llmemory")
    verdict = next(c.verdicts for c in trace.hops[0].candidates if c.id == reply.id)
    assert verdict == Verdict("kept", "word_overlap 'defrosts' (in its preceding text)")
    assert reply.id in trace.context_ids


def test_the_words_of_the_question_a_reply_answered_count_towards_its_bm25(empty_engine):
    reply = empty_engine.items.remember(
        U,
        'Omar said, "Me, on every first Monday of each month."',
        preceding_text='Lena said, "Who defrosts the lab freezer?"',
    )
    for n in range(6):
        empty_engine.items.remember(U, f"Unrelated note number {n} about the freezer manual.")
    question = "Who defrosts the lab freezer?"
    on = next(c for c in empty_engine.retrieval.retrieve(U, question).hops[0].candidates if c.id == reply.id)
    off = next(
        c
        for c in empty_engine.retrieval.retrieve(U, question, overrides={"preceding_bm25_weight": 0}).hops[0].candidates
        if c.id == reply.id
    )
    assert on.scores.bm25_raw == off.scores.bm25_raw == 0  # none of the question's words is in the reply
    assert on.scores.bm25_preceding == off.scores.bm25_preceding > 0
    assert off.scores.bm25_norm == 0 < on.scores.bm25_norm
    assert on.scores.hybrid > off.scores.hybrid
    assert on.ranks.hybrid < off.ranks.hybrid


def test_a_trace_stored_before_preceding_bm25_weight_existed_replays_as_it_ran(empty_engine):
    empty_engine.items.remember(U, REPLY, preceding_text=QUESTION)
    empty_engine.items.remember(U, "Bob's favourite city is Lisbon.")
    ran = empty_engine.retrieval.retrieve(U, "Has Bob been to Lisbon?", overrides={"preceding_bm25_weight": 0})
    older = json.loads(empty_engine.traces.export(ran.trace_id))
    del older["settings"]["preceding_bm25_weight"]  # what a trace written before the setting holds
    trace = Traces.from_json(json.dumps(older))
    assert trace.settings.retrieval.preceding_bm25_weight == 0.0
    replayed = empty_engine.retrieval.replay_trace(trace)
    assert replayed.context_ids == ran.context_ids
    assert [(c.id, c.scores.final) for c in replayed.hops[0].candidates] == [
        (c.id, c.scores.final) for c in ran.hops[0].candidates
    ]
