"""DuckDB access designed for several processes sharing one store.

DuckDB lets one process hold the file at a time and blocks every other process, readers included. Opening and
closing (which checkpoints) costs 15-40 ms, far more than a query (~0.3 ms), so memlens keeps its connection open
while it is busy and lets go of it when either

- it has been idle for ``linger_s`` (a background reaper closes it), or
- another memlens process is waiting: a process that finds the file locked touches ``<db>.waiting`` while it
  retries; the holder sees the fresh flag (a ``stat`` per operation, and the reaper every 20 ms), closes at the next
  operation boundary and steps aside until the waiter has the file.

So an agent writing memory and the dashboard reading it take turns instead of failing, and a process working alone
pays the open/checkpoint cost once per burst rather than per operation. A foreign process (the duckdb CLI) does not
signal and waits at most ``linger_s``. Inside one process the work is serialised by a lock, so a connection is never
used by two threads at once. ``hold()`` pins the connection across several operations (bulk loads, one retrieval).

Handing the file over safely needs a second lock. DuckDB 2.0.1's ``connect()`` reads the database header *before*
it takes its own file lock and never reads it again (strace: ``pread64(fd, ..., 12288, 0)`` on an O_RDONLY fd, then a
new O_RDWR fd and ``fcntl(F_SETLK)``). A connect that reads the header while the holder checkpoints on close, and
gets the lock once the holder is gone, works from the old header: the holder's last commits are invisible to it, and
its own checkpoint writes over them (bench/duckdb_handover.py loses committed rows this way; issue 29). So every
memlens open takes ``flock`` on ``<db>.lock`` (exclusive to write, shared to read) *before* ``connect()`` and lets it
go only *after* ``close()`` has checkpointed: no connect can read a header that another process is still writing.
"""

from __future__ import annotations

import atexit
import os
import random
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import duckdb

if TYPE_CHECKING:
    from .postgres import PgConnection

from ...errors import StoreBusy, StoreCorrupt, StoreReadOnly, StoreTooNew, disk_error
from ..migrations import MIGRATIONS
from .sidecar_lock import SIDECAR

_LOCK_MARKERS = ("could not set lock", "conflicting lock", "resource temporarily unavailable")
# A waiter re-touches its flag on every retry (at most 50 ms apart); an older flag is a waiter that gave up or died.
_FLAG_FRESH_S = 1.0
_REAPER_TICK_S = 0.02
_STEP_ASIDE_MAX_S = 0.5
_OPEN_DATABASES: weakref.WeakSet[Database] = weakref.WeakSet()
# A DuckDB file starts with a 4 KiB main header and two 4 KiB database headers, then its blocks.
_HEADER_BYTES = 3 * 4096
_DAMAGE_MARKERS = ("could not read enough bytes", "checksum", "corrupt")


@atexit.register
def _close_all() -> None:  # checkpoint on a clean exit so the next process does not replay a long WAL
    for db in list(_OPEN_DATABASES):
        db.close()


