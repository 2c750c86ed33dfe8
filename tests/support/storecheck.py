"""Read a store's real contents (every DuckDB table, every LanceDB table) to prove what was or was not written."""

from __future__ import annotations

import duckdb

from engine import MemoryEngine
from engine.store.schema import BY_NAME
from tests.support.store_snapshot import local_lance_dataset, sql_name, sql_text


def row_counts(engine: MemoryEngine) -> dict[str, int]:
    """Rows in every DuckDB table of the store, schema_migrations included. One count query for all tables: a query
    per table cost ~1 ms of planning each, and the hostile-input tests count a store a thousand times."""
    with engine._b.db.read() as conn:
        if isinstance(conn, duckdb.DuckDBPyConnection):  # its catalog function: a third of information_schema's cost
            listing = (
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                "AND schema_name = 'main' ORDER BY 1"
            )
        else:  # a team store's PostgreSQL
            listing = (
                "SELECT table_name FROM information_schema.tables WHERE table_schema IN ('main', 'public') "
                "AND table_type = 'BASE TABLE' ORDER BY 1"
            )
        tables = [r[0] for r in conn.execute(listing).fetchall()]
        if not tables:
            return {}
        # Counted from the catalog, not from the registry, so that a table the registry misses is seen: say so here
        # (copy-store, delete_user and export would miss it too).
        undeclared = sorted(t for t in tables if t not in BY_NAME)
        assert not undeclared, f"tables missing from engine/store/schema.py: {undeclared}"
        counts = " UNION ALL ".join(f"SELECT {sql_text(t)} AS name, count(*) AS n FROM {sql_name(t)}" for t in tables)
        found = dict(conn.execute(counts).fetchall())
        return {t: int(found[t]) for t in tables}


def vector_counts(engine: MemoryEngine) -> dict[str, int]:
    """Rows in every LanceDB table of the store, whatever model made it (a local table counted by pylance directly,
    which costs less than a LanceDB handle opened for it)."""
    index = engine._b.index
    out = {}
    for name in index.table_names():
        dataset = local_lance_dataset(index, name)
        out[name] = dataset.count_rows() if dataset is not None else index.db.open_table(name).count_rows()
    return out


def snapshot(engine: MemoryEngine) -> dict[str, dict[str, int]]:
    """Everything countable in the store; equal snapshots before and after a call mean it wrote nothing."""
    return {"rows": row_counts(engine), "vectors": vector_counts(engine)}


def written_rows(engine: MemoryEngine) -> int:
    """Rows outside the schema bookkeeping: zero for a store nothing was ever written to."""
    return sum(n for t, n in row_counts(engine).items() if t != "schema_migrations")
