"""optimize() deletes LanceDB versions once no reader can still be on them, and never the data of the latest."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from engine import MemoryEngine, Settings
from engine.store.vectors.index import VectorIndex
from engine.store.vectors.versions import prune_before

DIM = 8
MODEL = "test-random-8"
T0 = datetime(2026, 1, 1, 12, 0, 0)


def minutes(*offsets: float) -> list[datetime]:
    return [T0 + timedelta(minutes=m) for m in offsets]


def add_rows(index: VectorIndex, start: int, count: int) -> None:
    rows = np.random.default_rng(start).normal(size=(count, DIM)).astype(np.float32)
    index.add(
        "semantic",
        [f"n-{i}" for i in range(start, start + count)],
        ["ada"] * count,
        [f"note number {i} about the pan traps" for i in range(start, start + count)],
        rows,
    )


def folder_bytes(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_a_version_goes_only_once_its_successor_is_older_than_the_retention():
    created = minutes(0, 10, 20, 50)
    now = T0 + timedelta(minutes=60)
    # Version 0 was replaced at minute 10, version 1 at minute 20: both more than 30 minutes ago. Version 2 was
    # replaced at minute 50, 10 minutes ago, so a reader may still be on it.
    assert prune_before(created, now, timedelta(minutes=30)) == created[2]
    assert prune_before(created, now, timedelta(minutes=45)) == created[1]


def test_an_old_version_replaced_a_moment_ago_stays():
    created = minutes(0, 59.9)  # created an hour ago, but the latest until a few seconds ago
    assert prune_before(created, T0 + timedelta(minutes=60), timedelta(minutes=10)) is None


def test_with_no_retention_everything_but_the_latest_can_go():
    created = minutes(0, 1, 2)
    assert prune_before(created, T0 + timedelta(minutes=3), timedelta(0)) == created[2]


def test_a_single_version_always_stays():
    assert prune_before(minutes(0), T0 + timedelta(days=30), timedelta(0)) is None
    assert prune_before([], T0, timedelta(0)) is None


def test_optimize_with_no_retention_deletes_old_versions_and_keeps_every_row(tmp_path):
    folder = tmp_path / "vectors"
    lancedb_rule = VectorIndex(str(folder), MODEL, DIM)  # LanceDB's own rule: replaced versions stay for 7 days
    for batch in range(6):
        add_rows(lancedb_rule, batch * 50, 50)
    lancedb_rule.optimize()  # compacts the six appends into one file; the appends' files stay on disk
    add_rows(lancedb_rule, 300, 50)
    lancedb_rule.optimize()
    before = folder_bytes(folder)
    versions_before = len(lancedb_rule.table("semantic").list_versions())

    index = VectorIndex(str(folder), MODEL, DIM, version_retention_s=0)
    index.optimize()

    table = index.table("semantic")
    assert len(table.list_versions()) == 1 < versions_before
    assert folder_bytes(folder) < before / 2
    assert index.count("semantic") == 350
    query = np.random.default_rng(0).normal(size=DIM).astype(np.float32)
    assert len(index.vector_search("semantic", "ada", query, 10)) == 10
    assert [h.id for h in index.fts_search("semantic", "ada", "333", 1)] == ["n-333"]


def test_optimize_keeps_versions_replaced_within_the_retention(tmp_path):
    index = VectorIndex(str(tmp_path / "vectors"), MODEL, DIM, version_retention_s=600)
    for batch in range(4):
        add_rows(index, batch * 50, 50)
    table = index.table("semantic")
    versions_before = {v["version"] for v in table.list_versions()}

    index.optimize()

    versions_after = {v["version"] for v in table.list_versions()}
    assert versions_before < versions_after  # the compaction's own versions came, none went


def test_a_reader_opened_before_the_pruning_still_reads_after_it(tmp_path):
    uri = str(tmp_path / "vectors")
    writer = VectorIndex(uri, MODEL, DIM, version_retention_s=0)
    add_rows(writer, 0, 50)
    reader = VectorIndex(uri, MODEL, DIM)  # as the dashboard's process would: its own connection
    query = np.random.default_rng(1).normal(size=DIM).astype(np.float32)
    assert len(reader.vector_search("semantic", "ada", query, 5)) == 5
    for batch in range(1, 4):
        add_rows(writer, batch * 50, 50)
    writer.optimize()
    add_rows(writer, 200, 50)
    writer.optimize()

    assert len(reader.vector_search("semantic", "ada", query, 500)) == 250
    assert reader.count("semantic") == 250


def test_the_engine_prunes_with_its_retention_setting(tmp_path, embedder):
    settings = Settings.from_env({}, store=str(tmp_path / "store"), vector_version_retention_s=0)
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    for batch in range(5):
        engine.items.remember_many(
            {"user_id": "ada", "content": f"pan trap note {batch}-{i}", "category": "field"} for i in range(20)
        )
    engine.admin.optimize(vector_index=False)
    engine.items.remember("ada", "the pan traps come in before the first snow", category="field")
    before = engine.admin.disk_bytes()

    engine.admin.optimize(vector_index=False)

    assert engine.admin.disk_bytes() < before
    assert engine.admin.stats().items == 101
    hits = engine.retrieval.search("ada", "when do the pan traps come in?", kind="semantic", limit=1)
    assert hits[0].text == "the pan traps come in before the first snow"
