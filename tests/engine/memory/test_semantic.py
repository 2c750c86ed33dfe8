"""Semantic long-term memory (items, categories, provenance, offline memorize) and the plain hybrid search across
kinds (memory-model.md §4, issue 2 §5)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import KINDS, InvalidInput, Item, MemoryEngine, NotFound, SearchHit, Settings
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"


def test_remember_stores_a_fact_with_the_documented_defaults(empty_engine):
    item = empty_engine.items.remember(U, "Ada prefers pytest over unittest")
    assert isinstance(item, Item)
    assert item.id.startswith("item_")
    assert (item.user_id, item.category, item.importance, item.evergreen) == (U, "general", 0.7, False)
    assert item.archived_at is None
    assert item.created_at == item.updated_at
    assert item.provenance["method"] == "direct"
    assert item.provenance["sources"] == []
    assert empty_engine.items.get(U, item.id) == item


def test_remember_keeps_category_importance_evergreen_source_and_creation_time(empty_engine):
    at = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)
    item = empty_engine.items.remember(
        U,
        "Ada's cat is called Turing",
        category="personal",
        importance=0.25,
        evergreen=True,
        source="chat",
        created_at="2026-02-03T04:05:06Z",
    )
    stored = empty_engine.items.get(U, item.id)
    assert (stored.category, stored.importance, stored.evergreen, stored.source) == ("personal", 0.25, True, "chat")
    assert stored.created_at == at


def test_provenance_is_normalised_and_never_dropped_on_the_way_out(empty_engine):
    provenance = {
        "sources": [{"type": "message", "id": "ada-s01#3"}, {"type": "episode", "id": "ep-7"}, "doc-9"],
        "method": "llm_extraction",
        "confidence": "high",
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    item = empty_engine.items.remember(U, "Paylane CI runs mypy --strict", provenance=provenance)
    expected = {
        "sources": [
            {"type": "message", "id": "ada-s01#3"},
            {"type": "episode", "id": "ep-7"},
            {"type": "unknown", "id": "doc-9"},
        ],
        "method": "llm_extraction",
        "confidence": 0.9,
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    assert item.provenance == expected
    assert empty_engine.items.get(U, item.id).provenance == expected
    assert empty_engine.items.list_items(U).rows[0].provenance == expected
    exported = [r for r in empty_engine.admin.export(U) if r["kind"] == "item"]
    assert exported[0]["provenance"] == expected


def test_provenance_without_confidence_takes_the_importance(empty_engine):
    item = empty_engine.items.remember(
        U, "A fact", importance=0.4, provenance={"sources": [{"type": "message", "id": "m1"}]}
    )
    assert item.provenance["confidence"] == 0.4
    assert item.provenance["sources"] == [{"type": "message", "id": "m1"}]


def test_offline_memorize_stores_the_whole_text_as_one_item_in_general(empty_engine):
    text = "Met Sam at the conference. Sam works on vector databases and lives in Lisbon."
    items = empty_engine.items.memorize(U, text)
    assert len(items) == 1
    assert (items[0].content, items[0].category, items[0].importance) == (text, "general", 0.7)
    assert items[0].provenance["method"] == "memorize_offline"
    assert empty_engine.items.list_items(U).total == 1


def test_offline_memorize_honours_the_given_category_and_importance(empty_engine):
    [item] = empty_engine.items.memorize(U, "Flight LH123 leaves at 07:40", category="travel", importance=0.9)
    assert (item.category, item.importance) == ("travel", 0.9)


def test_an_item_of_another_user_or_an_unknown_id_is_not_found(empty_engine):
    item = empty_engine.items.remember(U, "private to ada")
    with pytest.raises(NotFound):
        empty_engine.items.get("bo", item.id)
    with pytest.raises(NotFound):
        empty_engine.items.get(U, "item_doesnotexist")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"category": "Not Snake"},
        {"category": "1abc"},
        {"category": ""},
        {"importance": 1.5},
        {"importance": -0.1},
        {"importance": float("nan")},
        {"importance": "high"},
        {"evergreen": "yes"},
        {"provenance": ["not", "an", "object"]},
        {"created_at": "yesterday"},
    ],
)
def test_invalid_item_fields_are_refused_and_nothing_is_written(empty_engine, kwargs):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.items.remember(U, "a perfectly fine fact", **kwargs)
    assert snapshot(empty_engine) == before


def test_remember_many_writes_a_batch_all_or_nothing(empty_engine):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.items.remember_many([{"user_id": U, "content": "good one"}, {"user_id": U, "content": "  "}])
    assert snapshot(empty_engine) == before
    items = empty_engine.items.remember_many([{"user_id": U, "content": f"fact {n}"} for n in range(5)])
    assert len(items) == 5
    assert empty_engine.items.list_items(U).total == 5


def test_an_explicit_id_that_already_exists_is_refused_without_touching_the_original(empty_engine):
    empty_engine.items.remember_many([{"user_id": U, "content": "the original zanzibar fact", "id": "fixed-1"}])
    with pytest.raises(InvalidInput, match="already exists"):
        empty_engine.items.remember_many([{"user_id": U, "content": "an impostor", "id": "fixed-1"}])
    assert empty_engine.items.get(U, "fixed-1").content == "the original zanzibar fact"
    assert [h.id for h in empty_engine.retrieval.search(U, "zanzibar")] == ["fixed-1"]


# -- listing and categories ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library(tmp_path_factory, embedder) -> MemoryEngine:
    """One user's facts across categories over several months (read only)."""
    path = tmp_path_factory.mktemp("semantic") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    records = []
    for month in range(1, 7):
        records.append(
            {
                "user_id": U,
                "content": f"Travel fact from month {month}",
                "category": "travel",
                "created_at": f"2026-{month:02d}-10T00:00:00Z",
            }
        )
        records.append(
            {
                "user_id": U,
                "content": f"Work fact from month {month}: 50% done",
                "category": "work",
                "created_at": f"2026-{month:02d}-11T00:00:00Z",
            }
        )
    records.append({"user_id": "bo", "content": "Bo's travel fact", "category": "travel"})
    engine.items.remember_many(records)
    engine.admin.ingest_lines(
        [
            '{"kind": "category", "user_id": "ada", "name": "travel", "summary": "Trips Ada plans"}',
            '{"kind": "category", "user_id": "ada", "name": "empty_one", "summary": "No items yet"}',
        ]
    )
    return engine


