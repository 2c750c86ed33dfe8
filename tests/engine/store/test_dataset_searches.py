"""Searches run on the tables' Lance datasets (engine/store/vectors/datasets.py), not through LanceDB's query
builder: they must find and score exactly what LanceDB's own searches find, and see every commit, including one
made through another connection (another process) or a table made anew."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import lance
import lancedb
import numpy as np
import pyarrow as pa
import pytest

from engine import MemoryEngine, Settings
from engine.store.vectors.datasets import ANN_MIN_EF

PLACES = ["Lisbon", "Porto", "Oslo", "Kyoto", "Quito", "Accra", "Hanoi", "Lima", "Perth", "Riga"]
THINGS = ["flights", "hotels", "invoices", "refunds", "deploys", "grants", "bees", "soil", "trains", "tests"]
QUESTIONS = ["refunds for the Lisbon hotels", "who deploys in Kyoto", "grants and bees", "soil tests in Perth"]


def _content(n: int) -> str:
    return f"Note {n}: {THINGS[n % 10]} in {PLACES[n * 3 % 10]}, {THINGS[n * 7 % 10]} next ({n * 13 % 101})"


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> MemoryEngine:
    """A table big enough for its HNSW-SQ index and not held in memory, so every search reaches Lance."""
    path = tmp_path_factory.mktemp("datasets") / "store"
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(path), vector_index_min_rows=300, resident_vector_max_rows=0),
        embedder=embedder,
    )
    engine.items.remember_many({"user_id": "big", "content": _content(n)} for n in range(400))
    engine.items.remember_many({"user_id": "small", "content": f"Small's note {n} on {THINGS[n]}"} for n in range(5))
    engine.admin.optimize()
    return engine


def _lancedb_table(engine: MemoryEngine, kind: str = "semantic") -> lancedb.table.Table:
    """The table opened through a connection of its own, as another process would."""
    index = engine._b.index  # noqa: SLF001 - the storage layer is what these tests are about
    return lancedb.connect(index.uri, read_consistency_interval=timedelta(0)).open_table(index.table(kind).name)


def _ranked(ids: list[str], scores: np.ndarray) -> list[tuple[float, str]]:
    """Hits as (score, id) with scores to 5 decimals, sorted: equal scores come in no promised order."""
    return sorted(zip(np.round(np.asarray(scores, dtype=np.float64), 5).tolist(), ids, strict=True))


def _above_last(ranked: list[tuple[float, str]], last: float) -> list[tuple[float, str]]:
    return [r for r in ranked if r[0] != last]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_vector_search_finds_and_scores_what_lancedbs_own_search_does(store, question):
    index = store._b.index  # noqa: SLF001
    vec = store.embedder.embed([question])[0]
    hits, mode = index.search_vectors("semantic", "big", vec, 20)
    assert mode == "approximate (HNSW-SQ)"
    theirs = (
        _lancedb_table(store)
        .search(np.asarray(vec, dtype=np.float32), vector_column_name="vector")
        .distance_type("cosine")
        .select(["id", "user_id"])
        .where("user_id = 'big'", prefilter=True)
        .limit(20)
        .ef(max(ANN_MIN_EF, 40))
        .to_arrow()
    )
    assert [h.id for h in hits] == theirs.column("id").to_pylist()
    assert np.allclose([h.vector_similarity for h in hits], 1.0 - theirs.column("_distance").to_numpy(), atol=1e-6)


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_full_text_search_finds_and_scores_what_lancedbs_own_search_does(store, question):
    index = store._b.index  # noqa: SLF001
    hits, _ = index.search_text("semantic", "big", question, 20)
    theirs = (
        _lancedb_table(store)
        .search(question, query_type="fts")
        .select(["id", "user_id"])
        .where("user_id = 'big'", prefilter=True)
        .limit(20)
        .to_arrow()
    )
    ours = _ranked([h.id for h in hits], np.array([h.fts_score for h in hits]))
    lance = _ranked(theirs.column("id").to_pylist(), theirs.column("_score").to_numpy())
    assert len(ours) == len(lance) == 20
    assert [s for s, _ in ours] == [s for s, _ in lance]  # the same scores, to the fifth decimal
    # The same rows, but for rows tied at the cut-off score, where either search may keep any of them.
    assert _above_last(ours, lance[0][0]) == _above_last(lance, lance[0][0])


def test_a_commit_made_through_another_connection_is_found_by_the_next_search(store):
    index = store._b.index  # noqa: SLF001
    before, _ = index.search_text("semantic", "small", "walrus", 5)
    assert before == []
    vec = store.embedder.embed(["Small saw a walrus in Tromso"])[0]
    row = {"id": "item_walrus", "user_id": "small", "text": "Small saw a walrus in Tromso", "vector": vec.tolist()}
    other = _lancedb_table(store)
    other.add(pa.Table.from_pylist([row], schema=other.schema))
    try:
        found, _ = index.search_text("semantic", "small", "walrus", 5)
        assert [h.id for h in found] == ["item_walrus"]
        near, _ = index.search_vectors("semantic", "small", vec, 1)
        assert near[0].id == "item_walrus" and near[0].vector_similarity == pytest.approx(1.0, abs=1e-5)
    finally:
        other.delete("id = 'item_walrus'")
    assert index.search_text("semantic", "small", "walrus", 5)[0] == []


def test_a_table_dropped_and_made_anew_is_searched_as_it_is_now(tmp_path, embedder):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "s")), embedder=embedder)
    engine.items.remember("u", "The boiler was serviced in March")
    index = engine._b.index  # noqa: SLF001
    assert [h.text for h in index.search_text("semantic", "u", "boiler", 5)[0]] == ["The boiler was serviced in March"]
    index.drop("semantic")
    assert index.search_text("semantic", "u", "boiler", 5)[0] == []
    engine.items.remember("u", "The boiler was replaced in May")
    engine.admin.optimize()
    assert [h.text for h in index.search_text("semantic", "u", "boiler", 5)[0]] == ["The boiler was replaced in May"]


def test_pylance_is_the_lance_that_lancedb_is_built_on():
    """Searches read with pylance what lancedb's own Lance wrote, and compaction writes through pylance: a bump of
    one pin without the other (requirements.txt) fails here. lancedb names its crates' versions in its binary."""
    binary = next(Path(lancedb.__file__).parent.glob("_lancedb*.so"))
    built_on = set(re.findall(rb"lance-core-(\d+\.\d+\.\d+)", binary.read_bytes()))
    assert built_on == {lance.__version__.encode()}


def test_rows_tied_at_the_cut_are_kept_by_id_so_a_search_gives_the_same_rows_every_time(tmp_path, embedder):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "s")), embedder=embedder)
    # Thirty memories of one length with one "tea" each: the same BM25 score for every one of them.
    engine.items.remember_many({"user_id": "u", "content": f"Guest q{n:02d} drinks tea"} for n in range(30))
    index = engine._b.index  # noqa: SLF001
    vec = engine.embedder.embed(["tea"])[0]
    for _ in range(2):  # the second search of a table version loads its in-memory copy (resident.py)
        index.search_vectors("semantic", "u", vec, 5)
    tb = index.table("semantic")
    assert index.resident.owners(tb.name, index.datasets.latest(tb)[1]) == {"u"}
    every, _ = index.search_text("semantic", "u", "tea", 30)
    assert len(every) == 30 and len({h.fts_score for h in every}) == 1
    smallest = sorted(index.ids("semantic"))[:5]
    for _ in range(5):
        hits, _ = index.search_text("semantic", "u", "tea", 5)
        assert [h.id for h in hits] == smallest
        assert len({h.fts_score for h in hits}) == 1
