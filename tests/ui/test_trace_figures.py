"""The trace pages' pure pieces: the score breakdown and its waterfall, why-not, what-if tables, the labelling queue.

Hand-made traces pin the rules with numbers written out here; one real two-hop trace from the demo store checks
that the breakdown adds up for every candidate the pipeline actually produces.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from engine import CandidateTrace, HopTrace, MemoryEngine, RankedMemory, RetrievalTrace, Settings
from engine.presets import PRESETS
from ui.trace_data import (
    candidate_rows,
    changed_overrides,
    dropped_rows,
    feedback_factor,
    rank_comparison,
    score_parts,
    trace_label,
    unlabelled_queue,
    whatif_tables,
    why_not,
)
from ui.trace_figures import rank_shift_figure, score_waterfall, waterfall_steps

ROOT = Path(__file__).resolve().parents[2]
# Traces under llmemory's weighted fusion (w = 0.3), whose parts the breakdown computes from the settings.
RETRIEVAL = Settings().with_overrides(PRESETS["llmemory"])
SETTINGS = {**RETRIEVAL.retrieval_dict(), "now": "2026-11-29T12:00:00+00:00"}  # as a trace stores them


def scores(
    sim: float,
    bm25_norm: float,
    decay: float = 1.0,
    importance_factor: float = 1.0,
    feedback: float = 1.0,
    w: float = 0.3,
) -> dict:
    hybrid = w * bm25_norm + (1 - w) * sim
    temporal = hybrid * decay * importance_factor
    return {
        "vector_similarity": sim,
        "fts_score": None,
        "bm25_raw": bm25_norm * 4,
        "bm25_norm": bm25_norm,
        "hybrid": hybrid,
        "age_days": 3,
        "decay": decay,
        "importance": importance_factor,
        "importance_factor": importance_factor,
        "temporal": temporal,
        "feedback_net": 0,
        "feedback_factor": feedback,
        "final": temporal * feedback,
    }


def cand(
    id: str,
    *,
    final_rank: int | None = None,
    reason: str = "context",
    kept: bool = True,
    tokens: int = 10,
    rule: str = "score 0.700 >= 0.5",
    sc: dict | None = None,
    text: str | None = None,
) -> CandidateTrace:
    return CandidateTrace(
        id=id,
        kind="semantic",
        text=text or f"memory {id}",
        found_by="both",
        created_at="2026-11-26T12:00:00+00:00",
        evergreen=False,
        stored_importance=0.5,
        success_count=0,
        failure_count=0,
        search_order=0,
        scores=sc or scores(0.8, 0.5),
        verdicts={"relevance": "kept" if kept else "dropped", "rule": rule},
        ranks={"hybrid": 1, "final": final_rank} if final_rank else {"hybrid": 1},
        in_context=reason == "context",
        context_reason=reason,
        tokens=tokens,
    )


def hop(n: int, query: str, *cands: CandidateTrace) -> HopTrace:
    kept = sum(1 for c in cands if c.verdicts.relevance == "kept")
    return HopTrace(
        hop=n,
        query=query,
        proposed_by="question" if n == 1 else "offline:bridge_entities",
        relevance_text=query,
        proposal={},
        candidates=cands,
        counts={"found": len(cands), "kept": kept, "dropped": len(cands) - kept},
        timings_ms={},
    )


def trace(hops: tuple[HopTrace, ...], ranking: list[RankedMemory], budget: int = 30, **settings) -> RetrievalTrace:
    return RetrievalTrace(
        trace_id="tr_test",
        user_id="u",
        session_id=None,
        question="q?",
        created_at="2026-11-29T12:00:00+00:00",
        settings={**SETTINGS, "budget_tokens": budget, **settings},
        strategies={},
        hops=hops,
        stop_reason="max_hops",
        context="",
        context_ids=tuple(r.id for r in ranking if r.in_context),
        context_tokens=sum(r.tokens for r in ranking if r.in_context),
        ranking=tuple(ranking),
        timings_ms={},
    )


def entry(id: str, rank: int, hop_n: int = 1, reason: str = "context", tokens: int = 10, **extra) -> RankedMemory:
    return RankedMemory(
        id=id,
        kind="semantic",
        hop=hop_n,
        final=1.0 / rank,
        rank=rank,
        in_context=reason == "context",
        reason=reason,
        tokens=tokens,
        **extra,
    )


# A two-hop trace covering every way to be lost: a (context), b (budget), f (filtered at hop 1), m (merged: its hop-1
# copy lost to the hop-2 copy), and "ghost" (never a candidate). Budget 30: a and m use 20, b needs 15.
TWO_HOPS = trace(
    (
        hop(
            1,
            "first query",
            cand("a", final_rank=1),
            cand("m", reason="merged"),
            cand("b", final_rank=3, reason="budget", tokens=15),
            cand("f", reason="filtered", kept=False, rule="score 0.210 < 0.5 and no shared word"),
        ),
        hop(2, "bridge", cand("m", final_rank=2)),
    ),
    [entry("a", 1), entry("m", 2, hop_n=2), entry("b", 3, reason="budget", tokens=15)],
)


# -- the score breakdown ---------------------------------------------------------------------------------------------
def test_score_parts_split_the_hybrid_and_show_each_factor_as_its_change():
    # sim 0.8, bm25_norm 0.5, w 0.3: vector 0.56, bm25 0.15, hybrid 0.71; decay 0.5 -> 0.355 (change -0.355);
    # importance 0.8 -> 0.284 (-0.071); feedback 1.2 -> 0.3408 (+0.0568).
    parts = dict(score_parts(scores(0.8, 0.5, decay=0.5, importance_factor=0.8, feedback=1.2), RETRIEVAL))
    expected = {"vector": 0.56, "bm25": 0.15, "decay": -0.355, "importance": -0.071, "feedback": 0.0568, "hop": 0.0}
    assert parts == pytest.approx(expected)
    assert sum(parts.values()) == pytest.approx(0.3408)


def test_a_later_hops_discount_is_its_own_part_after_feedback():
    # as above, then hop 2 with hop_weight 0.8: 0.3408 * 0.8 = 0.27264, a change of -0.06816
    sc = scores(0.8, 0.5, decay=0.5, importance_factor=0.8, feedback=1.2)
    sc.update(hop_factor=0.8, final=sc["final"] * 0.8)
    parts = dict(score_parts(sc, RETRIEVAL))
    assert parts["feedback"] == pytest.approx(0.0568) and parts["hop"] == pytest.approx(-0.06816)
    assert sum(parts.values()) == pytest.approx(0.27264)


def test_a_zero_hop_weight_is_booked_as_the_hops_discount_not_as_feedback():
    sc = scores(0.8, 0.5, decay=0.5, importance_factor=0.8, feedback=1.2)
    sc.update(hop_factor=0.0, final=0.0)
    parts = dict(score_parts(sc, RETRIEVAL))
    assert parts["feedback"] == pytest.approx(0.0568) and parts["hop"] == pytest.approx(-0.3408)
    assert sum(parts.values()) == pytest.approx(0.0)


def test_without_hybrid_the_whole_hybrid_score_is_the_vector_part():
    sc = {**scores(0.6, 0.9), "hybrid": 0.6, "temporal": 0.6, "final": 0.6}
    parts = dict(score_parts(sc, RETRIEVAL.with_overrides({"hybrid_enabled": False})))
    assert parts["vector"] == pytest.approx(0.6)
    assert parts["bm25"] == 0.0


def running_totals(measures: list[str], values: list[float]) -> list[float]:
    """Plotly's waterfall semantics: absolute sets the running total, relative adds, total shows it."""
    out, total = [], 0.0
    for m, v in zip(measures, values, strict=True):
        total = v if m == "absolute" else total if m == "total" else total + v
        out.append(total)
    return out


