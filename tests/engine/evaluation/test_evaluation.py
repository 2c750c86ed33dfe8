"""Evaluations on a real store: a hand-made set where each case's loss stage is known, metrics worked out by hand,
stored runs (traces linked and deleted with the run), baselines, and an A/B comparison with a known gained and lost
case."""

from __future__ import annotations

import pytest

from engine import InvalidInput, MemoryEngine, NotFound
from engine.evaluation.compare import bootstrap_interval, sign_test
from engine.evaluation.metrics import aggregate, case_scores
from engine.presets import PRESETS

NOW = "2026-11-29T00:00:00+00:00"
ITEMS = {
    "k-tea": "Kim drinks jasmine tea every morning.",
    "k-coffee": "Kim stopped drinking coffee after the summer.",
    "k-juice": "Orange juice gives Kim a headache.",
    "k-bakery": "The bakery on Elm Street sells rye bread on Saturdays.",
    "k-garage": "The garage door code was changed in spring.",
    "k-bike": "Kim rides a blue bicycle to the office.",
    "k-cat": "The cat sleeps on the radiator in winter.",
    "k-plant": "The fern in the hallway needs water twice a week.",
    "k-train": "The regional train leaves at 7:42 from platform 3.",
    "k-book": "Kim is reading a novel about lighthouse keepers.",
    "k-gone": "Kim buys tea from a shop called Leafhouse.",
    "k-old": "Kim used to drink black tea with milk at breakfast.",
}
DRINK = "What does Kim drink in the morning?"
WORK = "How does Kim get to work?"
# case id -> (question, expected, category)
CASES = {
    "c-context": (DRINK, ["k-tea"], "found"),
    "c-budget": (DRINK, ["k-coffee"], "lost"),
    "c-filtered": (WORK, ["k-juice"], "lost"),
    "c-never": (WORK, ["k-garage"], "lost"),
    "c-forgotten": (DRINK, ["k-tea", "k-gone", "k-old"], "found"),
}
# A small candidate pool (4 per source), a filter that always applies, and room for one memory in the context.
# llmemory's scoring (weighted fusion, the raw word filter) with the [memlens] skip assembly, on a tight budget:
# the hand-computed losses below are under these rules.
TIGHT = {
    **PRESETS["llmemory"],
    "assembly_mode": "skip",
    "top_k": 4,
    "relevance_keep_all_max": 0,
    "budget_tokens": 16,
}


@pytest.fixture
def kim(empty_engine: MemoryEngine) -> MemoryEngine:
    e = empty_engine
    e.items.remember_many(
        {"user_id": "kim", "id": i, "content": t, "created_at": "2026-11-20T10:00:00+00:00"} for i, t in ITEMS.items()
    )
    e.forgetting.forget("kim", "semantic", ["k-old"], "outdated habit", mode="soft", actor="test")
    e.forgetting.forget("kim", "semantic", ["k-gone"], "the shop closed", mode="hard", actor="test")
    e.evals.create_set("kim-set", "hand-made losses")
    e.evals.add_cases(
        "kim-set",
        [
            {"user_id": "kim", "question": q, "expected": exp, "category": cat, "case_id": cid, "now": NOW}
            for cid, (q, exp, cat) in CASES.items()
        ],
    )
    return e


