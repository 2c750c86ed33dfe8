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
    "preceding_full_words": 0,
    "context_max_items": 0,
    "hop_weight": 1.0,
    "reasoner_query": "terms",
    "query_condense_words": 15,
    "time_window": "off",  # [memlens] the time stage (issue 34) is no llmemory rule
    "adaptive_bm25": False,  # [memlens] llmemory blends at bm25_weight in every search
    "assistant_turn_penalty": 0.0,  # [memlens] llmemory scores every memory alike, whoever spoke it
    "question_turn_penalty": 0.0,  # [memlens] and whether it asks or tells
    "brevity_weight": 0.0,  # [memlens] and however short it is
    "participant_weight": 0.0,  # [memlens] and searches with the query's own vector
    "text_search_words": "all",  # [memlens] llmemory's full-text search is given the query as it is
}

PRESETS: dict[str, dict[str, Any]] = {
    "llmemory": LLMEMORY,
    # What a user gets without options (Settings' defaults), tuned on both dev halves (LoCoMo and LongMemEval-S):
    # z-score fusion of the index's BM25 and the cosine at equal weight, 50 candidates per search, a bounded
    # recency preference (decay_floor 0.9), each search's top 5 safe from the word filter, and a reply's preceding
    # text counted for short replies. The former 'long-horizon' preset (no decay, index BM25, top_k 50, question
    # words kept on later hops) is folded into it.
    "default": {},
    # [memlens] Recall before speed (issue 34): two hops, sentence keys and the session stage at 0.1. The found
    # memories are scored by their nearest sentence (memory_keys_search=candidates, the cosine moved 0.9 of the way
    # to it) without searching the keys table: since 2026-12-07, in place of the key search at 0.7 of 2026-12-06,
    # recall as good (2 hops, dev halves: LoCoMo 0.786 -> 0.790, multi-hop 0.504 -> 0.510; LongMemEval-S, all 60
    # questions, 0.948 -> 0.946, multi-session 0.861 -> 0.853; all@5 MuSiQue 0.400 -> 0.410, HotpotQA and 2Wiki
    # equal) at less cost: at 100k items 63-66 ms a question at 1 hop against 82-91 ms, the default's 54-57 ms.
    # Against the default (2 hops): LoCoMo 0.773 -> 0.790 (multi-hop 0.452 -> 0.510, adversarial 0.840 -> 0.844),
    # LongMemEval-S 0.932 -> 0.946, MuSiQue 0.390 -> 0.410, 2Wiki 0.722 -> 0.759, but HotpotQA 0.755 -> 0.713
    # (MIGRES): a distractor's one matching sentence is lifted. It needs the sentence keys written
    # (memory_keys_write with memory_keys_write_kinds=sentences, or `memlens keys --kinds sentences` for a stored
    # store; the trace's key_search says "none written" otherwise), and every write embeds each sentence.
    "deep": {
        "hops": 2,
        "memory_keys": "sentences",
        "memory_keys_search": "candidates",
        "key_cosine_weight": 0.9,
        "key_bm25_weight": 0.0,
        "session_weight": 0.1,
        # Its sentence keys already lift the turn whose one sentence answers over a short reaction; with the
        # brevity stage on as well (LoCoMo dev, 2 hops) overall fell 0.791 -> 0.786 and adversarial 0.844 -> 0.829
        # while multi-hop rose 0.516 -> 0.527 (1 hop: 0.783 -> 0.783, multi-hop 0.498 -> 0.508).
        "brevity_weight": 0.0,
        # The participant stage is on at the default's 0.4 (LoCoMo dev, 2 hops, off -> on: 0.791 -> 0.801, every
        # category at least as high; 1 hop 0.783 -> 0.793, multi-hop 0.498 -> 0.491); no other set names a speaker.
    },
}


def preset_overrides(name: str | None) -> dict[str, Any]:
    if not name:
        return {}
    if name not in PRESETS:
        raise InvalidInput(f"unknown preset {name[:30]!r}; use one of {', '.join(sorted(PRESETS))}")
    return dict(PRESETS[name])
