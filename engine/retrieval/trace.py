"""The retrieval trace: records of everything that went into every decision, and their JSON form.

Scores keep their direction and scale in their names: ``vector_similarity`` is cosine similarity (higher is closer,
-1..1), ``bm25_raw`` is unbounded BM25 of the text (over the candidate set, or the index's ``fts_score``),
``bm25_preceding`` the same over the candidates' preceding texts, ``bm25_norm`` is ``bm25_raw + preceding_bm25_weight
* bm25_preceding`` divided by the set's maximum of that sum (0..1), ``fts_score`` is LanceDB's BM25 over the whole
table. Everything else is a factor or product of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import to_plain

SCORE_KEYS = (
    "vector_similarity",
    "fts_score",
    "bm25_raw",
    "bm25_preceding",
    "bm25_norm",
    "hybrid",
    "age_days",
    "decay",
    "importance",
    "importance_factor",
    "temporal",
    "feedback_net",
    "feedback_factor",
    "hop_factor",
    "final",
    "mmr_relevance",
    "mmr_max_similarity",
    "mmr_value",
    "llm_relevance",
    "hybrid_vector_part",
    "hybrid_bm25_part",
    "preceding_weight",
    "rank_vector",
    "rank_bm25",
    "z_vector",
    "z_bm25",
)

# Settings added after traces were first stored, with the value that reproduces what an older trace did: a trace
# without the key is read as having run with that value (so replaying it with its own settings stays exact).
OLDER_TRACE_SETTINGS = {
    "preceding_bm25_weight": 0.0,
    "fusion": "weighted",
    "rrf_k": 60.0,
    "relevance_words": "raw",
    "relevance_protect_top": 0,
    "preceding_full_words": 0,
    "decay_floor": 0.0,
    "clamp_future_age": False,
}


@dataclass(frozen=True)
class CandidateInput:
    """What search found for one candidate: enough to re-score it under any settings without searching again."""

    id: str
    kind: str  # semantic | episodic | procedural
    text: str
    created_at: str  # ISO-8601
    importance: float | None  # stored importance (items, episodes); None for skills
    evergreen: bool
    success_count: int  # skills only
    failure_count: int
    feedback_net: int
    vector_similarity: float
    fts_score: float | None
    found_by: str  # vector | fts | both
    llm_relevance: float | None = None  # the LLM judge's 0..1 verdict when it ran
    preceding_text: str = ""  # items: what came right before it, which its vector embeds too


@dataclass(frozen=True)
class CandidateTrace:
    id: str
    kind: str
    text: str
    found_by: str
    created_at: str
    evergreen: bool
    stored_importance: float | None
    success_count: int
    failure_count: int
    search_order: int  # position in the search results (ties keep this order, so replays are exact)
    scores: dict  # see SCORE_KEYS
    verdicts: dict  # relevance: kept|dropped, rule, (llm verdict)
    ranks: dict  # stage -> 1-based rank after that stage (None when the candidate did not reach it)
    in_context: bool
    context_reason: str  # context | filtered | budget | budget_stop | cap | merged
    tokens: int
    preceding_text: str = ""  # items: what came right before it, which its vector_similarity also reflects
    # Set when the memory was forgotten after this trace was stored: the forget log's entry (mode, at, actor, reason,
    # forget_log_id). A hard forget also blanks ``text`` and ``preceding_text`` (see store.py).
    forgotten: dict | None = None


@dataclass(frozen=True)
class HopTrace:
    hop: int
    query: str
    proposed_by: str  # question | offline:keywords | llm:query | offline:bridge_entities | llm:reasoner | custom
    relevance_text: str
    proposal: dict  # how the query was made (terms, strategy, fallback reason)
    candidates: tuple[CandidateTrace, ...]
    counts: dict  # found, kept, dropped
    timings_ms: dict
    similarity: dict = field(default_factory=dict)  # cosines of the candidates this hop saw first (similarity.py)


@dataclass(frozen=True)
class RetrievalTrace:
    trace_id: str
    user_id: str
    session_id: str | None
    question: str
    created_at: str
    settings: dict
    strategies: dict  # query_generation, relevance, reasoner: which strategy actually ran (llm or offline)
    hops: tuple[HopTrace, ...]
    stop_reason: str
    context: str
    context_ids: tuple[str, ...]
    context_tokens: int
    ranking: tuple[dict, ...]  # the final merged order: id, kind, hop, final, rank, in_context, reason
    timings_ms: dict
    replay_of: str | None = None
    stop_details: dict = field(default_factory=dict)  # the reasoner's last proposal when it stopped the hops
    forgotten: dict = field(default_factory=dict)  # memory id -> tombstone, for memories forgotten since (store.py)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)
