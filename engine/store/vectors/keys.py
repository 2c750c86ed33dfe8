"""The keys tables: extra keys a memory is found by (engine/memory/memory_keys.py), one LanceDB table per (memory
kind, embedding model) beside the kind's own table.

A key row carries the memory it indexes in ``id`` (several rows may share one), the key's ``text`` and ``vector``,
its ``key_kind`` (``facts``, ``next``) and ``source_id``, the memory whose text the key was drawn from (another
memory for a ``next`` key: the reply to it). The table's name starts like the kind's tables (``<kind>__<model>--keys``),
so everything that deletes a memory's vectors from every table of its kind by id (a forget, delete_user, the purge of
a hard forget) deletes its keys too; :meth:`KeyTables.delete` also deletes the keys drawn from a deleted memory's
text, so a hard forget leaves none of its words in another memory's keys. DuckDB stays the truth: a key of a memory
that is not active there is never a candidate (candidates.py joins every hit with DuckDB).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidInput, ModelMismatch
from ...ids import lance_literal
from .datasets import nearest_rows, text_rows
from .rows import check_vectors, owned_rows
from .search import VectorSearch
from .tables import _COMMIT_CONFLICT, KEYS_SUFFIX, keys_table_name

if TYPE_CHECKING:
    import lancedb

__all__ = ["KEYS_SUFFIX", "KEY_OVERFETCH", "KeyHit", "KeyRow", "KeyTables", "keys_table_name"]

# A prefilter (the user's keys of the wanted kinds) costs LanceDB a pass over the table's columns before the search:
# on the keys table of 100k two-sentence memories (300k rows) a vector search took ~17-20 ms with it against ~4 ms
# without, a full-text search ~27 ms against ~5 ms (bench/latency.py --sentences-per-item 2 --keys). So a search first
# asks for KEY_OVERFETCH times k rows unfiltered and keeps the user's keys of those kinds; only when fewer than k are
# left (other users' keys or other kinds fill the top) does it ask again with the prefilter.
KEY_OVERFETCH = 3


@dataclass(frozen=True)
class KeyRow:
    """One key of one memory, ready to be written (the vector is added by the writer)."""

    memory_id: str
    user_id: str
    key_kind: str
    text: str
    source_id: str


@dataclass(frozen=True)
class KeyHit:
    """A key a search found: the memory it indexes, the key, and the search's score (cosine or BM25)."""

    memory_id: str
    key_kind: str
    text: str
    source_id: str
    score: float


