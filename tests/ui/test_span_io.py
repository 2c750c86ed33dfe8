"""The span tree's inputs and outputs (ui/trace_timing.py ``span_io``), read off a stored 2-hop golden trace: each
span of the tree says in words what went in and what came out, as the trace recorded it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.trace.traces import Traces
from ui.trace_timing import span_io, timing_spans

TRACE = Traces.from_json(
    (Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "default_2hop.json").read_text()
)


def test_every_span_of_a_two_hop_trace_opens_onto_its_inputs_and_outputs():
    spans = timing_spans(TRACE)
    assert [s.key for s in spans if s.depth == 1 and s.key.startswith("hop")] == ["hop1", "hop2"]
    opened = {s.key: span_io(TRACE, s.key) for s in spans}
    for key, (inputs, outputs) in opened.items():
        if key != "untimed":  # the time between stages has nothing of its own to show
            assert inputs or outputs, key
        assert all(isinstance(v, str) and "{" not in v for _, v in (*inputs, *outputs)), key  # words, no dicts
    hop1, hop2 = TRACE.hops
    assert dict(opened["hop2"][0])["query"] == hop2.query
    assert dict(opened["hop2"][1])["candidates"] == str(hop2.counts.found)
    assert dict(opened["reasoner_hop1"][1])["next query"] == hop2.query
    assert dict(opened["pipeline"][1])["context"] == f"{len(TRACE.context_ids)} memories, {TRACE.context_tokens} tokens"
    assert dict(opened["hop1.search"][1])["found"].endswith(("search", "searches", "graph"))
    assert span_io(TRACE, "hop9") == ([], []) and span_io(TRACE, "something_new") == ([], [])


def test_the_date_window_entity_and_key_stages_sit_where_they_ran_and_are_named_in_words():
    """The time window is read before the first query is made; a hop's entity stage and key search run between its
    search and the loading of its candidates, and the session stage inside its scoring (engine/retrieval/pipeline.py).
    Each span is named in words."""
    hop1, hop2 = TRACE.hops
    stages = {"embed_query": 1, "search": 2, "entities": 3, "keys": 4, "candidates": 5, "scoring": 6, "sessions": 0.5}
    timed = dataclasses.replace(
        TRACE,
        timings_ms={"time_window": 0.5, "query_generation": 1.0, "reasoner_hop1": 2.0, "pipeline": 50.0},
        hops=(dataclasses.replace(hop1, timings_ms=stages), dataclasses.replace(hop2, timings_ms=stages)),
    )
    spans = timing_spans(timed)
    assert [s.key for s in spans][:9] == [
        "pipeline",
        "time_window",
        "query_generation",
        "hop1",
        "hop1.embed_query",
        "hop1.search",
        "hop1.entities",
        "hop1.keys",
        "hop1.candidates",
    ]
    assert [s.start_ms for s in spans[1:4]] == [0.0, 0.5, 1.5]
    by_key = {s.key: s for s in spans}
    assert by_key["hop1"].duration_ms == 21.0  # the session stage's time is part of scoring's, not added to it
    sessions, scoring = by_key["hop1.sessions"], by_key["hop1.scoring"]
    assert (sessions.depth, sessions.start_ms, sessions.duration_ms) == (3, scoring.start_ms, 0.5)
    assert by_key["reasoner_hop1"].start_ms == scoring.start_ms + scoring.duration_ms
    assert not [s.name for s in spans if "_" in s.name]  # "time_window", "entities" were shown as the engine's keys
    inputs, outputs = span_io(TRACE, "time_window")
    assert dict(inputs)["question"] == TRACE.question and outputs


def test_the_scoring_span_says_the_bm25_weight_and_the_entity_and_key_spans_what_they_linked():
    from engine.trace.hop_records import FusionWeight

    hop1 = TRACE.hops[0]
    linked = [c for c in hop1.candidates if c.entity is not None]
    keyed = [c for c in hop1.candidates if c.key is not None]
    weight = FusionWeight(set_weight=0.5, weight=0.1, rule="between", rank=5, ratio=0.65)
    trace = dataclasses.replace(TRACE, hops=(dataclasses.replace(hop1, fusion=weight), *TRACE.hops[1:]))
    inputs, _ = span_io(trace, "hop1.scoring")
    assert dict(inputs)["BM25 weight"] == (
        "BM25 weight 0.1 of 0.5: the cosine ranking has a head, so BM25 counts less (5th best cosine / best = 0.65)"
    )
    assert "BM25 weight" not in dict(span_io(TRACE, "hop1.scoring")[0])  # a trace from before the adaptive weight
    _, out = span_io(TRACE, "hop1.entities")
    assert dict(out)["candidates it linked"] == str(len(linked))
    inputs, out = span_io(TRACE, "hop1.keys")
    assert dict(out)["candidates a key matched"] == str(len(keyed))
    assert "keys' vectors searched" not in dict(inputs)  # the golden trace predates the record of how
    said = {**TRACE.strategies.to_dict(), "key_search": "semantic: exact"}
    said["key_search_hop2"] = "semantic: approximate (HNSW-SQ)"
    walked = dataclasses.replace(TRACE, strategies=type(TRACE.strategies).from_dict(said))
    assert dict(span_io(walked, "hop1.keys")[0])["keys' vectors searched"] == "semantic: exact"
    assert dict(span_io(walked, "hop2.keys")[0])["keys' vectors searched"] == "semantic: approximate (HNSW-SQ)"
