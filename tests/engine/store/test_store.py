"""The store: named migrations applied once, clear errors for corrupt, misplaced or locked stores, embedders that
are checked, and one LanceDB table per (kind, model) so vectors of different models never mix (issue 2 §3, §4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from engine import InvalidInput, MemoryEngine, ModelMismatch, Settings, StoreBusy, StoreCorrupt, StoreStats, StoreTooNew
from engine.store.migrations import MIGRATIONS
from tests.support.storecheck import snapshot

U = "ada"
SUPPORT = Path(__file__).resolve().parents[2] / "support"


def open_store(path: Path, embedder, **settings) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), **settings), embedder=embedder)


class WrappedEmbedder:
    """A test double of an external embedding model: the real MiniLM, renamed and/or with its output corrupted."""

    def __init__(self, real, name: str | None = None, dim: int | None = None, corrupt: str | None = None) -> None:
        self.real = real
        self.name = name or real.name
        self._dim = dim or real.dim
        self.corrupt = corrupt

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts):
        vectors = np.array(self.real.embed(texts), dtype=np.float32)
        if self.corrupt == "nan":
            vectors[-1, 7] = np.nan
        elif self.corrupt == "inf":
            vectors[0, 0] = np.inf
        elif self.corrupt == "short":
            vectors = vectors[:, : self._dim - 1]
        elif self.corrupt == "missing row":
            vectors = vectors[:-1]
        elif self.corrupt == "truncate":  # a well-formed vector of the declared (smaller) dimension
            vectors = vectors[:, : self._dim]
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors


# -- migrations ------------------------------------------------------------------------------------------------------


def test_a_new_store_records_every_named_migration_once(empty_engine):
    assert [name for name, _ in empty_engine._b.db.migrations()] == [name for name, _ in MIGRATIONS]
    assert empty_engine.admin.check() == [name for name, _ in MIGRATIONS]


def test_reopening_a_store_applies_no_migration_twice(empty_engine, settings, embedder):
    empty_engine.items.remember(U, "kept across reopening")
    first = empty_engine._b.db.migrations()
    again = MemoryEngine.open(settings=settings, embedder=embedder)
    assert again._b.db.migrations() == first
    assert again._b.db.migrate() == []
    assert again.items.list_items(U).total == 1


def mark_as_written_by_a_newer_memlens(engine: MemoryEngine, migration: str) -> None:
    engine.close()
    with duckdb.connect(str(engine.path / "memlens.duckdb")) as conn:
        conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", [migration])


def test_a_store_written_by_a_newer_memlens_is_refused_and_left_as_it_was(empty_engine, settings, embedder):
    empty_engine.items.remember(U, "written before the upgrade")
    mark_as_written_by_a_newer_memlens(empty_engine, "9999_from_the_future")
    before = sorted(p.name for p in empty_engine.path.rglob("*"))
    with pytest.raises(StoreTooNew) as err:
        MemoryEngine.open(settings=settings, embedder=embedder)
    assert "newer memlens" in str(err.value) and "9999_from_the_future" in str(err.value)
    assert str(empty_engine.path / "memlens.duckdb") in str(err.value)
    assert sorted(p.name for p in empty_engine.path.rglob("*")) == before
    with duckdb.connect(str(empty_engine.path / "memlens.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()]
    assert names == [name for name, _ in MIGRATIONS] + ["9999_from_the_future"]


# -- where the store is and what state it is in ----------------------------------------------------------------------


def test_a_corrupt_database_file_is_reported_as_store_corrupt_with_the_path(tmp_path, embedder):
    store = tmp_path / "store"
    store.mkdir()
    (store / "memlens.duckdb").write_bytes(b"this is not a database \x00\x01\x02" * 500)
    with pytest.raises(StoreCorrupt) as err:
        open_store(store, embedder)
    assert str(store / "memlens.duckdb") in str(err.value)
    assert "not a valid DuckDB database" in str(err.value)


def test_a_store_path_that_is_a_file_is_refused(tmp_path, embedder):
    target = tmp_path / "a-file"
    target.write_text("hello")
    with pytest.raises(InvalidInput, match="is a file, not a folder"):
        open_store(target, embedder)
    assert target.read_text() == "hello"


def test_only_local_folders_and_file_uris_are_accepted(tmp_path, embedder):
    with pytest.raises(InvalidInput, match="a store is a local folder"):
        open_store("s3://bucket/memlens", embedder)
    engine = open_store(f"file://{tmp_path / 'via-uri'}", embedder)
    assert engine.path == tmp_path / "via-uri"
    assert (tmp_path / "via-uri" / "memlens.duckdb").is_file()


def hold_lock(db_file: Path, seconds: float, patience: float = 30) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(SUPPORT / "hold_lock.py"), str(db_file), str(seconds), str(patience)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "locked", proc.stderr.read()
    return proc


@pytest.mark.subprocess
def test_a_store_locked_by_another_process_beyond_the_timeout_raises_store_busy_and_writes_nothing(tmp_path, embedder):
    engine = open_store(tmp_path / "store", embedder, lock_timeout_s=0.3)
    engine.items.remember(U, "already there")
    before = snapshot(engine)
    holder = hold_lock(engine.path / "memlens.duckdb", 60)
    try:
        with pytest.raises(StoreBusy, match="held by another process"):
            engine.items.remember(U, "written while the store is locked")
        with pytest.raises(StoreBusy):
            engine.items.list_items(U)
    finally:
        holder.kill()
        holder.wait()
    # nothing is half-written: no row and no vector for the refused memory
    assert snapshot(engine) == before
    assert [i.content for i in engine.items.list_items(U).rows] == ["already there"]


@pytest.mark.subprocess
def test_a_write_waits_for_a_short_lock_held_by_another_process_and_then_succeeds(tmp_path, embedder):
    engine = open_store(tmp_path / "store", embedder, lock_timeout_s=60)
    holder = hold_lock(engine.path / "memlens.duckdb", 1.5)
    try:
        engine.sessions.add_message(U, "s1", "user", "written once the other process lets go")
    finally:
        assert holder.wait(timeout=60) == 0
    assert holder.stdout.read().strip() == "released"
    assert engine.sessions.get_session(U, "s1").message_count == 1


OTHER_MEMLENS_PROCESS = """
import sys
from engine import MemoryEngine, Settings
engine = MemoryEngine.open(settings=Settings.from_env({}, store=sys.argv[1], embedder="local", lock_timeout_s=5))
engine.sessions.add_message("ada", "s2", "user", "from the other process")
print(engine.sessions.get_session("ada", "s1").message_count)
"""


@pytest.mark.subprocess
def test_an_idle_engine_lingering_on_the_file_lets_another_memlens_process_in_at_once(tmp_path, embedder):
    # This engine would keep the file for 60 s of idleness; the other process gives up after 5 s. It only gets in
    # because it asks (the .waiting flag) and the idle holder steps aside.
    engine = open_store(tmp_path / "store", embedder, db_linger_s=60)
    engine.sessions.add_message(U, "s1", "user", "written by the lingering engine")
    proc = subprocess.run(
        [sys.executable, "-c", OTHER_MEMLENS_PROCESS, str(engine.path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "1"
    # and this engine reopens the file and sees the other process's write
    assert engine.sessions.get_session(U, "s2").message_count == 1


@pytest.mark.subprocess
def test_with_no_linger_every_operation_lets_go_of_the_file(tmp_path, embedder):
    engine = open_store(tmp_path / "store", embedder, db_linger_s=0)
    engine.items.remember(U, "a fact")
    holder = hold_lock(engine.path / "memlens.duckdb", 0.1, patience=0)  # a foreign process gets it at first try
    assert holder.wait(timeout=60) == 0


# -- embedders are checked -------------------------------------------------------------------------------------------

WRITES = {
    "remember": lambda e: e.items.remember(U, "a fact"),
    "memorize": lambda e: e.items.memorize(U, "raw text"),
    "episode": lambda e: e.episodes.record(U, [{"action": "act"}]),
    "skill": lambda e: e.skills.register(U, "name", "body"),
    "batch": lambda e: e.items.remember_many([{"user_id": U, "content": f"fact {n}"} for n in range(3)]),
    "ingest": lambda e: e.admin.ingest_lines(['{"kind": "item", "user_id": "ada", "content": "imported"}']),
}


@pytest.mark.parametrize("corrupt", ["nan", "inf", "short", "missing row"])
@pytest.mark.parametrize("write", list(WRITES))
def test_vectors_with_nan_inf_or_the_wrong_shape_are_refused_and_nothing_is_written(tmp_path, embedder, corrupt, write):
    engine = open_store(tmp_path / "store", WrappedEmbedder(embedder, corrupt=corrupt))
    before = snapshot(engine)
    with pytest.raises(InvalidInput, match="NaN or infinite|expected .* dimension"):
        WRITES[write](engine)
    assert snapshot(engine) == before


@pytest.mark.parametrize("corrupt", ["nan", "short"])
def test_a_broken_query_vector_is_refused_by_search_and_retrieval_and_no_trace_is_kept(tmp_path, embedder, corrupt):
    open_store(tmp_path / "store", embedder).items.remember(U, "zebras have stripes")
    broken = open_store(tmp_path / "store", WrappedEmbedder(embedder, corrupt=corrupt))
    before = snapshot(broken)
    with pytest.raises(InvalidInput):
        broken.retrieval.search(U, "zebras")
    with pytest.raises(InvalidInput):
        broken.retrieval.retrieve(U, "What do zebras have?")
    assert snapshot(broken) == before


def test_blank_text_is_never_embedded(embedder):
    with pytest.raises(InvalidInput, match="blank"):
        embedder.embed(["fine", "   "])


def test_the_local_embedder_gives_unit_vectors_of_dimension_384(embedder):
    vectors = embedder.embed(["one sentence", "another sentence"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_model_with_the_same_name_but_another_dimension_is_a_model_mismatch(tmp_path, embedder):
    open_store(tmp_path / "store", embedder).items.remember(U, "made with the 384-dimension model")
    impostor = open_store(tmp_path / "store", WrappedEmbedder(embedder, dim=128, corrupt="truncate"))
    before = snapshot(impostor)
    with pytest.raises(ModelMismatch, match="dim 384"):
        impostor.items.remember(U, "would mix vectors")
    assert snapshot(impostor) == before


# -- another embedding model on the same store -----------------------------------------------------------------------


def test_another_model_uses_its_own_tables_warns_about_missing_vectors_and_reindex_fixes_it(tmp_path, embedder):
    original = open_store(tmp_path / "store", embedder)
    original.items.remember(U, "The Lisbon office opens at nine")
    original.episodes.record(U, [{"action": "opened the Lisbon office"}])
    original.skills.register(U, "open-office", "unlock, lights, coffee")
    assert original.admin.stats().warnings == ()
    minilm_tables = set(original._b.index.table_names())

    other = open_store(tmp_path / "store", WrappedEmbedder(embedder, name="other-model"))
    # per kind, naming the memories (issue 17: ids, not totals)
    warnings = other.admin.stats().warnings
    assert len(warnings) == 3
    for kind, warning in zip(("semantic", "episodic", "procedural"), warnings, strict=True):
        assert warning.startswith(f"{kind}: 1 memories have no other-model vector")
        assert "semantic__all-minilm-l6-v2" in warning
        assert "reindex" in warning
    assert len(other.admin.stats().orphans["semantic"]["without_vector"]) == 1
    assert other.retrieval.search(U, "Lisbon office") == []

    assert other.admin.reindex() == {"semantic": 1, "episodic": 1, "procedural": 1}
    assert other.admin.stats().warnings == ()
    assert {h.kind for h in other.retrieval.search(U, "Lisbon office")} == {"semantic", "episodic", "procedural"}
    tables = set(other._b.index.table_names())
    assert tables == minilm_tables | {"semantic__other-model", "episodic__other-model", "procedural__other-model"}
    meta = other._b.index.db.open_table("semantic__other-model").schema.metadata
    assert (meta[b"model"], meta[b"dim"]) == (b"other-model", b"384")

    # the original model's tables were not touched: reopening with it still works without warnings
    again = open_store(tmp_path / "store", embedder)
    assert again.admin.stats().warnings == ()
    assert {t: again._b.index.db.open_table(t).count_rows() for t in minilm_tables} == dict.fromkeys(minilm_tables, 1)


def test_reindex_rebuilds_without_duplicating_vectors(empty_engine):
    empty_engine.items.remember_many([{"user_id": U, "content": f"fact {n}"} for n in range(4)])
    empty_engine.admin.reindex()
    empty_engine.admin.reindex()
    assert empty_engine._b.index.count("semantic") == 4


# -- stats -----------------------------------------------------------------------------------------------------------


def test_stats_count_every_kind_per_user_and_name_the_backends(empty_engine):
    e = empty_engine
    e.sessions.add_message(U, "s1", "user", "hi")
    e.sessions.add_message(U, "s1", "assistant", "hello")
    e.sessions.add_message("bo", "b1", "user", "hey")
    e.working.update(U, "s1", {"goals": 1, "custom": 2})
    item = e.items.remember(U, "fact one")
    e.items.remember(U, "fact two", category="other")
    e.forgetting.forget(U, "semantic", [item.id], reason="test")
    e.episodes.record("bo", [{"action": "x"}])
    e.skills.register(U, "s", "b")
    e.feedback.label(U, e.items.list_items(U).rows[0].id, "useful")
    stats = e.admin.stats()
    assert isinstance(stats, StoreStats)
    assert (stats.users, stats.sessions, stats.messages, stats.working_slots) == (2, 2, 3, 2)
    assert (stats.items, stats.episodes, stats.skills) == (1, 1, 1)
    assert (stats.feedback_events, stats.forget_log_entries, stats.traces) == (1, 1, 0)
    assert stats.per_user == {
        U: {"sessions": 1, "messages": 2, "items": 1, "skills": 1},
        "bo": {"sessions": 1, "messages": 1, "episodes": 1},
    }
    assert stats.embedder == "all-MiniLM-L6-v2 (384d)"
    assert (stats.embedding_dim, stats.llm) == (384, "offline")
    assert stats.warnings == ()
