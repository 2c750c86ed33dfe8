"""Stored traces of every earlier format still load and replay exactly.

tests/fixtures/traces/ holds traces as the store keeps them (exported JSON), written by the code of the commit that
added them (write_trace_fixtures.py): 1 and 2 hops under the default preset and under ``llmemory``, MMR (Jaccard and
embedding), RRF fusion with a budget that stops assembly, a trace redacted by a hard forget, and traces in the first
stored format (no fusion parts, preceding texts, similarity or newer settings). Beside each, ``<name>.replay.json``
is what replaying it gave then. The code of today must load each and replay it to the same scores and ranks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine import MemoryEngine, Settings
from engine.trace.codec import trace_json
from engine.trace.traces import Traces

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
NAMES = sorted(p.name.removesuffix(".json") for p in FIXTURES.glob("*.json") if not p.name.endswith(".replay.json"))
# Written by the current format and replayed with their own settings: the replay is the trace itself.
IDENTITY = [n for n in NAMES if not n.startswith("older_") and "forgotten" not in n]
RANKING_KEYS = ("id", "kind", "hop", "final", "rank", "in_context", "reason", "tokens")
REPLAY_KEYS = ("old_rank", "rank_change", "old_in_context", "context_change", "forgotten")


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    store = tmp_path_factory.mktemp("trace-fixtures") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=30), embedder=embedder)


def stored(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def expected_replay(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.replay.json").read_text(encoding="utf-8"))


def plain(value: Any) -> dict[str, Any]:
    """A score, rank or verdict record as plain data, without the entries that hold no value (a record may list
    a score its stage did not compute as null where an older trace left the key out)."""
    data = dict(value) if isinstance(value, Mapping) else dict(value.to_dict())
    return {k: v for k, v in data.items() if v is not None}


def same_scoring(got: dict[str, Any], want: dict[str, Any], replay: bool) -> None:
    """Exactly the same result: the context, the merged ranking, and every candidate's scores, ranks and verdicts."""
    assert got["context"] == want["context"]
    assert got["context_ids"] == want["context_ids"]
    assert got["context_tokens"] == want["context_tokens"]
    assert got["stop_reason"] == want["stop_reason"]
    keys = RANKING_KEYS + (REPLAY_KEYS if replay else ())
    assert [{k: r.get(k) for k in keys} for r in got["ranking"]] == [
        {k: r.get(k) for k in keys} for r in want["ranking"]
    ]
    assert len(got["hops"]) == len(want["hops"])
    for hg, hw in zip(got["hops"], want["hops"], strict=True):
        assert (hg["hop"], hg["query"], hg["relevance_text"], hg["counts"]) == (
            hw["hop"],
            hw["query"],
            hw["relevance_text"],
            hw["counts"],
        )
        assert [c["id"] for c in hg["candidates"]] == [c["id"] for c in hw["candidates"]]
        for cg, cw in zip(hg["candidates"], hw["candidates"], strict=True):
            assert plain(cg["scores"]) == plain(cw["scores"]), cg["id"]  # exactly, not approximately
            assert plain(cg["ranks"]) == plain(cw["ranks"]), cg["id"]
            assert plain(cg["verdicts"]) == plain(cw["verdicts"]), cg["id"]
            assert (cg["in_context"], cg["context_reason"], cg["tokens"], cg.get("forgotten")) == (
                cw["in_context"],
                cw["context_reason"],
                cw["tokens"],
                cw.get("forgotten"),
            )


def test_the_fixtures_cover_every_format_they_claim():
    assert {"default_1hop", "default_2hop", "llmemory_1hop", "older_llmemory_1hop"} <= set(NAMES)
    assert len(stored("default_2hop")["hops"]) == 2 and len(stored("older_llmemory_2hop")["hops"]) == 2
    assert stored("llmemory_1hop")["settings"]["preset"] == "llmemory"
    older = stored("older_llmemory_1hop")
    assert "fusion" not in older["settings"] and "similarity" not in older["hops"][0]
    assert all("hybrid_bm25_part" not in c["scores"] for c in older["hops"][0]["candidates"])
    assert stored("default_1hop_hard_forgotten")["forgotten"]
    assert any(r["reason"] == "budget_stop" for r in stored("default_rrf_stop_budget")["ranking"])


@pytest.mark.parametrize("name", NAMES)
def test_a_stored_trace_loads_back_to_what_was_stored(name):
    data = stored(name)
    trace = Traces.from_json(json.dumps(data))
    again = json.loads(json.dumps(trace.to_dict()))
    same_scoring(again, data, replay=False)
    # The ranking's entries are records now; written out (as the CLI and export do, and as the store does) they
    # are the stored objects again: the same keys in the same order, the same values.
    assert again["ranking"] == data["ranking"] == json.loads(trace_json(trace))["ranking"]
    assert [list(r) for r in again["ranking"]] == [list(r) for r in data["ranking"]]
    assert again["question"] == data["question"] and again["trace_id"] == data["trace_id"]
    assert [h["proposal"] for h in again["hops"]] == [h["proposal"] for h in data["hops"]]
    assert [h.get("similarity", {}) for h in again["hops"]] == [h.get("similarity", {}) for h in data["hops"]]


@pytest.mark.parametrize("name", NAMES)
def test_a_stored_trace_replays_to_the_same_scores_and_ranks_as_when_it_was_stored(engine, name):
    replayed = engine.retrieval.replay_trace(Traces.from_json(json.dumps(stored(name))))
    got, want = json.loads(json.dumps(replayed.to_dict())), expected_replay(name)
    same_scoring(got, want, replay=True)
    assert [list(r) for r in got["ranking"]] == [list(r) for r in want["ranking"]]  # a replay's keys, as before
    assert json.loads(trace_json(replayed))["ranking"] == got["ranking"]
    assert Traces.from_json(json.dumps(got)).ranking == replayed.ranking  # a replay's JSON reads back


@pytest.mark.parametrize("name", IDENTITY)
def test_a_stored_trace_replayed_with_its_own_settings_is_the_trace_itself(engine, name):
    replayed = engine.retrieval.replay_trace(Traces.from_json(json.dumps(stored(name))))
    same_scoring(json.loads(json.dumps(replayed.to_dict())), stored(name), replay=False)
    assert all(r.rank_change == 0 for r in replayed.ranking)
