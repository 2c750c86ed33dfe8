"""Opening and creating the LanceDB tables of a vector index, one per (memory kind, embedding model).

A table is only ever opened for the model that made it (its schema metadata names the model and dimension), so
vectors of different models never meet. Reads of a table go through ``_read``, which survives a version pruned
under the reader; searches are in search.py, upkeep in maintenance.py, writes in index.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import pyarrow as pa

from ...errors import InvalidInput, ModelMismatch, StoreCorrupt, StoreReadOnly
from ...startup import collector_paused
from ...vocab import KINDS  # every memory kind has a vector table (vocab is plain values: storage may import it)
from .datasets import OpenDatasets
from .resident import ResidentVectors

if TYPE_CHECKING:
    import lancedb

_T = TypeVar("_T")

# What lance says when a commit lost to other processes' commits (nothing of it was committed): a table creation
# then opens the winner's table, and a vector write tries again (index.py).
_COMMIT_CONFLICT = ("Too many concurrent writers", "Retryable commit conflict", "commit conflict")


def table_name(kind: str, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    return f"{kind}__{slug}"


# The keys tables (keys.py) are named after their kind's table, so whatever deletes a memory's rows from every table
# of its kind by id deletes its keys too.
KEYS_SUFFIX = "--keys"


def keys_table_name(kind: str, model: str) -> str:
    return table_name(kind, model) + KEYS_SUFFIX


class VectorTables:
    """The connection and the tables of one embedding model; the base the reads, upkeep and writes build on."""

    def __init__(
        self,
        uri: str,
        model: str,
        dim: int,
        resident_max_rows: int = 0,
        version_retention_s: float | None = None,
        read_only: bool = False,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.uri = uri
        self.read_only = read_only  # writes (add, delete, optimize, index builds) refused with StoreReadOnly
        self.model = model
        self.dim = dim
        # None keeps LanceDB's own rule (versions older than 7 days); see versions.py.
        self.version_retention_s = version_retention_s
        self._storage_options = dict(storage_options or {}) or None
        self._tables: dict[str, lancedb.table.Table] = {}
        self._ann: dict[str, tuple[float, bool]] = {}  # table name -> (checked at, has a vector index)
        self._owner: dict[str, tuple[int, str | None]] = {}  # table name -> (version, its only user or None)
        self._writes: dict[str, int] = {}  # table name -> add() calls since this process last optimized it
        self._deferring = 0  # open deferred_upkeep() blocks (maintenance.py)
        self._deferred: dict[str, int] = {}  # table name -> writes meanwhile, maintained when the block ends
        self._indexed_once: set[str] = set()  # tables seen with their full-text and user indexes
        # Held while a table is created; the engine sets the store-wide writer lock (its database's write()).
        self.creation_lock: Callable[[], AbstractContextManager[Any]] = nullcontext
        self.resident = ResidentVectors(resident_max_rows)
        self.datasets = OpenDatasets()  # what searches run on (datasets.py)

    @functools.cached_property
    def db(self) -> lancedb.DBConnection:
        """The LanceDB connection, made on first use: importing LanceDB costs ~6 s of CPU on a small machine (most
        of it its REST namespace client), which a CLI command or process that never touches a vector (``users``,
        ``sessions``, ``trace``, ``export``, working memory) no longer pays (tests/engine/test_lazy_imports.py)."""
        # Imported here, not with this module: LanceDB reads its log level (LANCEDB_LOG) once, when it is imported,
        # and the entry points set it first (engine.config.prepare_process_environment).
        with collector_paused():  # see engine/startup.py
            import lancedb

        # A zero interval makes every read see other processes' writes (no measurable cost, stack.md).
        # On s3:// LanceDB commits each version with a conditional PUT (If-None-Match: *), so writers on several hosts
        # cannot overwrite each other's commits; a loser re-reads and retries (tests/engine/store/test_team_vectors.py).
        return lancedb.connect(self.uri, read_consistency_interval=timedelta(0), storage_options=self._storage_options)

    # -- tables -----------------------------------------------------------------------------------------------------
    def _schema(self, kind: str) -> pa.Schema:
        return pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("user_id", pa.string()),
                pa.field("text", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), self.dim)),
            ],
            metadata={"model": self.model, "dim": str(self.dim), "kind": kind, "metric": "cosine"},
        )

    def table_names(self) -> list[str]:
        result = self.db.list_tables()
        names = getattr(result, "tables", result)
        return sorted(names)

    @overload
    def table(self, kind: str, create: Literal[True] = True, _listed_early: bool = False) -> lancedb.table.Table: ...
    @overload
    def table(self, kind: str, create: bool, _listed_early: bool = False) -> lancedb.table.Table | None: ...
    def table(self, kind: str, create: bool = True, _listed_early: bool = False) -> lancedb.table.Table | None:
        name = table_name(kind, self.model)
        if name in self._tables:
            return self._tables[name]
        if name in self.table_names():
            try:
                tb = self.db.open_table(name)
                meta = tb.schema.metadata or {}
            except Exception as exc:  # a missing or garbled manifest
                if create and not _listed_early and "not found" in str(exc).lower():
                    # Listed while another process was still creating it (s3 lists the table's folder before its
                    # first manifest is committed): wait for that creation (it holds the lock) and open it once more.
                    with self.creation_lock():
                        pass
                    return self.table(kind, create=create, _listed_early=True)
                raise StoreCorrupt(
                    f"LanceDB table {name} in {self.uri} cannot be opened ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); run "
                    "`python -m engine repair` to rebuild it from DuckDB"
                ) from None
            model = meta.get(b"model", b"").decode()
            dim = int(meta.get(b"dim", b"0") or 0)
            if model != self.model or dim != self.dim:
                raise ModelMismatch(
                    f"LanceDB table {name} holds vectors of {model or '?'} (dim {dim}), "
                    f"not {self.model} (dim {self.dim})"
                )
        elif create:
            # One process at a time creates a table (the store-wide writer lock): two creating one at once on s3
            # do not both fail cleanly; the loser's creation commits as the table's next version, an overwrite that
            # erases the rows the winner added meanwhile (found by bench/team.py).
            with self.creation_lock():
                if name in self.table_names():  # another process created it while this one waited
                    return self.table(kind, create=False)
                try:
                    tb = self.db.create_table(name, schema=self._schema(kind))
                except (ValueError, RuntimeError) as exc:
                    # Another process outside the lock (an older memlens, a bare VectorIndex) created it: either
                    # LanceDB saw the table, or on s3 this creation lost the race for the manifest (a commit conflict:
                    # nothing of it was committed). Open the table the other process made.
                    if "already exists" not in str(exc) and not any(m in str(exc) for m in _COMMIT_CONFLICT):
                        raise
                    return self.table(kind, create=False)
        else:
            return None
        self._tables[name] = tb
        return tb

    def other_models(self) -> dict[str, int]:
        """Tables in this store made by other models, with their row counts (for a clear message)."""
        mine = {table_name(k, self.model) for k in KINDS} | {table_name(k, self.model) + "--keys" for k in KINDS}
        out: dict[str, int] = {}
        for name in self.table_names():
            if name not in mine:
                try:
                    out[name] = self.db.open_table(name).count_rows()
                except Exception:  # a foreign or broken table must not stop the store from opening
                    out[name] = -1
        return out

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise StoreReadOnly(f"the vector index {self.uri} is open read-only; nothing was written")

    def kind_tables(self, kind: str) -> list[str]:
        """The names of the kind's tables, of every embedding model."""
        return [n for n in self.table_names() if n.startswith(f"{kind}__")]

    def drop(self, kind: str) -> None:
        """Drop this model's table of the kind (an unreadable one, before repair rebuilds it from DuckDB)."""
        name = table_name(kind, self.model)
        self._tables.pop(name, None)
        self.datasets.forget(name)
        self._indexed_once.discard(name)  # a table made again is indexed again (maintenance.py)
        self.resident = ResidentVectors(self.resident.max_rows)
        if name in self.table_names():
            self.db.drop_table(name)

    def _read(self, tb: lancedb.table.Table, fn: Callable[[], _T]) -> _T:
        """Run a read of ``tb``. A reader whose version was pruned under it (another process purged a forgotten
        memory's versions: LanceDB then fails to find that version's files) moves to the latest version and
        reads once more; anything else that cannot be read is StoreCorrupt naming the table."""
        try:
            return fn()
        except (InvalidInput, ModelMismatch, StoreCorrupt):
            raise
        except Exception as exc:
            first = exc
        try:
            tb.checkout_latest()
            self.datasets.forget(tb.name)
            return fn()
        except (InvalidInput, ModelMismatch, StoreCorrupt):
            raise
        except Exception:
            raise StoreCorrupt(
                f"LanceDB table {tb.name} in {self.uri} is unreadable "
                f"({type(first).__name__}: {str(first).splitlines()[0][:200] if str(first) else ''}); "
                "run `python -m engine repair` to rebuild it from DuckDB"
            ) from None
