"""Where a store lives, checked before anything opens it.

- An **embedded store** (the default): one local folder (or a file:// URI) holding the DuckDB file and the LanceDB
  tables (``vectors/``).
- A **team store**: the tables in a PostgreSQL database (``postgresql://user:password@host:port/db``) and the vectors
  in LanceDB tables under an object-store prefix (``s3://bucket/prefix``; endpoint, region and keys from the
  standard AWS variables) or a shared folder. Many processes on many hosts use it at once.

Passwords never leave this module unmasked: ``display`` is what errors, the CLI and the pages show.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ..config import Settings
from ..errors import InvalidInput, NotFound
from ..process_env import s3_storage_options
from ..validation import text_problem
from .sql.database import Database, release_under

if TYPE_CHECKING:
    from .sql.postgres import PostgresDatabase

TEAM_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class StoreLocation:
    folder: Path | None  # an embedded store's folder; None for a team store
    dsn: str | None  # a team store's PostgreSQL DSN (with its password: never display it)
    vectors: str  # the LanceDB location: a folder path or s3://bucket/prefix
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)  # LanceDB object-store options
    display: str = ""  # for people: the DSN with the password masked, plus where the vectors are

    @property
    def team(self) -> bool:
        return self.dsn is not None


def mask_dsn(dsn: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` (a ``password=`` query parameter
    too). Anything unparsable is shown as its scheme only."""
    try:
        parts = urlsplit(dsn)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            netloc = f"{userinfo}@{host}"
        query = "&".join(
            ("password=***" if p.lower().startswith("password=") else p) for p in parts.query.split("&") if p
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return dsn.split("://", 1)[0] + "://***"


def store_path(location: str | Path) -> Path:
    """An embedded store's folder (refuses team-store URIs: see :func:`store_location`)."""
    text = str(location)
    if not text.strip():  # "" would silently be the current directory
        raise InvalidInput("store location is empty: give a folder path (or a file:// URI)")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"store location {problem}")
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif "://" in text:
        raise InvalidInput(
            f"store {mask_dsn(text)[:80]!r}: a store is a local folder (or file:// URI) or a team store's "
            "postgresql://user@host/db"
        )
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"store {path} is a file, not a folder")
    return path


def store_location(store: str | Path, vectors: str = "", environ: Mapping[str, str] | None = None) -> StoreLocation:
    """The store at ``store`` (a folder, a file:// URI or postgresql://...) with its vectors at ``vectors`` (empty:
    the embedded store's own ``vectors/`` folder; a team store must name one)."""
    text = str(store)
    problem = text_problem(text) if text.strip() else None
    if problem:
        raise InvalidInput(f"store location {problem}")
    vectors = (vectors or "").strip()
    if text.startswith(TEAM_SCHEMES):
        parts = urlsplit(text)
        if not parts.path.strip("/") and "dbname=" not in parts.query:
            raise InvalidInput(f"team store {mask_dsn(text)!r} names no database: postgresql://user@host/DATABASE")
        if not vectors:
            raise InvalidInput(
                f"the team store {mask_dsn(text)!r} needs a place for its vectors shared by every host: set "
                "MEMLENS_VECTORS (the vectors setting, --vectors) to s3://bucket/prefix"
            )
        uri, options = _vectors(vectors, environ)
        return StoreLocation(None, text, uri, options, f"{mask_dsn(text)} + vectors {uri}")
    folder = store_path(text)
    if vectors:
        uri, options = _vectors(vectors, environ)
    else:
        uri, options = str(folder / "vectors"), {}
    return StoreLocation(folder, None, uri, options, str(folder) if not vectors else f"{folder} + vectors {uri}")


def _vectors(vectors: str, environ: Mapping[str, str] | None) -> tuple[str, dict[str, str]]:
    problem = text_problem(vectors)
    if problem:
        raise InvalidInput(f"vectors location {problem}")
    if vectors.startswith("s3://"):
        if not urlsplit(vectors).netloc:
            raise InvalidInput(f"vectors location {vectors!r} names no bucket: s3://bucket/prefix")
        return vectors.rstrip("/"), s3_storage_options(environ)
    if "://" in vectors and not vectors.startswith("file://"):
        raise InvalidInput(f"vectors location {vectors[:60]!r}: give s3://bucket/prefix or a folder")
    return str(store_path(vectors)), {}


def open_tables(location: StoreLocation, settings: Settings, db_file: str) -> tuple[Database | PostgresDatabase, bool]:
    """The store's tables, migrated, and whether they are open read-only: a team store's PostgreSQL database, or an
    embedded store's DuckDB file (a folder that cannot be written, on a read-only file system, is opened read-only
    for browsing)."""
    db: Database | PostgresDatabase
    if location.folder is None:
        from .sql.postgres import PostgresDatabase  # psycopg is loaded only for a team store

        read_only = settings.read_only
        db = PostgresDatabase(
            location.dsn or "", location.display, settings.lock_timeout_s, read_only, settings.pg_pool_size
        )
    else:
        folder = location.folder
        read_only = settings.read_only or (folder.is_dir() and not os.access(folder, os.W_OK))
        if not read_only:
            folder.mkdir(parents=True, exist_ok=True)
        db = Database(folder / db_file, settings.lock_timeout_s, settings.db_linger_s, read_only)
    try:
        db.migrate()
    except BaseException:  # a refused store (newer, corrupt) is let go at once, not after db_linger_s
        db.close()
        raise
    return db, read_only


def require_existing_store(location: StoreLocation, db_file: str) -> None:
    """For a command that only reads: an embedded store that is not there is NotFound, and nothing is created (a
    read with ``--store file:///new/dir`` used to leave that folder, migrated and empty, behind). A team store's
    database is made by its administrator, so it is left to the open to refuse."""
    if location.folder is None:
        return
    if not (location.folder / db_file).is_file():
        raise NotFound(
            f"no store at {location.display}: nothing has been stored there yet (a command that only reads does "
            "not create one)"
        )


def remove_store(path: str | Path) -> None:
    """Delete a store folder (tests and benchmarks)."""
    release_under(store_path(path))
    shutil.rmtree(store_path(path), ignore_errors=True)