def test_each_waterfall_ends_at_the_candidates_final_score():
    c = cand("x", sc=scores(0.7, 1.0, decay=0.25, importance_factor=0.5, feedback=0.9))
    labels, measures, values = waterfall_steps(c, RETRIEVAL)
    totals = running_totals(measures, values)
    assert labels[2] == "=hybrid" and totals[2] == pytest.approx(c.scores.hybrid)
    assert labels[-1] == "=final" and totals[-1] == pytest.approx(c.scores.final)


def test_the_waterfall_figure_shows_the_top_candidates_each_from_zero():
    cands = [cand(f"c{i}", sc=scores(0.1 * i, 0.5, decay=0.5)) for i in range(1, 8)]
    fig = score_waterfall(cands, RETRIEVAL, top_n=3)
    data = fig.data[0]
    groups = list(data.x[0])
    assert list(dict.fromkeys(groups)) == ["c7", "c6", "c5"]  # the 3 highest final scores, best first
    totals = running_totals(list(data.measure), list(data.y))
    finals = [t for t, step in zip(totals, data.x[1], strict=True) if step == "=final"]
    assert finals == pytest.approx([c.scores.final for c in (cands[6], cands[5], cands[4])])


def test_rank_shift_figure_draws_one_line_per_memory():
    ranking = [
        entry("a", 2, old_rank=1, context_change="stayed"),
        entry("b", 1, old_rank=2, context_change="stayed"),
        dataclasses.replace(entry("c", 3), rank=None, old_rank=3, context_change="left"),
    ]
    fig = rank_shift_figure(ranking)
    assert len(fig.data) == 3
    assert [list(t.y) for t in fig.data] == [[1, 2], [2, 1], [3, 4]]  # c fell out: drawn below the last rank


