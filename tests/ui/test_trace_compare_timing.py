"""Pure pieces of the Retrieval trace page's Compare and Timings tabs, and the numbers on the waterfall bars.

Hand-made traces (the builders of test_trace_figures.py) pin the rules with numbers written out here; one real pair
of demo traces checks that a comparison of what the pipeline produces is consistent with both traces.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_trace_figures import RETRIEVAL, SETTINGS, TWO_HOPS, cand, entry, hop, scores, trace

from engine import MemoryEngine
from ui.trace_compare import ComparedRank, compare_traces, rank_shift_rows, setting_differences
from ui.trace_figures import bar_texts, score_waterfall, timing_figure
from ui.trace_timing import timing_rows, timing_spans


# -- compare ---------------------------------------------------------------------------------------------------------
def after_label() -> object:
    """TWO_HOPS again, where b climbed to rank 1 and entered the context, a fell to 3 and left, m stayed at 2, f
    is no longer found and n is new (filtered); feedback_weight differs."""
    return trace(
        (
            hop(
                1,
                "first query",
                cand("b", final_rank=1, sc=scores(0.9, 0.6)),
                cand("a", final_rank=3, reason="budget"),
                cand("n", reason="filtered", kept=False),
            ),
            hop(2, "bridge", cand("m", final_rank=2)),
        ),
        [entry("b", 1, tokens=15), entry("m", 2, hop_n=2), entry("a", 3, reason="budget")],
        feedback_weight=0.9,
    )


def test_compare_gives_each_memory_its_rank_and_scores_in_both_and_what_entered_or_left():
    cmp = compare_traces(TWO_HOPS, after_label())
    rows = {r["id"]: r for r in cmp.rows}
    assert [r["id"] for r in cmp.rows] == ["a", "b", "m", "f", "n"]  # best rank in either first, unranked last
    assert (rows["a"]["rank_a"], rows["a"]["rank_b"], rows["a"]["change"], rows["a"]["context"]) == (1, 3, "↓2", "left")
    assert (rows["b"]["rank_a"], rows["b"]["rank_b"], rows["b"]["change"], rows["b"]["context"]) == (
        3,
        1,
        "↑2",
        "entered",
    )
    assert (rows["m"]["change"], rows["m"]["context"], rows["m"]["hop_a"], rows["m"]["hop_b"]) == ("=", "in both", 2, 2)
    assert rows["b"]["final_b"] == pytest.approx(scores(0.9, 0.6)["final"])
    assert rows["b"]["similarity_a"] == pytest.approx(0.8) and rows["b"]["similarity_b"] == pytest.approx(0.9)
    assert (rows["f"]["outcome_a"], rows["f"]["outcome_b"], rows["f"]["rank_b"]) == (
        "relevance filter",
        "not found",
        None,
    )
    assert (rows["n"]["outcome_a"], rows["n"]["outcome_b"], rows["n"]["change"]) == (
        "not found",
        "relevance filter",
        "",
    )
    assert (cmp.entered, cmp.left, cmp.moved) == (("b",), ("a",), ("a", "b"))
    assert cmp.settings == ({"setting": "feedback_weight", "a": str(SETTINGS["feedback_weight"]), "b": "0.9"},)
    assert cmp.summary["in context"] == (2, 2) and cmp.summary["candidates"] == (4, 4)


def test_a_trace_compared_with_itself_shows_no_change():
    cmp = compare_traces(TWO_HOPS, TWO_HOPS)
    assert (cmp.entered, cmp.left, cmp.moved, cmp.settings) == ((), (), (), ())
    assert {r["change"] for r in cmp.rows if r["rank_a"]} == {"="}


def test_setting_differences_ignore_the_clock_and_list_one_sided_settings():
    assert setting_differences({"now": 1, "hops": 1}, {"now": 2, "hops": 2, "new": True}) == [
        {"setting": "hops", "a": "1", "b": "2"},
        {"setting": "new", "a": "", "b": "True"},
    ]


def test_rank_shift_rows_feed_the_slope_chart():
    rows = {r.id: r for r in rank_shift_rows(compare_traces(TWO_HOPS, after_label()))}
    assert rows["b"] == ComparedRank(id="b", old_rank=3, rank=1, context_change="entered")
    assert rows["a"].context_change == "left" and "f" not in rows


def test_two_real_two_hop_traces_compare_consistently(demo_engine: MemoryEngine):
    import json
    from pathlib import Path

    q = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())[0]
    one = demo_engine.retrieval.retrieve(q["user_id"], q["question"], hops=1, save=False)
    two = demo_engine.retrieval.retrieve(q["user_id"], q["question"], hops=2, save=False)
    cmp = compare_traces(one, two)
    assert {r["id"] for r in cmp.rows} == {c.id for t in (one, two) for h in t.hops for c in h.candidates}
    assert set(cmp.entered) == set(two.context_ids) - set(one.context_ids)
    assert set(cmp.left) == set(one.context_ids) - set(two.context_ids)
    assert {"setting": "hops", "a": "1", "b": "2"} in cmp.settings
    for r in cmp.rows:
        if r["rank_a"]:
            assert next(x for x in one.ranking if x.id == r["id"]).rank == r["rank_a"]


# -- timings ---------------------------------------------------------------------------------------------------------
def timed(base, top: dict, per_hop: list[dict]):
    hops = tuple(dataclasses.replace(h, timings_ms=t) for h, t in zip(base.hops, per_hop, strict=True))
    return dataclasses.replace(base, hops=hops, timings_ms=top)


def test_timing_spans_lay_the_stages_out_in_the_order_they_ran():
    t = timed(
        TWO_HOPS,
        {"query_generation": 1.0, "reasoner_hop1": 4.0, "merge_and_assembly": 2.0, "pipeline": 30.0},
        [
            {"embed_query": 5.0, "search": 3.0, "candidates": 1.0, "scoring": 2.0},
            {"embed_query": 6.0, "search": 2.0, "candidates": 1.0, "scoring": 1.0},
        ],
    )
    spans = timing_spans(t)
    got = [(s.key, s.depth, s.start_ms, s.duration_ms) for s in spans]
    assert got == [
        ("pipeline", 0, 0.0, 30.0),
        ("query_generation", 1, 0.0, 1.0),
        ("hop1", 1, 1.0, 11.0),
        ("hop1.embed_query", 2, 1.0, 5.0),
        ("hop1.search", 2, 6.0, 3.0),
        ("hop1.candidates", 2, 9.0, 1.0),
        ("hop1.scoring", 2, 10.0, 2.0),
        ("reasoner_hop1", 1, 12.0, 4.0),
        ("hop2", 1, 16.0, 10.0),
        ("hop2.embed_query", 2, 16.0, 6.0),
        ("hop2.search", 2, 22.0, 2.0),
        ("hop2.candidates", 2, 24.0, 1.0),
        ("hop2.scoring", 2, 25.0, 1.0),
        ("merge_and_assembly", 1, 26.0, 2.0),
        ("untimed", 1, 28.0, 2.0),
    ]
    rows = timing_rows(spans)
    assert rows[0]["share"] == "100.0 %" and rows[3] == {
        "stage": "        embed the query (hop 1)",
        "starts at ms": 1.0,
        "ms": 5.0,
        "share": "16.7 %",
    }
    fig = timing_figure(spans)
    assert list(fig.data[0].base) == [s.start_ms for s in spans]
    assert fig.data[0].text[0] == "30.0 ms"


def test_a_trace_without_timings_has_only_its_root_span():
    spans = timing_spans(TWO_HOPS)
    assert [(s.key, s.duration_ms) for s in spans][:1] == [("pipeline", 0.0)]
    assert all(s.duration_ms == 0 for s in spans)


def test_a_real_trace_s_spans_add_up_to_its_pipeline_time(demo_engine: MemoryEngine):
    t = demo_engine.retrieval.retrieve("ada", "Which timezone does the refund job's owner work in?", hops=2)
    stored = demo_engine.traces.get(t.trace_id)
    spans = timing_spans(stored)
    assert stored.timings_ms.get("total") is None  # measured after the trace was written
    assert spans[0].duration_ms == pytest.approx(stored.timings_ms.get("pipeline"))
    assert len({s.name for s in spans}) == len(spans), "each span has its own row in the figure"
    top_level = [s for s in spans if s.depth == 1]
    assert sum(s.duration_ms for s in top_level) == pytest.approx(stored.timings_ms.get("pipeline"), rel=1e-6)
    assert {f"hop{h.hop}" for h in stored.hops} <= {s.key for s in spans}


# -- numbers on the waterfall bars -----------------------------------------------------------------------------------
def test_every_waterfall_bar_carries_its_value():
    assert bar_texts(["absolute", "relative", "total", "relative", "total"], [0.5, 0.2, 0.0, -0.66, 0.0]) == [
        "0.5000",
        "+0.2000",
        "0.7000",
        "-0.6600",
        "0.0400",
    ]
    fig = score_waterfall([cand("a", final_rank=1, sc=scores(0.8, 0.5, decay=0.06))], RETRIEVAL, top_n=1)
    assert fig.data[0].text[-1] == f"{scores(0.8, 0.5, decay=0.06)['final']:.4f}"
    assert fig.data[0].textposition == "outside"
