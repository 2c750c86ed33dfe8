"""Graph memory on hand-made facts, on an embedded store and on a team store (PostgreSQL): an exclusive predicate's
new value closes the old relation and links it, facts arriving out of order take their place in the timeline, an
identical fact gains a source instead of a copy, "as of" returns what was valid then, names resolve up to case,
spacing and a leading article, and the neighbourhood walks both directions within its depth, predicates and cap."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings
from engine.records import Extraction, FactSource, SourcedExtraction, Triple

pytestmark = pytest.mark.both_stores

T2023 = datetime(2023, 1, 1, tzinfo=UTC)
T2024 = datetime(2024, 1, 1, tzinfo=UTC)
T2025 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    """One store for the module; each test writes under a user of its own."""
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


def objects(rels) -> list[str]:
    return [r.object for r in rels]


def versions(engine: MemoryEngine, user: str, subject: str, predicate: str) -> list[tuple]:
    entity = engine.graph.resolve(user, subject)
    assert entity is not None
    return [
        (r.object, r.valid_from, r.valid_to, r.superseded_by, r.id)
        for r in engine.graph.timeline(user, entity.id, predicate)
    ]


# -- exclusive predicates ----------------------------------------------------------------------------------------
def test_a_new_value_of_an_exclusive_predicate_closes_the_old_relation_and_links_it(engine):
    u = "excl"
    first = engine.graph.add_fact(u, "Alice", "works_at", "Acme", valid_from=T2023)
    second = engine.graph.add_fact(u, "Alice", "Works At", "Globex", valid_from=T2024)  # normalised predicate
    (old,) = first.relations_added
    (new,) = second.relations_added
    assert second.superseded == ((old, new),)
    assert versions(engine, u, "alice", "works_at") == [
        ("Acme", T2023, T2024, new, old),
        ("Globex", T2024, None, None, new),
    ]
    # Nothing is deleted: the old version is still fetchable, closed
    kept = engine.graph.relation(u, old)
    assert (kept.valid_to, kept.superseded_by, kept.archived_at) == (T2024, new, None)
    alice = engine.graph.resolve(u, "Alice")
    assert objects(engine.graph.relations(u, alice.id).rows) == ["Globex"]
    assert objects(engine.graph.relations(u, alice.id, include_history=True).rows) == ["Globex", "Acme"]


def test_a_fact_arriving_out_of_order_is_inserted_at_its_time(engine):
    u = "order"
    a = engine.graph.add_fact(u, "Bob", "lives_in", "Oslo", valid_from=T2023).relations_added[0]
    c = engine.graph.add_fact(u, "Bob", "lives_in", "Rome", valid_from=T2025).relations_added[0]
    # An import of older conversations: Bergen was said in 2024, after Oslo and before Rome
    late = engine.graph.add_fact(u, "Bob", "lives_in", "Bergen", valid_from=T2024)
    (b,) = late.relations_added
    assert late.superseded == ((a, b),)
    assert versions(engine, u, "Bob", "lives_in") == [
        ("Oslo", T2023, T2024, b, a),
        ("Bergen", T2024, T2025, c, b),
        ("Rome", T2025, None, None, c),
    ]
    # Said even before the first stored version: it opens the timeline and is superseded by Oslo
    earliest = engine.graph.add_fact(u, "Bob", "lives_in", "Tromsø", valid_from=datetime(2020, 1, 1, tzinfo=UTC))
    (z,) = earliest.relations_added
    assert earliest.superseded == ()
    assert versions(engine, u, "Bob", "lives_in")[0] == ("Tromsø", datetime(2020, 1, 1, tzinfo=UTC), T2023, a, z)


def test_an_identical_fact_is_merged_and_gains_its_source(engine):
    u = "merge"
    s1, s2 = FactSource("semantic", "item_one"), FactSource("message", "chat-1#4")
    first = engine.graph.add_fact(u, "Carol", "works_at", "Initech", valid_from=T2023, sources=[s1])
    again = engine.graph.add_fact(u, "carol", "works_at", "the Initech", valid_from=T2024, sources=[s2, s1])
    assert again.relations_added == () and again.superseded == ()
    assert again.relations_merged == first.relations_added
    rel = engine.graph.relation(u, first.relations_added[0])
    assert rel.sources == (s1, s2)
    assert rel.sources[1].message == ("chat-1", 4)
    assert (rel.valid_from, rel.valid_to) == (T2023, None)  # the earlier statement still dates it
    assert len(versions(engine, u, "Carol", "works_at")) == 1
    # A non-exclusive fact said earlier than stored moves its start back
    engine.graph.add_fact(u, "Carol", "likes", "tea", valid_from=T2024)
    engine.graph.add_fact(u, "Carol", "likes", "tea", valid_from=T2023)
    (likes,) = engine.graph.relations(u, predicate="likes").rows
    assert likes.valid_from == T2023


def test_non_exclusive_facts_coexist(engine):
    u = "coexist"
    engine.graph.add_fact(u, "Dan", "likes", "jazz", valid_from=T2023)
    engine.graph.add_fact(u, "Dan", "likes", "chess", valid_from=T2024)
    dan = engine.graph.resolve(u, "Dan")
    assert sorted(objects(engine.graph.relations(u, dan.id, predicate="likes").rows)) == ["chess", "jazz"]
    assert all(v[2] is None and v[3] is None for v in versions(engine, u, "Dan", "likes"))


def test_the_exclusive_predicates_come_from_the_settings(module_settings, embedder):
    own = module_settings.with_overrides({"graph_exclusive_predicates": "Favourite Colour"})
    assert own.exclusive_predicates == frozenset({"favourite_colour"})
    engine = MemoryEngine.open(settings=own, embedder=embedder)
    u = "settings"
    engine.graph.add_fact(u, "Eve", "works_at", "Acme", valid_from=T2023)
    engine.graph.add_fact(u, "Eve", "works_at", "Hooli", valid_from=T2024)  # not exclusive here: both hold
    engine.graph.add_fact(u, "Eve", "favourite colour", "red", valid_from=T2023)
    engine.graph.add_fact(u, "Eve", "favourite_colour", "blue", valid_from=T2024)
    eve = engine.graph.resolve(u, "Eve")
    assert sorted(objects(engine.graph.relations(u, eve.id, predicate="works_at").rows)) == ["Acme", "Hooli"]
    assert objects(engine.graph.relations(u, eve.id, predicate="favourite_colour").rows) == ["blue"]


# -- as of ---------------------------------------------------------------------------------------------------------
def test_as_of_returns_what_was_valid_then(engine):
    u = "asof"
    engine.graph.add_fact(u, "Fay", "lives_in", "Lima", valid_from=T2023)
    engine.graph.add_fact(u, "Fay", "lives_in", "Quito", valid_from=T2025)
    engine.graph.add_fact(u, "Fay", "likes", "salsa", valid_from=T2024)
    fay = engine.graph.resolve(u, "Fay").id

    def at(when) -> list[str]:
        return sorted(objects(engine.graph.relations(u, fay, as_of=when).rows))

    assert at(datetime(2022, 6, 1, tzinfo=UTC)) == []  # before the first version
    assert at(T2023) == ["Lima"]  # valid_from is inclusive
    assert at("2024-06-01T00:00:00Z") == ["Lima", "salsa"]  # between versions, as an ISO string
    assert at(T2025) == ["Quito", "salsa"]  # valid_to is exclusive: the successor holds at its start
    assert at(None) == ["Quito", "salsa"]  # now
    hood = engine.graph.neighbourhood(u, [fay], depth=1, as_of="2024-06-01T00:00:00Z")
    assert sorted(r.object for r in hood.relations) == ["Lima", "salsa"]
    with pytest.raises(InvalidInput):
        engine.graph.relations(u, fay, as_of="last tuesday")


# -- names ---------------------------------------------------------------------------------------------------------
def test_entity_names_resolve_up_to_case_spacing_and_a_leading_article(engine):
    u = "names"
    w = engine.graph.add_fact(u, "The  Louvre", "located_in", "Paris", object_type="place")
    louvre = engine.graph.resolve(u, "louvre")
    assert louvre is not None and louvre.name == "The Louvre"  # whitespace runs collapsed in the stored name
    for spelling in ("LOUVRE", "  the louvre ", "The\tLouvre", "the Louvre"):
        assert engine.graph.resolve(u, spelling).id == louvre.id
    assert engine.graph.resolve(u, "Louvres") is None
    assert engine.graph.resolve(u, "A") is None  # a lone article is a name, not an article
    paris = engine.graph.resolve(u, "paris")
    assert paris.type == "place" and louvre.type == "concept"
    assert set(w.entities_added) == {louvre.id, paris.id}
    # A concept later named with a specific type takes it; one name is still one entity
    engine.graph.add_fact(u, "Louvre", "is_a", "museum", subject_type="organisation")
    assert engine.graph.entity(u, louvre.id).type == "organisation"
    assert engine.graph.list_entities(u, query="louv").total == 1
    assert engine.graph.list_entities(u, type="place").rows[0].id == paris.id
    # A LIKE metacharacter in a query is literal
    assert engine.graph.list_entities(u, query="%").total == 0
    assert engine.graph.list_entities("nobody").total == 0


def test_a_users_graph_is_their_own(engine):
    engine.graph.add_fact("own-a", "Gus", "works_at", "Acme")
    assert engine.graph.resolve("own-b", "Gus") is None
    gus = engine.graph.resolve("own-a", "Gus")
    with pytest.raises(NotFound):
        engine.graph.entity("own-b", gus.id)
    assert engine.graph.relations("own-b", gus.id).total == 0
    engine.graph.add_fact("own-b", "Gus", "works_at", "Hooli")  # another user's Gus: no supersession across users
    assert objects(engine.graph.relations("own-a", gus.id).rows) == ["Acme"]


# -- neighbourhood ------------------------------------------------------------------------------------------------
def test_the_neighbourhood_walks_both_directions_within_its_depth(engine):
    u = "hood"
    engine.graph.add_fact(u, "Ann", "knows", "Ben", valid_from=T2023)
    engine.graph.add_fact(u, "Ben", "works_at", "Acme", valid_from=T2023)
    engine.graph.add_fact(u, "Acme", "located_in", "Oslo", valid_from=T2023)
    engine.graph.add_fact(u, "Cid", "knows", "Ann", valid_from=T2023)  # Ann as object
    ann = engine.graph.resolve(u, "Ann").id

    def names(hood) -> dict[str, int]:
        return {e.name: hood.distance[e.id] for e in hood.entities}

    assert names(engine.graph.neighbourhood(u, [ann], depth=0)) == {"Ann": 0}
    assert names(engine.graph.neighbourhood(u, [ann], depth=1)) == {"Ann": 0, "Ben": 1, "Cid": 1}
    two = engine.graph.neighbourhood(u, [ann], depth=2)
    assert names(two) == {"Ann": 0, "Ben": 1, "Cid": 1, "Acme": 2}
    assert sorted(r.sentence for r in two.relations) == ["Ann knows Ben", "Ben works_at Acme", "Cid knows Ann"]
    assert names(engine.graph.neighbourhood(u, [ann], depth=3))["Oslo"] == 3
    # Only the given predicates are followed
    knows = engine.graph.neighbourhood(u, [ann], depth=3, predicates=["Knows"])
    assert names(knows) == {"Ann": 0, "Ben": 1, "Cid": 1}
    # A cap on relations stops the walk and says so
    capped = engine.graph.neighbourhood(u, [ann], depth=3, max_relations=2)
    assert len(capped.relations) == 2 and capped.truncated
    assert not two.truncated
    with pytest.raises(InvalidInput):
        engine.graph.neighbourhood(u, [ann], depth=9)
    with pytest.raises(InvalidInput):
        engine.graph.neighbourhood(u, [ann], max_relations=0)


def test_a_superseded_relation_leaves_the_neighbourhood_but_not_its_past(engine):
    u = "hood-time"
    engine.graph.add_fact(u, "Ida", "works_at", "Acme", valid_from=T2023)
    engine.graph.add_fact(u, "Ida", "works_at", "Hooli", valid_from=T2025)
    ida = engine.graph.resolve(u, "Ida").id
    now = engine.graph.neighbourhood(u, [ida], depth=1)
    then = engine.graph.neighbourhood(u, [ida], depth=1, as_of=T2024)
    assert [e.name for e in now.entities] == ["Ida", "Hooli"]
    assert [e.name for e in then.entities] == ["Ida", "Acme"]


# -- mentions and stats -------------------------------------------------------------------------------------------
def sourced(text_entities, triples, memory, at=T2024, method="offline") -> SourcedExtraction:
    return SourcedExtraction(
        Extraction(tuple(text_entities), tuple(triples), method), at, memory, (FactSource(*memory),)
    )


def test_mentions_link_memories_to_entities_and_are_replaced_per_memory(engine):
    u = "mentions"
    batch = [
        sourced(
            [("Jo", "person"), ("Kyoto", "place")],
            [Triple("Jo", "visited", "Kyoto", "person", "place")],
            ("semantic", "item_a"),
        ),
        sourced([("Jo", "person")], [], ("episodic", "ep_b")),
    ]
    with engine._b.db.write() as conn:
        written = engine.graph.write(conn, u, batch)
    assert written.mentions == 3
    jo, kyoto = engine.graph.resolve(u, "Jo"), engine.graph.resolve(u, "Kyoto")
    assert engine.graph.mentions(u, [jo.id, kyoto.id]) == {
        jo.id: [("episodic", "ep_b"), ("semantic", "item_a")],
        kyoto.id: [("semantic", "item_a")],
    }
    assert [e.name for e in engine.graph.entities_of(u, "semantic", ["item_a", "item_none"])["item_a"]] == [
        "Jo",
        "Kyoto",
    ]
    (visit,) = engine.graph.relations(u, jo.id).rows
    assert (visit.method, visit.sources) == ("offline", (FactSource("semantic", "item_a"),))
    # Extracting the same memory again replaces its mentions (idempotent), and may drop a name
    with engine._b.db.write() as conn:
        engine.graph.write(conn, u, [sourced([("Jo", "person")], [], ("semantic", "item_a"))])
    assert engine.graph.mentions(u, [kyoto.id]) == {kyoto.id: []}
    # Most mentioned first
    assert [e.name for e in engine.graph.list_entities(u).rows] == ["Jo", "Kyoto"]
    assert engine.graph.stats(u) == {"entities": 2, "relations": 1, "superseded": 0, "archived": 0, "mentions": 2}


def test_stats_count_valid_superseded_and_archived_relations(engine):
    u = "stats"
    engine.graph.add_fact(u, "Lee", "works_at", "Acme", valid_from=T2023)
    engine.graph.add_fact(u, "Lee", "works_at", "Hooli", valid_from=T2024)
    hooli = engine.graph.add_fact(u, "Lee", "likes", "golf").relations_added[0]
    engine.graph.forget(u, [hooli], "test")
    assert engine.graph.stats(u) == {"entities": 4, "relations": 1, "superseded": 1, "archived": 1, "mentions": 0}
    assert engine.graph.stats()["entities"] >= 4  # the store's totals


# -- hostile input -------------------------------------------------------------------------------------------------
HOSTILE_IDS = ["x' OR '1'='1", "../etc/passwd", "", "a" * 500, "ent_\x00", "ent one"]


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_hostile_ids_are_refused_by_every_read(engine, bad):
    for call in (
        lambda: engine.graph.entity("hostile", bad),
        lambda: engine.graph.relation("hostile", bad),
        lambda: engine.graph.relations("hostile", bad),
        lambda: engine.graph.timeline("hostile", bad, "works_at"),
        lambda: engine.graph.neighbourhood("hostile", [bad]),
        lambda: engine.graph.mentions("hostile", [bad]),
        lambda: engine.graph.entities_of("hostile", "semantic", [bad]),
        lambda: engine.graph.list_entities(bad),
        lambda: engine.graph.forget("hostile", [bad], "why"),
    ):
        with pytest.raises(InvalidInput):
            call()


def test_hostile_names_and_predicates_are_refused_or_kept_literal(engine):
    u = "hostile"
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "", "works_at", "Acme")
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "   ", "Acme")
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "works_at", "x" * 201)
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "p" * 81, "Acme")
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "works_at", "Acme", confidence=1.5)
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "works_at", "Acme", valid_from="not a time")
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "works_at", "Acme", sources=[FactSource("message", "s#" + "1" * 400)])
    with pytest.raises(InvalidInput):
        engine.graph.add_fact(u, "Zed", "works_at", "Acme", sources=["semantic:item_1"])
    assert engine.graph.stats(u)["entities"] == 0  # nothing half-written
    sql = "Robert'); DROP TABLE entities;--"
    engine.graph.add_fact(u, sql, "likes", "100% _pure_ \\ text")
    assert engine.graph.resolve(u, sql).name == sql
    assert engine.graph.resolve(u, "Robert%") is None
    assert engine.graph.relations(u, predicate="likes' OR '1'='1").total == 0
    (rel,) = engine.graph.relations(u, predicate="likes").rows
    assert rel.object == "100% _pure_ \\ text"
    assert engine.graph.list_entities(u, query="_pure_").total == 1
