"""Pruning stored traces by age: a preview first, labelled traces kept as the labels' evidence, one user or all."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from engine import InvalidInput, MemoryEngine, NotFound


@pytest.fixture
def engine(demo_engine: MemoryEngine) -> MemoryEngine:
    return demo_engine


def three_traces(engine: MemoryEngine):
    """An older trace of ada, then (later) one of ada and one of mira."""
    old = engine.retrieval.retrieve("ada", "Which queue does the refund job use?")
    ada = engine.retrieval.retrieve("ada", "Who owns the refund reconciliation job?")
    mira = engine.retrieval.retrieve("mira", "Who collects the pan traps before the first snow?")
    first, second = datetime.fromisoformat(old.created_at), datetime.fromisoformat(ada.created_at)
    return old, ada, mira, first + (second - first) / 2


def stored_ids(engine: MemoryEngine) -> set[str]:
    return {t["trace_id"] for t in engine.traces.list_traces(limit=100).rows}


def test_a_preview_lists_the_old_traces_and_deletes_nothing(engine):
    old, ada, mira, between = three_traces(engine)

    plan = engine.traces.prune(0, now=between)

    assert (plan.count, plan.applied, plan.kept_labelled) == (1, False, 0)
    assert [s["trace_id"] for s in plan.sample] == [old.trace_id]
    assert plan.bytes > 1000 and plan.cutoff == between
    assert stored_ids(engine) == {old.trace_id, ada.trace_id, mira.trace_id}


def test_applying_deletes_exactly_the_traces_older_than_the_cutoff(engine):
    old, ada, mira, between = three_traces(engine)

    plan = engine.traces.prune(2, now=between + timedelta(days=2), apply=True)

    assert (plan.count, plan.applied) == (1, True)
    assert stored_ids(engine) == {ada.trace_id, mira.trace_id}
    with pytest.raises(NotFound):
        engine.traces.get(old.trace_id)


def test_a_user_scope_leaves_other_users_traces_alone(engine):
    old, ada, mira, _ = three_traces(engine)
    later = datetime.fromisoformat(mira.created_at) + timedelta(seconds=1)

    plan = engine.traces.prune(0, user_id="ada", now=later, apply=True)

    assert plan.count == 2 and plan.user_id == "ada"
    assert stored_ids(engine) == {mira.trace_id}


def test_a_labelled_trace_is_kept_unless_labelled_ones_are_included(engine):
    old, ada, mira, between = three_traces(engine)
    engine.feedback.label("ada", old.context_ids[0], "useful", trace_id=old.trace_id, hop=1, note="right answer")

    kept = engine.traces.prune(0, now=between, apply=True)

    assert (kept.count, kept.kept_labelled, kept.applied) == (0, 1, False)
    assert old.trace_id in stored_ids(engine)

    gone = engine.traces.prune(0, now=between, keep_labelled=False, apply=True)

    assert (gone.count, gone.kept_labelled) == (1, 0)
    assert old.trace_id not in stored_ids(engine)
    # The label itself stays in the ledger, still naming the trace it came from.
    assert [e.note for e in engine.feedback.events("ada", trace_id=old.trace_id)] == ["right answer"]


@pytest.mark.parametrize("days", [-1, math.nan, math.inf, 40_000, True, "7", None])
def test_a_bad_age_is_refused_and_nothing_is_deleted(engine, days):
    three_traces(engine)
    before = stored_ids(engine)

    with pytest.raises(InvalidInput, match="older_than_days"):
        engine.traces.prune(days, apply=True)

    assert stored_ids(engine) == before


@pytest.mark.parametrize("user", ["' OR '1'='1", "../ada", "ada\x00"])
def test_a_hostile_user_id_is_refused_and_nothing_is_deleted(engine, user):
    three_traces(engine)
    before = stored_ids(engine)

    with pytest.raises(InvalidInput):
        engine.traces.prune(0, user_id=user, apply=True)

    assert stored_ids(engine) == before
