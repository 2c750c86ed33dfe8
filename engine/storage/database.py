"""DuckDB access designed for several processes sharing one store.

DuckDB lets one process hold the file at a time and blocks every other process, readers included. So memlens opens
a connection per unit of work (a few milliseconds), retries with backoff while another process holds the lock, and
closes it again, so an agent writing memory and the dashboard reading it take turns instead of failing. Inside one
process the work is serialised by a lock, so a connection is never shared between threads. ``hold()`` keeps one
connection open across several operations (bulk loads, one retrieval) to avoid re-opening.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..errors import StoreBusy, StoreCorrupt
from .migrations import MIGRATIONS

_LOCK_MARKERS = ("could not set lock", "conflicting lock", "resource temporarily unavailable")


class Database:
    def __init__(self, path: Path, lock_timeout_s: float = 20.0) -> None:
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s
        self._mutex = threading.RLock()
        self._held: duckdb.DuckDBPyConnection | None = None
        self._depth = 0

    # -- connections ------------------------------------------------------------------------------------------------
    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.005
        while True:
            try:
                conn = duckdb.connect(str(self.path))
                conn.execute("SET TimeZone = 'UTC'")
                return conn
            except duckdb.IOException as exc:
                text = str(exc).lower()
                if not any(m in text for m in _LOCK_MARKERS):
                    raise StoreCorrupt(f"cannot open {self.path}: {str(exc).splitlines()[0]}") from None
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"the store {self.path} is held by another process for more than "
                        f"{self.lock_timeout_s:.0f}s; try again when it is idle") from None
            except duckdb.Error as exc:
                raise StoreCorrupt(f"cannot open {self.path}: {str(exc).splitlines()[0]}") from None
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.2)

    @contextmanager
    def hold(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Keep one connection open for the duration of the block (re-entrant, this thread only)."""
        with self._mutex:
            if self._held is None:
                self._held = self._open()
            self._depth += 1
            try:
                yield self._held
            finally:
                self._depth -= 1
                if self._depth == 0:
                    conn, self._held = self._held, None
                    conn.close()

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.hold() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A transaction: committed when the block ends, rolled back (nothing written) when it raises."""
        with self.hold() as conn:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- schema -----------------------------------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending migrations in order; return the names applied now."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        applied_now: list[str] = []
        with self.write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, "
                         "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", [name])
                applied_now.append(name)
        return applied_now

    def migrations(self) -> list[tuple[str, object]]:
        with self.read() as conn:
            return conn.execute("SELECT name, applied_at FROM schema_migrations ORDER BY name").fetchall()
