"""A content snapshot of a store: every row and every column of every DuckDB table and every LanceDB table, hashed.

Row counts miss an UPDATE, a changed vector or a rewritten text; this does not. Two equal snapshots mean the store's
contents did not change at all (the LanceDB version number is left out on purpose: a read may refresh a handle, and
a no-op maintenance commit changes no row). Rows are sorted by their own encoding, so the order a scan returns them
in does not matter. Part B (forgetting, crash consistency) reuses this module.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import MemoryEngine


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


def _digest(names: list[str], rows: list[Any]) -> tuple[int, str]:
    """(rows, sha256 over the sorted rows, each row a JSON list of all its columns in name order)."""
    order = sorted(range(len(names)), key=lambda n: names[n])
    names = [names[n] for n in order]
    rows = sorted(json.dumps(_plain([r[n] for n in order]), sort_keys=True, ensure_ascii=True) for r in rows)
    h = hashlib.sha256(json.dumps(names).encode())
    for r in rows:
        h.update(r.encode())
        h.update(b"\n")
    return len(rows), h.hexdigest()


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


def duckdb_tables(engine: MemoryEngine) -> dict[str, tuple[int, str]]:
    with engine._b.db.read() as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
            ).fetchall()
        ]
        out = {}
        for n in names:
            rows = conn.execute(f'SELECT * FROM "{n}"').fetchall()
            out[n] = _digest([d[0] for d in conn.description], rows)
        return out


def lancedb_tables(engine: MemoryEngine) -> dict[str, tuple[int, str]]:
    index = engine._b.index
    out = {}
    for name in index.table_names():
        table = index.db.open_table(name)
        table.checkout_latest()
        data = table.to_arrow()
        out[name] = _digest(data.column_names, list(zip(*(data.column(c).to_pylist() for c in data.column_names))))
    return out


def snapshot(engine: MemoryEngine) -> StoreSnapshot:
    """Every DuckDB and LanceDB table of ``engine``'s store, all rows and columns, hashed."""
    return StoreSnapshot(duckdb_tables(engine), lancedb_tables(engine))


def assert_unchanged(before: StoreSnapshot, engine: MemoryEngine, what: str = "") -> None:
    after = snapshot(engine)
    assert after == before, f"{what}: the store changed: {before.diff(after)}"
