"""Large vector tables get an approximate (HNSW-SQ) index from optimize(); searches stay right for big and small
users."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings

TOPICS = ["flights", "hotels", "trains", "invoices", "refunds", "tests", "deploys", "soil", "bees", "grants"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("ann") / "store"
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(path), vector_index_min_rows=300, resident_vector_max_rows=0),
        embedder=embedder,
    )
    engine.items.remember_many(
        {"user_id": "big", "content": f"Note {n} about {TOPICS[n % 10]}: detail {n * 7 % 97}"} for n in range(400)
    )
    engine.items.remember_many(
        {"user_id": "small", "content": text}
        for text in [
            "Small prefers aisle seats",
            "Small's cat is called Miso",
            "Small works from Porto",
            "Small's budget is 400 EUR",
            "Small runs on Tuesdays",
        ]
    )
    assert engine.admin.optimize() == ["semantic__all-minilm-l6-v2"]
    return engine


def test_optimize_indexes_only_tables_past_the_threshold_and_only_once(indexed):
    index = indexed._b.index  # noqa: SLF001 - the storage layer is what this test is about
    assert index.has_ann("semantic", fresh=True)
    assert not index.has_ann("episodic", fresh=True)
    assert indexed.admin.optimize() == []  # already indexed


def test_the_approximate_search_finds_what_the_exact_search_finds(indexed):
    index = indexed._b.index  # noqa: SLF001
    vec = indexed.embedder.embed(["a note about refunds"])[0]
    ann = [h.id for h in index.vector_search("semantic", "big", vec, 10)]
    exact = [h.id for h in index.vector_search("semantic", "big", vec, 10, exact=True)]
    assert len(ann) == 10 and len(set(ann) & set(exact)) >= 8
    assert ann[0] == exact[0]


def test_a_user_with_few_rows_in_an_indexed_table_still_gets_all_of_them(indexed):
    index = indexed._b.index  # noqa: SLF001
    vec = indexed.embedder.embed(["where does Small work"])[0]
    hits = index.vector_search("semantic", "small", vec, 20)
    assert len(hits) == 5 and hits[0].text == "Small works from Porto"


def test_the_trace_says_which_searches_were_approximate(indexed):
    trace = indexed.retrieval.retrieve("big", "what about refunds?")
    assert trace.strategies.vector_search == ("semantic: approximate (HNSW-SQ), episodic: exact, procedural: exact")


def test_a_zero_threshold_never_builds_an_index(tmp_path, embedder):
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "s"), vector_index_min_rows=0), embedder=embedder
    )
    engine.items.remember_many({"user_id": "u", "content": f"fact {n}"} for n in range(50))
    assert engine.admin.optimize() == []