# -- tables ----------------------------------------------------------------------------------------------------------
def test_candidate_rows_carry_every_score_and_the_rule():
    rows = candidate_rows(TWO_HOPS.hops[0])
    assert [r["id"] for r in rows] == ["a", "m", "b", "f"]
    assert rows[3]["rule"] == "score 0.210 < 0.5 and no shared word"
    assert rows[0]["final"] == pytest.approx(TWO_HOPS.hops[0].candidates[0].scores.final)
    assert {"vector_similarity", "bm25_norm", "hybrid", "decay", "importance_factor", "feedback_factor"} <= set(rows[0])


def test_dropped_rows_name_the_stage_and_rule_of_each_loss():
    rows = {r["id"]: r for r in dropped_rows(TWO_HOPS, TWO_HOPS.hops[0])}
    assert set(rows) == {"m", "b", "f"}
    assert rows["f"]["stage"] == "relevance filter" and "no shared word" in rows["f"]["rule"]
    assert rows["m"]["stage"] == "multi-hop merge" and "hop 2" in rows["m"]["rule"]
    assert rows["b"]["stage"] == "token budget" and rows["b"]["rule"] == "needs 15 tokens; 10 of 30 tokens were left"


# -- why not? --------------------------------------------------------------------------------------------------------
def test_why_not_tells_in_context_budget_filtered_and_never_apart():
    assert why_not(TWO_HOPS, "a").status == "context"
    budget = why_not(TWO_HOPS, "b")
    assert budget.status == "budget" and "needs 15 tokens" in budget.headline
    filtered = why_not(TWO_HOPS, "f")
    assert filtered.status == "filtered" and "hop 1" in filtered.headline and "no shared word" in filtered.headline
    assert [r["stage"] for r in filtered.rows] == ["relevance filter", "search"]
    never = why_not(TWO_HOPS, "ghost")
    assert never.status == "never" and "Never a candidate" in never.headline
    assert all(r["stage"] == "search" for r in never.rows)


def test_why_not_follows_a_merged_memory_to_the_hop_that_won():
    merged = why_not(TWO_HOPS, "m")
    assert merged.status == "context" and "from hop 2" in merged.headline
    assert [r["stage"] for r in merged.rows] == ["multi-hop merge", "in context"]


def test_two_traces_of_one_question_in_the_same_minute_are_listed_apart():
    # Streamlit maps a selectbox choice back through its label: equal labels would open the wrong trace.
    a = {"trace_id": "tr_a", "question": "Who?", "hops": 2, "created_at": "2026-11-29T10:00:01"}
    b = {**a, "trace_id": "tr_b", "created_at": "2026-11-29T10:00:40"}
    assert trace_label(a) != trace_label(b)
    assert trace_label(a).startswith("2026-11-29 10:00:01 · 2 hops · Who?")  # to the second, as every time shown


# -- what-if ---------------------------------------------------------------------------------------------------------
def test_untouched_whatif_controls_change_no_setting():
    values = {k: getattr(RETRIEVAL, k) for k in ("bm25_weight", "half_life_days", "mmr_enabled", "budget_tokens")}
    values["half_life_days"] = float(values["half_life_days"])
    assert changed_overrides(RETRIEVAL, values) == {}
    assert changed_overrides(RETRIEVAL, {**values, "bm25_weight": 0.6}) == {"bm25_weight": 0.6}


