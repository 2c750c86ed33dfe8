"""Named retrieval presets a user can select (``--preset`` in the benchmarks, ``overrides`` in Python).

Each is a documented set of per-call overrides on top of the llmemory-parity defaults, never tuned per
conversation or per question category.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidInput

# Every retrieval rule and constant of llmemory 0.2.x (../shared/docs/llmemory-reference.md §6), for reproducing its
# decisions; the settings' defaults differ from these where measurements said so.
LLMEMORY: dict[str, Any] = {
    "top_k": 20,
    "hybrid_enabled": True,
    "fusion": "weighted",
    "bm25_weight": 0.3,
    "bm25_source": "candidates",
    "preceding_bm25_weight": 0.0,
    "relevance_filter": "heuristic",
    "relevance_keep_all_max": 5,
    "relevance_min_score": 0.5,
    "relevance_min_word_chars": 4,
    "relevance_words": "raw",
    "relevance_protect_top": 0,
    "half_life_days": 30.0,
    "decay_floor": 0.0,
    "importance_weight": 1.0,
    "skill_importance": "success_rate",
    "feedback_weight": 0.5,
    "feedback_cap": 5,
    "mmr_enabled": False,
    "mmr_lambda": 0.7,
    "mmr_similarity": "jaccard",
    "budget_tokens": 2000,
    "assembly_mode": "stop",
    "context_max_items": 0,
    "hop_weight": 1.0,
    "reasoner_query": "terms",
}

PRESETS: dict[str, dict[str, Any]] = {
    "llmemory": LLMEMORY,
    # The defaults: llmemory 0.2.x parity except the [memlens] 'skip' assembly mode.
    "default": {},
    # Long-horizon conversational memory (e.g. LoCoMo): months-old turns matter as much as recent ones, and exact
    # words (names, places, dates) matter, so: no effective time decay, BM25 from the full-text index (whole-table
    # IDF, stemming, stop words) instead of the candidate set, a larger candidate pool, and query expansion with the
    # question's words on later hops, whose results count at 0.8 of their score in the merge (a proposed query is a
    # guess: its finds must beat the question's own by 25% to displace them; any value in 0.6..0.85 did about as
    # well on LoCoMo dev, 1.0 let hop 2 push good hop-1 results out).
    "long-horizon": {
        "half_life_days": 36500.0,
        "bm25_source": "index",
        "top_k": 50,
        "reasoner_query": "question+terms",
        "hop_weight": 0.8,
    },
}


def preset_overrides(name: str | None) -> dict[str, Any]:
    if not name:
        return {}
    if name not in PRESETS:
        raise InvalidInput(f"unknown preset {name[:30]!r}; use one of {', '.join(sorted(PRESETS))}")
    return dict(PRESETS[name])
