"""Labelling for an hour: labels per (labeller, trace, memory) that toggle instead of stacking, the labeller's queue
built from a filter, agreement between two labellers (Cohen's kappa, computed by hand below), and the labels turned
into an expectation set in one step. On an embedded store and on a team store.
"""

from __future__ import annotations

import dataclasses

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"
FACTS = [
    "The refund reconciliation job runs on the billing queue every night.",
    "Ada owns the refund reconciliation job since March.",
    "The billing queue is drained by three workers.",
    "Refunds above 500 euros need a second approval.",
    "The refund job writes its report to the finance bucket.",
    "Billing workers restart at 02:00 after the refund job.",
]
QUESTIONS = ["Which queue does the refund job use?", "Who owns the refund job?", "What does the refund job write?"]


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    e = MemoryEngine.open(settings=dataclasses.replace(module_settings, graph_extraction="off"), embedder=embedder)
    for fact in FACTS:
        e.items.remember(U, fact)
    return e


@pytest.fixture(scope="module")
def traces(engine: MemoryEngine) -> list:
    """Three agent traces, oldest first, and one evaluation run whose only case misses its expected memory."""
    stored = [engine.traces.get(engine.retrieval.retrieve(U, q).trace_id) for q in QUESTIONS]
    unrelated = engine.items.remember(U, "The office plant is watered on Fridays.").id
    engine.evals.add_case("misses", U, "Which queue does the refund job use?", [unrelated], create_set=True)
    return stored


def test_a_label_given_twice_counts_once_and_a_toggle_takes_it_off(engine: MemoryEngine, traces):
    t = traces[0]
    item = t.context_ids[0]
    engine.feedback.label(U, item, "useful", trace_id=t.trace_id, labeller="ana")
    engine.feedback.label(U, item, "useful", trace_id=t.trace_id, labeller="ana")  # clicked twice
    assert engine.feedback.net(U, [item]) == {item: 1}
    assert engine.feedback.toggle(U, item, "useful", trace_id=t.trace_id, labeller="ana") is None  # off again
    assert engine.feedback.net(U, [item]) == {item: 0}
    assert engine.feedback.toggle(U, item, "harmful", trace_id=t.trace_id, labeller="ana").label == "harmful"
    assert engine.feedback.toggle(U, item, "useful", trace_id=t.trace_id, labeller="ana").label == "useful"
    assert engine.feedback.net(U, [item]) == {item: 1}  # the change of mind replaced the harmful label
    current = engine.feedback.events(U, item_id=item, labeller="ana", current_only=True)
    assert [(e.label, e.labeller, e.trace_id) for e in current] == [("useful", "ana", t.trace_id)]
    history = engine.feedback.events(U, item_id=item, labeller="ana")  # the history stays readable, counting 0
    assert [(e.label, e.delta, e.replaced_at is None) for e in history] == [
        ("useful", 1, True),
        ("harmful", 0, False),
        ("useful", 0, False),  # given twice, taken off once
    ]
    assert engine.feedback.clear(U, item, t.trace_id, labeller="ana").label == "useful"
    assert engine.feedback.clear(U, item, t.trace_id, labeller="ana") is None
    assert engine.feedback.net(U, [item]) == {item: 0}


def test_the_queue_holds_every_context_memory_of_the_agents_traces_in_the_date_range(engine: MemoryEngine, traces):
    everything = engine.feedback.queue(U, labeller="queue-reader", unlabelled_only=False)
    expected = [(t.trace_id, i) for t in reversed(traces) for i in t.context_ids]  # newest trace first
    assert [(e.trace_id, e.item_id) for e in everything] == expected  # no cap: n of N is len()
    assert [e.rank for e in everything[: len(traces[-1].context_ids)]] == list(
        range(1, len(traces[-1].context_ids) + 1)
    )
    assert everything[0].question == QUESTIONS[-1]
    since = engine.feedback.queue(U, labeller="queue-reader", since=traces[1].created_at)
    assert {e.trace_id for e in since} == {traces[1].trace_id, traces[2].trace_id}
    until = engine.feedback.queue(U, labeller="queue-reader", until=traces[1].created_at)
    assert {e.trace_id for e in until} == {traces[0].trace_id}


def test_unlabelled_only_means_not_yet_labelled_by_this_labeller(engine: MemoryEngine, traces):
    t = traces[2]
    before_bo = len(engine.feedback.queue(U, labeller="bo"))
    before_cy = len(engine.feedback.queue(U, labeller="cy"))
    engine.feedback.label(U, t.context_ids[0], "harmful", trace_id=t.trace_id, labeller="bo")
    assert len(engine.feedback.queue(U, labeller="bo")) == before_bo - 1
    assert len(engine.feedback.queue(U, labeller="cy")) == before_cy  # another labeller still sees it
    labelled = [e for e in engine.feedback.queue(U, labeller="bo", unlabelled_only=False) if e.label]
    assert [(e.trace_id, e.item_id, e.label) for e in labelled] == [(t.trace_id, t.context_ids[0], "harmful")]


