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

from .resident_text import MODELLED_INDEX, HeldFullText, probe_word, probe_words

TEXT_BUILD_ROWS_PER_SEARCH = 1000


@dataclass(frozen=True)
class ResidentRows:
    """A user's best rows, best first: their ids, texts, stored vectors and scores (cosine similarity from
    ``search``, LanceDB-equal BM25 from ``text_search``; higher is better in both)."""

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
    # Which rows LanceDB's FTS index has not covered yet (table rows added since it was built); None when its answers
    # cannot be reproduced in memory (resident_text.py). The postings themselves are built on demand.
    unindexed: np.ndarray | None


class _Postings:
    """The BM25 postings of one held table version, built once it has been searched often enough to pay for them."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.searches = 0
        self.built = False
        self.held: HeldFullText | None = None


class ResidentVectors:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._copies: dict[str, _Copy] = {}
        self._seen: dict[str, int] = {}  # table name -> the last version a search saw
        self._too_big: dict[str, int] = {}  # table name -> a version at which it had more than max_rows rows
        self._postings: dict[str, _Postings] = {}  # table name -> its held version's postings
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
        return _rows(copy, top + start, sims[top].astype(np.float32))

    def text_search(self, tb, version: int, user_id: str, query: str, k: int) -> ResidentRows | None:
        """The user's k best rows by BM25, exactly as LanceDB's FTS index scores them; None when no copy of this
        version is held, its postings are not built (yet), or it (or the query) is outside what resident_text.py
        models."""
        copy = self._held(tb.name, version)
        if copy is None or copy.unindexed is None:
            return None
        held = self._postings_for(tb, copy)
        if held is None:
            return None
        start, end = copy.slices.get(user_id, (0, 0))
        found = held.search(query, start, end, k)
        if found is None:
            return None
        return _rows(copy, found.rows, found.scores)

    def _postings_for(self, tb, copy: _Copy) -> HeldFullText | None:
        # A build costs ~30 us per row and each search it answers saves ~4 ms: build once this version has been
        # searched about once per 1,000 rows, so a table written between every few searches never pays for postings
        # it would hardly use, and a small table gets them at once.
        state = self._postings.get(tb.name)
        if state is None or state.version != copy.version:
            state = self._postings[tb.name] = _Postings(copy.version)
        if not state.built:
            state.searches += 1
            if state.searches * TEXT_BUILD_ROWS_PER_SEARCH < len(copy.ids):
                return None
            with self._lock:
                if not state.built:
                    assert copy.unindexed is not None  # the caller returned before asking for an unknown split
                    state.held = _postings(tb, copy.texts, copy.unindexed)
                    state.built = True
        return state.held

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
            copy = _read(tb, version)
            if copy is not None:
                self._copies[tb.name] = copy
            return copy


def _rows(copy: _Copy, rows: np.ndarray, scores: np.ndarray) -> ResidentRows:
    return ResidentRows([copy.ids[r] for r in rows], [copy.texts[r] for r in rows], copy.vectors[rows], scores)


def _read(tb, version: int) -> _Copy | None:
    """A copy of the table at this version (None if it moved on while we read), marking the rows LanceDB's FTS
    index does not cover yet when its answers can be reproduced in memory."""
    covered = _fts_modelled(tb)
    data = tb.to_arrow()
    if tb.version != version:  # written to while we read: try again at the next stable version
        return None
    copy, order = _load(data, version)
    if covered is not None and sum(covered) == len(copy.ids):
        # Rows come in table order, the index's rows first: the rest were added since it was built.
        copy = dataclasses.replace(copy, unindexed=order >= covered[0])
    return copy


def _fts_modelled(tb) -> tuple[int, int] | None:
    """(indexed, unindexed) rows when the table's FTS index can be reproduced in memory: the configuration
    resident_text.py models, in one segment. None otherwise."""
    for ix in tb.list_indices():
        if tuple(ix.columns) != ("text",) or str(ix.index_type).upper() != "FTS":
            continue
        details = getattr(ix, "index_details", None) or {}
        indexed, unindexed = getattr(ix, "num_indexed_rows", None), getattr(ix, "num_unindexed_rows", None)
        if (all(details.get(key) == want for key, want in MODELLED_INDEX.items())
                and getattr(ix, "num_segments", None) == 1 and indexed is not None and unindexed is not None):
            return int(indexed), int(unindexed)
    return None


def _build_text(tb, texts: list[str], unindexed: np.ndarray) -> HeldFullText | None:
    """The postings for a held copy, once LanceDB agrees with them on a query over an indexed row and one over the
    newest rows: the index can still count rows deleted since it was built (until the table is compacted), and
    LanceDB may change its scoring."""
    held = HeldFullText.build(texts, unindexed)
    if held is None:
        return None
    newest = [t for t, new in zip(texts, unindexed) if new][-3:]
    for query in (probe_word([t for t, new in zip(texts, unindexed) if not new]), probe_words(newest)):
        if not query:
            continue
        want = tb.search(query, query_type="fts").select(["id"]).limit(10).to_arrow().column("_score").to_numpy()
        got = held.search(query, 0, len(texts), 10)
        if got is None or len(got.scores) != len(want) or not np.allclose(got.scores, want, atol=1e-4):
            return None
    return held


def _postings(tb, texts: list[str], unindexed: np.ndarray) -> HeldFullText | None:
    try:
        return _build_text(tb, texts, unindexed)
    except Exception:  # an optimisation failed: LanceDB keeps answering the full-text searches
        return None


def _load(data: pa.Table, version: int) -> tuple[_Copy, np.ndarray]:
    """The copy, and each of its rows' position in the table."""
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
                 None), order
