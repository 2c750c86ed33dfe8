"""The engine's "Why not?" analysis on a real store: per-hop stage and rule, and memories no hop saw because they
were archived, hard-forgotten (read back from the forget log) or never stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, why_not

NOW = datetime(2026, 11, 29, tzinfo=UTC)


@pytest.fixture
def store(empty_engine: MemoryEngine) -> MemoryEngine:
    e = empty_engine
    rows = [
        ("w-tea", "Wren drinks green tea every morning at seven."),
        ("w-bike", "Wren commutes by bicycle along the river path."),
        ("w-old", "Wren used to drink black tea with milk."),
        ("w-gone", "Wren's tea supplier is a shop called Leafhouse."),
    ]
    e.items.remember_many(
        {"user_id": "wren", "id": i, "content": t, "created_at": "2026-11-20T10:00:00+00:00"} for i, t in rows
    )
    e.forgetting.forget("wren", "semantic", ["w-old"], "outdated preference", mode="soft", actor="test")
    e.forgetting.forget("wren", "semantic", ["w-gone"], "supplier asked to be removed", mode="hard", actor="test")
    return e


def test_an_archived_memory_is_explained_with_the_forget_logs_date_and_reason(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "What tea does Wren drink?", now=NOW)
    verdict = store.traces.why_not(trace, "w-old")
    assert verdict.status == "archived" and verdict.stage == "archived (soft-forgotten)"
    assert "outdated preference" in verdict.headline and "archived on" in verdict.rule
    assert [r["stage"] for r in verdict.rows] == ["search"]


def test_a_hard_forgotten_memory_is_known_only_from_the_forget_log(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "Who supplies Wren's tea?", now=NOW)
    verdict = store.traces.why_not(trace.trace_id, "w-gone")  # a stored trace's id works as well
    assert verdict.status == "forgotten"
    assert (
        verdict.rule.startswith("hard-forgotten on ")
        and "by test, reason: supplier asked to be removed" in verdict.rule
    )
    assert "deleted (hard-forgotten)" in verdict.headline


def test_an_id_the_store_never_held_is_not_in_the_store(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "What tea does Wren drink?", now=NOW)
    verdict = store.traces.why_not(trace, "w-never")
    assert verdict.status == "missing" and "No memory with this id" in verdict.headline
    # The pure function without the store's word says only that search never returned it.
    assert why_not(trace, "w-never").status == "never"
    with pytest.raises(InvalidInput):
        store.traces.why_not(trace, "x' OR 1=1")
    with pytest.raises(NotFound):
        store.traces.why_not("tr_nosuchtrace", "w-tea")


def test_each_hop_names_its_stage_and_rule(store: MemoryEngine):
    trace = store.retrieval.retrieve("wren", "What tea does Wren drink?", now=NOW, hops=2)
    verdict = store.traces.why_not(trace, "w-tea")
    assert verdict.status == "context" and verdict.rank == 1 and verdict.rule == ""
    assert [r["hop"] for r in verdict.rows] == [h.hop for h in trace.hops]
    assert all({"hop", "query", "stage", "rule", "what happened"} <= set(r) for r in verdict.rows)
    # A budget of one memory: the second-ranked one is lost at the token budget, with the tokens it needed.
    tight = store.retrieval.retrieve(
        "wren", "What tea does Wren drink?", now=NOW, budget=20, overrides={"relevance_filter": "off"}
    )
    second = next(r for r in tight.ranking if not r.in_context)
    lost = store.traces.why_not(tight, second.id)
    assert lost.status in ("budget", "cap") and lost.rank == second.rank
    assert lost.rule.startswith("needs ") and lost.rule == lost.rows[0]["rule"]


def test_memory_states_of_every_kind_of_id(store: MemoryEngine):
    states = store.traces.memory_states("wren", ["w-tea", "w-old", "w-gone", "w-never"])
    assert {k: v.status for k, v in states.items()} == {
        "w-tea": "active",
        "w-old": "archived",
        "w-gone": "forgotten",
        "w-never": "missing",
    }
    assert states["w-tea"].kind == "semantic" and states["w-gone"].kind == "semantic"
