"""Moving a store: every table row (traces, logs, evaluations included) and every LanceDB vector table, from an
embedded store to a team store or back, without re-embedding anything. The destination must be empty; the row and
vector counts of both sides are compared at the end.

Rows keep their ids (and the counter-made ids of the history tables, whose sequences are moved past them); vector
tables keep their rows, schema and model metadata, and get the full-text and user indexes memlens builds on a first
write. Approximate vector indexes are not copied: ``optimize`` builds them where the store is big enough.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from ..config import Settings
from ..errors import InvalidInput, StoreCorrupt
from ..startup import collector_paused
from .location import StoreLocation, open_tables, store_location
from .schema import COPIED, SEQUENCES
from .sql.database import Connection, one_row
from .vectors.maintenance import index_key_ids
from .vectors.tables import KEYS_SUFFIX

if TYPE_CHECKING:
    import duckdb
    import lancedb

    from .sql.database import Database
    from .sql.postgres import PostgresDatabase

BATCH_ROWS = 5000
DB_FILE = "memlens.duckdb"


@dataclass(frozen=True)
class CopyReport:
    source: str  # displays: passwords masked
    destination: str
    rows: dict[str, int]  # table -> rows copied (equal on both sides, checked)
    vectors: dict[str, int]  # LanceDB table -> rows copied (equal on both sides, checked)


def _columns(conn: Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND table_schema IN ('main', 'public') ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [r[0] for r in rows]


def _insert(conn: Connection, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    copy_rows = getattr(conn, "copy_rows", None)
    if copy_rows is not None:  # PostgreSQL: COPY
        copy_rows(table, columns, rows)
        return
    duck = cast("duckdb.DuckDBPyConnection", conn)  # only PostgreSQL's connection has copy_rows
    data = pa.table({name: pa.array([r[n] for r in rows]) for n, name in enumerate(columns)})
    view = f"memlens_copy_{table}"
    duck.register(view, data)
    try:
        names = ", ".join(columns)
        conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}").fetchall()  # finished, see below
    finally:
        duck.unregister(view)


def _advance_sequence(conn: Connection, table: str, sequence: str) -> None:
    """The destination's next id after the copied ones (table and sequence names are ours)."""
    top = int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchall()[0][0])
    if top <= 0:
        return
    if hasattr(conn, "copy_rows"):  # PostgreSQL
        conn.execute(f"SELECT setval('{sequence}', ?)", [top]).fetchall()
    else:  # DuckDB has no setval: draw the sequence up to the copied ids
        conn.execute(f"SELECT max(nextval('{sequence}')) FROM range(?)", [top]).fetchall()  # fetched: DuckDB
        # refuses other work on a connection with an unfinished result


def _vector_db(location: StoreLocation) -> lancedb.DBConnection:
    with collector_paused():  # see engine/startup.py
        import lancedb

    return lancedb.connect(location.vectors, storage_options=dict(location.storage_options) or None)


def _vector_names(db: lancedb.DBConnection) -> list[str]:
    result = db.list_tables()
    return sorted(getattr(result, "tables", result))


def copy_store(
    source: str,
    destination: str,
    source_vectors: str = "",
    destination_vectors: str = "",
    settings: Settings | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> CopyReport:
    """Copy the store at ``source`` into the empty store at ``destination`` (each a folder or a postgresql:// DSN,
    with its vectors location for a team store). Nothing is re-embedded. Raises InvalidInput when the destination
    already holds anything, StoreCorrupt when the counts differ at the end."""
    from lancedb.index import FTS, BTree

    base = settings or Settings.from_env()
    src = store_location(source, source_vectors)
    dst = store_location(destination, destination_vectors)
    if (src.folder, src.dsn, src.vectors) == (dst.folder, dst.dsn, dst.vectors):
        raise InvalidInput("copy-store: the source and the destination are the same store")
    src_db, _ = open_tables(src, base.with_overrides({"read_only": True}), DB_FILE)
    dst_db, _ = open_tables(dst, base.with_overrides({"read_only": False}), DB_FILE)
    src_vec, dst_vec = _vector_db(src), _vector_db(dst)
    try:
        with dst_db.read() as conn:
            used = [t for t in COPIED if int(one_row(conn.execute(f"SELECT count(*) FROM {t}"))[0])]
        if used or _vector_names(dst_vec):
            raise InvalidInput(
                f"copy-store: the destination {dst.display} is not empty "
                f"({', '.join(used) or 'vector tables'}); copy into a new store"
            )
        rows: dict[str, int] = {}
        with src_db.hold() as read, dst_db.write() as write:  # all rows or none
            for table in COPIED:  # every table the registry says is copied, parents before children
                columns = _columns(read, table)
                result = read.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid")
                n = 0
                while batch := result.fetchmany(BATCH_ROWS):
                    _insert(write, table, columns, [tuple(r) for r in batch])
                    n += len(batch)
                rows[table] = n
                if table in SEQUENCES:
                    _advance_sequence(write, table, SEQUENCES[table])
                if progress:
                    progress(table, n)
        vectors: dict[str, int] = {}
        for name in _vector_names(src_vec):
            data = src_vec.open_table(name).to_arrow()
            tb = dst_vec.create_table(name, data=data, schema=data.schema)
            if data.num_rows:
                tb.create_index("text", config=FTS())
                tb.create_index("user_id", config=BTree())
                if name.endswith(KEYS_SUFFIX):
                    index_key_ids(tb)
            vectors[name] = data.num_rows
            if progress:
                progress(name, data.num_rows)
        _check_counts(src_db, dst_db, src_vec, dst_vec, rows, vectors)
        return CopyReport(src.display, dst.display, rows, vectors)
    finally:
        src_db.close()
        dst_db.close()


def _check_counts(
    src_db: Database | PostgresDatabase,
    dst_db: Database | PostgresDatabase,
    src_vec: lancedb.DBConnection,
    dst_vec: lancedb.DBConnection,
    rows: dict[str, int],
    vectors: dict[str, int],
) -> None:
    wrong: list[str] = []
    with src_db.read() as a, dst_db.read() as b:
        for table in COPIED:
            left = int(one_row(a.execute(f"SELECT count(*) FROM {table}"))[0])
            right = int(one_row(b.execute(f"SELECT count(*) FROM {table}"))[0])
            if not left == right == rows[table]:
                wrong.append(f"{table}: {left} in the source, {right} in the destination")
    for name, n in vectors.items():
        left, right = src_vec.open_table(name).count_rows(), dst_vec.open_table(name).count_rows()
        if not left == right == n:
            wrong.append(f"vectors {name}: {left} in the source, {right} in the destination")
    if wrong:
        raise StoreCorrupt(
            "copy-store: counts differ after the copy (was the source written meanwhile?): " + "; ".join(wrong)
        )
