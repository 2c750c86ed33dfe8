"""Writes keep LanceDB tables compact: an agent writing one memory at a time must not leave a file per write."""

from __future__ import annotations

import numpy as np
import pytest

from engine.store.vectors.index import COMPACT_AFTER_WRITES, VectorIndex
from engine.store.vectors.keys import KeyRow

DIM = 8
MODEL = "test-random-8"


def write_one(index: VectorIndex, n: int) -> None:
    vector = np.random.default_rng(n).normal(size=(1, DIM)).astype(np.float32)
    index.add("semantic", [f"n-{n}"], ["ada"], [f"note {n} about the pan traps"], vector)


def fragments(index: VectorIndex) -> int:
    return index.table("semantic").stats()["fragment_stats"]["num_fragments"]


def test_one_row_writes_are_compacted_every_so_many_writes(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    for n in range(COMPACT_AFTER_WRITES):  # the first write creates the indexes and is not counted
        write_one(index, n)
    assert fragments(index) == COMPACT_AFTER_WRITES

    write_one(index, COMPACT_AFTER_WRITES)

    assert fragments(index) <= 2  # LanceDB's compaction may keep the last write apart (seen: 64 + 1)
    assert index.count("semantic") == COMPACT_AFTER_WRITES + 1
    hits = index.fts_search("semantic", "ada", str(COMPACT_AFTER_WRITES), 1)
    assert [h.id for h in hits] == [f"n-{COMPACT_AFTER_WRITES}"]


def test_the_count_starts_again_after_an_explicit_optimize(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    for n in range(10):
        write_one(index, n)
    index.optimize()
    after_optimize = fragments(index)
    for n in range(10, 10 + COMPACT_AFTER_WRITES - 1):
        write_one(index, n)

    assert fragments(index) == after_optimize + COMPACT_AFTER_WRITES - 1  # not compacted yet: one more write is due
    write_one(index, 10 + COMPACT_AFTER_WRITES)
    assert fragments(index) <= 2


# -- bulk writes: one upkeep at the end (engine/store/vectors/maintenance.py, deferred_upkeep) -----------------------
def write_batch(index: VectorIndex, start: int, rows: int = 50) -> None:
    vectors = np.random.default_rng(start).normal(size=(rows, DIM)).astype(np.float32)
    ids = [f"n-{start + k}" for k in range(rows)]
    index.add("semantic", ids, ["ada"] * rows, [f"note {start + k} about the pan traps" for k in range(rows)], vectors)


def versions(index: VectorIndex) -> int:
    return len(index.table("semantic").list_versions())


def indexed_columns(index: VectorIndex) -> set[tuple[str, ...]]:
    return {tuple(ix.columns) for ix in index.table("semantic").list_indices()}


def test_writes_in_a_bulk_block_are_compacted_once_when_it_ends(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    write_batch(index, 0)
    index.optimize()
    before = (fragments(index), versions(index))
    with index.deferred_upkeep():
        for start in range(100, 600, 100):
            write_batch(index, start)
        # five files, five commits: no compaction or index rebuild in between
        assert (fragments(index), versions(index)) == (before[0] + 5, before[1] + 5)
        # a row written in the block is found by full text already (LanceDB scans the unindexed rows)
        assert [h.id for h in index.fts_search("semantic", "ada", "510", 1)] == ["n-510"]
    assert fragments(index) <= 2
    assert index.count("semantic") == 300
    assert [h.id for h in index.fts_search("semantic", "ada", "510", 1)] == ["n-510"]


def test_a_table_made_in_a_bulk_block_is_indexed_at_its_first_write(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    with index.deferred_upkeep():
        write_batch(index, 0)
        assert indexed_columns(index) == {("text",), ("user_id",)}
        write_batch(index, 100)
        assert [h.id for h in index.fts_search("semantic", "ada", "120", 1)] == ["n-120"]
    assert fragments(index) <= 2


def test_bulk_blocks_nest_and_only_the_outermost_end_compacts(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    with index.deferred_upkeep():
        write_batch(index, 0)
        with index.deferred_upkeep():
            write_batch(index, 100)
            write_batch(index, 200)
        assert fragments(index) == 3
    assert fragments(index) <= 2


def test_a_bulk_block_that_fails_still_maintains_what_it_wrote(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    try:
        with index.deferred_upkeep():
            for start in (0, 100, 200):
                write_batch(index, start)
            raise RuntimeError("the import failed half-way")
    except RuntimeError:
        pass
    assert fragments(index) <= 2 and index.count("semantic") == 150


def test_one_write_in_a_bulk_block_counts_as_one_write(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    write_batch(index, 0)
    index.optimize()
    after_optimize = fragments(index)
    with index.deferred_upkeep():
        write_batch(index, 100)
    assert fragments(index) == after_optimize + 1  # a small import does not pay for a compaction


def test_an_ingest_of_many_records_leaves_its_tables_compact(settings, embedder, tmp_path):
    import dataclasses
    import json

    from engine import MemoryEngine

    engine = MemoryEngine.open(settings=dataclasses.replace(settings, memory_keys_write=True), embedder=embedder)
    lines = [
        json.dumps({"kind": "item", "user_id": "ada", "content": f"Trap {n} sits on the upper transect. It is blue."})
        for n in range(1100)
    ]
    assert engine.admin.ingest_lines(lines)["item"] == 1100
    index = engine.items.keys.b.index
    # written in three batches of 512 (and their keys in one): compacted at the end, not left a file per batch
    assert index.table("semantic").stats()["fragment_stats"]["num_fragments"] <= 2
    assert index.count_keys("semantic", "ada", ["sentence"]) == 2200
    top = engine.retrieval.search("ada", "Trap 517 sits on the upper transect", kind="semantic", limit=1)
    assert top and top[0].text.startswith("Trap 517 ")


def test_a_table_dropped_and_made_again_in_a_bulk_block_is_indexed_again(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    with index.deferred_upkeep():
        write_batch(index, 0)
    index.drop("semantic")  # repair drops an unreadable table before rebuilding it
    with index.deferred_upkeep():
        write_batch(index, 100)
        assert indexed_columns(index) == {("text",), ("user_id",)}
        assert [h.id for h in index.fts_search("semantic", "ada", "120", 1)] == ["n-120"]


# -- keys tables: indexed by the memory they key (engine/store/vectors/maintenance.py, index_key_ids) ---------------
def key_rows(start: int, rows: int = 20) -> list[KeyRow]:
    return [KeyRow(f"n-{start + k // 2}", "ada", "sentences", f"sentence {k} of note {start}", "") for k in range(rows)]


def key_indexed_columns(index: VectorIndex) -> set[tuple[str, ...]]:
    tb = index.key_table("semantic")
    assert tb is not None
    return {tuple(ix.columns) for ix in tb.list_indices()}


def test_a_keys_table_is_indexed_by_memory_id_and_reads_by_id_through_it(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    vectors = np.random.default_rng(1).normal(size=(20, DIM)).astype(np.float32)
    index.add_keys("semantic", key_rows(0), vectors)

    assert ("id",) in key_indexed_columns(index)
    # the memories' own tables are not: nothing reads them by a list of ids in a search
    index.add("semantic", ["n-0"], ["ada"], ["note 0"], vectors[:1])
    assert ("id",) not in indexed_columns(index)
    hits, how = index.key_cosines_of("semantic", "ada", ["n-3", "n-7"], vectors[6], ["sentences"])
    assert how == "candidates' keys only (exact)"
    assert sorted(h.memory_id for h in hits) == ["n-3", "n-3", "n-7", "n-7"]
    assert hits[0].memory_id == "n-3" and hits[0].score == pytest.approx(1.0, abs=1e-5)  # key 6 is note 3's


def test_a_keys_table_written_before_the_index_gets_it_at_the_next_optimize(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    vectors = np.random.default_rng(2).normal(size=(20, DIM)).astype(np.float32)
    index.add_keys("semantic", key_rows(0), vectors)
    tb = index.key_table("semantic")
    assert tb is not None
    tb.drop_index("id_idx")  # as a store from before 2026-12-07 has it
    assert ("id",) not in key_indexed_columns(index)

    index.optimize()

    assert ("id",) in key_indexed_columns(index)