class KeyTables(VectorSearch):
    def _key_schema(self, kind: str) -> pa.Schema:
        return pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("user_id", pa.string()),
                pa.field("text", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), self.dim)),
                pa.field("key_kind", pa.string()),
                pa.field("source_id", pa.string()),
            ],
            metadata={"model": self.model, "dim": str(self.dim), "kind": kind, "metric": "cosine", "keys": "1"},
        )

    def key_table(self, kind: str, create: bool = False) -> lancedb.table.Table | None:
        """This model's keys table of ``kind`` (None when it does not exist and ``create`` is false)."""
        name = keys_table_name(kind, self.model)
        if name in self._tables:
            return self._tables[name]
        if name not in self.table_names():
            if not create:
                return None
            with self.creation_lock():
                if name not in self.table_names():
                    try:
                        self.db.create_table(name, schema=self._key_schema(kind))
                    except (ValueError, RuntimeError) as exc:  # created meanwhile by a process outside the lock
                        if "already exists" not in str(exc) and not any(m in str(exc) for m in _COMMIT_CONFLICT):
                            raise
        tb = self.db.open_table(name)
        meta = tb.schema.metadata or {}
        model, dim = meta.get(b"model", b"").decode(), int(meta.get(b"dim", b"0") or 0)
        if model != self.model or dim != self.dim:
            raise ModelMismatch(
                f"LanceDB table {name} holds vectors of {model or '?'} (dim {dim}), not {self.model} (dim {self.dim})"
            )
        self._tables[name] = tb
        return tb

    def add_keys(self, kind: str, rows: Sequence[KeyRow], vectors: np.ndarray) -> None:
        """Append key rows (one vector each)."""
        self._refuse_if_read_only()
        if not rows:
            return
        vectors = check_vectors(vectors, self.dim, len(rows))
        data = pa.table(
            {
                "id": pa.array([r.memory_id for r in rows], pa.string()),
                "user_id": pa.array([r.user_id for r in rows], pa.string()),
                "text": pa.array([r.text for r in rows], pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), self.dim),
                "key_kind": pa.array([r.key_kind for r in rows], pa.string()),
                "source_id": pa.array([r.source_id for r in rows], pa.string()),
            }
        )
        tb = self.key_table(kind, create=True)
        assert tb is not None  # created above
        tb.add(data)
        self._maintain(tb)

    def delete_keys(self, kind: str, ids: Sequence[str], every_model: bool = False, sources: bool = True) -> None:
        """Delete the keys of the memories ``ids`` and (with ``sources``) the keys drawn from their texts
        (``source_id``), from this model's keys table or, with ``every_model``, every model's."""
        if not ids:
            return
        names = [keys_table_name(kind, self.model)]
        if every_model:
            names = [n for n in self.kind_tables(kind) if n.endswith(KEYS_SUFFIX)]
        for name in names:
            if name not in self.table_names():
                continue
            tb = self._tables.get(name) or self.db.open_table(name)
            for start in range(0, len(ids), 500):
                listed = ", ".join(lance_literal(i) for i in ids[start : start + 500])
                tb.delete(f"id IN ({listed}) OR source_id IN ({listed})" if sources else f"id IN ({listed})")

    def clear_keys(self, kind: str, user_id: str | None = None) -> None:
        """Delete every key of this model's keys table (of one user), before they are built again."""
        tb = self.key_table(kind)
        if tb is not None:
            tb.delete("true" if user_id is None else f"user_id = {lance_literal(user_id)}")

    def keys_readable(self, kind: str) -> bool:
        """Whether every row of this model's keys table of ``kind`` can be read (true when there is none)."""
        try:
            tb = self.key_table(kind)
            if tb is not None:
                tb.search().limit(max(tb.count_rows(), 1)).to_arrow()
        except ModelMismatch:
            raise
        except Exception:
            return False
        return True

    def drop_keys(self, kind: str) -> None:
        """Drop this model's keys table of ``kind`` (an unreadable one, before repair builds the keys again)."""
        name = keys_table_name(kind, self.model)
        self._tables.pop(name, None)
        self.datasets.forget(name)
        self._indexed_once.discard(name)  # a table made again is indexed again (maintenance.py)
        if name in self.table_names():
            self.db.drop_table(name)

    def count_keys(self, kind: str, user_id: str | None = None, key_kinds: Sequence[str] | None = None) -> int:
        """The keys of the memories of ``kind`` (of one user; of these key kinds)."""
        tb = self.key_table(kind)
        if tb is None:
            return 0
        if key_kinds is not None and user_id is not None:
            where: str | None = _where(user_id, key_kinds)
        elif key_kinds is not None:
            where = _where_kinds(key_kinds)
        else:
            where = None if user_id is None else f"user_id = {lance_literal(user_id)}"
        return self._read(tb, lambda: tb.count_rows(where))

    def key_rows(self, kind: str, memory_ids: Sequence[str]) -> list[KeyRow]:
        """The stored keys of these memories (every user's: ids are unique across users)."""
        tb = self.key_table(kind)
        if tb is None or not memory_ids:
            return []
        rows = self._keys_of(tb, memory_ids, ["id", "user_id", "key_kind", "text", "source_id"])
        return [KeyRow(r["id"], r["user_id"], r["key_kind"], r["text"], r["source_id"]) for r in rows.to_pylist()]

    def _keys_of(self, tb: lancedb.table.Table, memory_ids: Sequence[str], columns: list[str]) -> pa.Table:
        """The rows of every key of these memories (ids escaped as LanceDB literals)."""
        listed = ", ".join(lance_literal(i) for i in memory_ids)
        return self._read(tb, lambda: self.datasets.latest(tb)[0].to_table(columns=columns, filter=f"id IN ({listed})"))

    def key_cosines_of(
        self, kind: str, user_id: str, memory_ids: Sequence[str], query_vector: np.ndarray, key_kinds: Sequence[str]
    ) -> tuple[list[KeyHit], str]:
        """Every stored key of these memories (the user's, of the given key kinds) with its cosine to the query,
        best first: the keys of candidates some other search found, scored exactly without searching the keys
        table; and how (``candidates' keys only (exact)``, or ``none written``: the store has no keys of this model)."""
        tb = self.key_table(kind)
        if tb is None:
            return [], "none written"
        how = "candidates' keys only (exact)"
        if not memory_ids or not key_kinds:
            return [], how
        query_vector = check_vectors(np.asarray(query_vector).reshape(1, -1), self.dim, 1)[0]
        rows = _kept(
            self._keys_of(tb, memory_ids, ["id", "user_id", "text", "key_kind", "source_id", "vector"]),
            user_id,
            key_kinds,
        )
        if not rows.num_rows:
            return [], how
        vecs = np.asarray(rows.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False))
        vecs = vecs.reshape(rows.num_rows, -1).astype(np.float32)
        q = query_vector.astype(np.float32)
        sims = vecs @ q / np.maximum(np.linalg.norm(vecs, axis=1) * float(np.linalg.norm(q)), 1e-12)
        order = np.argsort(-sims, kind="stable")
        return _key_hits(rows.take(pa.array(order)), sims[order]), how

    def search_key_vectors(
        self, kind: str, user_id: str, query_vector: np.ndarray, k: int, key_kinds: Sequence[str]
    ) -> list[KeyHit]:
        """The user's k keys nearest the query by cosine, of the given key kinds (see search_key_vectors_how)."""
        return self.search_key_vectors_how(kind, user_id, query_vector, k, key_kinds)[0]

    def search_key_vectors_how(
        self, kind: str, user_id: str, query_vector: np.ndarray, k: int, key_kinds: Sequence[str]
    ) -> tuple[list[KeyHit], str]:
        """The user's k keys nearest the query by cosine, of the given key kinds: through the table's HNSW-SQ index
        when optimize() built one (a memory has a key per sentence, so a keys table outgrows its kind's), exactly
        otherwise, and exactly when the graph walk found fewer than k of the user's keys (as for the memories' own
        tables, search.py); and how they were found (``approximate (HNSW-SQ)``, ``exact``, or ``none written``: the
        store has no keys of this model, memory_keys_write being off)."""
        tb = self.key_table(kind)
        if tb is None:
            return [], "none written"
        if not key_kinds:
            return [], "exact"
        query_vector = check_vectors(np.asarray(query_vector).reshape(1, -1), self.dim, 1)[0]
        where = _where(user_id, key_kinds)

        def run(limit: int, where: str | None, ann: bool) -> pa.Table:
            ds = self.datasets.latest(tb)[0]
            return nearest_rows(ds, ["id", "user_id", "text", "key_kind", "source_id"], query_vector, limit, ann, where)

        rows, how = None, "approximate (HNSW-SQ)"
        if self._indexed(tb):
            wide = self._read(tb, lambda: run(KEY_OVERFETCH * k, None, True))
            if (kept := _kept(wide, user_id, key_kinds)).num_rows >= k:
                rows = kept.slice(0, k)
        if rows is None:
            rows, how = _kept(self._read(tb, lambda: run(k, where, False)), user_id, key_kinds), "exact"
        return _key_hits(rows, 1.0 - rows.column("_distance").to_numpy() if rows.num_rows else np.zeros(0)), how

    def search_key_text(self, kind: str, user_id: str, query: str, k: int, key_kinds: Sequence[str]) -> list[KeyHit]:
        """The user's k best keys by BM25 (LanceDB's full-text index over the keys table), of the given kinds."""
        tb = self.key_table(kind)
        if tb is None or not key_kinds or not any(ch.isalnum() for ch in query or ""):
            return []
        where = _where(user_id, key_kinds)

        def run(limit: int, where: str | None) -> pa.Table:
            ds = self.datasets.latest(tb)[0]
            return text_rows(ds, ["id", "user_id", "text", "key_kind", "source_id"], query, limit, where)

        try:
            wide = self._read(tb, lambda: run(KEY_OVERFETCH * k, None))
            rows = _kept(wide, user_id, key_kinds)
            # BM25 is scored over the whole index, filtered or not: fewer rows than asked for are every match
            if rows.num_rows >= k or wide.num_rows < KEY_OVERFETCH * k:
                rows = rows.slice(0, k)
            else:
                rows = _kept(self._read(tb, lambda: run(k, where)), user_id, key_kinds)
        except Exception as exc:  # the index is built after the first write; another process may not have yet
            if "INVERTED index" not in str(exc):
                raise
            return []
        return _key_hits(rows, rows.column("_score").to_numpy() if rows.num_rows else np.zeros(0))


