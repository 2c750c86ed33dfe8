"""engine/store/schema.py is the one registry of tables: the migrations' SQL, a migrated store's catalog, the memory
kinds' tables and the test snapshots all agree with it, so a table or sequence added to one place and not the others
fails here (tests/engine/store/test_table_registry.py checks delete_user and the user columns against it)."""

from __future__ import annotations

import re

import pytest

from engine import KINDS, MemoryEngine, Settings
from engine.store.migrations import MIGRATIONS
from engine.store.schema import BY_NAME, COPIED, KIND_TABLES, SEQUENCES, TABLES
from tests.support.storecheck import row_counts

# Made by the database layer itself before any migration runs (it records which migrations ran).
BOOKKEEPING = {"schema_migrations"}


def _created(pattern: str) -> set[str]:
    return {name for _, sql in MIGRATIONS for name in re.findall(pattern, sql, flags=re.IGNORECASE)}


@pytest.fixture
def engine(tmp_path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)


def test_the_migrations_create_exactly_the_registered_tables_and_sequences():
    assert _created(r"CREATE TABLE\s+(\w+)") == set(BY_NAME) - BOOKKEEPING
    assert _created(r"CREATE SEQUENCE\s+(\w+)") == set(SEQUENCES.values())
    assert not _created(r"DROP TABLE\s+(\w+)") and not _created(r"RENAME TO\s+(\w+)")  # no table left the list


def test_a_migrated_store_has_the_registered_sequences_as_its_id_defaults(engine):
    with engine._b.db.read() as conn:
        sequences = {r[0] for r in conn.execute("SELECT sequence_name FROM duckdb_sequences()").fetchall()}
        defaults = dict(
            conn.execute(
                "SELECT table_name, column_default FROM duckdb_columns() "
                "WHERE column_name = 'id' AND column_default LIKE 'nextval%'"
            ).fetchall()
        )
    assert sequences == set(SEQUENCES.values())
    assert {t: re.sub(r"nextval\('(\w+)'\)", r"\1", d) for t, d in defaults.items()} == SEQUENCES


def test_each_memory_kind_is_written_to_its_registered_table(engine):
    assert set(KIND_TABLES) == set(KINDS)
    for kind, table in KIND_TABLES.items():
        spec = BY_NAME[table]
        assert spec.per_user and spec.copied and spec.exported_as, kind
    before = row_counts(engine)
    engine.items.remember("u", "the spare key is under the blue flowerpot")
    engine.episodes.record("u", [{"action": "look", "result": "found"}], outcome="success")
    engine.skills.register("u", "find", "look under the pot")
    after = row_counts(engine)
    grew = {t for t in after if after[t] > before.get(t, 0)}
    assert set(KIND_TABLES.values()) <= grew, grew


def test_copy_store_moves_every_registered_table_but_the_bookkeeping():
    assert set(COPIED) == {t.name for t in TABLES} - BOOKKEEPING
    names = [t.name for t in TABLES]
    # parents before children: a session's messages after it
    assert names.index("sessions") < names.index("messages")


def test_a_table_the_registry_does_not_declare_fails_the_row_counts(engine):
    row_counts(engine)
    with engine._b.db.write() as conn:
        conn.execute("CREATE TABLE undeclared_notes (user_id VARCHAR, note VARCHAR)")
    with pytest.raises(AssertionError, match="undeclared_notes"):
        row_counts(engine)
