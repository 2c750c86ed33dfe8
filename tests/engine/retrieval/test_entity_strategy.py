"""The entity stage of the traced retrieval, on hand-made graphs, on an embedded store and on a team store.

A question naming an entity brings in the memories that name it (distance 0) and, one valid relation away, those
naming its neighbour (distance 1), even when search (vector and full text) does not find them: they join the
candidates with their path (entity id and name, relation id and predicate, distance) and their entity score, go
through the same stages, and are recorded in the trace, its timings and its JSON. A rare entity weighs more than one
named everywhere; a relation not yet valid at the retrieval's clock is not followed. Replay reproduces the stage,
and without it drops what the stage alone brought in; why-not says which entity linked a memory.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import UTC, datetime

import pytest

from engine import MemoryEngine, Settings
from engine.records import Extraction, FactSource, SourcedExtraction, Triple
from engine.retrieval.entity_strategy import spans
from engine.trace.codec import trace_json
from engine.trace.traces import Traces

pytestmark = pytest.mark.both_stores

T_FACTS = datetime(2024, 3, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
QUESTION = "Where does Okonkwo's sister live these days?"
ON = {"entity_strategy": True, "top_k": 1, "entity_weight": 0.3, "entity_from_top": 0}
OFF = {"entity_strategy": False, "top_k": 1}
FILLERS = [
    "The quarterly budget review moved to Thursday afternoon.",
    "Remember to water the basil on the kitchen windowsill.",
    "The bike needs new brake pads before the long ride.",
    "Our team retrospective found the deploy script too slow.",
    "The library book about glaciers is due next Friday.",
    "Try the lentil soup recipe with more cumin next time.",
    "The printer on the third floor jams on thick paper.",
    "Buy a birthday card for the neighbour's daughter.",
    "The conference talk on compilers was recorded.",
    "Renew the car insurance before the end of the month.",
    "A sister project of the compiler team uses Rust.",
    "Where the river bends there is a good spot for herons.",
]


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    # Only the hand-made graph below: no extraction on write, whatever the default becomes.
    return MemoryEngine.open(settings=dataclasses.replace(module_settings, graph_extraction="off"), embedder=embedder)


def sourced(entities, triples, item_id: str) -> SourcedExtraction:
    memory = ("semantic", item_id)
    return SourcedExtraction(
        Extraction(tuple(entities), tuple(triples), "manual"), T_FACTS, memory, (FactSource(*memory),)
    )


def build_family(engine: MemoryEngine, u: str) -> dict[str, str]:
    """Okonkwo's sister is Adaeze (fact A), Adaeze moved to Lisbon (fact B, which shares no word with the question),
    and fillers that search prefers to B."""
    a = engine.items.remember(u, "Okonkwo mentioned that his sister is called Adaeze.", created_at=T_FACTS).id
    b = engine.items.remember(u, "Adaeze moved to Lisbon last spring, near the river.", created_at=T_FACTS).id
    ids = [engine.items.remember(u, text, created_at=T_FACTS).id for text in FILLERS]
    with engine._b.db.write() as conn:
        engine.graph.write(
            conn,
            u,
            [
                sourced(
                    [("Okonkwo", "person"), ("Adaeze", "person")],
                    [Triple("Okonkwo", "sibling_of", "Adaeze", "person", "person")],
                    a,
                ),
                sourced(
                    [("Adaeze", "person"), ("Lisbon", "place")],
                    [Triple("Adaeze", "lives_in", "Lisbon", "person", "place")],
                    b,
                ),
            ],
        )
    return {"a": a, "b": b, "filler": ids[0]}


@pytest.fixture(scope="module")
def family(engine: MemoryEngine) -> dict[str, str]:
    return build_family(engine, "fam")


def candidate(trace, item_id: str, hop: int = 1):
    return next((c for c in trace.hops[hop - 1].candidates if c.id == item_id), None)


def test_the_question_names_its_entities_as_spans_of_one_to_five_words():
    keys = spans("Where does The Okonkwo's sister live, in New York City?")
    assert {"okonkwo", "new york city", "new york", "sister"} <= set(keys)
    assert "where" not in keys and "does" not in keys  # single stop words are no names
    assert spans("x'); DROP TABLE entities;--") == [k for k in spans("x'); DROP TABLE entities;--")]  # just text


def test_search_alone_does_not_find_the_fact_that_shares_only_an_entity_with_the_question(engine, family):
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides=OFF, now=NOW, save=False)
    assert candidate(trace, family["b"]) is None
    assert "entities" not in trace.hops[0].timings_ms.as_dict() and trace.hops[0].entities == ()


def test_an_entity_one_relation_away_brings_in_the_memories_naming_it_with_their_path(engine, family):
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides=ON, now=NOW, save=False)
    okonkwo, adaeze = engine.graph.resolve("fam", "Okonkwo"), engine.graph.resolve("fam", "Adaeze")
    (relation,) = engine.graph.relations("fam", okonkwo.id).rows
    hop = trace.hops[0]
    assert [(e.id, e.name, e.origin, e.mentions, e.followed) for e in hop.entities] == [
        (okonkwo.id, "Okonkwo", "query", 1, True)
    ]
    b = candidate(trace, family["b"])
    assert b is not None and b.found_by == "entity" and b.entity.brought_in
    (path,) = b.entity.paths
    assert (path.entity_id, path.entity_name, path.distance) == (okonkwo.id, "Okonkwo", 1)
    assert (path.relation_id, path.predicate, path.via_entity_id, path.via_entity_name) == (
        relation.id,
        "sibling_of",
        adaeze.id,
        "Adaeze",
    )
    assert b.entity.score == pytest.approx(0.5)  # one relation away: half of the question's entity weight
    assert b.scores.entity_score == b.entity.score
    assert b.scores.hybrid_entity_part == pytest.approx(0.3 * 0.5)
    assert b.scores.vector_similarity is not None and b.ranks.hybrid is not None  # scored like any candidate
    # Fact A names Okonkwo itself: distance 0, the whole weight, whether or not search also found it.
    a = candidate(trace, family["a"])
    assert a.entity.paths[0].distance == 0 and a.entity.score == pytest.approx(1.0)
    assert a.found_by.endswith("entity")
    assert "entities" in hop.timings_ms.as_dict()
    assert trace.strategies.per_hop["entities"] == (
        "on (depth 1): 1 entities named by the query, 0 by top results; 2 memories linked"
    )
    assert family["b"] in [r.id for r in trace.ranking]


def test_the_stage_can_stop_at_the_named_entities(engine, family):
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides={**ON, "entity_depth": 0}, now=NOW, save=False)
    assert candidate(trace, family["b"]) is None
    assert candidate(trace, family["a"]).entity.score == pytest.approx(1.0)


def test_the_entities_of_the_hops_best_hits_are_followed_at_half_weight(engine, family):
    trace = engine.retrieval.retrieve(
        "fam", QUESTION, overrides={**ON, "entity_depth": 0, "entity_from_top": 1}, now=NOW, save=False
    )
    by_name = {e.name: e for e in trace.hops[0].entities}
    assert by_name["Okonkwo"].origin == "query"
    # Fact A, search's best hit, names Adaeze: followed as a result's entity, at half its weight
    assert by_name["Adaeze"].origin == "hop1_search"
    assert by_name["Adaeze"].weight == pytest.approx(
        by_name["Okonkwo"].weight / 2 * math.log(1 + 4 / 2) / math.log(1 + 4 / 1), abs=1e-5
    )
    b = candidate(trace, family["b"])
    assert b is not None and b.found_by == "entity" and b.entity.paths[0].entity_name == "Adaeze"
    assert b.entity.paths[0].distance == 0
    assert b.entity.score == pytest.approx(by_name["Adaeze"].weight / by_name["Okonkwo"].weight, abs=1e-5)


def test_a_relation_not_yet_valid_at_the_retrievals_clock_is_not_followed(engine, family):
    before = datetime(2024, 1, 1, tzinfo=UTC)
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides=ON, now=before, save=False)
    assert candidate(trace, family["b"]) is None
    assert candidate(trace, family["a"]) is not None


def test_a_rare_entity_weighs_more_than_one_named_everywhere_and_a_common_one_brings_in_nothing(engine):
    u = "speaker"
    said = [engine.items.remember(u, f"Mira said the weather was fine on day {n}.").id for n in range(6)]
    rare = engine.items.remember(u, "The harbour festival had paper lanterns.").id
    with engine._b.db.write() as conn:
        batch = [sourced([("Mira", "person")], [], i) for i in said]
        batch.append(sourced([("Mira", "person"), ("Harbour Festival", "event")], [], rare))
        engine.graph.write(conn, u, batch)
    overrides = {**ON, "top_k": 1, "entity_max_mentions": 5}
    trace = engine.retrieval.retrieve(u, "Did Mira enjoy the harbour festival?", overrides=overrides, save=False)
    by_name = {e.name: e for e in trace.hops[0].entities}
    assert by_name["Mira"].mentions == 7 and not by_name["Mira"].followed
    assert by_name["Harbour Festival"].mentions == 1 and by_name["Harbour Festival"].followed
    # ln(1 + mentions of the user / mentions of the entity): 8 mentions in all
    assert by_name["Harbour Festival"].weight == pytest.approx(math.log(1 + 8 / 1), abs=1e-6)
    assert by_name["Mira"].weight == pytest.approx(math.log(1 + 8 / 7), abs=1e-6)
    brought = [c for c in trace.hops[0].candidates if c.found_by == "entity"]
    assert [c.id for c in brought] == [rare] or candidate(trace, rare).found_by.endswith("+entity")
    assert all(c.id == rare for c in brought)  # Mira, named by 7 memories (> 5), brings in none
    assert candidate(trace, rare).entity.score == pytest.approx(1.0)


def test_the_trace_keeps_the_entity_stage_through_its_json_and_replays_it_exactly(engine, family):
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides=ON, now=NOW)
    again = Traces.from_json(trace_json(trace))
    assert again.hops[0].entities == trace.hops[0].entities
    assert [c.entity for c in again.hops[0].candidates] == [c.entity for c in trace.hops[0].candidates]
    stored = json.loads(trace_json(trace))
    b = next(c for c in stored["hops"][0]["candidates"] if c["id"] == family["b"])
    assert b["entity"]["paths"][0]["entity_id"] == trace.hops[0].entities[0].id  # the id beside the name
    replayed = engine.retrieval.replay_trace(engine.traces.get(trace.trace_id))
    assert [(r.id, r.rank, r.final) for r in replayed.ranking] == [(r.id, r.rank, r.final) for r in trace.ranking]
    assert candidate(replayed, family["b"]).scores == candidate(trace, family["b"]).scores
    # Without the stage, what it alone brought in was never a candidate, and the others lose its part.
    off = engine.retrieval.replay_trace(trace, {"entity_strategy": False})
    assert candidate(off, family["b"]) is None
    assert family["b"] not in [r.id for r in off.ranking if r.rank is not None]
    assert all(c.scores.hybrid_entity_part is None for c in off.hops[0].candidates)


def test_why_not_names_the_entity_path_that_brought_a_memory_in(engine, family):
    trace = engine.retrieval.retrieve("fam", QUESTION, overrides={**ON, "budget_tokens": 1}, now=NOW)
    verdict = engine.traces.why_not(trace, family["b"])
    assert "Okonkwo -[sibling_of]- Adaeze (distance 1)" in verdict.rows[0]["what happened"]
    off = engine.retrieval.retrieve("fam", QUESTION, overrides=ON | {"entity_depth": 0}, now=NOW)
    missed = engine.traces.why_not(off, family["b"])
    assert missed.status == "never"
    assert "Okonkwo" in missed.rows[0]["what happened"]  # the entities it followed, none of which names it


def test_a_replay_on_the_current_graph_shows_what_the_graph_changed(engine):
    u = "fam_changed"
    fam = build_family(engine, u)
    trace = engine.retrieval.retrieve(u, QUESTION, overrides=ON, now=NOW)
    assert candidate(trace, fam["b"]).found_by == "entity"
    # Fact B is extracted again and no longer names Adaeze: nothing links it to Okonkwo now.
    with engine._b.db.write() as conn:
        engine.graph.write(conn, u, [sourced([("Lisbon", "place")], [], fam["b"])])
    same = engine.retrieval.replay_trace(trace)
    assert candidate(same, fam["b"]) is not None  # a plain replay re-ranks what the trace recorded
    now = engine.retrieval.replay_trace(trace, graph=True)
    assert candidate(now, fam["b"]) is None
    lost = next(r for r in now.ranking if r.id == fam["b"])
    assert (lost.rank, lost.old_rank is not None) == (None, True)
    a_now = candidate(now, fam["a"]).entity  # A still names Okonkwo (whose weight changed: fewer mentions now)
    assert (a_now.paths[0].entity_name, a_now.paths[0].distance, a_now.score) == ("Okonkwo", 0, 1.0)
    assert now.hops[0].entities[0].weight == pytest.approx(math.log(1 + 3 / 1), abs=1e-6)
    # With the graph unchanged, the replay on the current graph is the trace itself.
    again = engine.retrieval.replay_trace(engine.retrieval.retrieve(u, QUESTION, overrides=ON, now=NOW), graph=True)
    assert all(r.rank_change == 0 for r in again.ranking)
