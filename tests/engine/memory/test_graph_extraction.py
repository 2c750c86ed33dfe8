"""Extraction when memories are written, on an embedded store and on a team store (PostgreSQL): remember,
remember_many, memorize, ingest and import-benchmark write the graph of what they store in the same transaction (a
write that fails leaves neither items nor graph rows), relations name the item and the messages its provenance names,
``graph_extraction=off`` writes none, and ``engine.graph.extract`` draws the graph of a store that predates it,
resumably and idempotently."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from engine import InvalidInput, MemoryEngine, Settings
from engine.memory.graph_extraction import GraphExtraction
from engine.records import FactSource
from tests.bench.tiny_data import write_locomo

pytestmark = pytest.mark.both_stores

T = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    """One store for the module (offline extraction); each test writes under a user of its own."""
    return MemoryEngine.open(
        settings=module_settings.with_overrides({"graph_extraction": "offline"}), embedder=embedder
    )


def facts(engine: MemoryEngine, user: str, history: bool = False) -> set[tuple[str, str, str]]:
    out = set()
    for entity in engine.graph.list_entities(user, limit=200).rows:
        for r in engine.graph.relations(user, entity.id, include_history=history, limit=200).rows:
            out.add((r.subject, r.predicate, r.object))
    return out


def mentioned(engine: MemoryEngine, user: str, item_id: str) -> set[str]:
    return {e.name for e in engine.graph.entities_of(user, "semantic", [item_id])[item_id]}


def test_remember_writes_entities_relations_and_mentions_with_the_item(engine):
    u = "hook-remember"
    item = engine.items.remember(u, "Alice works at Acme and lives in Paris.", created_at=T)
    assert facts(engine, u) == {("Alice", "works_at", "Acme"), ("Alice", "lives_in", "Paris")}
    assert mentioned(engine, u, item.id) == {"Alice", "Acme", "Paris"}
    alice = engine.graph.resolve(u, "alice")
    (rel,) = engine.graph.relations(u, alice.id, predicate="works_at").rows
    assert (rel.valid_from, rel.method, rel.sources) == (T, "offline", (FactSource("semantic", item.id),))
    assert {e.name: e.type for e in engine.graph.list_entities(u).rows} == {
        "Alice": "person",
        "Acme": "organisation",
        "Paris": "place",
    }


def test_a_newer_memory_supersedes_an_exclusive_fact_and_an_older_one_slots_in_before(engine):
    u = "hook-timeline"
    engine.items.remember(u, "Alice works at Acme.", created_at=datetime(2023, 1, 1, tzinfo=UTC))
    engine.items.remember(u, "Alice works at Globex.", created_at=datetime(2025, 1, 1, tzinfo=UTC))
    engine.items.remember(u, "Alice works at Initech.", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    alice = engine.graph.resolve(u, "Alice")
    line = engine.graph.timeline(u, alice.id, "works_at")
    assert [(r.object, r.valid_from.year, r.valid_to.year if r.valid_to else None) for r in line] == [
        ("Acme", 2023, 2024),
        ("Initech", 2024, 2025),
        ("Globex", 2025, None),
    ]
    assert [r.object for r in engine.graph.relations(u, alice.id, as_of="2024-06-01").rows] == ["Initech"]


def test_remember_many_and_message_sources_in_the_provenance(engine):
    u = "hook-many"
    items = engine.items.remember_many(
        [
            {"user_id": u, "content": "Tomas speaks Czech and German.", "created_at": T},
            {
                "user_id": u,
                "content": "My sister Ana lives in Lisbon.",
                "created_at": T,
                "provenance": {"method": "consolidation", "sources": [{"type": "message", "id": "s-1#4"}]},
            },
        ]
    )
    assert facts(engine, u) == {
        ("Tomas", "speaks", "Czech"),
        ("Tomas", "speaks", "German"),
        ("User", "has_sister", "Ana"),
        ("Ana", "lives_in", "Lisbon"),
    }
    ana = engine.graph.resolve(u, "Ana")
    (lives,) = engine.graph.relations(u, ana.id, predicate="lives_in").rows
    assert lives.sources == (FactSource("semantic", items[1].id), FactSource("message", "s-1#4"))
    assert lives.sources[1].message == ("s-1", 4)


def test_the_same_fact_remembered_twice_is_one_relation_with_two_sources(engine):
    u = "hook-merge"
    first = engine.items.remember(u, "Bob lives in Oslo.", created_at=T)
    second = engine.items.remember(u, "Bob lives in Oslo.", created_at=T)
    bob = engine.graph.resolve(u, "Bob")
    (rel,) = engine.graph.relations(u, bob.id, include_history=True).rows
    assert {s.id for s in rel.sources} == {first.id, second.id}


def test_a_write_that_fails_after_the_graph_rows_leaves_neither_items_nor_graph(engine, monkeypatch):
    u = "hook-atomic"
    real = GraphExtraction.write

    def write_then_fail(self, conn, batches):
        real(self, conn, batches)  # the real graph rows are written into the transaction ...
        raise RuntimeError("disk full")  # ... which then fails

    monkeypatch.setattr(GraphExtraction, "write", write_then_fail)
    with pytest.raises(RuntimeError, match="disk full"):
        engine.items.remember(u, "Carol works at Umbrella.")
    monkeypatch.undo()
    assert engine.items.list_items(u).total == 0
    assert engine.graph.stats(u) == {"entities": 0, "relations": 0, "superseded": 0, "archived": 0, "mentions": 0}
    assert engine.retrieval.search(u, "Carol Umbrella", mode="vector") == []


def test_archived_items_are_not_extracted(engine):
    u = "hook-archived"
    item = engine.items.prepare(u, "Dora lives in Rome.", archived_at=T)
    engine.items.add([item])
    assert engine.graph.stats(u)["entities"] == 0


def test_memorize_offline_writes_the_graph_of_its_item(engine):
    u = "hook-memorize"
    (item,) = engine.items.memorize(u, "I moved to Berlin and my son Jake plays chess.")
    assert facts(engine, u) == {("User", "moved_to", "Berlin"), ("User", "has_son", "Jake"), ("Jake", "plays", "chess")}
    assert mentioned(engine, u, item.id) == {"User", "Berlin", "Jake", "chess"}


def test_ingest_extracts_the_items_of_a_file_that_carries_no_graph(engine):
    u = "hook-ingest"
    line = {"kind": "item", "user_id": u, "id": "ing-1", "content": "Erin visited Kyoto.", "created_at": T.isoformat()}
    counts = engine.admin.ingest_lines([json.dumps(line)])
    assert counts["item"] == 1
    assert facts(engine, u) == {("Erin", "visited", "Kyoto")}
    assert mentioned(engine, u, "ing-1") == {"Erin", "Kyoto"}


def test_import_benchmark_writes_the_graph_of_every_turn(engine, tmp_path):
    data = write_locomo(tmp_path)
    engine.evals.import_benchmark("locomo", str(data), "tiny-graph")
    users = {u for u in engine.admin.users() if "conv-tiny" in u}
    (user,) = users
    found = facts(engine, user)
    assert ("Ben", "has_sister", "Lisbon") not in found  # no name after "sister": no relation invented
    names = {e.name for e in engine.graph.list_entities(user, limit=100).rows}
    assert {"Ana", "Ben", "Miso", "Lisbon", "Osaka"} <= names
    assert ("Ben", "visited", "Osaka") not in found  # "flying to" is a plan, not a visit


def test_extraction_off_writes_no_graph(settings, embedder):
    off = MemoryEngine.open(settings=settings.with_overrides({"graph_extraction": "off"}), embedder=embedder)
    try:
        off.items.remember("u", "Alice works at Acme.")
        assert off.graph.stats("u")["entities"] == 0
    finally:
        off.close()


def test_on_demand_extraction_of_an_older_store_is_resumable_and_idempotent(settings, embedder):
    old = MemoryEngine.open(settings=settings.with_overrides({"graph_extraction": "off"}), embedder=embedder)
    try:
        texts = [f"Person{n} lives in Oslo." for n in range(5)] + ["Nothing to see here.", "Zed works at Acme."]
        old.items.remember_many([{"user_id": "a", "content": t, "created_at": T} for t in texts])
        old.items.remember("b", "Yan moved to Lima.", created_at=T)
    finally:
        old.close()
    engine = MemoryEngine.open(settings=settings.with_overrides({"graph_extraction": "offline"}), embedder=embedder)
    try:
        seen: list[tuple[int, int]] = []
        first = engine.graph.extract("a", progress=lambda done, total: seen.append((done, total)))
        assert first["mode"] == "offline" and first["items"] == 7 and first["with_entities"] == 6
        assert first["relations_added"] == 6 and seen[-1] == (7, 7)
        assert engine.graph.stats("b")["entities"] == 0  # only the user asked for
        stats = engine.graph.stats("a")
        again = engine.graph.extract("a")
        assert again["items"] == 1  # only the item that names nothing is looked at again
        assert again["relations_added"] == 0 and engine.graph.stats("a") == stats
        everything = engine.graph.extract("a", only_missing=False)
        assert everything["items"] == 7 and everything["relations_added"] == 0
        assert everything["relations_merged"] == 6 and engine.graph.stats("a") == stats
        assert engine.graph.extract()["relations_added"] == 1  # every user: b's now
    finally:
        engine.close()


@pytest.mark.parametrize(("user", "only_missing"), [("bad user!", True), ("a", "yes")])
def test_on_demand_extraction_refuses_bad_arguments(engine, user, only_missing):
    with pytest.raises(InvalidInput):
        engine.graph.extract(user, only_missing=only_missing)