def test_each_miss_is_lost_where_the_set_was_built_to_lose_it(kim: MemoryEngine):
    seen = []
    run = kim.evals.evaluate(
        "kim-set", overrides=TIGHT, label="tight", progress=lambda n, total: seen.append((n, total))
    )
    assert seen[-1] == (5, 5) and run.status == "done" and run.cases == 5 and run.label == "tight"
    assert run.settings["top_k"] == 4 and run.store_counts["semantic"] == 10 and run.code_version
    results = {r.case_id: r for r in kim.evals.results(run.run_id)}
    assert set(results) == set(CASES)

    assert results["c-context"].in_context == {"k-tea": True} and results["c-context"].lost == {}
    assert results["c-context"].ranks == {"k-tea": 1}
    budget = results["c-budget"].lost["k-coffee"]
    assert budget["status"] == "budget" and budget["rank"] == 2 and budget["rule"].startswith("needs 12 tokens")
    filtered = results["c-filtered"].lost["k-juice"]
    assert filtered["status"] == "filtered" and filtered["stage"] == "relevance filter"
    assert filtered["rule"].endswith("< 0.5 and no shared word") and filtered["hop"] == 1
    assert results["c-never"].lost["k-garage"]["status"] == "never"
    assert results["c-never"].ranks == {"k-garage": None}
    gone = results["c-forgotten"].lost
    assert gone["k-gone"]["status"] == "forgotten" and "the shop closed" in gone["k-gone"]["rule"]
    assert gone["k-old"]["status"] == "archived" and "outdated habit" in gone["k-old"]["rule"]
    assert "k-tea" not in gone
    # Every loss agrees with the trace page's "Why not?" on the stored trace.
    for r in results.values():
        for item_id, lost in r.lost.items():
            assert kim.traces.why_not(r.trace_id, item_id).status == lost["status"]

    # Metrics by hand. Ranks: c-context 1; c-budget 2; c-never none; c-forgotten 1 of 3 expected; c-filtered: the
    # dropped juice comes after the final ranking, at the rank read from the result.
    juice = results["c-filtered"].ranks["k-juice"]
    assert juice is not None and juice > 1
    assert results["c-budget"].scores == {
        **results["c-budget"].scores,
        "recall@1": 0.0,
        "recall@5": 1.0,
        "rr": 0.5,
        "context_recall": 0.0,
    }
    overall = run.metrics["overall"]
    assert overall["n"] == 5
    assert overall["recall@1"] == pytest.approx((1 + 0 + 0 + 0 + 1 / 3) / 5)
    assert overall["hit@1"] == pytest.approx(2 / 5)
    assert overall["all@25"] == pytest.approx(3 / 5)  # context, budget, filtered; not never, not forgotten
    assert overall["mrr"] == pytest.approx((1 + 0.5 + 1 / juice + 0 + 1) / 5)
    assert overall["context_recall"] == pytest.approx((1 + 0 + 0 + 0 + 1 / 3) / 5)
    ideal3 = 1 + 1 / 1.584962500721156 + 1 / 2
    assert results["c-forgotten"].scores["ndcg@10"] == pytest.approx(1 / ideal3)
    assert run.metrics["found"]["n"] == 2 and run.metrics["lost"]["recall@1"] == 0.0
    assert overall["latency_p50_ms"] > 0 and overall["latency_p95_ms"] >= overall["latency_p50_ms"]

    losses = kim.evals.losses(run.run_id)
    stages = {(x["stage"], x["count"]) for x in losses["losses"]}
    assert {
        ("token budget", 1),
        ("relevance filter", 1),
        ("never a candidate", 1),
        ("forgotten (hard)", 1),
        ("archived (soft-forgotten)", 1),
    } == stages
    steps = {s["step"]: s["count"] for s in losses["funnel"]}
    assert steps == {
        "expected": 7,
        "in the store": 5,
        "found by search": 4,
        "past the relevance filter": 3,
        "in the context": 2,
        "in the context, in the top 10": 2,  # the ranking step: both ranked first
    }


def test_deleting_a_run_deletes_its_traces_and_baselines_store_none(kim: MemoryEngine):
    run = kim.evals.evaluate("kim-set", overrides=TIGHT)
    traces = [r.trace_id for r in kim.evals.results(run.run_id)]
    assert len(traces) == 5  # one stored trace per case: the check below is not over nothing
    assert all(kim.traces.get(t).user_id == "kim" for t in traces)
    vector = kim.evals.evaluate("kim-set", method="vector")
    bm25 = kim.evals.evaluate("kim-set", method="bm25")
    assert [r.trace_id for r in kim.evals.results(vector.run_id)] == [None] * 5
    assert vector.metrics["overall"]["context_recall"] is None
    assert kim.evals.results(vector.run_id)[0].ranks["k-tea"] == 1
    assert bm25.method == "bm25" and bm25.metrics["overall"]["n"] == 5
    assert {r.run_id for r in kim.evals.runs("kim-set")} == {run.run_id, vector.run_id, bm25.run_id}
    assert kim.evals.delete_run(run.run_id) == 5
    for t in traces:
        with pytest.raises(NotFound):
            kim.traces.get(t)
    with pytest.raises(NotFound):
        kim.evals.get_run(run.run_id)
    assert kim.evals.get_set("kim-set").runs == 2


def test_bad_arguments_write_nothing(kim: MemoryEngine):
    with pytest.raises(InvalidInput, match="not a retrieval setting"):
        kim.evals.evaluate("kim-set", overrides={"store": "/tmp/x"})
    with pytest.raises(InvalidInput, match="unknown preset"):
        kim.evals.evaluate("kim-set", preset="nope")
    with pytest.raises(InvalidInput, match="method"):
        kim.evals.evaluate("kim-set", method="dense")
    with pytest.raises(NotFound):
        kim.evals.evaluate("no-such-set")
    with pytest.raises(InvalidInput):
        kim.evals.add_case("kim-set", "kim", "Where?", [])
    with pytest.raises(InvalidInput):
        kim.evals.add_case("kim-set", "kim", "Where?", ["x' OR 1=1"])
    assert kim.evals.runs() == []
    assert kim.evals.get_set("kim-set").cases == 5


