"""The span tree's inputs and outputs (ui/trace_timing.py ``span_io``), read off a stored 2-hop golden trace: each
span of the tree says in words what went in and what came out, as the trace recorded it."""

from __future__ import annotations

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
