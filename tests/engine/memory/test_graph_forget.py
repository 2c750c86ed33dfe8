"""Forgetting graph memory, on an embedded store and on a team store: entities and relations forgotten by id (soft:
archived and hidden; hard: deleted and redacted from stored traces), an entity taking its relations and mentions with
it, an exclusive predicate's timeline mended around a removed version, one forget-log entry of kind "graph"; and the
cascade when memories are forgotten: their mentions go, relations no live memory supports go, a hard forget strips
the forgotten memory from the sources of the relations that stay, all in the forget's own transaction."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings
from engine.records import Extraction, FactSource, SourcedExtraction, Triple
from engine.trace.redaction import redact_graph
from tests.support.cli import cli

pytestmark = pytest.mark.both_stores

T2023 = datetime(2023, 1, 1, tzinfo=UTC)
T2024 = datetime(2024, 1, 1, tzinfo=UTC)
T2025 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    """One store for the module (each test has users of its own); extraction off, so the graph rows of each memory
    are exactly the ones a test writes."""
    return MemoryEngine.open(settings=module_settings.with_overrides({"graph_extraction": "off"}), embedder=embedder)


def timeline(engine: MemoryEngine, user: str, subject: str, predicate: str) -> list[tuple]:
    """The active versions of a fact (the timeline lists archived ones too: they keep their validity)."""
    entity = engine.graph.resolve(user, subject)
    return [
        (r.object, r.valid_from, r.valid_to, r.superseded_by)
        for r in engine.graph.timeline(user, entity.id, predicate)
        if r.archived_at is None
    ]


def extract_into(engine: MemoryEngine, user: str, kind: str, memory_id: str, names, triples, at=T2024) -> None:
    """Graph rows drawn from one stored memory, written as the extraction hook writes them."""
    se = SourcedExtraction(
        Extraction(tuple((n, "person") for n in names), tuple(Triple(*t) for t in triples), "offline"),
        at,
        (kind, memory_id),
        (FactSource(kind, memory_id),),
    )
    with engine._b.db.write() as conn:
        engine.graph.write(conn, user, [se])


def graph_rows(engine: MemoryEngine, user: str) -> dict[str, list]:
    """Every graph row of a user, archived ones too, as the tables hold them."""
    with engine._b.db.read() as conn:
        return {
            "entities": conn.execute(
                "SELECT name, archived_at IS NOT NULL FROM entities WHERE user_id=? ORDER BY name", [user]
            ).fetchall(),
            "relations": conn.execute(
                "SELECT predicate, archived_at IS NOT NULL, archive_reason, CAST(sources AS VARCHAR) FROM relations "
                "WHERE user_id=? ORDER BY predicate",
                [user],
            ).fetchall(),
            "mentions": conn.execute(
                "SELECT memory_id FROM entity_mentions WHERE user_id=? ORDER BY memory_id", [user]
            ).fetchall(),
        }


# -- forgetting by id ----------------------------------------------------------------------------------------------
def test_soft_forget_of_an_entity_archives_it_with_its_relations_and_drops_its_mentions(engine):
    u = "soft-entity"
    extract_into(engine, u, "semantic", "item_s1", ["Mia", "Oslo"], [("Mia", "lives_in", "Oslo")])
    engine.graph.add_fact(u, "Mia", "likes", "skiing")
    engine.graph.add_fact(u, "Nils", "knows", "Mia")
    mia = engine.graph.resolve(u, "Mia")
    rels = {r.id for r in engine.graph.relations(u, mia.id).rows}
    result = engine.graph.forget(u, [mia.id], "asked to", actor="tester")
    assert result.memory_type == "graph" and result.mode == "soft"
    assert set(result.forgotten) == {mia.id, *rels} and result.unknown == ()
    # Hidden from every query, still fetchable by id
    assert engine.graph.resolve(u, "Mia") is None
    assert engine.graph.entity(u, mia.id).archived_at is not None
    assert engine.graph.relations(u).total == 0
    assert engine.graph.mentions(u, [mia.id]) == {mia.id: []}
    oslo = engine.graph.resolve(u, "Oslo")
    assert engine.graph.neighbourhood(u, [oslo.id], depth=2).relations == ()
    archived = engine.graph.relations(u, include_archived=True, include_history=True).rows
    assert {r.id for r in archived} == rels
    assert all(r.archive_reason == "asked to" and r.valid_to is None for r in archived)  # validity kept
    (entry,) = [e for e in engine.forgetting.log(u)]
    assert (entry.memory_type, entry.mode, entry.actor, entry.reason) == ("graph", "soft", "tester", "asked to")
    assert set(entry.ids) == set(result.forgotten) and entry.count == len(result.forgotten)
    # Soft again: nothing left to archive, the id reported back
    again = engine.forgetting.forget(u, "graph", [mia.id], "again")
    assert again.forgotten == () and again.unknown == (mia.id,)
    # A new fact about Mia makes a new entity: the archived one is not brought back silently
    engine.graph.add_fact(u, "Mia", "likes", "tea")
    assert engine.graph.resolve(u, "Mia").id != mia.id


def test_hard_forget_deletes_and_leaves_no_text_of_the_entity(engine):
    u = "hard-entity"
    extract_into(engine, u, "semantic", "item_h1", ["Quillon", "Acme"], [("Quillon", "works_at", "Acme")])
    engine.graph.add_fact(u, "Quillon", "likes", "opera")
    engine.graph.forget(u, [engine.graph.add_fact(u, "Quillon", "knows", "Rita").relations_added[0]], "first soft")
    quillon = engine.graph.resolve(u, "Quillon")
    result = engine.graph.forget(u, [quillon.id, "ent_unknown"], "privacy", mode="hard")
    assert result.unknown == ("ent_unknown",)
    assert len(result.forgotten) == 4  # the entity and its three relations, the soft-archived one too
    with pytest.raises(NotFound):
        engine.graph.entity(u, quillon.id)
    rows = graph_rows(engine, u)
    assert "Quillon" not in json.dumps(rows, default=str)
    assert [n for n, _ in rows["entities"]] == ["Acme", "Rita", "opera"]
    assert rows["relations"] == [] and rows["mentions"] == [("item_h1",)]  # Acme's mention stays
    assert engine.forgetting.log(u)[0].memory_type == "graph"


def test_forgetting_a_relation_mends_the_exclusive_timeline(engine):
    u = "mend"
    ids = [
        engine.graph.add_fact(u, "Ola", "works_at", org, valid_from=at).relations_added[0]
        for org, at in (("Acme", T2023), ("Hooli", T2024), ("Initech", T2025))
    ]
    engine.graph.forget(u, [ids[1]], "wrong")  # the middle version, soft
    assert timeline(engine, u, "Ola", "works_at") == [
        ("Acme", T2023, T2025, ids[2]),
        ("Initech", T2025, None, None),
    ]
    engine.graph.forget(u, [ids[2]], "wrong too", mode="hard")  # the current one: Acme holds again
    assert timeline(engine, u, "Ola", "works_at") == [("Acme", T2023, None, None)]
    ola = engine.graph.resolve(u, "Ola")
    assert [r.object for r in engine.graph.relations(u, ola.id, as_of=datetime(2024, 6, 1, tzinfo=UTC)).rows] == [
        "Acme"
    ]
    # A later value still supersedes the mended one as usual
    new = engine.graph.add_fact(u, "Ola", "works_at", "Globex", valid_from=datetime(2026, 1, 1, tzinfo=UTC))
    assert new.superseded == ((ids[0], new.relations_added[0]),)


def test_forgetting_both_versions_of_a_run_relinks_past_them(engine):
    u = "mend-run"
    ids = [
        engine.graph.add_fact(u, "Pia", "lives_in", city, valid_from=at).relations_added[0]
        for city, at in (
            ("Lima", T2023),
            ("Cusco", T2024),
            ("Quito", T2025),
            ("Bogota", datetime(2026, 1, 1, tzinfo=UTC)),
        )
    ]
    engine.forgetting.forget(u, "graph", [ids[2], ids[1]], "both", mode="hard")
    assert timeline(engine, u, "Pia", "lives_in") == [
        ("Lima", T2023, datetime(2026, 1, 1, tzinfo=UTC), ids[3]),
        ("Bogota", datetime(2026, 1, 1, tzinfo=UTC), None, None),
    ]


def test_bad_graph_forgets_are_refused_before_anything_is_written(engine):
    u = "bad-forget"
    rel = engine.graph.add_fact(u, "Ray", "likes", "tea").relations_added[0]
    for args in (
        dict(ids=[], reason="r"),
        dict(ids=[rel], reason="   "),
        dict(ids=[rel], reason="r", mode="purge"),
        dict(ids=[rel, "x' OR 1=1"], reason="r"),
        dict(ids="rel_x", reason="r"),
    ):
        with pytest.raises(InvalidInput):
            engine.graph.forget(u, **args)
    with pytest.raises(InvalidInput):
        engine.forgetting.forget(u, "graphs", [rel], "r")
    assert engine.forgetting.log(u) == [] and engine.graph.relations(u).total == 1
    # Another user's ids are unknown, never touched
    other = engine.graph.forget("bad-forget-2", [rel], "not yours", mode="hard")
    assert other.forgotten == () and other.unknown == (rel,)
    assert engine.graph.relation(u, rel).archived_at is None


# -- the cascade from memories ------------------------------------------------------------------------------------
def test_forgetting_an_item_archives_what_only_it_supported(engine):
    u = "cascade-soft"
    a = engine.items.remember(u, "Sam moved to Lisbon and likes fado").id
    b = engine.items.remember(u, "Sam likes fado").id
    extract_into(engine, u, "semantic", a, ["Sam", "Lisbon"], [("Sam", "lives_in", "Lisbon"), ("Sam", "likes", "fado")])
    extract_into(engine, u, "semantic", b, ["Sam"], [("Sam", "likes", "fado")])
    engine.forgetting.forget(u, "semantic", [a], "outdated", actor="tester")
    sam = engine.graph.resolve(u, "Sam")
    # lives_in came from a alone: archived; likes is still supported by b: kept, sources unchanged (soft)
    (likes,) = engine.graph.relations(u, sam.id).rows
    assert likes.predicate == "likes" and {s.id for s in likes.sources} == {a, b}
    (gone,) = engine.graph.relations(u, predicate="lives_in", include_archived=True).rows
    assert gone.archived_at is not None and gone.archive_reason == "outdated"
    assert engine.graph.mentions(u, [sam.id]) == {sam.id: [("semantic", b)]}
    # Lisbon was named only by a: archived with it; Sam and fado stay
    assert engine.graph.resolve(u, "Lisbon") is None and engine.graph.resolve(u, "fado") is not None
    # One forget-log entry for the call: the item's (the cascade follows from it)
    assert [(e.memory_type, e.ids, e.actor) for e in engine.forgetting.log(u)] == [("semantic", (a,), "tester")]
    assert engine.graph.list_entities(u, query="Lisbon", include_archived=True).rows[0].archived_at is not None
    # Forgetting b too: nothing supports likes any more
    engine.forgetting.forget(u, "semantic", [b], "outdated")
    assert engine.graph.relations(u).total == 0
    assert engine.graph.resolve(u, "Sam") is None


def test_a_hard_forget_of_an_item_strips_it_from_relations_that_stay_and_deletes_the_rest(engine):
    u = "cascade-hard"
    a = engine.items.remember(u, "Tove works at Volvo in Gothenburg").id
    b = engine.episodes.record(u, [{"observation": "Tove at work", "action": "asked about Volvo"}]).id
    extract_into(
        engine,
        u,
        "semantic",
        a,
        ["Tove", "Volvo", "Gothenburg"],
        [("Tove", "works_at", "Volvo"), ("Volvo", "located_in", "Gothenburg")],
    )
    extract_into(engine, u, "episodic", b, ["Tove", "Volvo"], [("Tove", "works_at", "Volvo")])
    engine.graph.add_fact(u, "Tove", "knows", "Ulf", sources=[FactSource("message", "s1#2")])  # no memory source
    engine.forgetting.forget(u, "semantic", [a], "privacy", mode="hard")
    rows = graph_rows(engine, u)
    assert "Gothenburg" not in json.dumps(rows, default=str) and a not in json.dumps(rows, default=str)
    assert [r[0] for r in rows["relations"]] == ["knows", "works_at"]
    works = next(r for r in rows["relations"] if r[0] == "works_at")
    assert json.loads(works[3]) == [{"type": "episodic", "id": b}]
    assert rows["mentions"] == [(b,), (b,)]
    # The episode goes too: the relation it alone supported and its entities follow; the message-sourced one stays
    engine.forgetting.forget(u, "episodic", [b], "privacy", mode="hard")
    rows = graph_rows(engine, u)
    assert [r[0] for r in rows["relations"]] == ["knows"]
    assert [n for n, _ in rows["entities"]] == ["Tove", "Ulf"]


def test_the_cascade_is_all_or_nothing_with_the_forget(engine):
    u = "cascade-atomic"
    a = engine.items.remember(u, "Vera lives in Turku").id
    extract_into(engine, u, "semantic", a, ["Vera", "Turku"], [("Vera", "lives_in", "Turku")])
    before = graph_rows(engine, u)
    saved = engine.forgetting.mark_traces

    def broken(*args, **kwargs):
        raise RuntimeError("the trace store failed mid-forget")

    engine.forgetting.mark_traces = broken
    try:
        with pytest.raises(RuntimeError):
            engine.forgetting.forget(u, "semantic", [a], "privacy", mode="hard")
    finally:
        engine.forgetting.mark_traces = saved
    assert graph_rows(engine, u) == before
    assert engine.items.get(u, a).archived_at is None and engine.forgetting.log(u) == []


def test_a_hard_graph_forget_redacts_the_entity_name_from_stored_traces(engine):
    u = "redact"
    engine.items.remember(u, "Booked the Zermatt trip for the spring")
    engine.graph.add_fact(u, "Xanthe", "visited", "Zermatt")
    trace = engine.retrieval.retrieve(u, "When did Xanthe go to Zermatt?")
    xanthe = engine.graph.resolve(u, "Xanthe")
    engine.graph.forget(u, [xanthe.id], "privacy", mode="hard")
    stored = engine.traces.get(trace.trace_id)
    assert "Xanthe" not in json.dumps(stored.to_dict())
    assert f"[forgotten memory {xanthe.id}]" in stored.question
    assert "Zermatt" in stored.question  # only the forgotten entity's name goes


def test_a_forgotten_name_is_redacted_as_a_word_not_inside_a_longer_one(engine):
    u = "redact-word"
    engine.items.remember(u, "Booked the ferry for the spring")
    engine.graph.add_fact(u, "Ann", "booked", "the ferry")
    trace = engine.retrieval.retrieve(u, "Did Ann's sister Anna book the ferry for Ann?")
    ann = engine.graph.resolve(u, "Ann")
    engine.graph.forget(u, [ann.id], "privacy", mode="hard")
    mark = f"[forgotten memory {ann.id}]"
    assert engine.traces.get(trace.trace_id).question == f"Did {mark}'s sister Anna book the ferry for {mark}?"


def test_the_cli_forgets_graph_rows(tmp_path, embedder):
    store = tmp_path / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
    rel = engine.graph.add_fact("cli", "Yara", "likes", "kites").relations_added[0]
    engine.close()
    run = cli(
        store,
        "forget",
        "--user",
        "cli",
        "--kind",
        "graph",
        "--ids",
        rel,
        "rel_nope",
        "--reason",
        "cli test",
        "--mode",
        "hard",
        "--json",
    )
    assert run.code == 0, run.err
    assert run.json() == {"forgotten": 1, "ids": [rel], "unknown": ["rel_nope"]}
    log = cli(store, "forget-log", "--user", "cli", "--json").json()
    assert [(e["memory_type"], e["mode"], e["ids"]) for e in log] == [("graph", "hard", [rel])]


def test_a_hard_entity_forget_takes_its_name_out_of_the_entity_stage_of_stored_traces(engine):
    u = "redact-stage"
    trip = engine.items.remember(u, "Booked the Zermatt trip with Xanthe for the spring").id
    extract_into(engine, u, "semantic", trip, ["Xanthe", "Zermatt"], [("Xanthe", "visited", "Zermatt")])
    trace = engine.retrieval.retrieve(u, "Where did Xanthe go?", overrides={"entity_strategy": True})
    (start,) = [e for e in trace.hops[0].entities if e.name == "Xanthe"]
    linked = next(c for c in trace.hops[0].candidates if c.id == trip)
    assert any(p.entity_id == start.id for p in linked.entity.paths)
    engine.graph.forget(u, [start.id], "privacy", mode="hard")
    stored = engine.traces.get(trace.trace_id)
    entity_records = json.dumps(
        [[e.to_dict() for e in h.entities] for h in stored.hops]
        + [c.entity.to_dict() for h in stored.hops for c in h.candidates if c.entity is not None]
    )
    assert "Xanthe" not in entity_records and "Xanthe" not in stored.question
    assert "Xanthe" not in json.dumps(stored.strategies.to_dict())
    # A stage summary that names its entities (as an older one did) loses the forgotten name too
    named = dataclasses.replace(
        trace.strategies, per_hop={**trace.strategies.per_hop, "entities": "on: Xanthe (query)"}
    )
    summary = redact_graph(dataclasses.replace(trace, strategies=named), {start.id}).strategies.per_hop["entities"]
    assert summary == f"on: [forgotten entity {start.id}] (query)"
    assert f"[forgotten entity {start.id}]" in entity_records
    assert "Zermatt" in entity_records  # the other entity keeps its name
    # The memory itself was not forgotten: its text stays, and so does its link's id, distance and score
    cand = next(c for c in stored.hops[0].candidates if c.id == trip)
    assert "Xanthe" in cand.text and cand.entity.score == linked.entity.score


def test_forgetting_many_memories_at_once_cascades_the_same_way(engine):
    """Past MAX_SQL_SEARCHED memories in one call the relations are found by one pass over the user's graph."""
    from engine.memory.graph_forget import MAX_SQL_SEARCHED

    u = "cascade-many"
    n = MAX_SQL_SEARCHED + 10
    ids = [i.id for i in engine.items.remember_many([{"user_id": u, "content": f"Wim's note {k}"} for k in range(n)])]
    batch = [
        SourcedExtraction(
            Extraction(
                (("Wim", "person"),), (Triple("Wim", "wrote", f"note {k}"), Triple("Wim", "likes", "notes")), "offline"
            ),
            T2024,
            ("semantic", item),
            (FactSource("semantic", item),),
        )
        for k, item in enumerate(ids)
    ]
    with engine._b.db.write() as conn:
        engine.graph.write(conn, u, batch)
    gone, kept = ids[: MAX_SQL_SEARCHED + 5], ids[MAX_SQL_SEARCHED + 5 :]
    engine.forgetting.forget(u, "semantic", gone, "bulk", mode="hard")
    wim = engine.graph.resolve(u, "Wim")
    wrote = sorted(r.object for r in engine.graph.relations(u, wim.id, predicate="wrote", limit=1000).rows)
    assert wrote == sorted(f"note {k}" for k in range(MAX_SQL_SEARCHED + 5, n))
    (likes,) = engine.graph.relations(u, wim.id, predicate="likes").rows
    assert {s.id for s in likes.sources} == set(kept)  # the forgotten memories stripped from the one that stays
    assert engine.graph.resolve(u, "note 0") is None and engine.graph.resolve(u, f"note {n - 1}") is not None
