"""LanceDB tables of vectors and full text, one per (memory kind, embedding model).

DuckDB is the source of truth; these tables are an index over it: ``id``, ``user_id``, the searchable ``text`` and
its ``vector``. The model name and dimension live in the table's schema metadata, and a table is only ever opened
for the model that made it, so vectors of different models never meet.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

import numpy as np
import pyarrow as pa

from ...errors import InvalidInput, ModelMismatch, StoreCorrupt, StoreReadOnly
from ...ids import lance_literal
from ...startup import collector_paused
from ...vocab import KINDS  # every memory kind has a vector table (vocab is plain values: storage may import it)
from .resident import ResidentVectors
from .rows import VectorHit, check_vectors
from .rows import hits as _hits
from .rows import owned_rows as _owned
from .rows import vector_matrix as _vectors
from .versions import prune_versions

if TYPE_CHECKING:
    import lancedb
    from lancedb.query import LanceVectorQueryBuilder

_T = TypeVar("_T")

_WORD = re.compile(r"\w", re.UNICODE)
# Rebuild indexes once this many rows are unindexed. Unindexed rows are still searched (brute force), so this
# only trades a little query time against rebuild cost.
REINDEX_AFTER_ROWS = 5000
# Every write adds one file, and LanceDB's searches slow down with every file: after 1,000 one-row writes, a vector
# search took 251 ms and a full-text one 105 ms, against 12 and 9 ms once compacted; on a 100k-row table, 64 one-row
# writes took them from 10 to 24 ms and from 9 to 22 ms, and compacting took 0.9 s. An agent writes a memory at a
# time, so writes also compact after this many of them (in this process) since the last optimize.
COMPACT_AFTER_WRITES = 64
# An exact (brute-force) LanceDB vector search costs ~1 us per row (~110 ms at 100k rows); an HNSW-SQ graph answers in
# ~10 ms with recall@20 ~0.99 (measured, bench/latency.py). Searches ask for a wider beam than LanceDB's 1.5 * k.
ANN_MIN_EF = 64
_INDEX_CACHE_S = 10.0
# A user_id prefilter costs ~5 ms per search at 100k rows (bench/latency.py) and nothing measurable at 10k. Tables this
# big are checked once per version for a single owner; a search of that owner's rows then skips the filter.
SOLE_OWNER_MIN_ROWS = 20_000
_PURGE_GAP_S = 1.2
# What LanceDB says when a full-text search meets a table without its full-text index.
_NO_FTS_INDEX = "Cannot perform full text search unless an INVERTED index has been created"
_MAINTAIN_ATTEMPTS = 6
# What lance says when a commit lost to other processes' commits (nothing of it was committed), and how often a
# vector write tries again.
_COMMIT_CONFLICT = ("Too many concurrent writers", "Retryable commit conflict", "commit conflict")
_COMMIT_ATTEMPTS = 6
log = logging.getLogger(__name__)


def table_name(kind: str, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    return f"{kind}__{slug}"


class VectorIndex:
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
        # Held while a table is created; the engine sets the store-wide writer lock (its database's write()).
        self.creation_lock: Callable[[], AbstractContextManager[Any]] = nullcontext
        self.resident = ResidentVectors(resident_max_rows)

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
        mine = {table_name(k, self.model) for k in KINDS}
        out: dict[str, int] = {}
        for name in self.table_names():
            if name not in mine:
                try:
                    out[name] = self.db.open_table(name).count_rows()
                except Exception:  # a foreign or broken table must not stop the store from opening
                    out[name] = -1
        return out

    # -- writes -----------------------------------------------------------------------------------------------------
    def add(
        self,
        kind: str,
        ids: Sequence[str],
        user_ids: Sequence[str],
        texts: Sequence[str],
        vectors: np.ndarray,
        upsert: bool = False,
    ) -> None:
        """Append the rows; with ``upsert``, replace any row that already has one of the ids (ingest and repair:
        a file imported again after a crash must not leave two vectors for one memory)."""
        self._refuse_if_read_only()
        if not ids:
            return
        if len(set(ids)) != len(ids):
            raise InvalidInput("duplicate ids in one vector write")
        vectors = check_vectors(vectors, self.dim, len(ids))
        data = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "user_id": pa.array(list(user_ids), pa.string()),
                "text": pa.array(list(texts), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), self.dim),
            }
        )
        tb = self.table(kind)
        for attempt in range(_COMMIT_ATTEMPTS):
            try:
                if upsert:
                    tb.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
                else:
                    tb.add(data)
                break
            except Exception as exc:
                # Lance retries a commit that met another process's commit a few times within 30 s; with many
                # writers on a slow object store it can give up. Nothing was committed then: try again on the latest
                # version (bench/team.py saw this with 8 writers on moto).
                if not any(m in str(exc) for m in _COMMIT_CONFLICT) or attempt == _COMMIT_ATTEMPTS - 1:
                    raise
                log.info("vector write to %s met concurrent commits (%s); retrying", tb.name, exc)
                tb.checkout_latest()
                time.sleep(0.1 * (attempt + 1) * (0.5 + random.random()))
        self._maintain(tb)

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise StoreReadOnly(f"the vector index {self.uri} is open read-only; nothing was written")

    def delete(self, kind: str, ids: Sequence[str], every_model: bool = False) -> None:
        """Delete the rows of ``ids``; with ``every_model`` from the kind's tables of other embedding models too
        (a forget: the text is in each of them)."""
        self._refuse_if_read_only()
        if not ids:
            return
        tables = [self.table(kind, create=False)]
        if every_model:
            tables += [self.db.open_table(n) for n in self.kind_tables(kind) if n != table_name(kind, self.model)]
        for tb in tables:
            if tb is None:
                continue
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                tb.delete("id IN (" + ", ".join(lance_literal(i) for i in chunk) + ")")

    def kind_tables(self, kind: str) -> list[str]:
        """The names of the kind's tables, of every embedding model."""
        return [n for n in self.table_names() if n.startswith(f"{kind}__")]

    # -- purging forgotten rows -------------------------------------------------------------------------------------
    def materialize_deletions(self, name: str) -> int:
        """Rewrite every data file of table ``name`` that still holds deleted rows, and rebuild its full-text index
        (its token dictionary would keep a deleted text's words); return the version that no longer holds them.
        Readers are unaffected: this commits a new version, the old files stay until prune_versions removes them.
        LanceDB's own optimize() rewrites a file only once a tenth of its rows are deleted, so this goes through
        Lance directly (pylance) with a threshold of 0."""
        tb = self.db.open_table(name)
        if any(f.metadata.deletion_file is not None for f in tb.to_lance().get_fragments()):
            for attempt in range(3):
                try:
                    tb.to_lance().optimize.compact_files(
                        materialize_deletions=True, materialize_deletions_threshold=0.0
                    )
                    break
                except Exception as exc:  # a commit conflict with another process: refresh and try again
                    if "conflict" not in str(exc).lower() or attempt == 2:
                        raise
                    tb.checkout_latest()
                    time.sleep(0.05 * (attempt + 1))
        tb.checkout_latest()
        clean = tb.version
        # The next commit comes more than prune_versions' slack (1 s) later, so once it is the first version to keep,
        # every version up to the compaction is old enough to go.
        time.sleep(_PURGE_GAP_S)
        from lancedb.index import FTS, BTree

        if any(tuple(ix.columns) == ("text",) for ix in tb.list_indices()):
            tb.create_index("text", config=FTS(), replace=True)
        else:
            tb.create_index("user_id", config=BTree(), replace=True)
        self._tables.pop(name, None)
        return clean

    def prune_old_versions(self, name: str, retention_s: float, since_version: int) -> bool:
        """Delete the table's versions replaced more than ``retention_s`` ago (versions.py); True once no version
        older than ``since_version`` is left."""
        tb = self.db.open_table(name)
        prune_versions(tb, retention_s)
        oldest: int = min(v["version"] for v in tb.list_versions())
        return oldest >= since_version

    def ids(self, kind: str) -> list[str]:
        """Every id in the kind's table (a duplicate appears twice), for orphan checks."""
        tb = self.table(kind, create=False)
        if tb is None:
            return []
        return self._read(
            tb, lambda: tb.search().select(["id"]).limit(max(tb.count_rows(), 1)).to_arrow().column("id").to_pylist()
        )

    def check_readable(self, kind: str) -> None:
        """Read every column of every row of the kind's table once; StoreCorrupt naming the table if any part of
        it cannot be read."""
        tb = self.table(kind, create=False)
        if tb is not None:
            self._read(tb, lambda: tb.search().limit(max(tb.count_rows(), 1)).to_arrow())

    def drop(self, kind: str) -> None:
        """Drop this model's table of the kind (an unreadable one, before repair rebuilds it from DuckDB)."""
        name = table_name(kind, self.model)
        self._tables.pop(name, None)
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
            return fn()
        except (InvalidInput, ModelMismatch, StoreCorrupt):
            raise
        except Exception:
            raise StoreCorrupt(
                f"LanceDB table {tb.name} in {self.uri} is unreadable "
                f"({type(first).__name__}: {str(first).splitlines()[0][:200] if str(first) else ''}); "
                "run `python -m engine repair` to rebuild it from DuckDB"
            ) from None

    def _maintain(self, tb: lancedb.table.Table) -> None:
        """Housekeeping after a committed write: the rows are in, so a failure here must not fail the write. Several
        processes (a team store's hosts) may do it at once: a commit conflict means another process did the same
        (created the index, compacted), so look again and retry; what still fails is left for the next write."""
        from lancedb.index import FTS, BTree

        counted = False
        for attempt in range(_MAINTAIN_ATTEMPTS):
            try:
                indices = {tuple(ix.columns): ix for ix in tb.list_indices()}
                if ("text",) not in indices:
                    tb.create_index("text", config=FTS())
                if ("user_id",) not in indices:
                    tb.create_index("user_id", config=BTree())
                if not indices:
                    return
                unindexed = max((getattr(ix, "num_unindexed_rows", 0) or 0) for ix in indices.values())
                if not counted:  # the write that created the indexes is not counted
                    self._writes[tb.name] = self._writes.get(tb.name, 0) + 1
                    counted = True
                if unindexed >= REINDEX_AFTER_ROWS or self._writes[tb.name] >= COMPACT_AFTER_WRITES:
                    self.optimize(tb)
                return
            except Exception as exc:  # lance raises a generic error for commit conflicts
                if "conflict" not in str(exc).lower():
                    raise
                log.info("maintenance of %s met a concurrent commit (%s); retrying", tb.name, exc)
                tb.checkout_latest()
                time.sleep(0.05 * (attempt + 1) * (0.5 + random.random()))
        log.warning("maintenance of %s left for later: other processes kept committing", tb.name)

    def build_vector_indexes(self, min_rows: int) -> list[str]:
        """Give every table of at least ``min_rows`` rows an HNSW-SQ vector index (one graph, cosine); return the
        tables indexed now. Slow (~40 s per 100k rows on 2 cores), so only explicit maintenance calls it; later
        optimize() runs fold new rows into the index."""
        self._refuse_if_read_only()
        from lancedb.index import HnswSq

        built = []
        for kind in KINDS:
            tb = self.table(kind, create=False)
            if tb is None or min_rows <= 0 or tb.count_rows() < min_rows or self.has_ann(kind, fresh=True):
                continue
            tb.create_index("vector", config=HnswSq(distance_type="cosine", num_partitions=1))
            self._ann.pop(tb.name, None)
            built.append(tb.name)
        return built

    def has_ann(self, kind: str, fresh: bool = False) -> bool:
        """Whether the kind's table has a vector index (checked at most every few seconds: another process may
        build one)."""
        tb = self.table(kind, create=False)
        if tb is None:
            return False
        checked = self._ann.get(tb.name)
        if fresh or checked is None or time.monotonic() - checked[0] > _INDEX_CACHE_S:
            has = any(tuple(ix.columns) == ("vector",) for ix in tb.list_indices())
            checked = (time.monotonic(), has)
            self._ann[tb.name] = checked
        return checked[1]

    def optimize(self, tb: lancedb.table.Table | None = None) -> None:
        """Fold new rows into the indexes, compact, and delete the versions no reader can still be on (older than
        ``version_retention_s``). Another process may commit meanwhile: refresh and retry."""
        self._refuse_if_read_only()
        tables = [tb] if tb is not None else [t for t in (self.table(k, create=False) for k in KINDS) if t is not None]
        for t in tables:
            for attempt in range(3):
                try:
                    t.optimize()
                    break
                except Exception as exc:  # lance raises a generic error for commit conflicts
                    if "conflict" not in str(exc).lower() or attempt == 2:
                        raise
                    t.checkout_latest()
                    time.sleep(0.05 * (attempt + 1))
            if self.version_retention_s is not None:
                prune_versions(t, self.version_retention_s)
            self._writes[t.name] = 0

    # -- reads ------------------------------------------------------------------------------------------------------
    def count(self, kind: str, user_id: str | None = None) -> int:
        tb = self.table(kind, create=False)
        if tb is None:
            return 0
        return self._read(tb, lambda: tb.count_rows(None if user_id is None else f"user_id = {lance_literal(user_id)}"))

    def vector_search(
        self, kind: str, user_id: str, query_vector: np.ndarray, k: int, exact: bool = False
    ) -> list[VectorHit]:
        return self.search_vectors(kind, user_id, query_vector, k, exact)[0]

    def search_vectors(
        self, kind: str, user_id: str, query_vector: np.ndarray, k: int, exact: bool = False
    ) -> tuple[list[VectorHit], str]:
        tb = self.table(kind, create=False)
        if tb is None:
            return [], "exact"
        return self._read(tb, lambda: self._search_vectors(kind, user_id, query_vector, k, exact))

    def _search_vectors(
        self, kind: str, user_id: str, query_vector: np.ndarray, k: int, exact: bool = False
    ) -> tuple[list[VectorHit], str]:
        """The user's k nearest rows by cosine, and how they were found: ``in memory (exact)`` for small tables
        (see resident.py), ``approximate (HNSW-SQ)`` with a vector index unless ``exact``, else ``exact``. When the
        graph walk finds fewer than k rows (a user with few rows among many rarely meets them) the search is
        repeated exactly, which the user_id index makes cheap for exactly such users."""
        # A NaN or wrong-sized query would otherwise give NaN scores (and NaN in stored traces) or a raw error.
        query_vector = check_vectors(np.asarray(query_vector).reshape(1, -1), self.dim, 1)[0]
        tb = self.table(kind, create=False)
        if tb is None:
            return [], "exact"
        version = tb.version  # one read per search (~0.3 ms: it checks for other processes' commits)
        held = self.resident.search(tb, version, user_id, query_vector, k)
        if held is not None:
            return _hits(held.ids, held.texts, held.vectors, similarity=held.scores), "in memory (exact)"
        ann = not exact and self.has_ann(kind)
        where = self._user_filter(tb, version, user_id)
        rows = self._vector_query(tb, where, query_vector, k, ann)
        if ann and _owned(rows, user_id).num_rows < k:
            rows, ann = self._vector_query(tb, where, query_vector, k, False), False
        rows = _owned(rows, user_id)
        hits = _hits(
            rows.column("id").to_pylist(),
            rows.column("text").to_pylist(),
            _vectors(rows),
            similarity=1.0 - rows.column("_distance").to_numpy(),
        )
        return hits, "approximate (HNSW-SQ)" if ann else "exact"

    def _user_filter(self, tb: lancedb.table.Table, version: int, user_id: str) -> str | None:
        """The prefilter that keeps a search to the user's rows, or None when the table holds only that user's rows.
        Rows are checked against the user again after the search (_owned), so a write by another process between
        the check and the search can cost candidates but never leak another user's rows."""
        known = self._owner.get(tb.name)
        if known is None or known[0] != version:
            owner = None
            total = tb.count_rows()
            if total >= SOLE_OWNER_MIN_ROWS:
                first = tb.search().select(["user_id"]).limit(1).to_arrow().column("user_id").to_pylist()
                if first and tb.count_rows(f"user_id = {lance_literal(first[0])}") == total:
                    owner = first[0]
            known = (version, owner)
            self._owner[tb.name] = known
        return None if known[1] == user_id else f"user_id = {lance_literal(user_id)}"

    @staticmethod
    def _vector_query(
        tb: lancedb.table.Table, where: str | None, query_vector: np.ndarray, k: int, ann: bool
    ) -> pa.Table:
        # A vector query's builder (LanceDB types search() as the base of the vector, text and hybrid builders).
        q = (
            cast(
                "LanceVectorQueryBuilder",
                tb.search(np.asarray(query_vector, dtype=np.float32), vector_column_name="vector"),
            )
            .distance_type("cosine")
            .select(["id", "user_id", "text", "vector"])
            .limit(k)
        )
        if where is not None:
            q = q.where(where, prefilter=True)
        q = q.ef(max(ANN_MIN_EF, 2 * k)) if ann else q.bypass_vector_index()
        return q.to_arrow()

    def fts_search(self, kind: str, user_id: str, query: str, k: int) -> list[VectorHit]:
        return self.search_text(kind, user_id, query, k)[0]

    def search_text(self, kind: str, user_id: str, query: str, k: int) -> tuple[list[VectorHit], str]:
        tb = self.table(kind, create=False)
        if tb is None:
            return [], "LanceDB index"
        return self._read(tb, lambda: self._search_text(kind, user_id, query, k))

    def _search_text(self, kind: str, user_id: str, query: str, k: int) -> tuple[list[VectorHit], str]:
        """The user's k best rows by BM25 (LanceDB's index, over the whole table), and where they were scored
        (``LanceDB index``). For a table held in memory LanceDB returns only ids and scores: the copy has the rest.
        A table whose full-text index does not exist yet gives no hits: another process (a team store's other host)
        has created it and added its first rows but not yet built the index, which its maintenance does next; the
        vector search still finds those rows."""
        try:
            return self._search_text_indexed(kind, user_id, query, k)
        except Exception as exc:
            if _NO_FTS_INDEX not in str(exc):
                raise
            return [], "LanceDB index"

    def _search_text_indexed(self, kind: str, user_id: str, query: str, k: int) -> tuple[list[VectorHit], str]:
        tb = self.table(kind, create=False)
        if tb is None or not _WORD.search(query or ""):
            return [], "LanceDB index"
        version = tb.version
        owners = self.resident.owners(tb.name, version)
        if owners is not None:  # a table held in memory: its copy knows the owners, texts and vectors
            if user_id not in owners:
                return [], "LanceDB index"
            hits = self._fts_held(tb, version, user_id, query, k, only_owner=len(owners) == 1)
            if hits is not None:
                return hits, "LanceDB index"
        q = tb.search(query, query_type="fts").select(["id", "user_id", "text", "vector"]).limit(k)
        where = self._user_filter(tb, version, user_id)
        rows = _owned((q.where(where, prefilter=True) if where is not None else q).to_arrow(), user_id)
        return _hits(
            rows.column("id").to_pylist(),
            rows.column("text").to_pylist(),
            _vectors(rows),
            bm25=rows.column("_score").to_numpy(),
        ), "LanceDB index"

    def _fts_held(
        self, tb: lancedb.table.Table, version: int, user_id: str, query: str, k: int, only_owner: bool
    ) -> list[VectorHit] | None:
        """Full-text search of a table held in memory: LanceDB returns only ids and scores (reading 50 stored
        vectors costs ~1.5 ms), the copy supplies texts and vectors, and a table with one owner needs no user_id
        prefilter (~1.5 ms at 10k rows). None when the search saw rows the copy lacks (another process wrote)."""
        q = tb.search(query, query_type="fts").select(["id", "user_id"]).limit(k)
        rows = _owned(
            (q if only_owner else q.where(f"user_id = {lance_literal(user_id)}", prefilter=True)).to_arrow(), user_id
        )
        ids = rows.column("id").to_pylist()
        held = self.resident.rows(tb.name, version, ids)
        if held is None:
            return None
        texts, vecs = held
        return _hits(ids, texts, vecs, bm25=rows.column("_score").to_numpy())

    def vectors_for(self, kind: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        tb = self.table(kind, create=False)
        if tb is None or not ids:
            return {}
        rows = self._read(
            tb,
            lambda: tb.search()
            .where("id IN (" + ", ".join(lance_literal(i) for i in ids) + ")")
            .select(["id", "vector"])
            .limit(len(ids) + 10)
            .to_arrow(),
        )
        vecs = _vectors(rows)
        return {i: vecs[n] for n, i in enumerate(rows.column("id").to_pylist())}