def _kept(rows: pa.Table, user_id: str, key_kinds: Sequence[str]) -> pa.Table:
    """The rows of the user's keys of the given kinds, in the search's order."""
    rows = owned_rows(rows, user_id)
    if rows.num_rows == 0:
        return rows
    return rows.filter(pc.is_in(rows.column("key_kind"), value_set=pa.array(list(key_kinds), pa.string())))


def _where(user_id: str, key_kinds: Sequence[str]) -> str:
    return f"user_id = {lance_literal(user_id)} AND {_where_kinds(key_kinds)}"


def _where_kinds(key_kinds: Sequence[str]) -> str:
    for kind in key_kinds:
        if not kind.isidentifier():
            raise InvalidInput(f"invalid key kind {kind[:30]!r}")
    return f"key_kind IN ({', '.join(lance_literal(k) for k in key_kinds)})"


def _key_hits(rows: pa.Table, scores: np.ndarray) -> list[KeyHit]:
    if rows.num_rows == 0:
        return []
    ids = rows.column("id").to_pylist()
    kinds = rows.column("key_kind").to_pylist()
    texts = rows.column("text").to_pylist()
    sources = rows.column("source_id").to_pylist()
    return [KeyHit(i, kk, t, s or "", float(sc)) for i, kk, t, s, sc in zip(ids, kinds, texts, sources, scores)]
