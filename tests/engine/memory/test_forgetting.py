"""Forgetting: soft (archived: hidden, fetchable by id) and hard (gone from DuckDB and from LanceDB's vectors and
full-text index), each call audited in the forget log (memory-model.md §9)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import KINDS, ForgetLogEntry, InvalidInput, MemoryEngine, NotFound
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"
TOKEN = "quillwort"  # a word no other memory in these tests contains


def make(engine: MemoryEngine, kind: str, text: str, user: str = U) -> str:
    if kind == "semantic":
        return engine.items.remember(user, text).id
    if kind == "episodic":
        return engine.episodes.record(user, [{"observation": "while testing", "action": text}]).id
    return engine.skills.register(user, f"skill-{abs(hash(text)) % 10**8}", text).id


def fetch(engine: MemoryEngine, kind: str, memory_id: str):
    return {"semantic": engine.items.get, "episodic": engine.episodes.get, "procedural": engine.skills.get}[kind](
        U, memory_id
    )


def listed(engine: MemoryEngine, kind: str) -> set[str]:
    if kind == "semantic":
        return {i.id for i in engine.items.list_items(U).rows}
    if kind == "episodic":
        return {e.id for e in engine.episodes.list_episodes(U).rows}
    return {r.skill.id for r in engine.skills.rank(U)}


def index_ids(engine: MemoryEngine, kind: str, text: str) -> tuple[set[str], set[str]]:
    """What LanceDB itself returns for ``text``: vector search ids and full-text ids."""
    index = engine._b.index
    qvec = engine.embedder.embed([text])[0]
    return (
        {h.id for h in index.vector_search(kind, U, qvec, 100)},
        {h.id for h in index.fts_search(kind, U, TOKEN, 100)},
    )


def retrieved_ids(engine: MemoryEngine, question: str) -> set[str]:
    """Every id the traced pipeline saw as a candidate or put into the context."""
    trace = engine.retrieval.retrieve(U, question, save=False)
    return {c.id for hop in trace.hops for c in hop.candidates} | set(trace.context_ids)


@pytest.fixture
def engine_with(empty_engine):
    """A store holding, per kind, a target memory (with TOKEN) and a bystander that must survive."""

    def build(kind: str) -> tuple[MemoryEngine, str, str, str]:
        text = f"The {TOKEN} deployment checklist lives in the ops wiki"
        target = make(empty_engine, kind, text)
        bystander = make(empty_engine, kind, "Lunch is served at noon in the canteen")
        return empty_engine, target, bystander, text

    return build


@pytest.mark.parametrize("kind", KINDS)
def test_a_found_memory_is_visible_everywhere_before_it_is_forgotten(engine_with, kind):
    engine, target, _, text = engine_with(kind)
    assert target in listed(engine, kind)
    assert target in {h.id for h in engine.retrieval.search(U, text)}
    vec_ids, fts_ids = index_ids(engine, kind, text)
    assert target in vec_ids and target in fts_ids
    assert target in retrieved_ids(engine, f"Where is the {TOKEN} deployment checklist?")


@pytest.mark.parametrize("kind", KINDS)
def test_soft_forgetting_hides_a_memory_from_lists_search_and_retrieval_but_it_stays_fetchable(engine_with, kind):
    engine, target, bystander, text = engine_with(kind)
    result = engine.forgetting.forget(U, kind, [target], reason="outdated", mode="soft")
    assert (result.memory_type, result.mode, result.forgotten, result.unknown, result.count) == (
        kind,
        "soft",
        (target,),
        (),
        1,
    )
    assert listed(engine, kind) == {bystander}
    assert target not in {h.id for h in engine.retrieval.search(U, text)}
    assert target not in retrieved_ids(engine, f"Where is the {TOKEN} deployment checklist?")
    stored = fetch(engine, kind, target)
    assert stored.archived_at is not None
    assert fetch(engine, kind, bystander).archived_at is None


def test_soft_forgotten_items_can_still_be_listed_on_request(engine_with):
    engine, target, _, _ = engine_with("semantic")
    engine.forgetting.forget(U, "semantic", [target], reason="outdated")
    assert target in {i.id for i in engine.items.list_items(U, include_archived=True).rows}
    assert engine.items.categories(U)[0].item_count == 1


@pytest.mark.parametrize("kind", KINDS)
def test_hard_forgetting_deletes_from_duckdb_and_from_lancedb_vectors_and_full_text(engine_with, kind):
    engine, target, bystander, text = engine_with(kind)
    vectors_before = engine._b.index.count(kind, U)
    result = engine.forgetting.forget(U, kind, [target], reason="user asked", mode="hard", actor="dashboard")
    assert result.forgotten == (target,)
    with pytest.raises(NotFound):
        fetch(engine, kind, target)
    assert target not in {h.id for h in engine.retrieval.search(U, text)}
    assert target not in {h.id for h in engine.retrieval.search(U, TOKEN, kind=kind)}
    vec_ids, fts_ids = index_ids(engine, kind, text)
    assert target not in vec_ids
    assert fts_ids == set()
    assert engine._b.index.count(kind, U) == vectors_before - 1
    assert bystander in vec_ids
    assert target not in retrieved_ids(engine, f"Where is the {TOKEN} deployment checklist?")
    assert fetch(engine, kind, bystander).id == bystander


def test_hard_forgetting_also_deletes_a_soft_forgotten_memory(engine_with):
    engine, target, _, _ = engine_with("semantic")
    engine.forgetting.forget(U, "semantic", [target], reason="first soft")
    result = engine.forgetting.forget(U, "semantic", [target], reason="now for good", mode="hard")
    assert result.forgotten == (target,)
    with pytest.raises(NotFound):
        engine.items.get(U, target)


def test_every_call_writes_one_log_entry_with_the_ids_actually_affected(engine_with):
    engine, target, bystander, _ = engine_with("semantic")
    start = datetime.now(UTC)
    result = engine.forgetting.forget(
        U,
        "semantic",
        [target, "item_unknown", target, bystander],
        reason="  cleanup  ",
        mode="hard",
        actor="researcher",
    )
    end = datetime.now(UTC)
    assert result.forgotten == (target, bystander)
    assert result.unknown == ("item_unknown",)
    [entry] = engine.forgetting.log(U)
    assert isinstance(entry, ForgetLogEntry)
    assert (entry.user_id, entry.memory_type, entry.ids, entry.count, entry.mode, entry.reason, entry.actor) == (
        U,
        "semantic",
        (target, bystander),
        2,
        "hard",
        "cleanup",
        "researcher",
    )
    assert start <= entry.at <= end


def test_unknown_ids_are_reported_and_not_logged_as_forgotten(engine_with):
    engine, _, _, _ = engine_with("episodic")
    result = engine.forgetting.forget(U, "episodic", ["ep_nope", "ep_also_nope"], reason="typo")
    assert (result.forgotten, result.unknown, result.count) == ((), ("ep_nope", "ep_also_nope"), 0)
    [entry] = engine.forgetting.log(U)
    assert (entry.ids, entry.count) == ((), 0)


def test_another_users_memory_cannot_be_forgotten_and_is_reported_unknown(engine_with):
    engine, target, _, _ = engine_with("semantic")
    result = engine.forgetting.forget("bo", "semantic", [target], reason="not mine", mode="hard")
    assert result.unknown == (target,)
    assert engine.items.get(U, target).archived_at is None


def test_forgetting_an_already_archived_memory_softly_affects_nothing(engine_with):
    engine, target, _, _ = engine_with("semantic")
    engine.forgetting.forget(U, "semantic", [target], reason="once")
    again = engine.forgetting.forget(U, "semantic", [target], reason="twice")
    assert (again.forgotten, again.unknown) == ((), ())
    assert [e.count for e in engine.forgetting.log(U)] == [0, 1]


def test_an_id_of_another_kind_is_unknown_for_this_kind(engine_with):
    engine, target, _, _ = engine_with("semantic")
    assert engine.forgetting.forget(U, "episodic", [target], reason="wrong kind").unknown == (target,)
    assert engine.items.get(U, target).archived_at is None


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_a_forgotten_memory_never_returns_even_if_its_vector_survived(engine_with, mode):
    """Simulates a crash between the DuckDB commit and the LanceDB delete: DuckDB decides what exists."""
    engine, target, _, text = engine_with("semantic")
    engine.forgetting.forget(U, "semantic", [target], reason="stale", mode=mode)
    engine._b.index.add("semantic", [target], [U], [text], engine.embedder.embed([text]))
    assert target in index_ids(engine, "semantic", text)[0]
    assert target not in {h.id for h in engine.retrieval.search(U, text)}
    assert target not in retrieved_ids(engine, f"Where is the {TOKEN} deployment checklist?")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "semantics"}, "kind"),
        ({"kind": "working"}, "kind"),
        ({"mode": "shred"}, "mode"),
        ({"mode": "HARD"}, "mode"),
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"reason": "x" * 1001}, "reason"),
        ({"actor": ""}, "actor"),
        ({"ids": []}, "at least one"),
        ({"ids": "item_x"}, "list"),
        ({"ids": ["' OR '1'='1"]}, "invalid id"),
    ],
)
def test_invalid_forget_requests_are_refused_and_nothing_is_forgotten_or_logged(engine_with, kwargs, match):
    engine, target, _, _ = engine_with("semantic")
    args = {"kind": "semantic", "ids": [target], "reason": "why", "mode": "hard", **kwargs}
    before = snapshot(engine)
    with pytest.raises(InvalidInput, match=match):
        engine.forgetting.forget(U, **args)
    assert snapshot(engine) == before
    assert engine.forgetting.log(U) == []
