"""Small vector tables held in memory and searched exactly with one matrix product.

Every LanceDB query costs ~5 ms before it reads a row (measured on 2 cores, bench/latency.py), while an exact cosine
search over 10k rows of 384 floats in numpy takes ~0.3 ms. So tables of up to ``max_rows`` rows (episodes and skills
in practice) are copied into memory and searched there. A copy is tied to the LanceDB table version it was read at:
any write, from this or another process, moves the version and the copy is no longer used. It is reloaded only once
the same new version has been seen twice, so a process that writes between every search keeps using LanceDB instead
of re-reading the table each time. A held copy also answers full-text searches (resident_text.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .resident_text import HeldTextIndex, TokenCache

if TYPE_CHECKING:
    import lancedb


@dataclass(frozen=True)
class ResidentRows:
    """A user's best rows, best first: their ids, texts, stored vectors and scores (cosine similarities, or BM25
    scores for a full-text search)."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # (n, dim) float32, as stored
    scores: np.ndarray  # (n,)


@dataclass(frozen=True)
class _Copy:
    version: int
    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # rows grouped by user, so one user's rows are one contiguous slice (no copy per search)
    unit: np.ndarray  # vectors divided by their norms
    slices: dict[str, tuple[int, int]]
    row_of: dict[str, int]
    fragments: np.ndarray  # each row's Lance fragment (full-text search: which rows Lance's index holds)


class ResidentVectors:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._copies: dict[str, _Copy] = {}
        self._seen: dict[str, int] = {}  # table name -> the last version a search saw
        self._too_big: dict[str, int] = {}  # table name -> a version at which it had more than max_rows rows
        self._texts: dict[str, tuple[int, HeldTextIndex | None]] = {}  # name -> (version, its index or None)
        self._tokens = TokenCache()
        self._lock = threading.Lock()
        self._text_lock = threading.Lock()  # tokenizing a copy takes up to ~1 s: vector searches need not wait

    def search(
        self, tb: lancedb.table.Table, version: int, user_id: str, query_vector: np.ndarray, k: int
    ) -> ResidentRows | None:
        """The user's k nearest rows by exact cosine, or None when the table is not (or not yet) held in memory.
        ``version`` is the table's current version (the caller reads it once per search)."""
        if self.max_rows <= 0 or self._too_big.get(tb.name) == version:
            return None
        copy = self._copies.get(tb.name)
        if copy is None or copy.version != version:
            copy = self._refresh(tb, version)
            if copy is None:
                return None
        start, end = copy.slices.get(user_id, (0, 0))
        if end == start or k <= 0:
            return ResidentRows([], [], np.zeros((0, copy.vectors.shape[1]), np.float32), np.zeros(0, np.float32))
        q = np.asarray(query_vector, dtype=np.float32)
        sims = copy.unit[start:end] @ (q / (np.linalg.norm(q) or 1.0))
        k = min(k, end - start)
        top = np.argpartition(-sims, k - 1)[:k] if k < end - start else np.arange(end - start)
        top = top[np.lexsort((top, -sims[top]))]  # best first; ties in row order, so results are repeatable
        return _rows(copy, top + start, sims[top].astype(np.float32))

    def text_search(
        self,
        name: str,
        version: int,
        user_id: str,
        query: str,
        k: int,
        index_coverage: Callable[[], tuple[int, frozenset[int]] | None],
    ) -> ResidentRows | None:
        """The user's k best rows by BM25 as Lance scores them (resident_text.py), or None when no copy of this table
        version is held (this never loads one: vector searches decide that) or when the copy cannot give Lance's
        scores: ``index_coverage`` gives the documents Lance's full-text index counts at this version and the
        fragments it covers (datasets.text_index_coverage), and a row deleted since the index was built is counted
        there but not in the copy. The same question must get the same scores whether or not a copy is held. Rows
        tied on a score come in the order of their id, then text. The copy's inverted index is built at its first
        full-text search."""
        copy = self._held(name, version)
        if copy is None:
            return None
        text_index = self._text_index(name, copy, index_coverage)
        if text_index is None:
            return None
        start, end = copy.slices.get(user_id, (0, 0))
        if end == start or k <= 0:
            return ResidentRows([], [], np.zeros((0, copy.vectors.shape[1]), np.float32), np.zeros(0, np.float32))
        rows, scores = text_index.scores(query, start, end)
        if len(rows) > k:  # keep every row tied with the k-th score, then cut by id
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            rows, scores = rows[keep], scores[keep]
        order = sorted(range(len(rows)), key=lambda n: (-scores[n], copy.ids[rows[n]], copy.texts[rows[n]]))[:k]
        return _rows(copy, rows[order], scores[order])

    def _text_index(
        self, name: str, copy: _Copy, index_coverage: Callable[[], tuple[int, frozenset[int]] | None]
    ) -> HeldTextIndex | None:
        """The copy's inverted index, or None when Lance's full-text index counts rows the copy does not have (rows
        deleted since it was built) or has several segments (decided once per table version)."""
        held = self._texts.get(name)
        if held is not None and held[0] == copy.version:
            return held[1]
        with self._text_lock:
            held = self._texts.get(name)
            if held is None or held[0] != copy.version:
                coverage = index_coverage()
                text_index = None
                if coverage is not None:
                    documents, fragments = coverage
                    covered = np.fromiter(fragments, dtype=np.int64, count=len(fragments))
                    text_index = self._tokens.index(name, copy.ids, copy.texts, np.isin(copy.fragments, covered))
                    if text_index.indexed_documents != documents:
                        text_index = None  # rows deleted since the index was built still count there
                held = (copy.version, text_index)
                self._texts[name] = held
            return held[1]

    def discard(self, name: str, ids: Sequence[str]) -> None:
        """Drop what is held of these rows: the copy and inverted index of the table (they hold the rows' texts;
        the next stable version is read afresh) and the rows' tokens. Called before the rows are deleted, so a
        forgotten text is not kept in memory until the next reload."""
        with self._lock:
            self._copies.pop(name, None)
        with self._text_lock:
            self._texts.pop(name, None)
        self._tokens.discard(name, ids)

    def owners(self, name: str, version: int) -> frozenset[str] | None:
        """The users with rows in this version of the table, or None when no copy of that version is held (this
        never loads one: vector searches decide that)."""
        copy = self._held(name, version)
        return None if copy is None else frozenset(copy.slices)

    def rows(self, name: str, version: int, ids: list[str]) -> tuple[list[str], np.ndarray] | None:
        """The texts and stored vectors of these rows from the copy of this table version; None when no such copy
        is held or a row is not in it (a search that saw a newer version)."""
        copy = self._held(name, version)
        if copy is None:
            return None
        try:
            at = [copy.row_of[i] for i in ids]
        except KeyError:
            return None
        return [copy.texts[r] for r in at], copy.vectors[at]

    def _held(self, name: str, version: int) -> _Copy | None:
        copy = self._copies.get(name)
        return copy if copy is not None and copy.version == version else None

    def _refresh(self, tb: lancedb.table.Table, version: int) -> _Copy | None:
        with self._lock:
            copy = self._copies.get(tb.name)
            if copy is not None and copy.version == version:
                return copy
            self._copies.pop(tb.name, None)
            self._texts.pop(tb.name, None)
            if self._seen.get(tb.name) != version:  # first sight of this version: maybe a writer is busy
                self._seen[tb.name] = version
                return None
            if tb.count_rows() > self.max_rows:
                self._too_big[tb.name] = version
                self._tokens.drop(tb.name)
                return None
            copy = _read(tb, version)
            if copy is not None:
                self._copies[tb.name] = copy
            return copy