def test_the_queue_of_an_evaluation_run_holds_the_traces_of_its_missed_cases(engine: MemoryEngine, traces):
    run = engine.evals.evaluate("misses")
    result = engine.evals.results(run.run_id)[0]
    assert result.lost  # the plant fact is not what a refund question finds
    queue = engine.feedback.queue(U, labeller="queue-reader", run_id=run.run_id)
    assert [e.item_id for e in queue] == list(engine.traces.get(result.trace_id).context_ids)
    assert {e.trace_id for e in queue} == {result.trace_id}
    assert result.trace_id not in {e.trace_id for e in engine.feedback.queue(U, labeller="queue-reader")}


def test_agreement_gives_the_counts_and_cohens_kappa_of_two_labellers(engine: MemoryEngine, traces):
    pairs = [(t.trace_id, i) for t in traces for i in t.context_ids][:5]
    assert len(pairs) == 5
    dee = ["useful", "useful", "useful", "harmful", "harmful"]
    eve = ["useful", "useful", "harmful", "harmful", "useful"]
    for (trace_id, item), a, b in zip(pairs, dee, eve, strict=True):
        engine.feedback.label(U, item, a, trace_id=trace_id, labeller="dee")
        engine.feedback.label(U, item, b, trace_id=trace_id, labeller="eve")
    pair = next(p for p in engine.feedback.agreement(U).pairs if (p.first, p.second) == ("dee", "eve"))
    assert (pair.both, pair.agreed, pair.both_useful, pair.both_harmful) == (5, 3, 2, 1)
    assert (pair.first_useful_second_harmful, pair.first_harmful_second_useful) == (1, 1)
    # p_o = 3/5; each gave useful 3 times in 5: p_e = 0.6*0.6 + 0.4*0.4 = 0.52; kappa = 0.08 / 0.48 = 1/6
    assert pair.kappa == pytest.approx(1 / 6)
    assert dict(engine.feedback.agreement(U).labellers)["eve"] == 5


def test_labels_export_as_rows_and_become_an_expectation_set_in_one_step(engine: MemoryEngine, traces):
    t = traces[1]
    useful, harmful = t.context_ids[0], t.context_ids[1]
    engine.feedback.label(U, useful, "useful", trace_id=t.trace_id, labeller="fay")
    engine.feedback.label(U, harmful, "harmful", trace_id=t.trace_id, labeller="fay", note="off topic")
    rows = engine.feedback.export_labels(U, labeller="fay")
    assert [(r["item_id"], r["label"], r["labeller"], r["question"]) for r in rows] == [
        (useful, "useful", "fay", QUESTIONS[1]),
        (harmful, "harmful", "fay", QUESTIONS[1]),
    ]
    assert rows[0]["text"] == engine.feedback.memory_texts(U, [useful])[useful] and rows[1]["note"] == "off topic"
    cases = engine.evals.set_from_labels("fay-labels", U, labeller="fay")
    assert [(c.question, c.expected) for c in cases] == [(QUESTIONS[1], (useful,))]
    again = engine.evals.set_from_labels("fay-labels", U, labeller="fay")  # one case per question, replaced
    assert [c.case_id for c in engine.evals.cases("fay-labels")] == [cases[0].case_id] == [again[0].case_id]
    run = engine.evals.evaluate("fay-labels")
    assert run.status == "done" and engine.evals.results(run.run_id)[0].expected == (useful,)


def test_bad_labelling_input_is_refused_and_nothing_is_written(engine: MemoryEngine, traces):
    t = traces[0]
    before = snapshot(engine)
    for call, error in [
        (lambda: engine.feedback.label(U, t.context_ids[0], "useful", trace_id=t.trace_id, labeller=" "), InvalidInput),
        (lambda: engine.feedback.toggle(U, t.context_ids[0], "meh", trace_id=t.trace_id), InvalidInput),
        (lambda: engine.feedback.queue(U, since="2026-02-01", until="2026-01-01"), InvalidInput),
        (lambda: engine.feedback.queue(U, run_id="run_never_made"), NotFound),
        (lambda: engine.feedback.queue(U, labeller="x" * 81), InvalidInput),
        (lambda: engine.evals.set_from_labels("nobody-labels", U, labeller="nobody"), InvalidInput),
        (lambda: engine.feedback.report(U, useful=[t.context_ids[0]], harmful=[t.context_ids[0]]), InvalidInput),
    ]:
        with pytest.raises(error):
            call()
    assert snapshot(engine) == before
    assert "nobody-labels" not in {s.name for s in engine.evals.sets()}
