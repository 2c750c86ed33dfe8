"""Plain search: the candidates' first step (vector and full-text search per kind, joined with DuckDB) scored by one
blend, without the ranking pipeline or a trace. The MCP tool ``memory_search``, the CLI's ``search`` and the
dashboard's pickers use it.

``hybrid`` blends with the pipeline's weighted fusion (stages.weighted_fusion) and the store's ``bm25_weight`` (w):
``score = (1-w)*cosine + w*BM25/max BM25`` over the union of vector and full-text hits; ``vector`` runs only the
vector search (cosine); ``fts`` runs only the full-text search (LanceDB BM25; cosine still computed for display).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..errors import InvalidInput
from ..ids import check_id, check_text
from ..memory.base import Backends
from ..memory.forgetting import check_kind
from ..providers.embedders import embed_queries
from ..records import KINDS, SearchHit
from ..trace.records import CandidateInput
from .candidates import build_inputs, search_sources
from .stages import normalised, weighted_fusion

SEARCH_MODES = ("hybrid", "vector", "fts")
# Each kind's searches return at least this many hits before the blend ranks them, so a small limit still ranks
# over the same candidates as the default one.
MIN_HITS_PER_KIND = 20


def plain_search(
    b: Backends, user_id: str, query: str, kind: str = "all", limit: int = 10, mode: str = "hybrid"
) -> list[SearchHit]:
    """The user's best memories of ``kind`` (or ``all``) for ``query``, best first (see the module docstring)."""
    check_id(user_id, "user id")
    check_text(query, "query", b.settings.max_text_chars)
    kinds = KINDS if kind == "all" else (check_kind(kind),)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInput("limit must be an integer from 1 to 1000")
    if mode not in SEARCH_MODES:
        raise InvalidInput("search mode must be hybrid, vector or fts")
    searches: Sequence[str] = {"hybrid": ("vector", "fts"), "vector": ("vector",), "fts": ("fts",)}[mode]
    qvec = embed_queries(b.embedder, [query])[0]
    hits, _ = search_sources(b, user_id, query, qvec, kinds, max(limit, MIN_HITS_PER_KIND), searches)
    with b.db.read() as conn:
        inputs, _ = build_inputs(b, conn, user_id, qvec, hits)
    scored = [
        SearchHit(i.id, i.kind, i.text, s, i.vector_similarity, i.fts_score, datetime.fromisoformat(i.created_at))
        for i, s in zip(inputs, _scores(inputs, mode, b.settings.bm25_weight))
    ]
    return sorted(scored, key=lambda h: -h.score)[:limit]


def _scores(inputs: Sequence[CandidateInput], mode: str, bm25_weight: float) -> list[float]:
    if mode == "vector":
        return [i.vector_similarity for i in inputs]
    bm25 = [i.fts_score or 0.0 for i in inputs]
    if mode == "fts":
        return bm25
    # The pipeline's weighted fusion over the index's BM25 (no preceding text: a hit is scored on its own words).
    _, _, hybrid = weighted_fusion([i.vector_similarity for i in inputs], normalised(bm25), bm25_weight)
    return [round(h, 6) for h in hybrid]
