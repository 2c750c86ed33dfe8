"""Query vectors kept by text for the last few thousand queries.

A question asked again (an evaluation rerun, the same question under other settings, a page rerun) is not embedded
again, and the questions of an evaluation are embedded up front in batches: on a small CPU the encoder takes several
times longer per text for one text per call than in a batch. The vectors are the embedder's own, so a retrieval
ranks exactly as without the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ..providers.embedders import Embedder, embed_queries
from ..store.vectors.rows import check_vectors


class QueryVectors:
    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vector(self, text: str) -> np.ndarray:
        """The embedder's vector of ``text`` (read-only), embedded now unless kept from an earlier call."""
        with self._lock:
            kept = self._vectors.get(text)
            if kept is not None:
                self._vectors.move_to_end(text)
                return kept
        return self._keep([text], embed_queries(self.embedder, [text]))[0]

    def prime(self, texts: Sequence[str], batch: int = 256) -> int:
        """Embed the texts not kept yet, in batches; returns how many were embedded. At most ``size`` are kept, so
        priming more than that keeps the last ones."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        missing = missing[-self.size :]
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            self._keep(chunk, embed_queries(self.embedder, chunk))
        return len(missing)

    def clear(self) -> None:
        """Forget every kept vector (a benchmark timing first-time questions starts each from here)."""
        with self._lock:
            self._vectors.clear()

    def _keep(self, texts: Sequence[str], vectors: np.ndarray) -> list[np.ndarray]:
        vectors = check_vectors(vectors, self.embedder.dim, len(texts))  # a NaN query would rank at random
        kept = []
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                v = np.array(vector, dtype=np.float32)
                v.setflags(write=False)
                self._vectors[text] = v
                self._vectors.move_to_end(text)
                kept.append(v)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return kept
