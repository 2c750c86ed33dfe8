"""A hop's key search: the semantic memories' extra keys (engine/memory/memory_keys.py) searched by vector and full
text like the memories' own tables, and what a matched key adds to its memory's scores.

Search: the user's ``top_k`` nearest keys and ``top_k`` best keys by BM25, of the kinds ``memory_keys`` selects,
started beside the hop's other searches (:func:`start_key_search`; the trace's ``keys`` timing is the wait for them
after the others, and the fetch below).
Per memory the best key of each search is recorded (:class:`~engine.trace.key_links.KeyMatch`: kind, text, source,
score). A memory only its keys found is fetched (its own text and vector) and joins the candidates with ``found_by``
``key``; the context shows its own text, never a key's.

Scoring (the stages call :func:`key_cosines` and :func:`key_lexical`, so a replay scores the recorded matches the
same way): a candidate's cosine is the better of its own and its best key's (a memory is as near as its nearest
key), and ``key_bm25_weight`` times its best key's BM25 adds to its own BM25 (a key's words are more words of the
memory). With ``memory_keys`` off neither changes anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..config import Settings
from ..memory.base import Backends
from ..memory.memory_keys import key_kinds_for
from ..store.vectors.keys import KeyHit
from ..store.vectors.rows import VectorHit
from ..trace.key_links import KEY_FOUND_BY, KeyMatch
from ..trace.records import CandidateInput
from .lexical_weight import flatness

__all__ = [
    "KEYED_KIND",
    "KEY_FOUND_BY",
    "PendingKeys",
    "candidate_key_matches",
    "key_cosines",
    "key_lexical",
    "keys_on",
    "start_key_search",
]

KEYED_KIND = "semantic"  # only items have keys
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens-keys")


def keys_on(settings: Settings) -> bool:
    return settings.memory_keys != "off"


@dataclass(frozen=True)
class PendingKeys:
    """A hop's key searches, started beside its other searches (they read the keys table, the others the memories'
    tables, and neither needs the other's hits); :meth:`finish` waits for them."""

    b: Backends
    user_id: str
    by_vector: Future[tuple[list[KeyHit], str]]
    by_text: Future[list[KeyHit]]

    def finish(
        self, hits: Mapping[str, tuple[list[VectorHit], list[VectorHit]]]
    ) -> tuple[dict[str, KeyMatch], dict[str, list[VectorHit]], str]:
        """The hop's key matches by memory id, the rows (own text and vector) of the memories only keys found
        (``hits``: what the hop's own searches found), and how the keys' vectors were searched (for the trace's
        strategies: ``approximate (HNSW-SQ)`` or ``exact``)."""
        by_vector, how = self.by_vector.result()
        matches = key_matches(by_vector, self.by_text.result())
        found = {h.id for vec, fts in hits.values() for h in (*vec, *fts)}
        missing = [m for m in matches if m not in found]
        if not missing:
            return matches, {}, how
        rows = self.b.index.rows_for(KEYED_KIND, self.user_id, missing)
        for r in rows:
            m = matches[r.id]
            matches[r.id] = KeyMatch(**{**m.to_dict(), "brought_in": True})
        return matches, {KEYED_KIND: rows}, how


def start_key_search(
    b: Backends, user_id: str, query: str, query_vector: np.ndarray, sources: Sequence[str], settings: Settings
) -> PendingKeys | None:
    """Start the hop's key searches (the user's ``top_k`` nearest keys and ``top_k`` best keys by BM25, of the kinds
    ``memory_keys`` selects); None when there is nothing to search."""
    kinds = key_kinds_for(settings.memory_keys)
    if not kinds or KEYED_KIND not in sources or settings.memory_keys_search == "candidates":
        return None
    k = int(settings.top_k)
    return PendingKeys(
        b,
        user_id,
        _POOL.submit(b.index.search_key_vectors_how, KEYED_KIND, user_id, query_vector, k, kinds),
        _POOL.submit(b.index.search_key_text, KEYED_KIND, user_id, query, k, kinds),
    )


def candidate_key_matches(
    b: Backends,
    user_id: str,
    query_vector: np.ndarray,
    hits: Mapping[str, tuple[list[VectorHit], list[VectorHit]]],
    settings: Settings,
) -> tuple[dict[str, KeyMatch], str]:
    """``memory_keys_search=candidates``: each memory the hop's own searches found, matched to its nearest stored
    key by cosine (no keys search: nothing is brought in, no key BM25); and how, for the trace's strategies."""
    vec, fts = hits.get(KEYED_KIND, ([], []))
    ids = list(dict.fromkeys(h.id for h in (*vec, *fts)))
    found, how = b.index.key_cosines_of(KEYED_KIND, user_id, ids, query_vector, key_kinds_for(settings.memory_keys))
    return key_matches(found, []), how


def key_matches(by_vector: Sequence[KeyHit], by_text: Sequence[KeyHit]) -> dict[str, KeyMatch]:
    """Each memory's best key by cosine and by BM25 (the searches return best first; the first of a memory wins)."""
    best_vec: dict[str, KeyHit] = {}
    best_text: dict[str, KeyHit] = {}
    for h in by_vector:
        if h.memory_id not in best_vec or h.score > best_vec[h.memory_id].score:
            best_vec[h.memory_id] = h
    for h in by_text:
        if h.memory_id not in best_text or h.score > best_text[h.memory_id].score:
            best_text[h.memory_id] = h
    out: dict[str, KeyMatch] = {}
    for mid in dict.fromkeys([*best_vec, *best_text]):
        v, t = best_vec.get(mid), best_text.get(mid)
        out[mid] = KeyMatch(
            cosine=None if v is None else round(v.score, 6),
            cosine_kind=None if v is None else v.key_kind,
            cosine_text=None if v is None else v.text,
            cosine_source=None if v is None else v.source_id,
            bm25=None if t is None else round(t.score, 6),
            bm25_kind=None if t is None else t.key_kind,
            bm25_text=None if t is None else t.text,
            bm25_source=None if t is None else t.source_id,
        )
    return out


def key_cosines(inputs: Sequence[CandidateInput], settings: Settings, hop: int = 1) -> list[float]:
    """Each candidate's cosine for the fusion: its own, moved ``key_cosine_weight`` of the way to its best key's when
    that is nearer (1: the better of the two; its own with keys off). With ``adaptive_key_weight`` the weight is
    scaled by how flat the hop's own cosines are, on the first hop only unless ``adaptive_key_weight_hops`` is
    ``every``."""
    own = [i.vector_similarity for i in inputs]
    w = float(settings.key_cosine_weight)
    if not keys_on(settings) or w == 0:
        return own
    if settings.adaptive_key_weight and (hop == 1 or settings.adaptive_key_weight_hops == "every"):
        w *= flatness(own, settings)
    return [
        c + w * max(0.0, i.key.cosine - c) if i.key is not None and i.key.cosine is not None else c
        for c, i in zip(own, inputs)
    ]


def key_lexical(inputs: Sequence[CandidateInput], settings: Settings) -> list[float]:
    """What each candidate's keys add to its BM25: ``key_bm25_weight`` times its best key's (0 with keys off)."""
    w = float(settings.key_bm25_weight)
    if not keys_on(settings) or w == 0:
        return [0.0] * len(inputs)
    return [w * i.key.bm25 if i.key is not None and i.key.bm25 is not None else 0.0 for i in inputs]
