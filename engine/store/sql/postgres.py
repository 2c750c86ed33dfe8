"""The tables of a team store on PostgreSQL, with the contract of :class:`engine.store.sql.database.Database`.

Why not DuckDB attached to PostgreSQL: DuckDB 2.0 has no installable ``postgres`` extension offline (the extension
wheels stop at DuckDB 1.5.x), so the tables go through psycopg 3 and a connection pool. The memory modules keep their
SQL; ``engine.store.sql.dialect`` adapts the few DuckDB-only phrases, so both stores run the same queries.

The contract, as the modules rely on it:

- ``read()`` / ``hold()`` yield a connection whose ``execute(sql, params)`` returns something with ``fetchone()`` and
  ``fetchall()``; statements outside ``write()`` run in autocommit.
- ``write()`` is one transaction, committed when the block ends and rolled back when it raises (all or nothing). It
  starts by taking a transaction-scoped advisory lock, so writers are serialised store-wide as they are on DuckDB
  (one writer at a time): a module's read-then-write inside one ``write()`` (the next message ``seq``, a skill's next
  version) cannot race a writer on another host. Readers are not blocked. A writer that cannot get the lock within
  ``lock_timeout_s`` gets StoreBusy, like a DuckDB file held too long.
- Each thread has its own connection from the pool for the duration of its outermost block (a pooled connection is
  never shared by two threads); ``hold()`` pins it across several operations.
- JSON columns come back as text and integer sums as ints, as from DuckDB.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Loader
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import StoreBusy, StoreReadOnly, StoreTooNew
from ..migrations import MIGRATIONS
from .dialect import ddl_to_postgres, is_numbered, to_postgres

# pg_advisory_xact_lock key of memlens' writers (any fixed 64-bit number; advisory locks are per database).
WRITE_LOCK_KEY = 0x6D656D6C656E73  # "memlens"
POOL_MAX_SIZE = 8  # connections per process when none is given; the engine passes Settings.pg_pool_size
_OPEN: weakref.WeakSet[PostgresDatabase] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for db in list(_OPEN):
        db.close()


class _NumberLoader(Loader):
    """NUMERIC (PostgreSQL's sum of BIGINTs, avg of integers) as int when integral text, else float: what DuckDB
    gives for the same aggregates, so callers see the same Python types from both stores."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        if text.lstrip("-").isdigit():
            return int(text)
        return float(text)


def _configure(conn: psycopg.Connection) -> None:
    conn.adapters.register_loader("json", TextLoader)
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("numeric", _NumberLoader)


class PgConnection:
    """What the modules see: ``execute`` with DuckDB-style SQL and ``?`` parameters, on one pooled connection."""

    def __init__(self, raw: psycopg.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor:
        cur = self.raw.cursor()
        values: Sequence[Any] | dict[str, Any] = tuple(params) if params is not None else ()
        if is_numbered(sql):
            values = {f"p{n}": v for n, v in enumerate(values, 1)}
        cur.execute(to_postgres(sql), values)
        return cur

    def copy_rows(self, table: str, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Bulk insert with COPY (``table`` and ``names`` come from the code, the values are data)."""
        cur = self.raw.cursor()
        with cur.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


class _ThreadState(threading.local):
    conn: PgConnection | None = None
    depth = 0
    in_transaction = False
    broken = False


class PostgresDatabase:
    """A store's tables in one PostgreSQL database. ``display`` names it with the password masked (errors, pages)."""

    def __init__(
        self, dsn: str, display: str, lock_timeout_s: float = 20.0, read_only: bool = False, pool_size: int = 0
    ) -> None:
        self.dsn = dsn
        self.display = display
        self.read_only = read_only
        self.lock_timeout_s = lock_timeout_s
        self.pool_size = pool_size or POOL_MAX_SIZE
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        self._local = _ThreadState()
        self._holding = 0  # threads inside a block (close() waits for none)
        _OPEN.add(self)

    # -- connections ------------------------------------------------------------------------------------------------
    def _options(self) -> str:
        timeout_ms = max(1, int(self.lock_timeout_s * 1000))
        options = f"-c TimeZone=UTC -c lock_timeout={timeout_ms}"
        if self.read_only:  # a write that slips past refuse_if_read_only() still fails, in the server
            options += " -c default_transaction_read_only=on"
        return options

    def _get_pool(self) -> ConnectionPool:
        with self._pool_lock:
            if self._pool is None:
                # Probe once with a plain connection: an unreachable server or a refused login is said at once, in
                # the server's words, instead of after the pool's timeout.
                try:
                    psycopg.connect(self.dsn, connect_timeout=max(1, int(self.lock_timeout_s))).close()
                except psycopg.OperationalError as exc:
                    raise StoreBusy(
                        f"cannot reach the team store {self.display}: {str(exc).strip().splitlines()[-1][:200]}"
                    ) from None
                pool = ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs={"autocommit": True, "options": self._options()},
                    configure=_configure,
                    timeout=self.lock_timeout_s,
                    open=False,
                    name="memlens",
                )
                pool.open(wait=True, timeout=max(self.lock_timeout_s, 1.0))
                self._pool = pool
            return self._pool

    @contextmanager
    def hold(self) -> Iterator[PgConnection]:
        """This thread's pooled connection for the duration of the block (re-entrant)."""
        local = self._local
        if local.conn is None:
            pool = self._get_pool()
            try:
                raw = pool.getconn()
            except PoolTimeout:
                raise StoreBusy(
                    f"no connection to the team store {self.display} within {self.lock_timeout_s:.0f}s "
                    f"(all {self.pool_size} of this process's connections busy)"
                ) from None
            local.conn, local.depth, local.broken = PgConnection(raw), 0, False
            with self._pool_lock:
                self._holding += 1
        local.depth += 1
        try:
            yield local.conn
        except pg_errors.ReadOnlySqlTransaction:
            self.refuse_if_read_only(force=True)
            raise
        except pg_errors.LockNotAvailable:
            raise StoreBusy(
                f"the team store {self.display} was locked by another writer for more than "
                f"{self.lock_timeout_s:.0f}s; try again"
            ) from None
        except psycopg.OperationalError:
            local.broken = True  # a dropped connection: give it back closed, the pool replaces it
            raise
        finally:
            local.depth -= 1
            if local.depth == 0:
                conn, local.conn = local.conn, None
                if conn is not None:
                    if local.broken:
                        conn.raw.close()
                    current = self._pool
                    if current is not None:
                        current.putconn(conn.raw)
                    else:
                        conn.raw.close()
                with self._pool_lock:
                    self._holding -= 1

    def close(self) -> None:
        """Close the pool's connections now (a new pool opens on the next operation)."""
        with self._pool_lock:
            pool = self._pool if self._holding == 0 else None
            if pool is not None:
                self._pool = None
        if pool is not None:
            pool.close()

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        with self.hold() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A transaction: committed when the block ends, rolled back (nothing written) when it raises."""
        self.refuse_if_read_only()
        with self.hold() as conn:
            local = self._local
            if local.in_transaction:
                raise RuntimeError("write() inside write(): a transaction is already open on this thread")
            conn.raw.execute("BEGIN")
            local.in_transaction = True
            try:
                conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
                yield conn
            except BaseException:
                local.in_transaction = False
                try:
                    conn.raw.execute("ROLLBACK")
                except psycopg.Error:  # the connection is gone: the server has rolled back already
                    local.broken = True
                raise
            local.in_transaction = False
            conn.raw.execute("COMMIT")

    def refuse_if_read_only(self, force: bool = False) -> None:
        if self.read_only or force:
            raise StoreReadOnly(
                f"the team store {self.display} is open read-only (the read_only setting); nothing was written"
            )

    # -- schema -----------------------------------------------------------------------------------------------------
    def _recorded(self, conn: PgConnection) -> set[str]:
        try:
            with conn.raw.transaction():  # a savepoint inside write(): a missing table must not abort it
                return {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
        except pg_errors.UndefinedTable:
            return set()

    def _refuse_unknown(self, done: set[str]) -> None:
        unknown = sorted(done - {name for name, _ in MIGRATIONS})
        if unknown:
            raise StoreTooNew(
                f"{self.display} was written by a newer memlens: its schema has migration(s) "
                f"{', '.join(unknown)} that this version does not know; upgrade memlens to open it"
            )

    def migrate(self) -> list[str]:
        """Apply pending migrations in order, each recorded in ``schema_migrations``; return the names applied now.
        Several processes opening a new store at once take turns (the write lock)."""
        if self.read_only:
            with self.read() as conn:
                done = self._recorded(conn)
            self._refuse_unknown(done)
            pending = [name for name, _ in MIGRATIONS if name not in done]
            if pending:
                raise StoreReadOnly(
                    f"{self.display} needs {len(pending)} migration(s) ({pending[0]}...) that a read-only "
                    "open cannot apply; open it read-write once with this memlens"
                )
            return []
        applied_now: list[str] = []
        with self.write() as conn:
            conn.raw.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            done = self._recorded(conn)
            self._refuse_unknown(done)
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                conn.raw.execute(ddl_to_postgres(sql))  # no parameters: several statements in one call
                conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", [name])
                applied_now.append(name)
        return applied_now

    def migrations(self) -> list[tuple[str, object]]:
        with self.read() as conn:
            return conn.execute("SELECT name, applied_at FROM schema_migrations ORDER BY name").fetchall()


def close_databases(dsn: str) -> None:
    """Close this process's pools to the database at ``dsn`` (before it is dropped, or a store is copied)."""
    for db in list(_OPEN):
        if db.dsn == dsn:
            db.close()
