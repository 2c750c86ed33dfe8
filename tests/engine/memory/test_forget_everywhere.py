"""Issue 17 (part B): a forgotten memory is forgotten everywhere (traces, replay, the trace tables, old LanceDB
versions), exports round-trip in every state, and the two stores are checked and repaired by id."""

from __future__ import annotations

import json

import pytest

from engine import MemoryEngine, Settings
from engine.trace.traces import Traces
from ui.trace_data import candidate_rows, forgotten_rows, ranking_rows

# Some tests here start real processes (the CLI, the MCP server).
pytestmark = pytest.mark.subprocess

SECRET = "Zorblax keeps the vault code 4471 under the blue lamp"


@pytest.fixture
def engine(tmp_path, embedder) -> MemoryEngine:
    settings = Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30, forget_purge_grace_s=0.5)
    return MemoryEngine.open(settings=settings, embedder=embedder)


def _setup(engine: MemoryEngine):
    secret = engine.items.remember("u1", SECRET, preceding_text="where is the vault code kept?")
    policy = engine.items.remember("u1", "The vault code is rotated every month")
    engine.items.remember("u1", "Lunch is served at noon in the canteen")
    trace = engine.retrieval.retrieve("u1", "where is the vault code")
    assert secret.id in trace.context_ids and SECRET in trace.context
    return secret, policy, trace


def _versions_holding(engine: MemoryEngine, item_id: str) -> list[int]:
    index = engine._b.index
    name = index.table("semantic").name
    holding = []
    for v in index.table("semantic").list_versions():
        tb = index.db.open_table(name)
        tb.checkout(v["version"])
        if tb.count_rows(f"id = '{item_id}'"):
            holding.append(v["version"])
    return holding


def test_hard_forget_redacts_every_trace_and_replay_leaves_it_out(engine):
    secret, policy, trace = _setup(engine)
    engine.feedback.label("u1", secret.id, "useful", trace_id=trace.trace_id)
    assert _versions_holding(engine, secret.id)
    engine.forgetting.forget("u1", "semantic", [secret.id], reason="privacy request", mode="hard", actor="tester")

    stored = engine.traces.get(trace.trace_id)
    body = json.dumps(stored.to_dict())
    assert "Zorblax" not in body and "blue lamp" not in body and "vault code kept" not in body
    tomb = stored.forgotten[secret.id]
    assert tomb.mode == "hard" and tomb.actor == "tester" and tomb.reason == "privacy request"
    assert tomb.forget_log_id == engine.forgetting.log("u1")[0].id
    assert f"[forgotten memory {secret.id}]" in stored.context
    cand = next(c for h in stored.hops for c in h.candidates if c.id == secret.id)
    assert cand.text == "" and cand.preceding_text == "" and cand.forgotten == tomb

    replayed = engine.retrieval.replay(trace.trace_id)
    assert secret.id not in replayed.context_ids and "Zorblax" not in replayed.context
    row = next(r for r in replayed.ranking if r.id == secret.id)
    assert row.reason == "forgotten" and row.context_change == "left" and row.forgotten == tomb
    # a copy of the trace taken before the forget (JSON) is checked against the store when replayed
    old_copy = Traces.from_json(json.dumps(trace.to_dict()))
    assert secret.id not in engine.retrieval.replay_trace(old_copy).context_ids

    # the trace tables show the tombstone where the text was
    labels = [r["text"] for r in ranking_rows(stored) if r["id"] == secret.id]
    assert labels and "forgotten" in labels[0] and "privacy request" in labels[0] and "Zorblax" not in labels[0]
    assert any(r["forgotten"] for r in candidate_rows(stored.hops[0]))
    assert forgotten_rows(stored)[0]["reason"] == "privacy request"

    # old LanceDB versions: pruned by the forget itself once the grace has passed
    assert engine.admin.purges.wait(60)
    assert engine.admin.purges.owed() == []
    assert _versions_holding(engine, secret.id) == []


def test_a_purge_without_a_grace_leaves_no_version_holding_the_memory(tmp_path, embedder):
    """``forget_purge_grace_s=0`` (one process uses the store): the purge skips the pause a grace needs between its
    commits (engine/store/vectors/maintenance.py), and still no version of the table holds the memory."""
    settings = Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30, forget_purge_grace_s=0)
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    secret, _, _ = _setup(engine)
    assert _versions_holding(engine, secret.id)
    engine.forgetting.forget("u1", "semantic", [secret.id], reason="privacy request", mode="hard", actor="tester")
    assert engine.admin.purges.wait(60)
    assert engine.admin.purges.owed() == []
    assert _versions_holding(engine, secret.id) == []