class Database:
    def __init__(
        self, path: Path, lock_timeout_s: float = 20.0, linger_s: float = 1.0, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only  # DuckDB read_only: a shared lock, no WAL, no checkpoint, writes refused
        self.lock_timeout_s = lock_timeout_s
        self.linger_s = linger_s
        self._flag = self.path.with_name(self.path.name + ".waiting")
        self._lock_file = self.path.with_name(self.path.name + ".lock")
        self._sidecar_held = False
        self._mutex = threading.RLock()
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._depth = 0
        self._idle_since = 0.0
        self._reaper: threading.Thread | None = None
        self._broken = False
        _OPEN_DATABASES.add(self)

    # -- connections ------------------------------------------------------------------------------------------------
    def _someone_waiting(self) -> bool:
        try:
            return time.time() - os.stat(self._flag).st_mtime < _FLAG_FRESH_S
        except OSError:
            return False

    def _signal_waiting(self) -> None:
        try:
            self._flag.touch()
        except OSError:  # a read-only folder: we still retry, just without asking the holder to hurry
            pass

    def _take_sidecar(self) -> bool | None:
        """The handover lock (see the module docstring): True when held, False while another process holds it, None
        for a read-only open of a store without a lock file (see ``_open``)."""
        try:
            got = SIDECAR.acquire(self._lock_file, shared=self.read_only)
        except OSError as exc:
            if not self.read_only:
                raise StoreReadOnly(
                    f"cannot create the lock file {self._lock_file} ({exc.strerror}); the store's folder cannot be "
                    "written, so open it read-only; nothing was written"
                ) from None
            raise StoreCorrupt(f"cannot open the lock file {self._lock_file}: {exc.strerror}") from None
        self._sidecar_held = bool(got)
        return got

    def _drop_sidecar(self) -> None:
        if self._sidecar_held:
            self._sidecar_held = False
            SIDECAR.release(self._lock_file)

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.005
        waited = False
        while True:
            took = self._take_sidecar()
            busy = took is False
            if not busy:
                try:
                    conn = duckdb.connect(str(self.path), read_only=self.read_only)
                    if took is None and self._lock_file.exists():
                        # Read-only, opened without the lock because there was no lock file; a writer creates it
                        # before its own connect, so one that appeared meanwhile may have been closing the file while
                        # we read its header: that view may be stale. Open again, under the lock this time.
                        conn.close()
                        continue
                    try:
                        conn.execute("SET TimeZone = 'UTC'")
                        self._check_complete(conn)
                    except BaseException:
                        conn.close()
                        raise
                    if waited:
                        self._flag.unlink(missing_ok=True)
                    return conn
                except duckdb.IOException as exc:
                    self._drop_sidecar()
                    text = str(exc).lower()
                    if not any(m in text for m in _LOCK_MARKERS):
                        raise StoreCorrupt(f"cannot open {self.path}: {str(exc).splitlines()[0]}") from None
                    busy = True  # held by a process that takes no sidecar lock (the duckdb CLI, an older memlens)
                except duckdb.Error as exc:
                    self._drop_sidecar()
                    raise StoreCorrupt(f"cannot open {self.path}: {str(exc).splitlines()[0]}") from None
                except BaseException:
                    self._drop_sidecar()
                    raise
            if busy:
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"the store {self.path} is held by another process for more than "
                        f"{self.lock_timeout_s:.0f}s; try again when it is idle"
                    ) from None
                waited = True
                self._signal_waiting()
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    def _check_complete(self, conn: duckdb.DuckDBPyConnection) -> None:
        """A file cut short (a copy or disk that ended early) opens fine and fails only on the first read of a
        missing block, as a raw IOException; every used block must lie inside the file, so say so at once."""
        row = conn.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return
        if row and size and size < _HEADER_BYTES + int(row[0]) * int(row[1]):
            raise StoreCorrupt(
                f"{self.path} is truncated: {size} bytes, but its {row[1]} used blocks need at "
                f"least {_HEADER_BYTES + int(row[0]) * int(row[1])}; restore it from a backup"
            )

    def _step_aside(self) -> None:
        """Another process asked for the file: close, and give it a moment to take the lock before we reopen."""
        self._close_now()
        until = time.monotonic() + _STEP_ASIDE_MAX_S
        while self._someone_waiting() and time.monotonic() < until:
            time.sleep(0.005)

    def _close_now(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()  # checkpoints: the header is written before the lock below is let go
            finally:
                self._drop_sidecar()

    def _reap(self) -> None:
        while True:
            time.sleep(_REAPER_TICK_S)
            if not self._mutex.acquire(blocking=False):
                continue
            try:
                if self._conn is None:
                    self._reaper = None
                    return
                if self._depth == 0 and (
                    time.monotonic() - self._idle_since >= self.linger_s or self._someone_waiting()
                ):
                    self._close_now()
                    self._reaper = None
                    return
            finally:
                self._mutex.release()

    @contextmanager
    def hold(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One connection for the duration of the block (re-entrant, this thread only)."""
        with self._mutex:
            if self._depth == 0 and self._conn is not None and self._someone_waiting():
                self._step_aside()
            if self._conn is None:
                self._conn = self._open()
                if self.linger_s > 0 and self._reaper is None:
                    self._reaper = threading.Thread(target=self._reap, name="memlens-duckdb-reaper", daemon=True)
                    self._reaper.start()
            self._depth += 1
            try:
                yield self._conn
            except duckdb.InvalidInputException as exc:
                if self.read_only and "read-only" in str(exc):  # a write that did not go through write()
                    self.refuse_if_read_only()
                raise
            except (duckdb.FatalException, duckdb.InternalException):
                # the connection is unusable after these; drop it (once the outermost block ends) and reopen next time
                self._broken = True
                raise
            except duckdb.IOException as exc:  # a block that cannot be read back: the file is damaged
                text = str(exc)
                if not any(m in text.lower() for m in _DAMAGE_MARKERS):
                    raise
                self._broken = True
                raise StoreCorrupt(f"{self.path} is damaged: {text.splitlines()[0][:200]}") from None
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._idle_since = time.monotonic()
                    if self.linger_s <= 0 or self._broken:
                        self._broken = False
                        try:
                            self._close_now()
                        except duckdb.Error:
                            self._conn = None

    def close(self) -> None:
        """Let go of the file now (checkpointing it); the next operation reopens it."""
        with self._mutex:
            if self._depth == 0:
                self._close_now()

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.hold() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A transaction: committed when the block ends, rolled back (nothing written) when it raises."""
        self.refuse_if_read_only()
        with self.hold() as conn:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield conn
            except BaseException as exc:
                conn.execute("ROLLBACK")
                named = disk_error(exc, self.path.parent) if isinstance(exc, duckdb.Error) else None
                if named is not None:
                    raise named from None
                raise
            try:
                conn.execute("COMMIT")
            except duckdb.Error as exc:  # DuckDB rolled back; a full or read-only disk gets its named error
                named = disk_error(exc, self.path.parent)
                if named is not None:
                    raise named from None
                raise

    def refuse_if_read_only(self) -> None:
        if self.read_only:
            raise StoreReadOnly(
                f"the store {self.path.parent} is open read-only (the read_only setting, or a folder "
                "that cannot be written); nothing was written"
            )

    # -- schema -----------------------------------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending migrations in order; return the names applied now."""
        if self.read_only:
            self._check_schema_read_only()
            return []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        applied_now: list[str] = []
        with self.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
            # An older memlens would otherwise read a newer schema as far as it understands it and write rows
            # without the newer columns' values (they would silently take their defaults), so it refuses instead.
            unknown = sorted(done - {name for name, _ in MIGRATIONS})
            if unknown:
                raise StoreTooNew(
                    f"{self.path} was written by a newer memlens: its schema has migration(s) "
                    f"{', '.join(unknown)} that this version does not know; upgrade memlens to open it"
                )
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", [name])
                applied_now.append(name)
        if applied_now:  # an ALTER left in the WAL made every later insert into that table slow until a checkpoint
            with self.hold() as conn:
                conn.execute("CHECKPOINT")
        return applied_now

    def _check_schema_read_only(self) -> None:
        """Read-only: nothing may be migrated, so the schema must already be this version's."""
        if not self.path.is_file():
            raise StoreReadOnly(f"no store database at {self.path} to open read-only")
        with self.read() as conn:
            try:
                done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
            except duckdb.CatalogException:
                done = set()
        unknown = sorted(done - {name for name, _ in MIGRATIONS})
        if unknown:
            raise StoreTooNew(
                f"{self.path} was written by a newer memlens: its schema has migration(s) "
                f"{', '.join(unknown)} that this version does not know; upgrade memlens to open it"
            )
        pending = [name for name, _ in MIGRATIONS if name not in done]
        if pending:
            raise StoreReadOnly(
                f"{self.path} needs {len(pending)} migration(s) ({pending[0]}...) that a read-only "
                "open cannot apply; open it read-write once with this memlens"
            )

    def migrations(self) -> list[tuple[str, object]]:
        with self.read() as conn:
            return conn.execute("SELECT name, applied_at FROM schema_migrations ORDER BY name").fetchall()


# A connection of either backend, as read() / write() / hold() give it: DuckDB's own, or PostgreSQL's wrapper with
# the same execute() (DuckDB-style SQL, `?` parameters).
Connection: TypeAlias = "duckdb.DuckDBPyConnection | PgConnection"
Row: TypeAlias = tuple[Any, ...]  # one fetched row, columns in the query's order


class _Fetches(Protocol):
    def fetchone(self) -> Any: ...


def one_row(result: _Fetches) -> tuple[Any, ...]:
    """The row of a query that always returns exactly one (an aggregate: count, sum, max): typed as present."""
    row: tuple[Any, ...] | None = result.fetchone()
    if row is None:
        raise StoreCorrupt("an aggregate query returned no row")
    return row


def release_under(folder: Path) -> None:
    """Close this process's connections to databases inside ``folder`` (before the folder is deleted or copied)."""
    folder = Path(folder).resolve()
    for db in list(_OPEN_DATABASES):
        if db.path.resolve().is_relative_to(folder):
            db.close()
