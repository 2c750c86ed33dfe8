"""The handover lock of an embedded store's DuckDB file: ``flock`` on ``<db>.lock``, held from before
``duckdb.connect()`` until after ``close()`` (why: engine/store/sql/database.py's docstring, issue 29)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path


class SidecarLocks:
    """The ``flock`` on ``<db>.lock`` that this process holds, one per database file, shared by every ``Database``
    on that file in this process (DuckDB gives them one database instance, which checkpoints only when the last of
    them closes, so the lock is let go when the last one does). Exclusive for read-write opens, shared for read-only
    ones: two read-only processes may read the file together, as DuckDB allows, but never while a writer holds it."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held: dict[str, list[int]] = {}  # lock file -> [fd, users in this process]

    def acquire(self, lock_path: Path, shared: bool) -> bool | None:
        """Take the lock without blocking: True when held, False when another process holds it, None (shared only)
        when there is no lock file: a read-only open never creates one (it writes nothing into the store)."""
        key = os.path.realpath(lock_path)
        with self._mutex:
            if key in self._held:
                self._held[key][1] += 1
                return True
            # O_CLOEXEC: a subprocess we start must not keep the lock after we let go of it
            if shared:
                try:
                    fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)  # flock needs no write access
                except FileNotFoundError:
                    return None
            else:
                try:
                    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                except PermissionError:  # another user's lock file: locking it needs no write access
                    fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            self._held[key] = [fd, 1]
            return True

    def release(self, lock_path: Path) -> None:
        key = os.path.realpath(lock_path)
        with self._mutex:
            entry = self._held.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self._held[key]
                os.close(entry[0])  # closing the only descriptor lets go of the flock

    def forget_after_fork(self) -> None:
        """A forked child shares the parent's lock descriptors; closing them in the child keeps the parent's lock
        (it still holds its own descriptor) and stops the child from holding it on after the parent lets go."""
        for fd, _ in self._held.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._held = {}
        self._mutex = threading.Lock()


SIDECAR = SidecarLocks()
os.register_at_fork(after_in_child=SIDECAR.forget_after_fork)