def test_soft_forget_marks_traces_without_redacting_and_replay_leaves_it_out(engine):
    secret, policy, trace = _setup(engine)
    engine.forgetting.forget("u1", "semantic", [policy.id], reason="outdated", mode="soft")
    stored = engine.traces.get(trace.trace_id)
    assert stored.forgotten[policy.id].mode == "soft"
    cand = next(c for h in stored.hops for c in h.candidates if c.id == policy.id)
    assert cand.text == "The vault code is rotated every month" and cand.forgotten.reason == "outdated"
    assert SECRET in stored.context  # nothing else changed
    replayed = engine.retrieval.replay(trace.trace_id)
    assert policy.id not in replayed.context_ids
    assert next(r for r in replayed.ranking if r.id == policy.id).reason == "forgotten"
    # then hard: the mark becomes a hard tombstone and the text goes
    engine.forgetting.forget("u1", "semantic", [policy.id], reason="gone for good", mode="hard")
    stored = engine.traces.get(trace.trace_id)
    assert stored.forgotten[policy.id].mode == "hard" and "rotated every month" not in stored.context
    engine.admin.purges.wait(60)


def _export(engine: MemoryEngine, user: str = "u1") -> list[dict]:
    return list(engine.admin.export(user))


def test_export_ingest_round_trips_forgotten_labelled_archived_and_trace_references(engine, tmp_path, embedder):
    secret, policy, trace = _setup(engine)
    lunch = next(i for i in engine.items.list_items("u1").rows if "Lunch" in i.content)
    engine.feedback.label("u1", secret.id, "useful", trace_id=trace.trace_id, hop=1, note="answered it")
    engine.feedback.label("u1", policy.id, "harmful", trace_id=trace.trace_id)
    engine.feedback.label("u1", lunch.id, "useful")
    engine.forgetting.forget("u1", "semantic", [secret.id], reason="privacy", mode="hard")
    engine.forgetting.forget("u1", "semantic", [policy.id], reason="stale", mode="soft")
    engine.admin.ingest_lines(
        [
            json.dumps(
                {
                    "kind": "item",
                    "user_id": "u1",
                    "id": "archived-1",
                    "content": "old note",
                    "archived_at": "2026-01-02T00:00:00+00:00",
                }
            )
        ]
    )
    engine.admin.purges.wait(60)
    first = _export(engine)
    assert any(r["kind"] == "feedback" and r["item_id"] == secret.id for r in first)

    other = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "b"), forget_purge_grace_s=0.5), embedder=embedder
    )
    other.admin.ingest_lines([json.dumps(r) for r in first])
    second = _export(other)
    assert second == first
    assert {f.trace_id for f in other.feedback.events("u1")} == {trace.trace_id, None}
    assert other.admin.stats().orphans["semantic"] == {"without_row": [], "without_vector": [], "duplicated": []}
    # the forgotten memory's label still counts nowhere in retrieval: it has no row
    assert secret.id not in {i.id for i in other.items.list_items("u1", include_archived=True).rows}


def test_stats_names_orphans_by_id_and_repair_fixes_them(engine):
    a = engine.items.remember("u1", "alpha memory about rivers")
    b = engine.items.remember("u1", "beta memory about mountains")
    index = engine._b.index
    vec = engine.embedder.embed(["ghost"])
    index.add("semantic", ["ghost-1"], ["u1"], ["ghost text"], vec)  # a vector whose row never committed
    index.delete("semantic", [b.id])  # a row without its vector
    index.add("semantic", [a.id], ["u1"], ["alpha memory about rivers"], engine.embedder.embed(["x"]))  # doubled
    found = engine.admin.stats().orphans["semantic"]
    assert found == {"without_row": ["ghost-1"], "without_vector": [b.id], "duplicated": [a.id]}
    warnings = " ".join(engine.admin.stats().warnings)
    assert "ghost-1" in warnings and b.id in warnings and a.id in warnings
    done = engine.admin.repair()
    assert done["semantic"]["vectors_removed"] == 1
    assert engine.admin.stats().orphans["semantic"] == {"without_row": [], "without_vector": [], "duplicated": []}
    assert [h.id for h in engine.retrieval.search("u1", "mountains", limit=1)] == [b.id]


def test_ingest_again_after_a_crash_between_vectors_and_rows_never_doubles_vectors(engine):
    lines = [
        json.dumps({"kind": "item", "user_id": "u1", "id": f"it-{n}", "content": f"imported fact {n}"})
        for n in range(30)
    ]
    plan = engine.admin.transfer.plan(lines)
    # the vectors of a crashed import (what kill -9 between the two stores leaves)
    texts, vectors = engine._b.record_vectors(engine.items, plan.items[:12])
    engine._b.index.add("semantic", [i.id for i in plan.items[:12]], ["u1"] * 12, texts, vectors)
    assert len(engine.admin.stats().orphans["semantic"]["without_row"]) == 12
    engine.admin.ingest_lines(lines)
    assert engine.admin.stats().orphans["semantic"] == {"without_row": [], "without_vector": [], "duplicated": []}
    hits = engine.retrieval.search("u1", "imported fact", limit=20)
    assert len({h.id for h in hits}) == len(hits) == 20