def test_sets_and_cases_can_be_listed_edited_and_deleted(kim: MemoryEngine):
    (s,) = kim.evals.sets()
    assert (s.name, s.cases, s.categories) == ("kim-set", 5, {"found": 2, "lost": 3})
    edited = kim.evals.update_case("kim-set", "c-never", expected=["k-garage", "k-bike"], category="mixed")
    assert edited.expected == ("k-garage", "k-bike") and edited.question == WORK and edited.source == "manual"
    kim.evals.delete_case("kim-set", "c-budget")
    assert [c.case_id for c in kim.evals.cases("kim-set", category="mixed")] == ["c-never"]
    # Adding a case id again replaces it (imports are idempotent).
    kim.evals.add_case("kim-set", "kim", DRINK, ["k-tea"], case_id="c-context", category="found")
    assert kim.evals.get_set("kim-set").cases == 4
    trace = kim.retrieval.retrieve("kim", WORK, now=NOW)
    pinned = kim.evals.pin(trace.trace_id, list(trace.context_ids), "pins", category="pinned")
    assert pinned.source == "pinned" and pinned.question == WORK and pinned.now.isoformat() == NOW
    assert {x.name for x in kim.evals.sets()} == {"kim-set", "pins"}
    kim.evals.evaluate("kim-set", overrides=TIGHT)
    assert kim.evals.delete_set("kim-set") == 1
    with pytest.raises(NotFound):
        kim.evals.cases("kim-set")
    assert kim.evals.delete_set("pins") == 0  # a set without runs
    assert kim.evals.sets() == []


def test_ab_comparison_names_the_gained_and_lost_cases(kim: MemoryEngine):
    a = kim.evals.evaluate("kim-set", overrides=TIGHT, label="A")
    kim.forgetting.forget(
        "kim", "semantic", ["k-tea"], "tea is over", mode="hard"
    )  # c-context and c-forgotten lose k-tea
    b = kim.evals.evaluate(
        "kim-set", overrides={**TIGHT, "top_k": 12}, label="B"
    )  # every item a candidate: garage found
    cmp = kim.evals.compare(a.run_id, b.run_id)
    assert set(cmp.gained) == {"c-never"} and set(cmp.lost) == {"c-context", "c-forgotten"}
    sig = cmp.significance
    assert (sig["n"], sig["wins"], sig["losses"], sig["ties"]) == (5, 1, 2, 2)
    assert sig["sign_test_p"] == pytest.approx(1.0)  # 1 win, 2 losses: 2 * P(X <= 1 | n=3) = 2 * 4/8, capped at 1
    low, high = sig["bootstrap_ci95"]
    assert low <= sig["mean_delta"] <= high
    assert cmp.deltas["overall"]["recall@10"]["delta"] == pytest.approx(
        b.metrics["overall"]["recall@10"] - a.metrics["overall"]["recall@10"]
    )
    row = next(r for r in cmp.cases if r["case_id"] == "c-never")
    assert (row["a"], row["b"]) == (0.0, 1.0) and row["trace_a"] and row["trace_b"]


def test_metrics_of_one_case_by_hand():
    s = case_scores(["x", "y"], ["a", "x", "b", "c", "d", "e", "f", "g", "h", "i", "j", "y"], ["x", "a"])
    assert (s["recall@1"], s["recall@5"], s["recall@10"], s["recall@25"]) == (0.0, 0.5, 0.5, 1.0)
    assert (s["hit@1"], s["hit@5"], s["all@10"], s["all@25"]) == (0.0, 1.0, 0.0, 1.0)
    assert s["rr"] == 0.5 and s["context_recall"] == 0.5
    assert s["ndcg@10"] == pytest.approx((1 / 1.584962500721156) / (1 + 1 / 1.584962500721156))
    agg = aggregate([("a", s, 10.0), ("b", case_scores(["q"], ["q"], None), 30.0)])
    assert agg["overall"]["mrr"] == pytest.approx(0.75) and agg["overall"]["latency_p50_ms"] == 20.0
    assert agg["overall"]["context_recall"] == 0.5  # the baseline case has none
    assert agg["b"]["n"] == 1


def test_sign_test_and_bootstrap_by_hand():
    assert sign_test(0, 0) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(7, 3) == pytest.approx(2 * (1 + 10 + 45 + 120) / 1024)
    assert bootstrap_interval([0.5] * 8) == (0.5, 0.5)