def test_items_list_newest_first_paginated_in_the_database(library):
    page = library.items.list_items(U, limit=4, offset=2)
    assert page.total == 12
    assert [i.content for i in page.rows] == [
        "Work fact from month 5: 50% done",
        "Travel fact from month 5",
        "Work fact from month 4: 50% done",
        "Travel fact from month 4",
    ]


def test_items_filter_by_category_and_by_literal_text(library):
    assert library.items.list_items(U, category="travel").total == 6
    assert library.items.list_items(U, query="MONTH 3").total == 2
    assert library.items.list_items(U, query="50%").total == 6
    assert library.items.list_items(U, query="_").total == 0
    assert library.items.list_items("bo").total == 1


def test_categories_count_active_items_and_carry_their_summary(library):
    cats = {c.name: (c.item_count, c.summary) for c in library.items.categories(U)}
    assert cats == {"travel": (6, "Trips Ada plans"), "work": (6, ""), "empty_one": (0, "No items yet")}


@pytest.mark.parametrize("limit, offset", [(0, 0), (-5, 0), ("7", 0), (10, -1), (None, 0)])
def test_bad_item_pagination_is_refused_with_a_clear_error(library, limit, offset):
    with pytest.raises(InvalidInput):
        library.items.list_items(U, limit=limit, offset=offset)


# -- plain hybrid search across kinds --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kinds(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("search") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.items.remember(U, "The staging database password rotates every Monday")
    engine.items.remember(U, "Ada's favourite editor is Helix")
    engine.episodes.record(
        U,
        [
            {
                "observation": "staging database refused connections",
                "action": "rotate the staging password",
                "result": "connections restored",
            }
        ],
        outcome="success",
    )
    engine.skills.register(
        U,
        "rotate-db-password",
        "Run vault rotate staging-db then restart the pool",
        description="How to rotate the staging database password",
    )
    engine.items.remember("bo", "Bo's staging database lives in Frankfurt")
    return engine


def test_search_returns_hits_of_every_kind_with_id_kind_text_and_score(kinds):
    hits = kinds.retrieval.search(U, "staging database password")
    assert all(isinstance(h, SearchHit) for h in hits)
    assert {h.kind for h in hits} == set(KINDS)
    assert all(h.kind in KINDS and h.text and isinstance(h.score, float) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[-1].text == "Ada's favourite editor is Helix"
    assert all(h.created_at is not None for h in hits)


def test_search_score_blends_cosine_and_bm25_normalised_by_the_best_at_the_bm25_weight(kinds):
    w = kinds.settings.bm25_weight
    hits = kinds.retrieval.search(U, "staging database password")
    top_bm25 = max(h.fts_score or 0.0 for h in hits)
    assert top_bm25 > 0
    for h in hits:
        assert -1.0 <= h.vector_similarity <= 1.0
        assert h.score == pytest.approx((1 - w) * h.vector_similarity + w * (h.fts_score or 0.0) / top_bm25, abs=2e-6)


def test_search_can_be_limited_to_one_kind_and_a_number_of_hits(kinds):
    assert {h.kind for h in kinds.retrieval.search(U, "staging database", kind="episodic")} == {"episodic"}
    assert len(kinds.retrieval.search(U, "staging database", limit=2)) == 2


def test_search_only_sees_the_given_users_memories(kinds):
    hits = kinds.retrieval.search("bo", "staging database password")
    assert [h.text for h in hits] == ["Bo's staging database lives in Frankfurt"]
    assert kinds.retrieval.search("nobody", "staging database") == []


@pytest.mark.parametrize(
    "kwargs", [{"kind": "semantics"}, {"kind": "items"}, {"limit": 0}, {"limit": 1001}, {"limit": "5"}]
)
def test_search_refuses_unknown_kinds_and_bad_limits(kinds, kwargs):
    with pytest.raises(InvalidInput):
        kinds.retrieval.search(U, "staging", **kwargs)
