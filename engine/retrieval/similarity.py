"""Cosine similarity between a retrieval's candidates, recorded compactly in the trace so MMR can be replayed.

MMR with embeddings needs the cosine between every pair of candidates (within a hop and across hops). Replay must
not re-embed, so the trace keeps them: each hop stores, for the candidates it saw first, one row per candidate of
cosines against every candidate seen before it (the strict lower triangle of the retrieval's similarity matrix),
as int16 in units of 1e-4, base64-encoded. 240 candidates take ~77 kB instead of ~1 MB of ``"a|b": x`` JSON pairs,
and the live run ranks with exactly the values replay decodes, so replay stays exact.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..trace.hop_records import SIMILARITY_FORMAT, HopSimilarity

FORMAT = SIMILARITY_FORMAT
SCALE = 10_000
Lookup = Callable[[str, str], float]


class CandidateCosines:
    """The similarity matrix of a retrieval's unique candidates, grown hop by hop."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._index: dict[str, int] = {}
        self._vectors: np.ndarray | None = None
        self._matrix = np.zeros((0, 0), dtype=np.int16)

    def add_hop(self, ids: Sequence[str], vectors: np.ndarray) -> HopSimilarity:
        """Add one hop's candidates (unit vectors); return the hop's record for the trace."""
        fresh, seen = [], set(self._index)
        for n, i in enumerate(ids):
            if i not in seen:
                seen.add(i)
                fresh.append(n)
        new_ids = [ids[n] for n in fresh]
        if not new_ids:
            return self._record(new_ids, np.zeros(0, dtype=np.int16))
        new_vectors = np.asarray(vectors, dtype=np.float32)[fresh]
        every = new_vectors if self._vectors is None else np.concatenate([self._vectors, new_vectors])
        block = np.rint(np.clip(new_vectors @ every.T, -1.0, 1.0) * SCALE).astype(np.int16)
        start = len(self.ids)
        packed = np.concatenate([block[j, : start + j] for j in range(len(new_ids))])
        self._vectors = every
        self._append(new_ids, packed)
        return self._record(new_ids, packed)

    @staticmethod
    def _record(new_ids: list[str], packed: np.ndarray) -> HopSimilarity:
        values = base64.b64encode(packed.astype("<i2").tobytes()).decode("ascii")
        return HopSimilarity(format=FORMAT, scale=SCALE, ids=tuple(new_ids), values=values)

    def _append(self, new_ids: list[str], packed: np.ndarray) -> None:
        start, n = len(self.ids), len(new_ids)
        size = start + n
        matrix = np.zeros((size, size), dtype=np.int16)
        matrix[:start, :start] = self._matrix
        pos = 0
        for j in range(n):
            row = start + j
            matrix[row, :row] = packed[pos : pos + row]
            matrix[:row, row] = packed[pos : pos + row]
            pos += row
        self._matrix = matrix
        for k, i in enumerate(new_ids):
            self._index[i] = start + k
        self.ids.extend(new_ids)

    @classmethod
    def from_records(cls, records: Sequence[HopSimilarity]) -> CandidateCosines:
        table = cls()
        for rec in records:
            raw = base64.b64decode(rec.values) if rec.values else b""
            table._append(list(rec.ids), np.frombuffer(raw, dtype="<i2").astype(np.int16))
        return table

    def cosine(self, a: str, b: str) -> float:
        ia, ib = self._index.get(a), self._index.get(b)
        if ia is None or ib is None or ia == ib:
            return 0.0
        return float(self._matrix[ia, ib]) / SCALE


def cosine_lookup(records: Sequence[HopSimilarity | Mapping[str, Any]]) -> Lookup | None:
    """A lookup over the hops' recorded similarities (records, or their stored JSON objects); None when nothing was
    recorded."""
    recorded = [r for r in map(HopSimilarity.from_dict, records) if r.recorded]
    if not recorded:
        return None
    if all(r.format == FORMAT for r in recorded):
        return CandidateCosines.from_records(recorded).cosine
    # traces written before the compact format: a flat {"a|b": cosine} mapping per hop
    pairs: dict[str, float] = {}
    for r in recorded:
        pairs.update({k: v for k, v in r.pairs.items() if "|" in k})

    def from_pairs(a: str, b: str) -> float:
        return float(pairs.get(f"{a}|{b}", pairs.get(f"{b}|{a}", 0.0)))

    return from_pairs
