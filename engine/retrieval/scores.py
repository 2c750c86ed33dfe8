"""The typed records a candidate carries through the scoring stages and into the trace: its scores, its rank after
each stage, and the relevance filter's verdict.

Each is a frozen dataclass with a field per value (so code reads ``scores.hybrid``), and each also reads as a
mapping by name (``scores.get("hybrid")``), which is how tables and older callers pick a column by its name. They
are stored as their fields (JSON objects with the same keys as before; a score that no stage computed for a
candidate is ``null``), and read back from that form, or from an older trace's, with ``from_dict``.

Scores keep their direction and scale in their names: ``vector_similarity`` is cosine similarity (higher is closer,
-1..1), ``bm25_raw`` is unbounded BM25 of the text (over the candidate set, or the index's ``fts_score``),
``bm25_preceding`` the same over the candidates' preceding texts, ``bm25_norm`` is ``bm25_raw +
preceding_bm25_weight * bm25_preceding`` divided by the set's maximum of that sum (0..1), ``fts_score`` is LanceDB's
BM25 over the whole table. Everything else is a factor or product of these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self


class _NamedValues(Mapping[str, Any]):
    """Read access by name to a record's fields. ``_ONLY_SET``: only the fields that hold a value are keys (a rank
    exists only for the stages a candidate reached); otherwise every field is a key, ``None`` when not computed."""

    __slots__ = ()
    _ONLY_SET: ClassVar[bool] = False
    _NAMES: ClassVar[tuple[str, ...]] = ()

    def __getitem__(self, name: str) -> Any:
        if name not in self._NAMES:
            raise KeyError(name)
        value = getattr(self, name)
        if value is None and self._ONLY_SET:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        if not self._ONLY_SET:
            return iter(self._NAMES)
        return (n for n in self._NAMES if getattr(self, n) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        """The record from its stored form (keys it does not know, from another version, are left out)."""
        if isinstance(data, cls):
            return data
        return cls(**{k: v for k, v in (data or {}).items() if k in cls._NAMES})

    def to_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self._NAMES}

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._NAMES)

    def __eq__(self, other: object) -> bool:
        """Field by field with a record of its kind; with a plain mapping (a stored form), by the values they hold
        (a key missing there is a None here)."""
        if type(other) is type(self):
            return self._values() == other._values()
        if isinstance(other, Mapping):
            held = {k: v for k, v in other.items() if v is not None}
            return held == {n: v for n, v in zip(self._NAMES, self._values()) if v is not None}
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())


def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@dataclass(frozen=True, eq=False)
class CandidateScores(_NamedValues):
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
    hybrid: float | None = None
    # temporal stage: decay and importance
    age_days: int | None = None
    decay: float | None = None
    importance: float | None = None
    importance_factor: float | None = None
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


@dataclass(frozen=True, eq=False)
class StageRanks(_NamedValues):
    """1-based rank after each stage; None (and not a key) for a stage the candidate did not reach."""

    _ONLY_SET: ClassVar[bool] = True

    hybrid: int | None = None
    filter: int | None = None
    temporal: int | None = None
    feedback: int | None = None
    final: int | None = None
    mmr: int | None = None


@dataclass(frozen=True, eq=False)
class Verdict(_NamedValues):
    """The relevance filter's decision on a candidate: kept or dropped, by which rule."""

    _ONLY_SET: ClassVar[bool] = True

    relevance: str = "kept"  # kept | dropped
    rule: str = ""
    note: str | None = None  # e.g. the LLM judge was unavailable and the heuristic decided

    @property
    def kept(self) -> bool:
        return self.relevance == "kept"


CandidateScores._NAMES = _names(CandidateScores)
StageRanks._NAMES = _names(StageRanks)
Verdict._NAMES = _names(Verdict)
SCORE_KEYS = CandidateScores._NAMES
RANK_STAGES = StageRanks._NAMES
