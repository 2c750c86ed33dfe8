"""The typed records a candidate carries through the scoring stages and into the trace: its scores, its rank after
each stage, and the relevance filter's verdict.

Each is a frozen dataclass with a field per value (code reads ``scores.hybrid``; a table that picks a column by
its name uses ``getattr`` or :meth:`to_dict`). They are stored as their fields (JSON objects with the same keys as
before; a score that no stage computed for a candidate is ``null``), and read back from that form, or from an older
trace's (which left out the ranks and verdict fields that held nothing), with ``from_dict``.

Scores keep their direction and scale in their names: ``vector_similarity`` is cosine similarity (higher is closer,
-1..1), ``bm25_raw`` is unbounded BM25 of the text (over the candidate set, or the index's ``fts_score``),
``bm25_preceding`` the same over the candidates' preceding texts, ``bm25_norm`` is ``bm25_raw +
preceding_bm25_weight * bm25_preceding`` divided by the set's maximum of that sum (0..1), ``fts_score`` is LanceDB's
BM25 over the whole table. Everything else is a factor or product of these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from ..vocab import Relevance


class _StoredRecord:
    """The stored form of a score record: every field by name, and back."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        """The record from its stored form (keys it does not know, from another version, are left out)."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping) and data is not None:  # another record type: refused as the dict would be
            raise TypeError(f"not a stored {cls.__name__}: {type(data).__name__}")
        names = _FIELDS[cls]
        return cls(**{k: v for k, v in (data or {}).items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in _FIELDS[type(self)]}


@dataclass(frozen=True)
class CandidateScores(_StoredRecord):
    """Every score of one candidate, in pipeline order (the order of the trace page's columns)."""

    # search
    vector_similarity: float | None = None
    fts_score: float | None = None
    # lexical stage: BM25 of the text and of its preceding text
    bm25_raw: float | None = None
    bm25_preceding: float | None = None  # None: the memory has no preceding text
    preceding_weight: float | None = None
    bm25_norm: float | None = None
    # fusion stage (ranks: rrf; z-scores: zscore)
    rank_vector: int | None = None
    rank_bm25: int | None = None  # None under rrf: no word of the query in it
    z_vector: float | None = None
    z_bm25: float | None = None
    hybrid_vector_part: float | None = None
    hybrid_bm25_part: float | None = None
    # the entity stage (when it linked the memory): its 0..1 score and what it added to the hybrid
    entity_score: float | None = None
    hybrid_entity_part: float | None = None
    # the session stage (when on): the 0..1 score of its session, the session's rank, what it added to the hybrid
    session_score: float | None = None
    session_rank: int | None = None
    hybrid_session_part: float | None = None
    # the speaker stage (when it lowered the memory, an assistant turn): what it added to the hybrid (negative)
    hybrid_speaker_part: float | None = None
    hybrid: float | None = None
    # temporal stage: decay and importance
    age_days: int | None = None
    decay: float | None = None
    importance: float | None = None
    importance_factor: float | None = None
    # the time stage (a question's date window): days the memory lies outside it, its 0..1 score, its factor
    time_days_outside: int | None = None
    time_score: float | None = None
    time_factor: float | None = None
    # the brevity stage (a conversation's turn, when on): its words and its factor (brevity.py)
    brevity_words: int | None = None
    brevity_factor: float | None = None
    temporal: float | None = None
    # feedback stage and the later-hop discount
    feedback_net: int | None = None
    feedback_factor: float | None = None
    hop_factor: float | None = None
    final: float | None = None
    # MMR (when it ran)
    mmr_relevance: float | None = None
    mmr_max_similarity: float | None = None
    mmr_value: float | None = None
    # the LLM judge's verdict (when it ran)
    llm_relevance: float | None = None


@dataclass(frozen=True)
class StageRanks(_StoredRecord):
    """1-based rank after each stage (vocab.Stage); None for a stage the candidate did not reach."""

    hybrid: int | None = None
    filter: int | None = None
    temporal: int | None = None
    feedback: int | None = None
    final: int | None = None
    mmr: int | None = None


@dataclass(frozen=True)
class Verdict(_StoredRecord):
    """The relevance filter's decision on a candidate: kept or dropped, by which rule."""

    relevance: Relevance = Relevance.KEPT
    rule: str = ""
    note: str | None = None  # e.g. the LLM judge was unavailable and the heuristic decided

    def __post_init__(self) -> None:
        if type(self.relevance) is not Relevance:  # a stored trace's plain string
            object.__setattr__(self, "relevance", Relevance(self.relevance))

    @property
    def kept(self) -> bool:
        return self.relevance == Relevance.KEPT


# Each record's field names in their order (the stored form's key order).
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (CandidateScores, StageRanks, Verdict)
}
SCORE_KEYS = _FIELDS[CandidateScores]  # in pipeline order
RANK_STAGES = _FIELDS[StageRanks]
