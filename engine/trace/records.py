"""The retrieval trace: records of everything that went into every decision, and their JSON form.

A candidate's scores, ranks and verdict are typed records (scores.py); the trace stores them as JSON objects, and
reads back every earlier stored form (older traces lack some scores and settings: see OLDER_TRACE_SETTINGS).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from ..records import to_plain
from ..retrieval.scores import SCORE_KEYS, CandidateScores, StageRanks, Verdict

__all__ = [
    "SCORE_KEYS",
    "CandidateInput",
    "CandidateTrace",
    "HopTrace",
    "RankedMemory",
    "RetrievalTrace",
    "OLDER_TRACE_SETTINGS",
]

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
    scores: CandidateScores  # (a stored trace's plain mapping is read into the record)
    verdicts: Verdict  # relevance: kept|dropped, rule, (why the LLM judge did not decide)
    ranks: StageRanks  # 1-based rank after each stage (None when the candidate did not reach it)
    in_context: bool
    context_reason: str  # context | filtered | budget | budget_stop | cap | merged
    tokens: int
    preceding_text: str = ""  # items: what came right before it, which its vector_similarity also reflects
    # Set when the memory was forgotten after this trace was stored: the forget log's entry (mode, at, actor, reason,
    # forget_log_id). A hard forget also blanks ``text`` and ``preceding_text`` (see store.py).
    forgotten: dict | None = None

    def __post_init__(self) -> None:
        # Built from a stored trace (or by hand), these arrive as plain mappings: keep the typed records.
        if not isinstance(self.scores, CandidateScores):
            object.__setattr__(self, "scores", CandidateScores.from_dict(self.scores))
        if not isinstance(self.verdicts, Verdict):
            object.__setattr__(self, "verdicts", Verdict.from_dict(self.verdicts))
        if not isinstance(self.ranks, StageRanks):
            object.__setattr__(self, "ranks", StageRanks.from_dict(self.ranks))


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
class RankedMemory:
    """One memory of a trace's final merged order. A replay's ranking also says where each memory stood in the
    trace it replayed (``old_rank`` ... ``context_change``), and lists the memories of that trace it did not rank
    (``rank`` None; ``reason`` forgotten | filtered | hop_not_replayed; a forgotten one with its tombstone).

    The JSON form has the keys traces have always had: the ranking's eight, a replay's four only in a replay's
    entries, ``forgotten`` only when set (:meth:`to_dict`). Read back with :meth:`from_dict`."""

    id: str
    kind: str
    hop: int  # the hop whose copy was ranked
    final: float | None  # None: the replay did not rank it
    rank: int | None  # 1-based; None: the replay did not rank it
    in_context: bool
    reason: str  # context | budget | budget_stop | cap (and a replay's forgotten | filtered | hop_not_replayed)
    tokens: int = 0
    # A replay's entries only:
    old_rank: int | None = None  # its rank in the replayed trace (None: it was not ranked there)
    rank_change: int | None = None  # old_rank - rank: positive moved up
    old_in_context: bool | None = None
    context_change: str | None = None  # entered | left | stayed | out
    forgotten: dict | None = None  # the tombstone of a memory the replay left out because it was forgotten

    @property
    def replayed(self) -> bool:
        """Whether this is a replay's entry (it then compares itself with the replayed trace)."""
        return self.context_change is not None

    def to_dict(self) -> dict[str, Any]:
        keys = RANKING_KEYS + (REPLAY_KEYS if self.replayed else ())
        plain = {k: getattr(self, k) for k in keys}
        if self.forgotten is not None:
            plain["forgotten"] = self.forgotten
        return plain

    def plain_fields(self) -> dict[str, Any]:
        """The fields as they are written out (records.to_plain uses it): :meth:`to_dict`."""
        return self.to_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The entry from its stored form (keys of another version that it does not know are left out; a missing
        ``tokens`` is 0, missing replay keys are None)."""
        return cls(**{k: v for k, v in data.items() if k in _RANKED_FIELDS})


RANKING_KEYS = ("id", "kind", "hop", "final", "rank", "in_context", "reason", "tokens")
REPLAY_KEYS = ("old_rank", "rank_change", "old_in_context", "context_change")
_RANKED_FIELDS = frozenset(f.name for f in dataclasses.fields(RankedMemory))


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
    ranking: tuple[RankedMemory, ...]  # the final merged order
    timings_ms: dict
    replay_of: str | None = None
    stop_details: dict = field(default_factory=dict)  # the reasoner's last proposal when it stopped the hops
    forgotten: dict = field(default_factory=dict)  # memory id -> tombstone, for memories forgotten since (store.py)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)
