""" "Why not?" on a memory forgotten after the trace ran (issue 32): the verdict says it is gone, with the tombstone's
mode, time and reason, and still says what the trace did with it. Before the fix it read "In the context at rank 1"
and showed no tombstone."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings, why_not


@pytest.fixture
def store(settings: Settings, embedder) -> MemoryEngine:
    # Only this process uses the store: a hard forget's purge may run soon (the test waits for it), not after 10 s.
    e = MemoryEngine.open(settings=settings.with_overrides({"forget_purge_grace_s": 0.5}), embedder=embedder)
    e.items.remember_many(
        [
            {"user_id": "wren", "id": "w-tea", "content": "Wren drinks green tea every morning at seven."},
            {"user_id": "wren", "id": "w-bike", "content": "Wren commutes by bicycle along the river path."},
        ]
    )
    return e


def test_a_memory_hard_forgotten_after_the_trace_is_forgotten_with_its_tombstone(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "What tea does Wren drink?")
    assert "w-tea" in trace.context_ids
    store.forgetting.forget("wren", "semantic", ["w-tea"], "asked to be removed", mode="hard", actor="tester")
    # The stored trace (marked by the forget), and the trace object held from before the forget (the store's word).
    for held in (trace.trace_id, trace):
        verdict = store.traces.why_not(held, "w-tea")
        assert verdict.status == "forgotten" and verdict.stage == "forgotten (hard)"
        assert verdict.forgotten is not None and verdict.forgotten.mode == "hard"
        assert verdict.rule.startswith("hard-forgotten on ")
        assert "by tester, reason: asked to be removed" in verdict.rule
        assert verdict.headline.startswith("Forgotten since this trace ran: hard-forgotten on ")
        assert "in the context at rank 1" in verdict.headline  # what the trace did stays said
        assert verdict.rank == 1 and verdict.hop == 1
        assert "." not in verdict.rule.split(" on ", 1)[1].split(" by ")[0]  # minutes, not microseconds
    # The pure function reads the tombstone the forget left in the stored trace.
    stored = store.traces.get(trace.trace_id)
    assert why_not(stored, "w-tea").status == "forgotten"
    store.admin.purges.wait(60)


def test_a_memory_archived_after_the_trace_is_archived_and_the_others_are_unchanged(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "What tea does Wren drink?")
    store.forgetting.forget("wren", "semantic", ["w-tea"], "outdated", mode="soft", actor="tester")
    verdict = store.traces.why_not(trace.trace_id, "w-tea")
    assert verdict.status == "archived" and verdict.forgotten is not None
    assert "archived on " in verdict.rule and "reason: outdated" in verdict.rule
    kept = store.traces.why_not(trace.trace_id, "w-bike")
    assert kept.forgotten is None and not kept.headline.startswith("Forgotten")
