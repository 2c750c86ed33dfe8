"""Read a store's real contents (every DuckDB table, every LanceDB table) to prove what was or was not written."""

from __future__ import annotations

from engine import MemoryEngine


def row_counts(engine: MemoryEngine) -> dict[str, int]:
    """Rows in every DuckDB table of the store, schema_migrations included."""
    with engine._b.db.read() as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema IN ('main', 'public') "
                "AND table_type = 'BASE TABLE' ORDER BY 1"
            ).fetchall()
        ]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def vector_counts(engine: MemoryEngine) -> dict[str, int]:
    """Rows in every LanceDB table of the store, whatever model made it."""
    index = engine._b.index
    return {name: index.db.open_table(name).count_rows() for name in index.table_names()}


def snapshot(engine: MemoryEngine) -> dict[str, dict[str, int]]:
    """Everything countable in the store; equal snapshots before and after a call mean it wrote nothing."""
    return {"rows": row_counts(engine), "vectors": vector_counts(engine)}


def written_rows(engine: MemoryEngine) -> int:
    """Rows outside the schema bookkeeping: zero for a store nothing was ever written to."""
    return sum(n for t, n in row_counts(engine).items() if t != "schema_migrations")