def test_a_corrupted_lancedb_table_is_store_corrupt_and_repair_rebuilds_it(engine):
    from engine import StoreCorrupt

    engine.items.remember("u1", "a memory about the sea")
    engine.admin.optimize()
    data = sorted((engine.path / "vectors").glob("semantic__*/data/*.lance"))
    assert data
    for f in data:
        f.write_bytes(b"garbage" * 10)
    with pytest.raises(StoreCorrupt, match="semantic__"):
        engine.retrieval.search("u1", "sea")
    assert any("unreadable" in w for w in engine.admin.stats().warnings)
    engine.admin.repair()
    assert [h.text for h in engine.retrieval.search("u1", "sea", limit=1)] == ["a memory about the sea"]


@pytest.mark.parametrize("kind", ["semantic", "episodic", "procedural"])
def test_export_ingest_round_trips_after_a_hard_forget_of_each_kind(engine, tmp_path, embedder, kind):
    """Issue 29: after a hard forget of a skill that has outcomes, ingest refused the export ("outcome names unknown
    skill"); items and episodes with labels and outcomes pointing at them must round-trip too."""
    item = engine.items.remember("u1", "The spare key is under the blue flowerpot")
    episode = engine.episodes.record("u1", [{"action": "look under the pot", "result": "found it"}], outcome="success")
    skill = engine.skills.register("u1", "find-key", "look under the blue flowerpot")
    engine.skills.report_outcome("u1", skill.id, True, episode_id=episode.id)
    engine.skills.report_outcome("u1", skill.id, False)
    trace = engine.retrieval.retrieve("u1", "where is the spare key")
    engine.feedback.label("u1", item.id, "useful", trace_id=trace.trace_id)
    engine.feedback.label("u1", episode.id, "harmful")
    gone = {"semantic": item.id, "episodic": episode.id, "procedural": skill.id}[kind]
    engine.forgetting.forget("u1", kind, [gone], reason="asked to", mode="hard")
    first = _export(engine)
    assert sum(r["kind"] == "outcome" for r in first) == 2

    other = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "b"), forget_purge_grace_s=0.5), embedder=embedder
    )
    other.admin.ingest_lines([json.dumps(r) for r in first])
    assert _export(other) == first
    assert other.admin.stats().orphans[kind] == {"without_row": [], "without_vector": [], "duplicated": []}
    engine.admin.purges.wait(60)
    other.admin.purges.wait(60)


def test_a_hard_forget_redacts_the_text_where_a_trace_question_or_hop_query_quotes_it(engine):
    """Issue 29: a trace whose question quoted the forgotten text kept it in ``question``, the hop queries and
    ``relevance_text`` (shown by ``traces`` and ``replay``). Also a trace that quoted it before the memory existed."""
    before = engine.retrieval.retrieve("u1", f'Did I tell you "{SECRET}"?')  # asked before the memory was stored
    secret, policy, _ = _setup(engine)
    quoted = engine.retrieval.retrieve("u1", f'Is it still true that "{SECRET}"?')
    assert secret.id in {c.id for h in quoted.hops for c in h.candidates}
    other = engine.retrieval.retrieve("u1", "when is lunch served")
    engine.forgetting.forget("u1", "semantic", [secret.id], reason="privacy request", mode="hard")

    placeholder = f"[forgotten memory {secret.id}]"
    for trace_id in (before.trace_id, quoted.trace_id):
        stored = engine.traces.get(trace_id)
        assert "Zorblax" not in json.dumps(stored.to_dict()), trace_id
        assert placeholder in stored.question and placeholder in stored.hops[0].query
        assert placeholder in stored.hops[0].relevance_text
    listed = json.dumps(engine.traces.list_traces("u1").rows, default=str)
    assert "Zorblax" not in listed and placeholder in listed
    assert engine.traces.get(other.trace_id).question == "when is lunch served"  # a trace that never quoted it
    # replay and why-not still work on a redacted trace
    replayed = engine.retrieval.replay(quoted.trace_id)
    assert secret.id not in replayed.context_ids and "Zorblax" not in json.dumps(replayed.to_dict())
    why = engine.traces.why_not(quoted.trace_id, secret.id)
    assert why.item_id == secret.id and "Zorblax" not in json.dumps([why.headline, why.rows], default=str)
    engine.admin.purges.wait(60)


def test_a_hard_forget_redacts_a_question_that_quoted_an_item_no_trace_showed(engine):
    """Soft-forgotten first, the item is never a candidate; the question still quotes it word for word."""
    item = engine.items.remember("u1", "Bob's bicycle is red and parked at gate 265")
    engine.forgetting.forget("u1", "semantic", [item.id], reason="outdated", mode="soft")
    trace = engine.retrieval.retrieve("u1", "Is it still true that Bob's bicycle is red and parked at gate 265?")
    assert item.id not in {c.id for h in trace.hops for c in h.candidates}
    engine.forgetting.forget("u1", "semantic", [item.id], reason="privacy request", mode="hard")

    stored = engine.traces.get(trace.trace_id)
    assert "gate 265" not in json.dumps(stored.to_dict())
    assert stored.question == f"Is it still true that [forgotten memory {item.id}]?"
    assert "gate 265" not in engine.traces.list_traces("u1").rows[0]["question"]
