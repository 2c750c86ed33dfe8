"""The handover lock of an embedded store (issue 29): ``flock`` on ``<db>.lock`` from before DuckDB's ``connect()``
until after its ``close()``, because DuckDB reads the database header before it takes its own lock (see
engine/store/sql/database.py). Checked with a second descriptor of the same lock file, which ``flock`` treats like
another process, and with real processes where a descriptor could be shared (fork) or the holder is elsewhere."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.errors import StoreBusy, StoreCorrupt
from engine.store.sql.database import Database


def lock_is_free(db_file: Path) -> bool:
    """Whether another process could take the exclusive lock now (a new descriptor is a stranger to ``flock``)."""
    fd = os.open(db_file.with_name(db_file.name + ".lock"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.fixture
def db_file(tmp_path) -> Path:
    db = Database(tmp_path / "memlens.duckdb", lock_timeout_s=5, linger_s=0)
    db.migrate()
    db.close()
    return db.path


def test_the_lock_is_held_while_connected_and_let_go_only_after_the_close(db_file):
    db = Database(db_file, lock_timeout_s=5, linger_s=60)
    with db.read() as conn:
        conn.execute("SELECT 1").fetchone()
        assert not lock_is_free(db_file)
    assert not lock_is_free(db_file)  # lingering: still connected, still locked
    db.close()
    assert lock_is_free(db_file)


def test_a_read_only_open_shares_the_lock_with_other_readers_and_keeps_writers_out(db_file):
    reader = Database(db_file, lock_timeout_s=5, linger_s=60, read_only=True)
    with reader.read():
        fd = os.open(db_file.with_name(db_file.name + ".lock"), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another reader: fine
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        assert not lock_is_free(db_file)
    reader.close()
    assert lock_is_free(db_file)


@pytest.mark.subprocess
def test_a_process_holding_the_lock_makes_an_open_wait_and_then_raise_store_busy(db_file, tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "time.sleep(30)\n",
            str(db_file.with_name(db_file.name + ".lock")),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        db = Database(db_file, lock_timeout_s=0.5, linger_s=0)
        started = time.monotonic()
        with pytest.raises(StoreBusy), db.read():
            pass
        assert time.monotonic() - started >= 0.5
        assert db_file.with_name(db_file.name + ".waiting").exists()  # it asked the holder to let go
    finally:
        holder.kill()
        holder.wait()
    with Database(db_file, lock_timeout_s=5, linger_s=0).read() as conn:  # the holder's death let go of it
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_an_open_that_fails_lets_go_of_the_lock(tmp_path):
    bad = tmp_path / "memlens.duckdb"
    bad.write_bytes(b"not a database at all" * 1000)
    db = Database(bad, lock_timeout_s=1, linger_s=60)
    with pytest.raises(StoreCorrupt), db.read():
        pass
    assert lock_is_free(bad)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_does_not_keep_the_lock_after_the_parent_lets_go(db_file):
    db = Database(db_file, lock_timeout_s=5, linger_s=60)
    with db.read():
        pid = os.fork()
        if pid == 0:  # the child outlives the parent's connection; it must not hold the lock on
            time.sleep(3)
            os._exit(0)
    try:
        db.close()
        assert lock_is_free(db_file)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_a_read_only_open_of_a_store_without_a_lock_file_creates_none(db_file):
    lock = db_file.with_name(db_file.name + ".lock")
    lock.unlink()  # a store last written by a memlens without the lock
    before = sorted(p.name for p in db_file.parent.iterdir())
    reader = Database(db_file, lock_timeout_s=5, linger_s=0, read_only=True)
    with reader.read() as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] > 0
    assert sorted(p.name for p in db_file.parent.iterdir()) == before
