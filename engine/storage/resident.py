"""Small vector tables held in memory and searched exactly with one matrix product.

Every LanceDB query costs ~5 ms before it reads a row (measured on 2 cores, bench/latency.py), while an exact cosine
search over 10k rows of 384 floats in numpy takes ~0.3 ms. So tables of up to ``max_rows`` rows (episodes and skills
in practice) are copied into memory and searched there. A copy is tied to the LanceDB table version it was read at:
any write, from this or another process, moves the version and the copy is no longer used. It is reloaded only once
the same new version has been seen twice, so a process that writes between every search keeps using LanceDB instead
of re-reading the table each time.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .resident_text import MODELLED_INDEX, HeldFullText, probe_word


@dataclass(frozen=True)
class ResidentRows:
    """A user's nearest rows, best first: their ids, texts, stored vectors and cosine similarities."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # (n, dim) float32, as stored
    similarities: np.ndarray  # (n,) cosine similarity, higher is closer


@dataclass(frozen=True)
class ResidentTextRows:
    """A user's best rows by BM25, best first: their ids, texts, stored vectors and LanceDB-equal BM25 scores."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # (n, dim) float32, as stored
    bm25: np.ndarray  # (n,) higher is better, unbounded


@dataclass(frozen=True)
class _Copy:
    version: int
    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # rows grouped by user, so one user's rows are one contiguous slice (no copy per search)
    unit: np.ndarray  # vectors divided by their norms
    slices: dict[str, tuple[int, int]]
    row_of: dict[str, int]
    text: HeldFullText | None  # None when LanceDB's full-text answer cannot be reproduced (resident_text.py)


class ResidentVectors:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._copies: dict[str, _Copy] = {}
        self._seen: dict[str, int] = {}  # table name -> the last version a search saw
        self._too_big: dict[str, int] = {}  # table name -> a version at which it had more than max_rows rows
        self._lock = threading.Lock()

    def search(self, tb, version: int, user_id: str, query_vector: np.ndarray, k: int) -> ResidentRows | None:
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
        rows = top + start
        return ResidentRows([copy.ids[r] for r in rows], [copy.texts[r] for r in rows], copy.vectors[rows],
                            sims[top].astype(np.float32))

    def text_search(self, name: str, version: int, user_id: str, query: str, k: int) -> ResidentTextRows | None:
        """The user's k best rows by BM25, exactly as LanceDB's FTS index scores them; None when no copy of this
        version is held or it (or the query) is outside what resident_text.py models."""
        copy = self._held(name, version)
        held = copy.text if copy is not None else None
        if held is None:
            return None
        start, end = copy.slices.get(user_id, (0, 0))
        found = held.search(query, start, end, k)
        if found is None:
            return None
        rows = found.rows
        return ResidentTextRows([copy.ids[r] for r in rows], [copy.texts[r] for r in rows], copy.vectors[rows],
                                found.scores)

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

    def _refresh(self, tb, version: int) -> _Copy | None:
        with self._lock:
            copy = self._copies.get(tb.name)
            if copy is not None and copy.version == version:
                return copy
            self._copies.pop(tb.name, None)
            if self._seen.get(tb.name) != version:  # first sight of this version: maybe a writer is busy
                self._seen[tb.name] = version
                return None
            if tb.count_rows() > self.max_rows:
                self._too_big[tb.name] = version
                return None
            # Reading 10k episodes with their BM25 postings takes ~0.3 s, once per table version. A background read
            # was tried and measured no better: the postings are built in Python and hold the GIL, so the searches
            # meanwhile slowed down by about as much.
            copy = _read(tb, version)
            if copy is not None:
                self._copies[tb.name] = copy
            return copy


def _read(tb, version: int) -> _Copy | None:
    """A copy of the table at this version (None if it moved on while we read), with its BM25 postings when
    LanceDB's full-text index can be reproduced."""
    modelled = _fts_modelled(tb)
    data = tb.to_arrow()
    if tb.version != version:  # written to while we read: try again at the next stable version
        return None
    copy = _load(data, version)
    if modelled is not None and modelled == len(copy.ids):  # else rows were added since the index was built
        copy = dataclasses.replace(copy, text=_postings(tb, copy.texts))
    return copy


def _fts_modelled(tb) -> int | None:
    """The row count the table's FTS index covers when its answers can be reproduced in memory: the configuration
    resident_text.py models, one segment, no unindexed rows. None otherwise."""
    for ix in tb.list_indices():
        if tuple(ix.columns) != ("text",) or str(ix.index_type).upper() != "FTS":
            continue
        details = getattr(ix, "index_details", None) or {}
        if (all(details.get(key) == want for key, want in MODELLED_INDEX.items())
                and getattr(ix, "num_unindexed_rows", None) == 0 and getattr(ix, "num_segments", None) == 1):
            return getattr(ix, "num_indexed_rows", None)
    return None


def _build_text(tb, texts: list[str]) -> HeldFullText | None:
    """The postings for a held copy, once one LanceDB full-text query agrees with them: the index can still count
    rows deleted since it was built (until the table is compacted), and LanceDB may change its scoring."""
    held = HeldFullText.build(texts)
    word = probe_word(texts) if held is not None else None
    if held is None or word is None:  # no row has a token: every search finds nothing either way
        return held
    want = tb.search(word, query_type="fts").select(["id"]).limit(10).to_arrow().column("_score").to_numpy()
    got = held.search(word, 0, len(texts), 10)
    agree = got is not None and len(got.scores) == len(want) and bool(np.allclose(got.scores, want, atol=1e-4))
    return held if agree else None


def _postings(tb, texts: list[str]) -> HeldFullText | None:
    try:
        return _build_text(tb, texts)
    except Exception:  # an optimisation failed: LanceDB keeps answering the full-text searches
        return None


def _load(data: pa.Table, version: int) -> _Copy:
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
    return _Copy(version, ids, texts, vectors, unit.astype(np.float32), slices, {i: n for n, i in enumerate(ids)},
                 None)
