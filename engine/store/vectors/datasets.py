"""The Lance datasets behind the LanceDB tables, kept open for searches.

A search asked through LanceDB's Python query builder spends ~2 ms in Python before Lance runs it, holding the GIL,
so the six searches of a hop (vector and full-text per memory kind) queued behind each other on a small machine:
at 100k items the six took 20.7 ms one after another through the builder and 12.6 ms on the datasets
(docs/benchmarks.md, "Searches on the Lance dataset"). Lance runs the same plan either way (``explain_plan``),
once the search passes LanceDB's 20 probed partitions. pylance is pinned to the Lance version lancedb is built on
(requirements.txt), so both score alike.

A dataset is opened once per table (its first search loads the indexes into its session's cache) and moved to the
latest version before each search, which keeps that cache: ``checkout_version`` shares the session.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import lancedb
    import pyarrow as pa

# An exact (brute-force) vector search costs ~1 us per row (~110 ms at 100k rows); an HNSW-SQ graph answers in ~10 ms
# with recall@20 ~0.99 (measured, bench/latency.py). Searches ask for a wider beam than LanceDB's 1.5 * k.
ANN_MIN_EF = 64
# The IVF partitions an HNSW-SQ search probes: LanceDB's default (the dataset's own is 1). Our indexes have one
# partition (maintenance.py), so this only keeps the plan the same as LanceDB's.
ANN_NPROBES = 20


class OpenDatasets:
    """One open Lance dataset per LanceDB table handle, at the version last asked for."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[Any, Any]] = {}  # table name -> (the LanceDB handle, its dataset)
        self._lock = threading.Lock()

    def latest(self, tb: lancedb.table.Table) -> tuple[Any, int]:
        """``tb``'s dataset at its latest version, and that version. Asking the dataset costs ~0.04 ms where
        LanceDB's ``tb.version`` costs ~0.3 ms (a round trip through its event loop thread); both see other
        processes' commits."""
        with self._lock:
            held = self._open.get(tb.name)
        if held is not None and held[0] is tb:
            ds = held[1]
        else:  # first use, or the table was opened again (dropped and made anew, repaired)
            ds = tb.to_lance()
        version = int(ds.latest_version)
        if ds.version != version:
            ds = ds.checkout_version(version)
        if held is None or held[1] is not ds:
            with self._lock:
                self._open[tb.name] = (tb, ds)
        return ds, version

    def forget(self, name: str) -> None:
        """Open the table's dataset afresh at its next read (after a failed read, or when the table is dropped)."""
        with self._lock:
            self._open.pop(name, None)


def nearest_rows(
    ds: Any, columns: Sequence[str], query_vector: np.ndarray, k: int, ann: bool, where: str | None
) -> pa.Table:
    """The k rows nearest ``query_vector`` by cosine, with their ``_distance``: through the HNSW-SQ graph with a beam
    of ``max(ANN_MIN_EF, 2k)`` when ``ann``, else by comparing every row; ``where`` prefilters."""
    nearest: dict[str, Any] = {
        "column": "vector",
        "q": np.asarray(query_vector, np.float32),
        "k": k,
        "metric": "cosine",
    }
    if ann:
        nearest.update(ef=max(ANN_MIN_EF, 2 * k), minimum_nprobes=ANN_NPROBES, maximum_nprobes=ANN_NPROBES)
    else:
        nearest["use_index"] = False
    return ds.to_table(columns=[*columns, "_distance"], nearest=nearest, filter=where, prefilter=where is not None)


def text_rows(
    ds: Any, columns: Sequence[str], query: str, k: int, where: str | None, whole_ties: bool = False
) -> pa.Table:
    """The k best rows by BM25 over the table's full-text index, with their ``_score``, best first; ``where``
    prefilters. Rows tied on a score come in the order of their ``id`` (then ``text``).

    Lance breaks ties in whatever order its threads finish, so which of the rows tied at the k-th score make the cut
    can change between two runs of one search (1 or 2 of 30 questions got another candidate set on stores of
    look-alike items). With ``whole_ties`` that choice is made by id too: the search reads one row more than k and,
    only while that row ties with the k-th, twice as many (at most 16k), until the tie is inside what it read. That
    costs little when only ids and scores are read (a table held in memory, search.py) and up to 3x when texts and
    vectors are (a tie-heavy synthetic store at 100k items: 4 → 15 ms), so big tables keep Lance's cut."""
    order = [("_score", "descending"), *((c, "ascending") for c in ("id", "text") if c in columns)]
    limit = k + 1 if whole_ties else k
    while True:
        rows = ds.to_table(
            columns=[*columns, "_score"], full_text_query=query, limit=limit, filter=where, prefilter=where is not None
        )
        if not whole_ties or rows.num_rows < limit or k <= 0 or limit >= 16 * k:
            break  # one read asked for, every match read, or enough of the tie
        scores = rows.column("_score").to_numpy()
        if np.min(scores) < np.sort(scores)[::-1][k - 1]:
            break  # the rows read go past the k-th score: no row tied with it was left out
        limit *= 2
    return rows.sort_by(order).slice(0, max(k, 0))


def text_index_coverage(ds: Any) -> tuple[int, frozenset[int]] | None:
    """What the full-text index on ``text`` holds at ``ds``'s version: how many documents (rows with at least one
    token) it counts and the fragments it covers; None without such an index or with several segments. Lance scores
    a row of a covered fragment with the index's counts, which keep a deleted row until the index is rebuilt
    (maintenance.py), and a row written since with those counts plus the searched rows written since."""
    try:
        index = next(ix for ix in ds.list_indices() if list(ix["fields"]) == ["text"])
        stats = ds.stats.index_stats(index["name"])
        # An index that covers no fragment yet (a table emptied and filled again) reports no counts at all.
        if stats.get("num_segments", 1) != 1 or len(stats["indices"]) != 1 or "num_docs" not in stats["indices"][0]:
            return None
        return int(stats["indices"][0]["num_docs"]), frozenset(int(f) for f in index["fragment_ids"])
    except (StopIteration, ValueError, RuntimeError, OSError, KeyError, TypeError):  # no such index, other stats
        return None
