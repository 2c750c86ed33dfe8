"""LanceDB tables of vectors and full text, one per (memory kind, embedding model).

DuckDB is the source of truth; these tables are an index over it: ``id``, ``user_id``, the searchable ``text`` and
its ``vector``. The model name and dimension live in the table's schema metadata, and a table is only ever opened
for the model that made it, so vectors of different models never meet.

The class is built in layers, one module each: tables.py (opening and creating tables), maintenance.py (indexes,
compaction, versions, purges), search.py (reads); this module adds the writes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ...errors import InvalidInput
from ...ids import lance_literal
from .datasets import ANN_MIN_EF
from .keys import KEYS_SUFFIX, KeyTables
from .maintenance import COMPACT_AFTER_WRITES, REINDEX_AFTER_ROWS
from .rows import check_vectors
from .search import SOLE_OWNER_MIN_ROWS
from .tables import _COMMIT_CONFLICT, table_name

__all__ = [
    "ANN_MIN_EF",
    "COMPACT_AFTER_WRITES",
    "REINDEX_AFTER_ROWS",
    "SOLE_OWNER_MIN_ROWS",
    "VectorIndex",
    "table_name",
]

# How often a vector write tries again after losing its commit to other processes' commits.
_COMMIT_ATTEMPTS = 6
log = logging.getLogger(__name__)


class VectorIndex(KeyTables):
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

    def delete(self, kind: str, ids: Sequence[str], every_model: bool = False) -> None:
        """Delete the rows of ``ids``; with ``every_model`` from the kind's tables of other embedding models too
        (a forget: the text is in each of them), and then the memories' keys and the keys drawn from their texts
        go too (keys.py). Without it (reindex, repair, undoing a failed write) the keys stay: they still index the
        same memories, and a failed write undoes its keys itself."""
        self._refuse_if_read_only()
        if not ids:
            return
        if every_model:
            self.delete_keys(kind, ids, every_model=True)
        tables = [self.table(kind, create=False)]
        if every_model:
            tables += [
                self.db.open_table(n)
                for n in self.kind_tables(kind)
                if n != table_name(kind, self.model) and not n.endswith(KEYS_SUFFIX)
            ]
        for tb in tables:
            if tb is None:
                continue
            self.resident.discard(tb.name, ids)  # a forgotten text leaves this process's memory at once
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                tb.delete("id IN (" + ", ".join(lance_literal(i) for i in chunk) + ")")
