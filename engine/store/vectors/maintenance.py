"""Upkeep of the vector index's tables: scalar and vector indexes, compaction, old versions and purges.

Each write adds a file and a version; this folds them back (optimize), builds the indexes searches rely on, and
rewrites files that still hold a forgotten memory's rows (materialize_deletions, used by purges.py).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...vocab import KINDS
from .tables import KEYS_SUFFIX, VectorTables, keys_table_name
from .versions import prune_versions

if TYPE_CHECKING:
    import lancedb

# Rebuild indexes once this many rows are unindexed. Unindexed rows are still searched (brute force), so this
# only trades a little query time against rebuild cost.
REINDEX_AFTER_ROWS = 5000
# Every write adds one file, and LanceDB's searches slow down with every file: after 1,000 one-row writes, a vector
# search took 251 ms and a full-text one 105 ms, against 12 and 9 ms once compacted; on a 100k-row table, 64 one-row
# writes took them from 10 to 24 ms and from 9 to 22 ms, and compacting took 0.9 s. An agent writes a memory at a
# time, so writes also compact after this many of them (in this process) since the last optimize.
COMPACT_AFTER_WRITES = 64
_INDEX_CACHE_S = 10.0
_PURGE_GAP_S = 1.2
_MAINTAIN_ATTEMPTS = 6
log = logging.getLogger(__name__)


class VectorMaintenance(VectorTables):
    # -- purging forgotten rows -------------------------------------------------------------------------------------
    def materialize_deletions(self, name: str, versions_kept: bool = True) -> int:
        """Rewrite every data file of table ``name`` that still holds deleted rows, and rebuild its full-text index
        (its token dictionary would keep a deleted text's words); return the version that no longer holds them.
        Readers are unaffected: this commits a new version, the old files stay until prune_versions removes them.
        LanceDB's own optimize() rewrites a file only once a tenth of its rows are deleted, so this goes through
        Lance directly (pylance) with a threshold of 0. ``versions_kept=False``: the caller prunes without a grace
        (prune_versions then keeps the latest version only, whatever the times), so no gap between the commits."""
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
        if versions_kept:
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

    @contextmanager
    def deferred_upkeep(self) -> Iterator[None]:
        """Within the block, a write through this index leaves its upkeep (creating the full-text and user indexes,
        compacting, folding new rows into the indexes) for the end of the block, where each table written gets it
        once, compacted if the block wrote it more than once. For bulk writes (an import, a reindex, `memlens
        keys`): every upkeep of a growing table rewrites its indexes and files, and the versions it replaces stay on
        disk for ``version_retention_s``: building 100k two-sentence items with their keys took 1,704 s and left
        ~11 GB with an upkeep per write, 1,035 s and 2.2 GB with one at the end, for 0.9 GB of live data
        (docs/benchmarks.md). Rows written in the block are searchable at once (unindexed rows by brute force);
        blocks nest, the outermost one's end maintains."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if self._deferring == 0:
                written, self._deferred = sorted(self._deferred.items()), {}
                for name, writes in written:
                    try:
                        tb = self._tables.get(name) or self.db.open_table(name)
                        tb.checkout_latest()
                        self._maintain(tb, writes)
                    except Exception as exc:  # the rows are in; the next write or optimize() tries again
                        log.warning("upkeep of %s after a bulk write left for later: %s", name, exc)

    def _maintain(self, tb: lancedb.table.Table, writes: int = 1) -> None:
        """Housekeeping after ``writes`` committed writes: the rows are in, so a failure here must not fail the
        write. Several processes (a team store's hosts) may do it at once: a commit conflict means another process
        did the same (created the index, compacted), so look again and retry; what still fails is left for the next
        write. Inside ``deferred_upkeep`` it counts the writes for the block's end and only indexes a new table."""
        from lancedb.index import FTS, BTree

        if self._deferring:
            self._deferred[tb.name] = self._deferred.get(tb.name, 0) + writes
            if tb.name in self._indexed_once:
                return
            # A new table still gets its indexes at once (cheap on a first batch): its rows are found by full text
            # during the block too, as rows added to an indexed table are (LanceDB also scans unindexed rows).
            self._indexed_once.add(tb.name)
            writes = 0
        counted = False
        for attempt in range(_MAINTAIN_ATTEMPTS):
            try:
                indices = {tuple(ix.columns): ix for ix in tb.list_indices()}
                if ("text",) not in indices:
                    tb.create_index("text", config=FTS())
                if ("user_id",) not in indices:
                    tb.create_index("user_id", config=BTree())
                if tb.name.endswith(KEYS_SUFFIX):
                    index_key_ids(tb, set(indices))
                if not writes:  # indexing only (a bulk block's new table)
                    return
                if not counted:  # the write that created the indexes is not counted
                    self._writes[tb.name] = self._writes.get(tb.name, 0) + writes - (0 if indices else 1)
                    counted = True
                # indexes made just now cover every row
                unindexed = max((getattr(ix, "num_unindexed_rows", 0) or 0 for ix in indices.values()), default=0)
                # a bulk block's several files are compacted at its end
                many = writes > 1 or self._writes[tb.name] >= COMPACT_AFTER_WRITES
                if many or unindexed >= REINDEX_AFTER_ROWS:
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
        """Give every table of at least ``min_rows`` rows, the memories' keys tables included, an HNSW-SQ vector
        index (one graph, cosine); return the tables indexed now. Slow (~40 s per 100k rows on 2 cores), so only
        explicit maintenance calls it; later optimize() runs fold new rows into the index."""
        self._refuse_if_read_only()
        from lancedb.index import HnswSq

        built = []
        tables = [t for t in (self.table(kind, create=False) for kind in KINDS) if t is not None]
        for tb in [*tables, *self._keys_tables()]:
            if min_rows <= 0 or tb.count_rows() < min_rows or self._indexed(tb, fresh=True):
                continue
            tb.create_index("vector", config=HnswSq(distance_type="cosine", num_partitions=1))
            self._ann.pop(tb.name, None)
            built.append(tb.name)
        return built

    def has_ann(self, kind: str, fresh: bool = False) -> bool:
        """Whether the kind's table has a vector index (checked at most every few seconds: another process may
        build one)."""
        tb = self.table(kind, create=False)
        return tb is not None and self._indexed(tb, fresh)

    def _indexed(self, tb: lancedb.table.Table, fresh: bool = False) -> bool:
        """Whether the table has a vector index, looked up at most every ``_INDEX_CACHE_S`` unless ``fresh``."""
        checked = self._ann.get(tb.name)
        if fresh or checked is None or time.monotonic() - checked[0] > _INDEX_CACHE_S:
            has = any(tuple(ix.columns) == ("vector",) for ix in tb.list_indices())
            checked = (time.monotonic(), has)
            self._ann[tb.name] = checked
        return checked[1]

    def _keys_tables(self) -> list[lancedb.table.Table]:
        """This model's keys tables (keys.py) that exist."""
        listed = set(self.table_names())
        return [self.db.open_table(n) for k in KINDS if (n := keys_table_name(k, self.model)) in listed]

    def optimize(self, tb: lancedb.table.Table | None = None) -> None:
        """Fold new rows into the indexes, compact, and delete the versions no reader can still be on (older than
        ``version_retention_s``). Another process may commit meanwhile: refresh and retry."""
        self._refuse_if_read_only()
        tables = [tb] if tb is not None else [t for t in (self.table(k, create=False) for k in KINDS) if t is not None]
        if tb is None:
            tables += self._keys_tables()
        for t in tables:
            for attempt in range(3):
                try:
                    if t.name.endswith(KEYS_SUFFIX):
                        index_key_ids(t)  # a store whose keys were written before the index was
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


def index_key_ids(tb: lancedb.table.Table, indexed: set[tuple[str, ...]] | None = None) -> None:
    """Give a keys table a BTree index on ``id`` unless it has one (``indexed``: its indexed columns, when the caller
    listed them already). ``memory_keys_search=candidates`` reads the keys of a hop's ~100 found memories by ``id IN
    (...)`` (keys.py): on 200k keys that read took 10.7 ms p50 as a scan and 7.3 ms through the index
    (docs/benchmarks.md, "Keys that rescore, measured further")."""
    from lancedb.index import BTree

    if indexed is None:
        indexed = {tuple(ix.columns) for ix in tb.list_indices()}
    if ("id",) not in indexed:
        tb.create_index("id", config=BTree())
