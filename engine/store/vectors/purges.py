"""Purging a hard-forgotten memory's bytes from LanceDB's files, safely for readers in other processes.

Deleting a row in LanceDB only writes a deletion file: the row stays in its data file, and every older table version
still lists it as live. So a hard forget owes each of the kind's tables a purge, recorded in the forget's own DuckDB
transaction (``vector_purges``, so a crash cannot lose it), and then

1. at once, rewrites the data files that hold deleted rows and rebuilds the full-text index
   (``VectorIndex.materialize_deletions``): the latest version no longer holds the text; nothing is deleted yet, so
   a reader still on an older version goes on undisturbed;
2. ``grace_s`` later deletes every version replaced more than ``grace_s`` ago, with its files
   (``prune_versions``: the clock starts when a version stopped being the latest, not when it was written).

Why no reader can be on a pruned version: memlens opens tables with a zero read-consistency interval, so every
query starts on the latest version and holds its snapshot only while it runs (milliseconds; a brute-force search
of 100k rows ~170 ms). A version replaced ``grace_s`` ago is therefore used by no query that started after it was
replaced, and a query that started before would have to have run for ``grace_s``. Should one still be reading (a
stalled process), LanceDB fails its read with a not-found error for the deleted file, never with wrong data and
never harming the table: memlens' reads catch that, move to the latest version and read once more
(``VectorIndex._read``). A compaction or index build in another process that loses its files fails before its
commit and leaves the table as it was. The latest version is never deleted.

Step 2 runs on a timer thread of the forgetting process; a process that exits waits for it (at most ``grace_s``
plus the pruning), and one killed before it ran leaves the purge owed: the next memlens process to open the store
runs it.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from datetime import datetime
from typing import TYPE_CHECKING

from ..sql.database import Database
from .index import VectorIndex

if TYPE_CHECKING:
    from ..sql.database import Connection
    from ..sql.postgres import PostgresDatabase

log = logging.getLogger(__name__)
_SCHEDULERS: weakref.WeakSet[VectorPurges] = weakref.WeakSet()


@atexit.register
def _finish_all() -> None:  # a short-lived process (the CLI's forget) still purges before it exits
    for scheduler in list(_SCHEDULERS):
        scheduler.wait()


class VectorPurges:
    def __init__(self, db: Database | PostgresDatabase, index: VectorIndex, grace_s: float) -> None:
        self.db = db
        self.index = index
        self.grace_s = max(0.0, float(grace_s))
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        _SCHEDULERS.add(self)

    @staticmethod
    def owe(conn: Connection, kind: str, at: datetime) -> None:
        """Record, inside the forget's transaction, that ``kind``'s tables need a purge."""
        conn.execute(
            "INSERT INTO vector_purges (kind, requested_at) VALUES (?, ?) "
            "ON CONFLICT (kind) DO UPDATE SET requested_at = excluded.requested_at",
            [kind, at],
        )

    def owed(self) -> list[tuple[str, datetime]]:
        with self.db.read() as conn:
            return [
                (r[0], r[1])
                for r in conn.execute("SELECT kind, requested_at FROM vector_purges ORDER BY kind").fetchall()
            ]

    def start(self, kind: str) -> None:
        """Run the kind's owed purge in the background (materialize now, prune after the grace)."""
        thread = threading.Thread(target=self._run_logged, args=(kind,), name=f"memlens-purge-{kind}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def start_owed(self) -> list[str]:
        """Start every purge still owed (a process that owed it was killed first); at open."""
        kinds = [k for k, _ in self.owed()]
        for kind in kinds:
            self.start(kind)
        return kinds

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the running purges; True when none is left running."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)

    def _run_logged(self, kind: str) -> None:
        try:
            self.run(kind)
        except Exception as exc:  # housekeeping: the purge stays owed and the next open runs it again
            log.warning("purging forgotten rows from the %s vectors failed (it stays owed): %s", kind, exc)

    def run(self, kind: str) -> None:
        """Materialize the deletions of every table of ``kind``, wait out the grace, prune; then clear the debt
        (unless a newer forget owes another purge meanwhile)."""
        with self.db.read() as conn:
            row = conn.execute("SELECT requested_at FROM vector_purges WHERE kind=?", [kind]).fetchone()
        if row is None:
            return
        requested = row[0]
        kept = self.grace_s > 0  # with no grace, pruning keeps only the latest version: no gap needed between commits
        clean = {
            name: self.index.materialize_deletions(name, versions_kept=kept) for name in self.index.kind_tables(kind)
        }
        pending = dict(clean)
        deadline = time.monotonic() + self.grace_s + 60.0
        time.sleep(self.grace_s)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                if self.index.prune_old_versions(name, self.grace_s, pending[name]):
                    del pending[name]
            if pending:
                time.sleep(min(1.0, self.grace_s) + 0.2)
        if pending:
            log.warning("old versions of %s are still held; the purge stays owed", ", ".join(pending))
            return
        with self.db.write() as conn:
            conn.execute("DELETE FROM vector_purges WHERE kind=? AND requested_at=?", [kind, requested])
