"""The Retrieval trace page shows the entity stage: the entities a hop followed (how each was found, how many memories
name it) and each candidate's entity path."""

from __future__ import annotations

from datetime import UTC, datetime

from apptest_helpers import markdown_texts, no_errors, open_link, plain_texts

from engine import MemoryEngine
from engine.records import Extraction, FactSource, SourcedExtraction, Triple

PAGE = "pages/retrieval.py"
USER = "entities"
AT = datetime(2024, 3, 1, tzinfo=UTC)


def sourced(entities, triples, item_id: str) -> SourcedExtraction:
    memory = ("semantic", item_id)
    return SourcedExtraction(Extraction(tuple(entities), tuple(triples), "manual"), AT, memory, (FactSource(*memory),))


def test_a_trace_with_the_entity_stage_shows_its_entities_paths_and_time(empty_app: MemoryEngine):
    a = empty_app.items.remember(USER, "Okonkwo mentioned that his sister is called Adaeze.", created_at=AT).id
    b = empty_app.items.remember(USER, "Adaeze moved to Lisbon last spring.", created_at=AT).id
    with empty_app._b.db.write() as conn:  # a hand-made graph, whatever the extractor would draw
        empty_app.graph.write(
            conn,
            USER,
            [
                sourced([("Okonkwo", "person"), ("Adaeze", "person")], [Triple("Okonkwo", "sibling_of", "Adaeze")], a),
                sourced([("Adaeze", "person"), ("Lisbon", "place")], [], b),
            ],
        )
    overrides = {"entity_strategy": True, "entity_from_top": 0}
    trace = empty_app.retrieval.retrieve(USER, "Where does Okonkwo's sister live?", overrides=overrides)
    at = open_link(PAGE, {"user": USER, "trace": trace.trace_id})
    no_errors(at)
    shown = "\n".join(markdown_texts(at))
    assert "Entities followed: Okonkwo (query, 1 memories)" in shown
    cells = plain_texts(at)
    assert "Okonkwo" in cells  # fact A names Okonkwo itself
    assert "Okonkwo -[sibling_of]- Adaeze (distance 1)" in cells  # fact B, one relation away