def test_whatif_tables_put_old_and_new_order_side_by_side():
    replayed = trace(
        (),
        [
            entry("b", 1, old_rank=2, rank_change=1, old_in_context=True, context_change="stayed"),
            entry("a", 2, reason="budget", old_rank=1, rank_change=-1, old_in_context=True, context_change="left"),
        ],
    )
    before, after = whatif_tables(replayed, {"a": "text a", "b": "text b"})
    assert [(r["rank"], r["id"]) for r in before] == [(1, "a"), (2, "b")]
    assert [(r["rank"], r["id"], r["change"], r["context"]) for r in after] == [
        (1, "b", "↑1", "stayed"),
        (2, "a", "↓1", "left"),
    ]


# -- feedback --------------------------------------------------------------------------------------------------------
def test_feedback_factor_is_the_pipelines_formula():
    assert feedback_factor(0, SETTINGS) == 1.0
    assert feedback_factor(2, SETTINGS) == pytest.approx(1.2)  # 1 + 0.5 * 2/5
    assert feedback_factor(-9, SETTINGS) == pytest.approx(0.5)  # capped at -5
    assert feedback_factor(3, {**SETTINGS, "feedback_weight": 0.0}) == 1.0


def test_queue_lists_unlabelled_context_memories_once_newest_trace_first():
    older = TWO_HOPS
    newer = dataclasses.replace(
        trace((hop(1, "q", cand("a", final_rank=1), cand("z", final_rank=2)),), [entry("z", 1), entry("a", 2)]),
        trace_id="tr_new",
    )
    traces = {"tr_new": newer, "tr_test": older}
    summaries = [{"trace_id": t.trace_id, "context_ids": list(t.context_ids)} for t in (newer, older)]
    fetched: list[str] = []

    def fetch(trace_id: str) -> RetrievalTrace:
        fetched.append(trace_id)
        return traces[trace_id]

    queue = unlabelled_queue(summaries, {"z"}, fetch)
    assert [(r["id"], r["trace_id"], r["hop"]) for r in queue] == [("a", "tr_new", 1), ("m", "tr_test", 2)]
    assert unlabelled_queue(summaries, {"z"}, fetch, limit=1)[0]["id"] == "a"
    assert "tr_test" not in fetched[2:]  # with one row wanted, the older trace is not even fetched


def test_rank_comparison_marks_moves_and_new_memories():
    before = trace((), [entry("a", 1), entry("b", 2)])
    after = trace((), [entry("b", 1), entry("a", 2), entry("c", 3)])
    rows = {r["id"]: r for r in rank_comparison(before, after)}
    assert (rows["b"]["rank_before"], rows["b"]["rank_after"], rows["b"]["change"]) == (2, 1, "↑1")
    assert rows["a"]["change"] == "↓1" and rows["c"]["change"] == "new"


# -- a real trace ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_hop_trace(demo_store_template: Path, tmp_path_factory, embedder) -> RetrievalTrace:
    import shutil

    path = tmp_path_factory.mktemp("figures") / "store"
    shutil.copytree(demo_store_template, path)
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    question = json.loads((ROOT / "data" / "demo" / "two_hop.json").read_text())[0]
    return engine.retrieval.retrieve(question["user_id"], question["question"], hops=2)


def test_breakdown_adds_up_to_the_final_score_of_every_real_candidate(two_hop_trace: RetrievalTrace):
    checked = 0
    for h in two_hop_trace.hops:
        for c in h.candidates:
            assert sum(v for _, v in score_parts(c.scores, two_hop_trace.settings.retrieval)) == pytest.approx(
                c.scores.final, abs=1e-12
            )
            checked += 1
    assert checked > 10


def test_why_not_agrees_with_the_trace_for_every_real_candidate(two_hop_trace: RetrievalTrace):
    in_context = set(two_hop_trace.context_ids)
    statuses = []
    for h in two_hop_trace.hops:
        for c in h.candidates:
            status = why_not(two_hop_trace, c.id).status
            assert (status == "context") == (c.id in in_context)
            statuses.append(status)
    # Both sides of the agreement were checked: candidates in the context and candidates left out of it.
    assert len(statuses) > 10 and "context" in statuses and any(s != "context" for s in statuses)
    assert in_context <= {c.id for h in two_hop_trace.hops for c in h.candidates}
