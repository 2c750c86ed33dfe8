"""A content snapshot of a store: every row and every column of every DuckDB table and every LanceDB table, hashed.

Row counts miss an UPDATE, a changed vector or a rewritten text; this does not. Two equal snapshots mean the store's
contents did not change at all (the LanceDB version number is left out on purpose: a read may refresh a handle, and
a no-op maintenance commit changes no row). Rows are sorted by their own encoding, so the order a scan returns them
in does not matter. Part B (forgetting, crash consistency) reuses this module.

It is taken hundreds of times per hostile-input module, so the work is done in bulk (it cost ~51 ms when every value
went through Python): DuckDB writes every row of every table as text in one query (see duckdb_tables); LanceDB tables
are read as Arrow, their vectors hashed as whole numpy matrices (each row's bytes), only the few scalar columns as
Python values. Each row's text is hashed length-prefixed, so no two different sets of rows give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engine import MemoryEngine
from engine.store.schema import BY_NAME


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tobytes().hex()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)  # timestamps, decimals, ...


@dataclass(frozen=True)
class StoreSnapshot:
    duckdb: dict[str, tuple[int, str]]
    lancedb: dict[str, tuple[int, str]]

    def diff(self, other: StoreSnapshot) -> list[str]:
        """The tables whose contents differ (empty when nothing changed), for an assertion message."""
        out = []
        for label, mine, theirs in (("duckdb", self.duckdb, other.duckdb), ("lancedb", self.lancedb, other.lancedb)):
            for name in sorted(set(mine) | set(theirs)):
                if mine.get(name) != theirs.get(name):
                    out.append(
                        f"{label}.{name}: {mine.get(name, ('absent',))[0]} -> {theirs.get(name, ('absent',))[0]}"
                        " rows (contents differ)"
                    )
        return out


def sql_name(name: str) -> str:
    """A table name as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def sql_text(text: str) -> str:
    """A string as a SQL literal."""
    return "'" + text.replace("'", "''") + "'"


def _framed(h: Any, text: str) -> None:
    data = text.encode()
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


def duckdb_tables(engine: MemoryEngine) -> dict[str, tuple[int, str]]:
    """Each table's rows as DuckDB's own text of the whole row (``row::VARCHAR``: every column by name; strings quoted
    and escaped whenever they hold a delimiter, so no two different rows share a text; doubles as the shortest text
    that reads back to the same bits; JSON columns as their raw text; BLOBs byte for byte), all tables in one query.
    A query per table cost ~1 ms of binding and planning each; so did an expression per column."""
    with engine._b.db.read() as conn:
        tables = conn.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' ORDER BY 1"
        ).fetchall()
        if not tables:
            return {}
        # A table the registry does not declare would be missed by copy-store, delete_user and export: say so here,
        # where every snapshot test would otherwise silently hash it along.
        undeclared = sorted(name for name, _ in tables if name not in BY_NAME)
        assert not undeclared, f"tables missing from engine/store/schema.py: {undeclared}"
        rows: dict[str, list[str]] = {name: [] for name, _ in tables}
        union = " UNION ALL ".join(
            f"SELECT {sql_text(name)}, CAST(r AS VARCHAR) FROM {sql_name(name)} AS r" for name, _ in tables
        )
        for name, text in conn.execute(union).fetchall():
            rows[name].append(text)
    out = {}
    for name, ddl in tables:
        h = hashlib.sha256()
        _framed(h, ddl)  # the columns, by name and type, even of an empty table
        for text in sorted(rows[name]):  # the order a scan returns rows in does not matter
            _framed(h, text)
        out[name] = (len(rows[name]), h.hexdigest())
    return out


def _arrow_cells(column: pa.ChunkedArray) -> list[Any]:
    """The column's values, each as :func:`_plain` would make it; a vector column goes through numpy in one piece."""
    kind = column.type
    if pa.types.is_fixed_size_list(kind) and pa.types.is_primitive(kind.value_type) and column.null_count == 0:
        values = column.combine_chunks().flatten()
        if values.null_count == 0:
            matrix = values.to_numpy(zero_copy_only=False).reshape(len(column), kind.list_size)
            return [row.tobytes().hex() for row in matrix]
    return [_plain(v) for v in column.to_pylist()]


def _arrow_digest(data: pa.Table) -> tuple[int, str]:
    """(rows, sha256 over the sorted rows, each row a JSON list of all its columns in name order)."""
    names = sorted(data.column_names)
    cells = [_arrow_cells(data.column(n)) for n in names]
    rows = sorted(json.dumps(list(r), sort_keys=True, ensure_ascii=True) for r in zip(*cells))
    h = hashlib.sha256(json.dumps(names).encode())
    for r in rows:
        h.update(r.encode())
        h.update(b"\n")
    return data.num_rows, h.hexdigest()


def local_lance_dataset(index: Any, name: str) -> Any | None:
    """The table as a pylance dataset when the store's vectors are a local folder, else None (use LanceDB). Reading
    it directly costs ~3x less CPU than through LanceDB's handle, whose open, checkout_latest and to_arrow each cross
    to its background event loop."""
    path = Path(index.uri) / f"{name}.lance"
    if "://" in str(index.uri) or not path.is_dir():
        return None
    import lance

    return lance.dataset(str(path))


def _lance_table(index: Any, name: str) -> pa.Table:
    """The table's latest version."""
    dataset = local_lance_dataset(index, name)
    if dataset is not None:
        return dataset.to_table()
    table = index.db.open_table(name)
    table.checkout_latest()
    return table.to_arrow()


def lancedb_tables(engine: MemoryEngine) -> dict[str, tuple[int, str]]:
    index = engine._b.index
    return {name: _arrow_digest(_lance_table(index, name)) for name in index.table_names()}


def snapshot(engine: MemoryEngine) -> StoreSnapshot:
    """Every DuckDB and LanceDB table of ``engine``'s store, all rows and columns, hashed."""
    return StoreSnapshot(duckdb_tables(engine), lancedb_tables(engine))


def assert_unchanged(before: StoreSnapshot, engine: MemoryEngine, what: str = "") -> None:
    after = snapshot(engine)
    assert after == before, f"{what}: the store changed: {before.diff(after)}"
