"""Replay's own steps (engine/trace/replay.py) pinned without a store or a model: the golden traces of
tests/fixtures/traces replayed through the pure scoring, merge and assembly functions give exactly their stored
replays, and each step's rule (tombstones, the settings a replay runs under, the hops it replays, the old-rank
columns, the memories it no longer ranks) is checked on small cases whose answers are written out here.

These are the fast tests bench/mutation.py runs against every mutant of the scoring code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from engine import InvalidInput, Settings
from engine.clock import parse_time
from engine.retrieval.hop_run import hop_trace, placement_key, ranking_entry
from engine.retrieval.pipeline import rank_and_assemble
from engine.trace.codec import trace_from_dict, trace_json
from engine.trace.records import RankedMemory
from engine.trace.replay import (
    candidate_input,
    replay_ranking,
    replay_runs,
    replay_settings,
    tombstones,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
NAMES = sorted(p.name.removesuffix(".json") for p in FIXTURES.glob("*.json") if not p.name.endswith(".replay.json"))


def stored(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def replay(data: dict[str, Any], overrides: dict[str, Any] | None = None, forgotten=None) -> dict[str, Any]:
    """What Retriever.replay does, from the pure steps: the trace's candidates scored again under its settings
    (and ``overrides``), merged and assembled, with the old ranking beside the new; as stored JSON."""
    old = trace_from_dict(data)
    gone = tombstones(old, forgotten)
    settings = replay_settings(Settings(), old, overrides)
    runs = replay_runs(old, settings, parse_time(data["settings"]["now"]), gone)
    ranked, assembly = rank_and_assemble(settings, runs)
    placed = {placement_key(s): (s, p) for s, p in zip(ranked, assembly.placements)}
    new = dataclasses.replace(
        old,
        hops=tuple(hop_trace(r, placed) for r in runs),
        context=assembly.context,
        context_ids=tuple(s.inp.id for s in assembly.chosen),
        context_tokens=assembly.tokens_used,
        ranking=tuple(ranking_entry(s, p) for s, p in zip(ranked, assembly.placements)),
    )
    new = dataclasses.replace(new, ranking=replay_ranking(old, new, gone, settings.hops))
    return json.loads(trace_json(new))


def plain(value: Any) -> dict[str, Any]:
    """A stored object, or a record such as a tombstone, without the entries that hold no value."""
    data = value if isinstance(value, dict) else dataclasses.asdict(value)
    return {k: v for k, v in data.items() if v is not None}


def plain_all(tombs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: plain(v) for k, v in tombs.items()}


RANKING_KEYS = ("id", "kind", "hop", "final", "rank", "in_context", "reason", "tokens")
REPLAY_KEYS = ("old_rank", "rank_change", "old_in_context", "context_change", "forgotten")


@pytest.mark.parametrize("name", NAMES)
def test_each_golden_trace_replays_to_its_stored_replay(name):
    got = replay(stored(name))
    want = json.loads((FIXTURES / f"{name}.replay.json").read_text(encoding="utf-8"))
    assert (got["context"], got["context_ids"], got["context_tokens"]) == (
        want["context"],
        want["context_ids"],
        want["context_tokens"],
    )
    keys = RANKING_KEYS + REPLAY_KEYS
    assert [{k: r.get(k) for k in keys} for r in got["ranking"]] == [
        {k: r.get(k) for k in keys} for r in want["ranking"]
    ]
    assert len(got["hops"]) == len(want["hops"])
    for hg, hw in zip(got["hops"], want["hops"], strict=True):
        assert hg["counts"] == hw["counts"]
        assert [c["id"] for c in hg["candidates"]] == [c["id"] for c in hw["candidates"]]
        for cg, cw in zip(hg["candidates"], hw["candidates"], strict=True):
            assert plain(cg["scores"]) == plain(cw["scores"]), cg["id"]  # exactly
            assert plain(cg["ranks"]) == plain(cw["ranks"]), cg["id"]
            assert plain(cg["verdicts"]) == plain(cw["verdicts"]), cg["id"]
            assert (cg["in_context"], cg["context_reason"], cg["tokens"], cg["search_order"]) == (
                cw["in_context"],
                cw["context_reason"],
                cw["tokens"],
                cw["search_order"],
            )


def test_the_golden_traces_reach_every_stage_the_replay_pins_rely_on():
    settings = [stored(n)["settings"] for n in NAMES]
    assert {s.get("fusion") for s in settings} >= {"zscore", "rrf", "weighted"}
    assert {s.get("mmr_similarity") for s in settings if s["mmr_enabled"]} >= {"jaccard", "embedding"}
    reasons = {r["reason"] for n in NAMES for r in stored(n)["ranking"]}
    assert reasons == {"context", "budget", "budget_stop"}


# --- the replay's settings -----------------------------------------------------------------------------------------


def test_a_replay_runs_under_the_traces_own_settings_with_the_overrides_on_top():
    data = stored("default_1hop")
    base = Settings().with_overrides({"budget_tokens": 55, "half_life_days": 7.0, "top_k": 3})
    got = replay_settings(base, trace_from_dict(data), {"bm25_weight": 0.9})
    assert got.budget_tokens == data["settings"]["budget_tokens"] == 2000  # the trace's, not the base's
    assert got.half_life_days == data["settings"]["half_life_days"]
    assert got.bm25_weight == 0.9  # the override wins over the trace
    assert replay_settings(base, trace_from_dict(data), None).bm25_weight == data["settings"]["bm25_weight"]


def test_only_retrieval_settings_may_be_overridden():
    trace = trace_from_dict(stored("default_1hop"))
    with pytest.raises(InvalidInput, match="lock_timeout_s is not a retrieval setting"):
        replay_settings(Settings(), trace, {"lock_timeout_s": 5})
    with pytest.raises(InvalidInput):
        replay_settings(Settings(), trace, {"bm25_weight": 0.5, "no_such_setting": 1})


# --- tombstones ----------------------------------------------------------------------------------------------------


def test_tombstones_come_from_the_candidates_the_trace_and_the_store_the_store_last():
    data = stored("default_1hop")
    first, second, third = (c["id"] for c in data["hops"][0]["candidates"][:3])
    data["hops"][0]["candidates"][0]["forgotten"] = {"mode": "soft", "actor": "candidate"}
    data["forgotten"] = {first: {"mode": "hard", "actor": "trace"}, second: {"mode": "soft", "actor": "trace"}}
    trace = trace_from_dict(data)
    assert plain_all(tombstones(trace, None)) == {
        first: {"mode": "hard", "actor": "trace"},
        second: {"mode": "soft", "actor": "trace"},
    }
    got = tombstones(trace, {second: {"mode": "hard", "actor": "store"}, third: {"mode": "soft"}})
    assert plain_all(got) == {
        first: {"mode": "hard", "actor": "trace"},
        second: {"mode": "hard", "actor": "store"},
        third: {"mode": "soft"},
    }
    data["forgotten"] = {}
    assert plain_all(tombstones(trace_from_dict(data), {})) == {first: {"mode": "soft", "actor": "candidate"}}
    assert tombstones(trace_from_dict(stored("default_2hop")), None) == {}


def test_a_memory_forgotten_since_leaves_the_replay_and_is_listed_with_its_tombstone():
    data = stored("default_1hop")
    ranking = data["ranking"]
    first = ranking[0]["id"]
    tomb = {"mode": "hard", "at": "2026-01-01T00:00:00", "actor": "test", "reason": "asked"}
    got = replay(data, forgotten={first: tomb})
    assert first not in got["context_ids"]
    assert all(c["id"] != first for c in got["hops"][0]["candidates"])
    assert {**got["ranking"][-1], "forgotten": plain(got["ranking"][-1]["forgotten"])} == {
        "id": first,
        "kind": ranking[0]["kind"],
        "hop": 1,
        "final": None,
        "rank": None,
        "in_context": False,
        "reason": "forgotten",
        "tokens": ranking[0]["tokens"],
        "old_rank": 1,
        "rank_change": None,
        "old_in_context": True,
        "context_change": "left",
        "forgotten": tomb,
    }
    # Everyone else moves up one place.
    assert [(r["id"], r["old_rank"], r["rank"], r["rank_change"]) for r in got["ranking"][:-1]] == [
        (r["id"], n + 1, n, 1) for n, r in enumerate(ranking[1:], 1)
    ]
    assert {r["context_change"] for r in got["ranking"][:-1]} == {"stayed"}


# --- hops, filtering and the context's movements -------------------------------------------------------------------


def test_replaying_one_hop_of_two_lists_the_second_hops_memories_as_not_replayed():
    data = stored("default_2hop")
    got = replay(data, {"hops": 1})
    assert len(got["hops"]) == 1
    old = {r["id"]: r for r in data["ranking"]}
    gone = [r for r in got["ranking"] if r["rank"] is None]
    # Two memories only the second hop ranked; one it ranked was also kept by the first, which now ranks it.
    assert [(r["id"], r["old_rank"], r["reason"], r["context_change"]) for r in gone] == [
        ("item_949992a428f24680", 3, "hop_not_replayed", "left"),
        ("skill_c18651ee8ecc442c", 11, "hop_not_replayed", "left"),
    ]
    assert all(old[r["id"]]["hop"] == 2 and r["hop"] == 2 and r["old_in_context"] for r in gone)
    moved = next(r for r in got["ranking"] if r["id"] == "item_182b1014789b4450")
    assert (old[moved["id"]]["hop"], moved["hop"], moved["old_rank"], moved["rank"]) == (2, 1, 5, 6)


def test_a_memory_the_replay_filters_out_is_listed_as_filtered():
    data = stored("llmemory_1hop")
    # A score threshold of 1 and 20-letter shared words: the weighted hybrid of these memories is below 1.
    got = replay(data, {"relevance_min_score": 1.0, "relevance_min_word_chars": 20, "relevance_keep_all_max": 0})
    assert got["ranking"] and all(r["reason"] == "filtered" and r["rank"] is None for r in got["ranking"])
    assert [r["id"] for r in got["ranking"]] == [r["id"] for r in data["ranking"]]
    assert all(r["context_change"] == "left" and r["old_in_context"] for r in got["ranking"])
    assert got["context"] == "" and got["context_ids"] == [] and got["context_tokens"] == 0


def test_a_smaller_budget_moves_memories_out_and_a_larger_one_brings_them_back():
    data = stored("default_rrf_stop_budget")  # budget 60, stop mode: 5 in the context, then 1 budget, 3 budget_stop
    old = data["ranking"]
    assert [r["in_context"] for r in old] == [True] * 5 + [False] * 4
    smaller = replay(data, {"budget_tokens": old[0]["tokens"]})
    assert [r["context_change"] for r in smaller["ranking"]] == ["stayed"] + ["left"] * 4 + ["out"] * 4
    assert [r["rank_change"] for r in smaller["ranking"]] == [0] * 9
    assert [r["old_rank"] for r in smaller["ranking"]] == list(range(1, 10))
    larger = replay(data, {"budget_tokens": 100_000})
    assert [r["context_change"] for r in larger["ranking"]] == ["stayed"] * 5 + ["entered"] * 4
    assert [r["old_in_context"] for r in larger["ranking"]] == [True] * 5 + [False] * 4
    assert larger["context_tokens"] == sum(r["tokens"] for r in old)


def test_a_reordered_replay_reports_each_memorys_rank_change_as_old_minus_new():
    data = stored("default_1hop")
    got = replay(data, {"fusion": "weighted", "bm25_weight": 1.0})
    old_rank = {r["id"]: r["rank"] for r in data["ranking"]}
    changed = [r for r in got["ranking"] if r["rank"] is not None and r["rank"] != old_rank.get(r["id"])]
    assert changed  # pure BM25 reorders this trace
    for r in got["ranking"]:
        if r["rank"] is not None and r["id"] in old_rank:
            assert (r["old_rank"], r["rank_change"]) == (old_rank[r["id"]], old_rank[r["id"]] - r["rank"])


# --- a traced candidate back as scoring input ----------------------------------------------------------------------


def test_a_traced_candidate_comes_back_as_the_input_search_gave():
    data = stored("default_2hop")
    raw = next(c for c in data["hops"][0]["candidates"] if c["preceding_text"])
    raw = {**raw, "stored_importance": 0.25, "success_count": 3, "failure_count": 2, "evergreen": True}
    raw["scores"] = {**raw["scores"], "feedback_net": -2, "fts_score": 7.5, "llm_relevance": 0.4}
    data["hops"][0]["candidates"][0] = raw
    c = trace_from_dict(data).hops[0].candidates[0]
    got = candidate_input(c)
    assert (got.id, got.kind, got.text, got.created_at, got.found_by, got.preceding_text) == (
        raw["id"],
        raw["kind"],
        raw["text"],
        raw["created_at"],
        raw["found_by"],
        raw["preceding_text"],
    )
    assert (got.importance, got.evergreen, got.success_count, got.failure_count) == (0.25, True, 3, 2)
    assert (got.feedback_net, got.fts_score, got.llm_relevance) == (-2, 7.5, 0.4)
    assert got.vector_similarity == raw["scores"]["vector_similarity"]
    raw["scores"] = {k: v for k, v in raw["scores"].items() if k != "feedback_net"}
    assert candidate_input(trace_from_dict(data).hops[0].candidates[0]).feedback_net == 0


def test_replay_scores_each_hop_in_search_order_without_the_forgotten():
    data = stored("default_1hop")
    candidates = data["hops"][0]["candidates"]
    data["hops"][0]["candidates"] = list(reversed(candidates))  # stored order is not search order
    trace = trace_from_dict(data)
    settings = replay_settings(Settings(), trace, None)
    by_search = sorted(candidates, key=lambda c: c["search_order"])
    skip = by_search[1]["id"]
    (run,) = replay_runs(trace, settings, parse_time(data["settings"]["now"]), {skip: {"mode": "soft"}})
    assert [i.id for i in run.inputs] == [c["id"] for c in by_search if c["id"] != skip]
    assert (run.hop, run.query, run.relevance_text) == (1, data["hops"][0]["query"], data["hops"][0]["relevance_text"])
    assert len(run.scored) == len(candidates) - 1


def test_the_unranked_keep_their_old_columns():
    old = trace_from_dict(stored("default_rrf_stop_budget"))
    entry = old.ranking[6]  # rank 7, budget_stop
    new = dataclasses.replace(old, ranking=tuple(r for r in old.ranking if r.id != entry.id))
    (got,) = [r for r in replay_ranking(old, new, {}, 1) if r.id == entry.id]
    assert got == RankedMemory(
        id=entry.id,
        kind=entry.kind,
        hop=1,
        final=None,
        rank=None,
        in_context=False,
        reason="filtered",
        tokens=entry.tokens,
        old_rank=7,
        rank_change=None,
        old_in_context=False,
        context_change="out",
        forgotten=None,
    )


def test_a_memory_the_old_ranking_lacks_or_did_not_rank_enters_without_a_rank_change():
    data = stored("default_1hop")
    new = trace_from_dict(data)
    first, second = data["ranking"][0], data["ranking"][1]
    data["ranking"] = data["ranking"][1:]  # the old ranking without the first memory...
    data["ranking"][0] = {**second, "rank": None, "final": None, "in_context": False, "reason": "filtered"}  # ...
    got = {r.id: r for r in replay_ranking(trace_from_dict(data), new, {}, 1)}
    for entry in (first, second):  # ...and one it did not rank (a replay's own ranking)
        r = got[entry["id"]]
        assert (r.rank, r.old_in_context, r.rank_change, r.context_change) == (entry["rank"], False, None, "entered")
    assert got[first["id"]].old_rank is None
    assert got[data["ranking"][1]["id"]].rank_change == 0


def test_a_traced_candidate_without_a_cosine_replays_with_cosine_0():
    data = stored("default_1hop")
    c = data["hops"][0]["candidates"][0]
    c["scores"] = {k: v for k, v in c["scores"].items() if k != "vector_similarity"}
    assert candidate_input(trace_from_dict(data).hops[0].candidates[0]).vector_similarity == 0.0
