"""BM25 over a table held in memory (resident.py), scored as Lance's full-text index scores it.

A full-text search through Lance costs ~1.5-4 ms per table before it reads a row (docs/benchmarks.md, "Searches on
the Lance dataset"), and a hop runs one per memory kind; over a held copy of a few thousand rows the same answer
takes a fraction of a millisecond. The copy already holds the texts, so it is tokenized once (with ``lance.tokenize``,
the tokenizer of the index: LanceDB's ``FTS()`` defaults) and scored with Lance's BM25:

    score(d, q) = sum over the query's tokens t (repeats count) of
                  idf(t) * tf(t, d) * (K1 + 1) / (tf(t, d) + K1 * (1 - B + B * len(d) / avg_len))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

where N counts the rows with at least one token (a text of stop words only is not a document to Lance) and avg_len
is their mean token count, both over the whole table (every user), as Lance's index keeps them. Measured against
Lance 13.0 on tables whose index covers every row: the same scores to float32 precision (tests/engine/store).

Lance keeps two sets of counts, and so does the copy: a row of a fragment its index covers is scored with the
index's counts (every user's indexed rows, as they were when it was built); a row written since with those plus the
rows written since that the search reads (the user's, or every row when one user owns the table: memlens filters by
user only then). A deleted row stays in the index's counts until the index is rebuilt, which the copy cannot
reproduce without the row: then (checked once per table version against the index's statistics,
datasets.text_index_coverage) Lance scores. Either way a question gets the same scores, held or not.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np

# Lance's BM25 constants (lance-index's scorer).
K1 = 1.2
B = 0.75


def tokens(text: str) -> tuple[str, ...]:
    """The terms the full-text index keeps of ``text``: lower-cased, ASCII-folded, English-stemmed, stop words and
    tokens of more than 40 characters dropped (the tokenizer of the tables' index: LanceDB's ``FTS()`` defaults,
    named here so a change of theirs cannot slip in)."""
    import lance

    found = lance.tokenize(
        text or "",
        base_tokenizer="simple",
        language="English",
        lower_case=True,
        stem=True,
        remove_stop_words=True,
        ascii_folding=True,
    )
    return tuple(t.text for t in found)


class HeldTextIndex:
    """The inverted index of one held copy: for each term, the rows that contain it (ascending) and how often; and
    which rows Lance's index holds (``indexed``), since Lance scores those and the rows written since with
    different counts."""

    def __init__(self, row_tokens: list[tuple[str, ...]], indexed: np.ndarray | None = None) -> None:
        n = len(row_tokens)
        self.lengths = np.fromiter((len(t) for t in row_tokens), dtype=np.float64, count=n)
        self.indexed = np.ones(n, dtype=bool) if indexed is None else np.asarray(indexed, dtype=bool)
        documents = self.lengths > 0
        self.indexed_documents = int(np.count_nonzero(documents & self.indexed))
        self._indexed_tokens = float(self.lengths[self.indexed].sum())
        # Running counts of the rows written since the index was built, so a user's share is two subtractions.
        later = documents & ~self.indexed
        self._later_documents = np.concatenate(([0], np.cumsum(later)))
        self._later_tokens = np.concatenate(([0.0], np.cumsum(np.where(later, self.lengths, 0.0))))
        # One (term, row) key per token, counted by numpy: a Counter per row took ~1 s for 20k turns.
        self._vocab: dict[str, int] = {}
        term_ids = np.fromiter(
            (self._vocab.setdefault(t, len(self._vocab)) for terms in row_tokens for t in terms),
            dtype=np.int64,
            count=int(self.lengths.sum()),
        )
        width = max(n, 1)
        rows = np.repeat(np.arange(n, dtype=np.int64), self.lengths.astype(np.int64))
        keys, tf = np.unique(term_ids * width + rows, return_counts=True)
        self._rows = (keys % width).astype(np.int32)
        self._tf = tf.astype(np.float64)
        self._bounds = np.searchsorted(keys // width, np.arange(len(self._vocab) + 1))

    def scores(self, query: str, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(row numbers in ``[start, end)`` that match ``query``, ascending; their BM25 scores as float32, as Lance
        returns them). A row the index holds is scored with the index's counts (every user's indexed rows); a row
        written since with those plus the rows written since among ``[start, end)``: the rows Lance's search of
        the unindexed rows reads (a user's, or the table's when one user owns it all)."""
        later_docs = int(self._later_documents[end] - self._later_documents[start])
        later_tokens = float(self._later_tokens[end] - self._later_tokens[start])
        counts = (
            (self.indexed_documents, self._indexed_tokens),
            (self.indexed_documents + later_docs, self._indexed_tokens + later_tokens),
        )
        total: np.ndarray | None = None
        for term, repeats in Counter(tokens(query)).items():
            at = self._vocab.get(term)
            if at is None:
                continue
            first, last = int(self._bounds[at]), int(self._bounds[at + 1])
            lo, hi = first + np.searchsorted(self._rows[first:last], (start, end))
            if lo == hi:
                continue
            every = self._rows[first:last]
            df_indexed = int(np.count_nonzero(self.indexed[every]))
            rows, tf = self._rows[lo:hi], self._tf[lo:hi]
            df_later = int(np.count_nonzero(~self.indexed[rows]))
            held = self.indexed[rows]
            part = np.empty(len(rows), dtype=np.float64)
            for mask, (documents, tokens_total), df in (
                (held, counts[0], df_indexed),
                (~held, counts[1], df_indexed + df_later),
            ):
                if not mask.any():
                    continue
                idf = math.log(1.0 + (documents - df + 0.5) / (df + 0.5))
                norm = K1 * (1.0 - B + B * self.lengths[rows[mask]] / (tokens_total / documents))
                part[mask] = repeats * idf * tf[mask] * (K1 + 1.0) / (tf[mask] + norm)
            if total is None:
                total = np.zeros(end - start, dtype=np.float64)
            total[rows - start] += part
        if total is None:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        hit = np.flatnonzero(total > 0)
        return (hit + start).astype(np.int32), total[hit].astype(np.float32)


class TokenCache:
    """Each table's texts tokenized once: a copy reloaded after a write tokenizes only the rows whose text it has not
    seen. Tokenizing costs ~30-45 us per conversation turn (a 20k-turn table's first index ~0.9 s on the 2-core
    machine under load); the index of a 20k-row copy reloaded after a one-row write took ~60 ms."""

    def __init__(self) -> None:
        self._by_table: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}  # name -> id -> (text, its tokens)
        self._lock = threading.Lock()

    def index(self, name: str, ids: list[str], texts: list[str], indexed: np.ndarray | None = None) -> HeldTextIndex:
        with self._lock:
            known = self._by_table.get(name, {})
        fresh: dict[str, tuple[str, tuple[str, ...]]] = {}
        row_tokens = []
        for row_id, text in zip(ids, texts, strict=True):
            seen = known.get(row_id) or fresh.get(row_id)
            terms = seen[1] if seen is not None and seen[0] == text else tokens(text)
            fresh[row_id] = (text, terms)
            row_tokens.append(terms)
        with self._lock:
            self._by_table[name] = fresh  # rows no longer in the table are dropped with the old map
        return HeldTextIndex(row_tokens, indexed)

    def discard(self, name: str, ids: Sequence[str]) -> None:
        with self._lock:
            held = self._by_table.get(name, {})
            for row_id in ids:
                held.pop(row_id, None)

    def drop(self, name: str) -> None:
        with self._lock:
            self._by_table.pop(name, None)
