"""Plain search (engine/retrieval/search.py) blends with the store's retrieval settings and runs only the searches
its mode needs."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings
from engine.records import KINDS

U = "ada"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("plain-search") / "store"
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
    )
    engine.skills.register(
        U,
        "rotate-db-password",
        "Run vault rotate staging-db then restart the pool",
        description="How to rotate the staging database password",
    )
    engine.close()
    return path


def open_engine(path, embedder, **settings) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), **settings), embedder=embedder)


def count_text_searches(engine: MemoryEngine, monkeypatch) -> list[str]:
    """Record every full-text search the engine's LanceDB index runs (the real search still runs)."""
    index = engine._b.index
    real = index.search_text
    calls: list[str] = []

    def recorded(kind, *args, **kwargs):
        calls.append(kind)
        return real(kind, *args, **kwargs)

    monkeypatch.setattr(index, "search_text", recorded)
    return calls


@pytest.mark.parametrize("w", [0.3, 0.6, 0.0])
def test_hybrid_score_blends_cosine_and_normalised_bm25_with_the_stores_bm25_weight(store_path, embedder, w):
    hits = open_engine(store_path, embedder, bm25_weight=w).retrieval.search(U, "staging database password")
    top = max(h.fts_score or 0.0 for h in hits)
    assert top > 0
    for h in hits:
        expected = (1 - w) * h.vector_similarity + w * (h.fts_score or 0.0) / top
        assert h.score == pytest.approx(expected, abs=2e-6)


def test_a_vector_search_runs_no_full_text_search(store_path, embedder, monkeypatch):
    engine = open_engine(store_path, embedder)
    calls = count_text_searches(engine, monkeypatch)
    hits = engine.retrieval.search(U, "staging database password", mode="vector")
    assert hits and calls == []
    assert all(h.fts_score is None and h.score == h.vector_similarity for h in hits)


def test_hybrid_and_full_text_searches_run_one_full_text_search_per_kind(store_path, embedder, monkeypatch):
    engine = open_engine(store_path, embedder)
    calls = count_text_searches(engine, monkeypatch)
    engine.retrieval.search(U, "staging database password")
    assert sorted(calls) == sorted(KINDS)
    calls.clear()
    hits = engine.retrieval.search(U, "staging database password", mode="fts", kind="semantic")
    assert calls == ["semantic"]
    assert hits and all(h.score == h.fts_score for h in hits)