def _rows(copy: _Copy, rows: np.ndarray, scores: np.ndarray) -> ResidentRows:
    return ResidentRows([copy.ids[r] for r in rows], [copy.texts[r] for r in rows], copy.vectors[rows], scores)


def _read(tb: lancedb.table.Table, version: int) -> _Copy | None:
    """A copy of the table at this version (None if that version is gone already)."""
    try:
        ds = tb.to_lance()
        if ds.version != version:
            ds = ds.checkout_version(version)
        data = ds.to_table(columns=["id", "user_id", "text", "vector"], with_row_address=True)
    except (ValueError, OSError, RuntimeError):  # pruned by another process: read the next stable version
        return None
    return _load(data, version)


def _load(data: pa.Table, version: int) -> _Copy:
    """The copy, one user's rows next to each other."""
    users = np.asarray(data.column("user_id").to_pylist(), dtype=object)
    order = np.argsort(users, kind="stable")
    users = users[order]
    ids = data.column("id").to_pylist()
    texts = data.column("text").to_pylist()
    n = data.num_rows
    if n:
        flat = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False)
        vectors = np.ascontiguousarray(flat.reshape(n, -1).astype(np.float32, copy=False)[order])
    else:
        vectors = np.zeros((0, 0), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True) if n else np.zeros((0, 1), np.float32)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    slices: dict[str, tuple[int, int]] = {}
    if n:
        bounds = np.flatnonzero(users[1:] != users[:-1]) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [n]))
        slices = {users[s]: (int(s), int(e)) for s, e in zip(starts, ends)}
    ids = [ids[i] for i in order]
    texts = [texts[i] for i in order]
    addresses = data.column("_rowaddr").to_numpy().astype(np.uint64)  # a row's fragment is its address's high half
    fragments = (addresses >> np.uint64(32)).astype(np.int64)[order]
    row_of = {i: n for n, i in enumerate(ids)}
    return _Copy(version, ids, texts, vectors, unit.astype(np.float32), slices, row_of, fragments)
