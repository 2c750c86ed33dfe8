"""A run read as a researcher reads it (issue 32, deliver 5), on the demo store's expectation set run with two hops:
which hop and strategy first found each expected memory and what hop 2 gained and lost (against the trace replayed
with hop 1 alone), each signal's values on gold vs other candidates, the relevance threshold swept by replaying the
stored traces, the set's metric history, and the funnel's ranking step (in the context but below rank k)."""

from __future__ import annotations

import pytest

from engine import HopAttribution, InvalidInput, MemoryEngine, NotFound
from engine.evaluation.metrics import RANKING, funnel, loss_counts

SWEEP = (0.0, 0.5, 0.9)


@pytest.fixture(scope="module")
def two_hop_run(demo: MemoryEngine) -> str:
    demo.evals.load_demo(run=False)
    return demo.evals.evaluate("demo", hops=2, label="two hops").run_id


@pytest.fixture(scope="module")
def att(demo: MemoryEngine, two_hop_run: str) -> HopAttribution:
    return demo.evals.attribution(two_hop_run)


def test_every_expected_memory_is_attributed_to_the_hop_and_search_that_first_found_it(demo, two_hop_run, att):
    results = demo.evals.results(two_hop_run)
    assert att.cases == att.run_cases == len(results) == 14 and att.multi_hop_cases >= 1
    assert len(att.findings) == sum(len(r.expected) for r in results)
    for f in att.findings:
        trace = demo.traces.get(next(r.trace_id for r in results if r.case_id == f.case_id))
        hops_with_it = [h for h in trace.hops if any(c.id == f.memory_id for c in h.candidates)]
        if not hops_with_it:
            assert f.first_hop is None and f.strategy == ""
            continue
        first = hops_with_it[0]
        found_by = next(c.found_by for c in first.candidates if c.id == f.memory_id)
        assert (f.first_hop, f.strategy) == (first.hop, f"{first.proposed_by} · {found_by}")
        assert f.in_context == (f.memory_id in trace.context_ids)
        ranked = next((m for m in trace.ranking if m.id == f.memory_id and m.rank is not None), None)
        assert f.ranked_hop == (ranked.hop if ranked else None)
    assert sum(att.first_found.values()) == len(att.findings)
    assert sum(att.strategies.values()) == sum(n for k, n in att.first_found.items() if k != "never found")


def test_hop_two_gains_and_losses_are_against_the_trace_replayed_with_hop_one_alone(demo, two_hop_run, att):
    results = {r.case_id: r for r in demo.evals.results(two_hop_run)}
    for f in att.findings:
        trace = demo.traces.get(results[f.case_id].trace_id)
        alone = demo.retrieval.replay_trace(trace, {"hops": 1}) if len(trace.hops) > 1 else trace
        assert f.first_hop_context == (f.memory_id in alone.context_ids)
    assert set(att.gained) == {f for f in att.findings if f.in_context and not f.first_hop_context}
    assert set(att.lost) == {f for f in att.findings if f.first_hop_context and not f.in_context}
    first_three = demo.evals.attribution(two_hop_run, max_cases=3)
    assert (first_three.cases, first_three.run_cases) == (3, 14)
    assert {f.case_id for f in first_three.findings} == {r.case_id for r in list(results.values())[:3]}


def test_signals_split_gold_from_other_candidates(demo, two_hop_run, att):
    cal = demo.evals.calibration(two_hop_run, thresholds=())
    assert cal.sweep == () and cal.swept_cases == 0
    by_signal = {s.signal: s for s in cal.signals}
    assert {"vector_similarity", "hybrid", "final"} <= set(by_signal)
    gold_seen = sum(1 for f in att.findings if f.first_hop is not None)
    assert len(by_signal["hybrid"].gold) == gold_seen
    assert by_signal["hybrid"].other and cal.cases == 14
    # Gold memories are, on the whole, closer to their questions than the rest.
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert mean(by_signal["vector_similarity"].gold) > mean(by_signal["vector_similarity"].other)


def test_the_threshold_sweep_replays_the_stored_traces(demo, two_hop_run):
    cal = demo.evals.calibration(two_hop_run, thresholds=SWEEP, sweep_cases=5)
    assert [p.threshold for p in cal.sweep] == list(SWEEP) and cal.swept_cases == 5
    assert cal.run_threshold == 0.5 and cal.run_filter == "heuristic"
    results = demo.evals.results(two_hop_run)[:5]
    at_half = next(p for p in cal.sweep if p.threshold == 0.5)
    # At the run's own threshold the replay is the run itself: its context recall and context size.
    assert at_half.context_recall == pytest.approx(sum(r.scores["context_recall"] for r in results) / 5)
    traces = [demo.traces.get(r.trace_id) for r in results]
    assert at_half.context_memories == pytest.approx(sum(len(t.context_ids) for t in traces) / 5)
    # The strictest threshold keeps a smaller context than none at all.
    assert cal.sweep[0].context_memories > cal.sweep[-1].context_memories


def test_bad_sweeps_are_refused(demo, two_hop_run):
    with pytest.raises(InvalidInput):
        demo.evals.calibration(two_hop_run, thresholds=(1.5,))
    with pytest.raises(InvalidInput):
        demo.evals.calibration(two_hop_run, thresholds=("a",))
    with pytest.raises(InvalidInput):
        demo.evals.calibration(two_hop_run, max_cases=0)
    with pytest.raises(InvalidInput):
        demo.evals.attribution(two_hop_run, max_cases=True)
    with pytest.raises(NotFound):
        demo.evals.calibration("run_nosuchrun")
    with pytest.raises(InvalidInput):
        demo.evals.losses(two_hop_run, k=0)


def test_metric_history_lists_the_sets_runs_oldest_first(demo, two_hop_run):
    again = demo.evals.evaluate("demo", label="one hop", hops=1, method="bm25")
    history = demo.evals.history("demo")
    assert [h["run_id"] for h in history][-2:] == [two_hop_run, again.run_id]
    assert history[-1]["recall@10"] == demo.evals.get_run(again.run_id).metrics["overall"]["recall@10"]
    assert demo.evals.history("demo")[0]["started_at"] <= history[-1]["started_at"]


def test_the_funnel_ends_with_a_ranking_step_so_a_low_recall_at_1_is_not_called_nothing_lost(demo, two_hop_run):
    results = demo.evals.results(two_hop_run)
    below_1 = sum(
        1 for r in results for e in r.expected if r.in_context.get(e) and (r.ranks.get(e) or 0) > 1 and e not in r.lost
    )
    assert below_1 > 0  # the demo's context holds expected memories ranked 2nd or lower
    steps = funnel(results, k=1)
    assert steps[-1]["step"] == "in the context, in the top 1"
    assert steps[-2]["count"] - steps[-1]["count"] == below_1
    ranking = [x for x in loss_counts(results, k=1) if x["stage"] == RANKING]
    assert ranking and ranking[0]["count"] == below_1
    assert not [x for x in loss_counts(results, k=None) if x["stage"] == RANKING]
    assert demo.evals.losses(two_hop_run, k=1)["funnel"] == steps
