"""Reads of the vector index: vector and full-text search of a user's rows, counts, ids and stored vectors.

Small tables are searched in memory (resident.py); bigger ones through LanceDB, with an HNSW-SQ graph when one was
built (maintenance.py), and every hit is checked against its user again (rows.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...ids import lance_literal
from .datasets import nearest_rows, text_index_coverage, text_rows
from .maintenance import VectorMaintenance
from .rows import VectorHit, check_vectors
from .rows import hits as _hits
from .rows import owned_rows as _owned
from .rows import vector_matrix as _vectors

if TYPE_CHECKING:
    import lancedb

_WORD = re.compile(r"\w", re.UNICODE)
# A user_id prefilter costs ~5 ms per search at 100k rows (bench/latency.py) and nothing measurable at 10k. Tables this
# big are checked once per version for a single owner; a search of that owner's rows then skips the filter.
SOLE_OWNER_MIN_ROWS = 20_000
_COLUMNS = ["id", "user_id", "text", "vector"]  # what a search hit needs
# What Lance says when a full-text search meets a table without its full-text index.
_NO_FTS_INDEX = "Cannot perform full text search unless an INVERTED index has been created"


class VectorSearch(VectorMaintenance):
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
        ds, version = self.datasets.latest(tb)  # it checks for other processes' commits
        held = self.resident.search(tb, version, user_id, query_vector, k)
        if held is not None:
            return _hits(held.ids, held.texts, held.vectors, similarity=held.scores), "in memory (exact)"
        ann = not exact and self.has_ann(kind)
        where = self._user_filter(tb, version, user_id)
        rows = nearest_rows(ds, _COLUMNS, query_vector, k, ann, where)
        if ann and _owned(rows, user_id).num_rows < k:
            rows, ann = nearest_rows(ds, _COLUMNS, query_vector, k, False, where), False
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

    def fts_search(self, kind: str, user_id: str, query: str, k: int) -> list[VectorHit]:
        return self.search_text(kind, user_id, query, k)[0]

    def search_text(self, kind: str, user_id: str, query: str, k: int) -> tuple[list[VectorHit], str]:
        tb = self.table(kind, create=False)
        if tb is None:
            return [], "LanceDB index"
        return self._read(tb, lambda: self._search_text(kind, user_id, query, k))

    def _search_text(self, kind: str, user_id: str, query: str, k: int) -> tuple[list[VectorHit], str]:
        """The user's k best rows by BM25 (Lance's, over the whole table), and where they were scored: ``in memory
        (BM25)`` for a table held in memory, unless a row was deleted since its full-text index was built
        (resident_text.py), else ``LanceDB index``; for a held table LanceDB then returns only ids and scores and
        the copy has the rest.
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
        ds, version = self.datasets.latest(tb)
        # A held copy scores by itself with Lance's own counts (resident_text.py), so both give the same scores;
        # when a row deleted since the index's rebuild still counts there, Lance scores and the copy supplies the rest.
        mine = self.resident.text_search(tb.name, version, user_id, query, k, lambda: text_index_coverage(ds))
        if mine is not None:
            return _hits(mine.ids, mine.texts, mine.vectors, bm25=mine.scores), "in memory (BM25)"
        owners = self.resident.owners(tb.name, version)
        if owners is not None:  # a table held in memory: its copy knows the owners, texts and vectors
            if user_id not in owners:
                return [], "LanceDB index"
            hits = self._fts_held(ds, tb.name, version, user_id, query, k, only_owner=len(owners) == 1)
            if hits is not None:
                return hits, "LanceDB index"
        where = self._user_filter(tb, version, user_id)
        rows = _owned(text_rows(ds, _COLUMNS, query, k, where), user_id)
        return _hits(
            rows.column("id").to_pylist(),
            rows.column("text").to_pylist(),
            _vectors(rows),
            bm25=rows.column("_score").to_numpy(),
        ), "LanceDB index"

    def _fts_held(
        self, ds: Any, name: str, version: int, user_id: str, query: str, k: int, only_owner: bool
    ) -> list[VectorHit] | None:
        """Full-text search of a table held in memory: LanceDB returns only ids and scores (reading 50 stored
        vectors costs ~1.5 ms), the copy supplies texts and vectors, and a table with one owner needs no user_id
        prefilter (~1.5 ms at 10k rows). Rows tied at the k-th score make the cut by id, so the same search gives
        the same rows (datasets.text_rows). None when the search saw rows the copy lacks (another process wrote)."""
        where = None if only_owner else f"user_id = {lance_literal(user_id)}"
        rows = _owned(text_rows(ds, ["id", "user_id"], query, k, where, whole_ties=True), user_id)
        ids = rows.column("id").to_pylist()
        held = self.resident.rows(name, version, ids)
        if held is None:
            return None
        texts, vecs = held
        return _hits(ids, texts, vecs, bm25=rows.column("_score").to_numpy())

    def vectors_for(self, kind: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        tb = self.table(kind, create=False)
        if tb is None or not ids:
            return {}
        where = "id IN (" + ", ".join(lance_literal(i) for i in ids) + ")"
        rows = self._read(tb, lambda: self.datasets.latest(tb)[0].to_table(columns=["id", "vector"], filter=where))
        vecs = _vectors(rows)
        return {i: vecs[n] for n, i in enumerate(rows.column("id").to_pylist())}

    def rows_for(self, kind: str, user_id: str, ids: Sequence[str]) -> list[VectorHit]:
        """The user's rows with these ids (text and stored vector; no search score), from the in-memory copy when
        one of this version is held, else by an id filter (the retrieval's entity stage fetches what it brings in
        this way)."""
        tb = self.table(kind, create=False)
        wanted = list(dict.fromkeys(ids))
        if tb is None or not wanted:
            return []
        _, version = self.datasets.latest(tb)
        held = self.resident.rows(tb.name, version, wanted)
        if held is not None:
            return _hits(wanted, held[0], held[1])
        where = f"user_id = {lance_literal(user_id)} AND id IN (" + ", ".join(lance_literal(i) for i in wanted) + ")"
        rows = self._read(tb, lambda: self.datasets.latest(tb)[0].to_table(columns=_COLUMNS, filter=where))
        rows = _owned(rows, user_id)
        return _hits(rows.column("id").to_pylist(), rows.column("text").to_pylist(), _vectors(rows))

    def ids(self, kind: str) -> list[str]:
        """Every id in the kind's table (a duplicate appears twice), for orphan checks."""
        tb = self.table(kind, create=False)
        if tb is None:
            return []
        return self._read(
            tb, lambda: tb.search().select(["id"]).limit(max(tb.count_rows(), 1)).to_arrow().column("id").to_pylist()
        )

    def user_vectors(self, kind: str, user_id: str) -> tuple[list[str], np.ndarray]:
        """Every row of one user in the kind's table: ids and stored vectors (the store insights' all-pairs
        comparison reads them once per refresh)."""
        tb = self.table(kind, create=False)
        if tb is None:
            return [], np.zeros((0, self.dim), np.float32)
        where = f"user_id = {lance_literal(user_id)}"
        rows = self._read(
            tb,
            lambda: tb.search().where(where).select(["id", "vector"]).limit(max(tb.count_rows(where), 1)).to_arrow(),
        )
        return rows.column("id").to_pylist(), _vectors(rows)

    def check_readable(self, kind: str) -> None:
        """Read every column of every row of the kind's table once; StoreCorrupt naming the table if any part of
        it cannot be read."""
        tb = self.table(kind, create=False)
        if tb is not None:
            self._read(tb, lambda: tb.search().limit(max(tb.count_rows(), 1)).to_arrow())
