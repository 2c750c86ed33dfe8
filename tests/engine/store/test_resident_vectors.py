"""Small vector tables are searched in memory once their version is stable; big single-user tables skip the user
filter. Both give exactly what LanceDB's exact, filtered search gives, and neither survives a write."""

from __future__ import annotations

import numpy as np
import pytest

from engine.store.vectors import search as vectors_module
from engine.store.vectors.index import VectorIndex
from tests.support.fts_answers import assert_same_answer

DIM = 384
MODEL = "test-random-384"


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(index: VectorIndex, users: list[str], seed: int = 0) -> np.ndarray:
    vecs = unit_rows(len(users), seed)
    index.add(
        "episodic",
        [f"ep-{n}" for n in range(len(users))],
        users,
        [f"episode {n} of {u}" for n, u in enumerate(users)],
        vecs,
    )
    return vecs


@pytest.fixture
def uri(tmp_path) -> str:
    return str(tmp_path / "vectors")


def search_twice(index: VectorIndex, user: str, query: np.ndarray, k: int):
    """The first search at a new table version asks LanceDB; the second one is served from memory."""
    first = index.search_vectors("episodic", user, query, k)
    second = index.search_vectors("episodic", user, query, k)
    return first, second


def test_memory_search_returns_what_the_exact_lancedb_search_returns(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    fill(index, ["ann", "bob"] * 150)
    query = unit_rows(1, 99)[0]
    (lance_hits, lance_mode), (held_hits, held_mode) = search_twice(index, "ann", query, 10)
    assert (lance_mode, held_mode) == ("exact", "in memory (exact)")
    assert [h.id for h in held_hits] == [h.id for h in lance_hits]
    assert np.allclose([h.vector_similarity for h in held_hits], [h.vector_similarity for h in lance_hits], atol=1e-5)
    assert all(h.id in {f"ep-{n}" for n in range(0, 300, 2)} for h in held_hits)  # only ann's rows
    assert np.array_equal(held_hits[0].vector, lance_hits[0].vector)


def test_a_user_without_rows_gets_nothing_from_memory(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    fill(index, ["ann"] * 20)
    _, (hits, mode) = search_twice(index, "nobody", unit_rows(1, 1)[0], 5)
    assert (hits, mode) == ([], "in memory (exact)")


def test_k_larger_than_the_users_rows_returns_all_of_them_best_first(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    vecs = fill(index, ["ann"] * 7 + ["bob"] * 30)
    query = vecs[3]
    _, (hits, _) = search_twice(index, "ann", query, 50)
    assert len(hits) == 7 and hits[0].id == "ep-3" and hits[0].vector_similarity == pytest.approx(1.0, abs=1e-6)
    sims = [h.vector_similarity for h in hits]
    assert sims == sorted(sims, reverse=True)


def test_a_write_from_another_process_is_seen_at_once_and_a_deleted_row_never_comes_back(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    vecs = fill(index, ["ann"] * 40)
    query = vecs[5]
    _, (hits, mode) = search_twice(index, "ann", query, 3)
    assert mode == "in memory (exact)" and hits[0].id == "ep-5"

    other = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)  # as another process would: its own connection
    other.delete("episodic", ["ep-5"])
    hits, mode = index.search_vectors("episodic", "ann", query, 3)
    assert mode == "exact" and "ep-5" not in [h.id for h in hits]
    _, (hits, mode) = search_twice(index, "ann", query, 3)
    assert mode == "in memory (exact)" and "ep-5" not in [h.id for h in hits]

    other.add("episodic", ["ep-new"], ["ann"], ["a new episode"], query.reshape(1, -1))
    hits, _ = index.search_vectors("episodic", "ann", query, 3)
    assert hits[0].id == "ep-new"


def test_tables_past_the_limit_and_a_zero_limit_always_ask_lancedb(uri, tmp_path):
    small_limit = VectorIndex(uri, MODEL, DIM, resident_max_rows=10)
    fill(small_limit, ["ann"] * 11)
    assert [m for _, m in search_twice(small_limit, "ann", unit_rows(1, 3)[0], 3)] == ["exact", "exact"]
    off = VectorIndex(str(tmp_path / "off"), MODEL, DIM, resident_max_rows=0)
    fill(off, ["ann"] * 5)
    assert [m for _, m in search_twice(off, "ann", unit_rows(1, 3)[0], 3)] == ["exact", "exact"]


def test_a_single_owner_table_skips_the_user_filter_and_stops_when_a_second_user_arrives(uri, monkeypatch):
    monkeypatch.setattr(vectors_module, "SOLE_OWNER_MIN_ROWS", 10)
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    vecs = fill(index, ["ann"] * 30)
    tb = index.table("episodic")
    assert index._user_filter(tb, tb.version, "ann") is None  # noqa: SLF001 - the storage detail under test
    assert index._user_filter(tb, tb.version, "bob") == "user_id = 'bob'"  # noqa: SLF001
    assert index.vector_search("episodic", "bob", vecs[0], 5) == []
    assert index.fts_search("episodic", "bob", "episode", 5) == []
    assert [h.id for h in index.fts_search("episodic", "ann", "episode 7", 1)] == ["ep-7"]

    VectorIndex(uri, MODEL, DIM).add("episodic", ["bob-1"], ["bob"], ["episode of bob"], vecs[0].reshape(1, -1))
    assert index._user_filter(tb, tb.version, "ann") == "user_id = 'ann'"  # noqa: SLF001
    assert "bob-1" not in [h.id for h in index.vector_search("episodic", "ann", vecs[0], 5)]
    assert [h.id for h in index.vector_search("episodic", "bob", vecs[0], 5)] == ["bob-1"]


def test_a_stale_owner_check_can_cost_candidates_but_never_leaks_another_users_rows(uri, monkeypatch):
    monkeypatch.setattr(vectors_module, "SOLE_OWNER_MIN_ROWS", 10)
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)
    vecs = fill(index, ["ann"] * 20 + ["bob"] * 20)
    tb = index.table("episodic")
    index._owner[tb.name] = (tb.version, "ann")  # noqa: SLF001 - as if bob's rows arrived after the check
    hits = index.vector_search("episodic", "ann", vecs[25], 40)  # bob's row ep-25 is the nearest overall
    assert hits and all(h.id in {f"ep-{n}" for n in range(20)} for h in hits)
    fts = index.fts_search("episodic", "ann", "episode bob", 40)
    assert fts and all(h.id in {f"ep-{n}" for n in range(20)} for h in fts)


WORDS = ["harbour", "invoice", "glacier", "deploy", "recipe", "lantern", "orbit", "ledger", "meadow", "compiler"]


def fill_words(index: VectorIndex, users: list[str], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) + f" note {n}" for n in range(len(users))]
    index.add("episodic", [f"ep-{n}" for n in range(len(users))], users, texts, unit_rows(len(users), seed))


@pytest.mark.parametrize("users", [["ann", "bob", "cy"] * 60, ["ann"] * 120], ids=["three owners", "one owner"])
def test_full_text_search_of_a_held_table_gives_what_lancedb_gives(uri, users):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    fill_words(index, users)
    search_twice(index, "ann", unit_rows(1, 5)[0], 5)  # the table is now held in memory
    tb = index.table("episodic")
    assert index.resident.owners(tb.name, tb.version) == frozenset(users)
    reference = VectorIndex(uri, MODEL, DIM, resident_max_rows=0)  # asks LanceDB for every column, filtered
    for query in ["harbour invoice", "glacier", "deploy recipe lantern", "orbit ledger meadow compiler note"]:
        held = index.fts_search("episodic", "ann", query, 15)
        assert held, query
        assert_same_answer(held, reference.fts_search("episodic", "ann", query, 15))
        assert {h.id for h in held} <= {f"ep-{n}" for n, u in enumerate(users) if u == "ann"}


def test_full_text_search_of_a_held_table_for_a_user_without_rows_is_empty(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    fill_words(index, ["ann"] * 30)
    search_twice(index, "ann", unit_rows(1, 5)[0], 5)
    assert index.fts_search("episodic", "nobody", "harbour glacier", 10) == []


def test_full_text_search_sees_rows_another_process_added_after_the_table_was_held(uri):
    index = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    fill_words(index, ["ann"] * 30)
    search_twice(index, "ann", unit_rows(1, 5)[0], 5)
    other = VectorIndex(uri, MODEL, DIM, resident_max_rows=1000)
    other.add("episodic", ["ep-new"], ["ann"], ["zeppelin harbour"], unit_rows(1, 7))
    other.add("episodic", ["bob-1"], ["bob"], ["zeppelin"], unit_rows(1, 8))
    hits = index.fts_search("episodic", "ann", "zeppelin", 5)
    assert [h.id for h in hits] == ["ep-new"] and hits[0].text == "zeppelin harbour"
    assert index.fts_search("episodic", "bob", "zeppelin", 5)[0].id == "bob-1"
