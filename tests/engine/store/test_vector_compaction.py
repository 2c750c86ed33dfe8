"""Writes keep LanceDB tables compact: an agent writing one memory at a time must not leave a file per write."""

from __future__ import annotations

import numpy as np

from engine.store.vectors.index import COMPACT_AFTER_WRITES, VectorIndex

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
