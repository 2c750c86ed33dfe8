"""The retrieval trace: records of everything that went into every decision, and their JSON form.

A candidate's scores, ranks and verdict are typed records (scores.py), and so is what the trace says about the run:
its settings (:class:`TraceSettings`, the retrieval settings as the ``Settings`` record), the strategies that ran
(:class:`Strategies`), stage timings (:class:`Timings`), a hop's proposal, counts and cosines (hop_records.py) and
the tombstones of memories forgotten since (:class:`Tombstone`). Each is written as the JSON object traces have
always held (its ``to_dict``) and read back from every earlier stored form (``from_dict``; older traces lack some
scores and settings: see OLDER_TRACE_SETTINGS).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from ..config import Settings
from ..records import to_plain
from ..retrieval.scores import SCORE_KEYS, CandidateScores, StageRanks, Verdict
from ..vocab import ForgetMode, Kind, Reason
from .entity_links import EntityLinks, EntityPath, HopEntity
from .hop_records import FusionWeight, HopCounts, HopSimilarity, ProposalDetails, stored_object
from .key_links import KeyMatch
from .time_records import TimeWindow

__all__ = [
    "SCORE_KEYS",
    "CandidateInput",
    "CandidateTrace",
    "EntityLinks",
    "EntityPath",
    "FusionWeight",
    "HopEntity",
    "HopTrace",
    "RankedMemory",
    "RetrievalTrace",
    "OLDER_TRACE_SETTINGS",
    "HopCounts",
    "HopSimilarity",
    "ProposalDetails",
    "Strategies",
    "Timings",
    "Tombstone",
    "TimeWindow",
    "TraceSettings",
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
    "entity_strategy": False,  # no entity stage before issue 30
    "time_window": "off",  # no time stage before issue 34
    "session_weight": 0.0,  # no session stage before issue 34
    "hop_protect_top": 0,  # the plain max-score merge of hops before issue 34
    "adaptive_bm25": False,  # the set bm25_weight in every hop before round three's fusion change
    "adaptive_bm25_events": False,  # a question comparing events was weighted by its cosines like any other
    "assistant_turn_penalty": 0.0,  # no speaker stage before round three's
    "question_turn_penalty": 0.0,  # asking turns scored like telling ones before round three's last session
    "question_turn_max_words": 25,  # (what counted as asking, had the penalty been on)
    "text_search_words": "all",  # full-text search was given the query as it was
    "adaptive_key_weight_hops": "every",  # adaptive_key_weight scaled every hop's key weight before it had a choice
    "brevity_weight": 0.0,  # no brevity stage before round three's last sessions
    "brevity_full_words": 60,  # (what counted as short, had the stage been on)
    "participant_weight": 0.0,  # the query's own vector searched alone before the participant stage
}


_RETRIEVAL_KEYS = frozenset(Settings.retrieval_keys())
# What a trace records beside the retrieval settings, in the order it writes them.
_RUN_KEYS = ("now", "embedder", "embedding_dim", "llm", "preset")


@dataclass(frozen=True)
class TraceSettings:
    """What a retrieval ran under: its retrieval settings (``retrieval``, the ``Settings`` record: a setting the
    trace did not record has its default there and is named in ``absent``), the clock it scored with, the embedding
    model and LLM, and the preset's name. Stored as one flat JSON object, as traces always were."""

    retrieval: Settings
    now: str | None = None  # ISO-8601: the clock ages were computed against (a replay keeps it)
    embedder: str | None = None  # the embedding model's name
    embedding_dim: int | None = None
    llm: str | None = None
    preset: str | None = None
    # Retrieval settings the stored trace did not record (none since OLDER_TRACE_SETTINGS): a replay takes them
    # from the engine's settings rather than from the defaults, and they are not written back.
    absent: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys of another version, written back as they came

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self) -> Self:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping) and data is not None:  # another record type: refused as the dict would be
            raise TypeError(f"not a stored {cls.__name__}: {type(data).__name__}")
        values = {**OLDER_TRACE_SETTINGS, **data}
        known = {k: v for k, v in values.items() if k in _RETRIEVAL_KEYS}
        return cls(
            retrieval=dataclasses.replace(_DEFAULT_SETTINGS, **known),
            **{k: values[k] for k in _RUN_KEYS if k in values},
            absent=tuple(k for k in Settings.retrieval_keys() if k not in known),
            extra={k: v for k, v in values.items() if k not in _RETRIEVAL_KEYS and k not in _RUN_KEYS},
        )

    def retrieval_values(self) -> dict[str, Any]:
        """The retrieval settings the trace recorded, by name (what a replay starts from)."""
        return {k: getattr(self.retrieval, k) for k in Settings.retrieval_keys() if k not in self.absent}

    def to_dict(self) -> dict[str, Any]:
        run = {k: getattr(self, k) for k in _RUN_KEYS if getattr(self, k) is not None}
        return {**self.retrieval_values(), **run, **self.extra}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


_DEFAULT_SETTINGS = Settings()
_STRATEGY_KEYS = ("query_generation", "reasoner", "relevance", "vector_search", "full_text_search")


@dataclass(frozen=True)
class Strategies:
    """Which strategy actually ran for each step (llm or offline, and how each source was searched). A later hop
    that differed says so under its own key (``relevance_hop2``, ``vector_search_hop2``: ``per_hop``)."""

    query_generation: str | None = None  # who made hop 1's query (vocab.Strategy)
    reasoner: str | None = None  # the reasoner's name, or "none (1 hop)"
    relevance: str | None = None  # the relevance filter that ran
    vector_search: str | None = None  # per source: exact, ANN, in memory
    full_text_search: str | None = None
    per_hop: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(
            **{k: data[k] for k in _STRATEGY_KEYS if k in data},
            per_hop={k: v for k, v in data.items() if k not in _STRATEGY_KEYS},
        )

    def to_dict(self) -> dict[str, Any]:
        base = {k: getattr(self, k) for k in _STRATEGY_KEYS if getattr(self, k) is not None}
        return {**base, **self.per_hop}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


@dataclass(frozen=True)
class Timings:
    """Milliseconds per stage, in the order the stages ran. Stored as a JSON object of stage -> ms; the stages are
    open-ended (``reasoner_hop2``), so they are pairs rather than fields."""

    stages: tuple[tuple[str, float], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(tuple((str(k), v) for k, v in data.items()))

    def get(self, stage: str) -> float | None:
        return next((ms for name, ms in self.stages if name == stage), None)

    @property
    def total(self) -> float | None:
        """The whole run: a live retrieval's ``pipeline``, an older trace's ``total``, or a replay's ``replay``."""
        for name in ("pipeline", "total", "replay"):
            ms = self.get(name)
            if ms:
                return ms
        return None

    def as_dict(self) -> dict[str, float]:
        return dict(self.stages)

    to_dict = as_dict

    def plain_fields(self) -> dict[str, Any]:
        return self.as_dict()


@dataclass(frozen=True)
class Tombstone:
    """What a forget left in stored traces for a memory: the forget log's entry (mode, when, by whom, why). The
    store may know only the mode (an archived row without a log entry); ``kind`` is written only when known."""

    mode: str  # vocab.ForgetMode
    at: str | None = None  # ISO-8601
    actor: str | None = None
    reason: str | None = None
    forget_log_id: int | None = None
    kind: str | None = None  # vocab.Kind of the memory

    @property
    def hard(self) -> bool:
        return self.mode == ForgetMode.HARD

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self) -> Self:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping) and data is not None:  # another record type: refused as the dict would be
            raise TypeError(f"not a stored {cls.__name__}: {type(data).__name__}")
        return cls(**{k: data[k] for k in _TOMBSTONE_FIELDS if k in data})

    def to_dict(self) -> dict[str, Any]:
        plain = {k: getattr(self, k) for k in _TOMBSTONE_FIELDS[:-1]}
        if self.kind is not None:
            plain["kind"] = self.kind
        return plain

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


_TOMBSTONE_FIELDS = ("mode", "at", "actor", "reason", "forget_log_id", "kind")


def tombstone_or_none(data: Mapping[str, Any] | Tombstone | None) -> Tombstone | None:
    return Tombstone.from_dict(data) if data else None


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
    entity: EntityLinks | None = None  # how the entity stage linked it (None: no entity path)
    key: KeyMatch | None = None  # which of its extra keys the key search matched (None: none, or the search is off)


@dataclass(frozen=True)
class CandidateTrace:
    id: str
    kind: Kind
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
    context_reason: Reason  # context | filtered | budget | budget_stop | cap | merged
    tokens: int
    preceding_text: str = ""  # items: what came right before it, which its vector_similarity also reflects
    # Set when the memory was forgotten after this trace was stored: the forget log's entry. A hard forget also
    # blanks ``text`` and ``preceding_text`` (see redaction.py).
    forgotten: Tombstone | None = None
    # How the entity stage linked the memory (its score and paths; None: no entity path, or an older trace).
    entity: EntityLinks | None = None
    # Which of its extra keys the key search matched (key_links.py; None: none, the search was off, an older trace).
    key: KeyMatch | None = None

    def __post_init__(self) -> None:
        # Built from a stored trace (or by hand), these arrive as plain strings and mappings: keep the typed ones.
        if self.entity is not None and not isinstance(self.entity, EntityLinks):
            object.__setattr__(self, "entity", EntityLinks.from_dict(self.entity))
        if self.key is not None and not isinstance(self.key, KeyMatch):
            object.__setattr__(self, "key", KeyMatch.from_dict(self.key))
        if type(self.kind) is not Kind:
            object.__setattr__(self, "kind", Kind(self.kind))
        if type(self.context_reason) is not Reason:
            object.__setattr__(self, "context_reason", Reason(self.context_reason))
        if not isinstance(self.scores, CandidateScores):
            object.__setattr__(self, "scores", CandidateScores.from_dict(self.scores))
        if not isinstance(self.verdicts, Verdict):
            object.__setattr__(self, "verdicts", Verdict.from_dict(self.verdicts))
        if not isinstance(self.ranks, StageRanks):
            object.__setattr__(self, "ranks", StageRanks.from_dict(self.ranks))
        if self.forgotten is not None and not isinstance(self.forgotten, Tombstone):
            object.__setattr__(self, "forgotten", tombstone_or_none(self.forgotten))


@dataclass(frozen=True)
class HopTrace:
    hop: int
    query: str
    proposed_by: str  # question | offline:keywords | llm:query | offline:bridge_entities | llm:reasoner | custom
    relevance_text: str
    proposal: ProposalDetails  # how the query was made (strategy, fallback reason, the bridge's names and terms)
    candidates: tuple[CandidateTrace, ...]
    counts: HopCounts
    timings_ms: Timings
    # the cosines of the candidates this hop saw first (retrieval/similarity.py)
    similarity: HopSimilarity = field(default_factory=HopSimilarity)
    # the entities the hop's entity stage started from (none: the stage was off, named none, or an older trace)
    entities: tuple[HopEntity, ...] = ()
    # the BM25 weight the hop's fusion used and why (none: hybrid off, or a trace from before adaptive_bm25)
    fusion: FusionWeight | None = None
    # what full-text search was given when it was not the query (text_search_words=content; None: the query)
    text_query: str | None = None
    # the query without the conversation's participants' names, whose vector was blended into the query's for the
    # vector search and the cosines (participant_weight; None: the query's own vector)
    vector_query: str | None = None

    def __post_init__(self) -> None:
        # Built from a stored trace (or by hand), these arrive as plain mappings: keep the typed records.
        if self.fusion is not None and not isinstance(self.fusion, FusionWeight):
            object.__setattr__(self, "fusion", FusionWeight.from_dict(self.fusion))
        if any(not isinstance(e, HopEntity) for e in self.entities):
            object.__setattr__(self, "entities", tuple(HopEntity.from_dict(e) for e in self.entities))
        if not isinstance(self.proposal, ProposalDetails):
            object.__setattr__(self, "proposal", ProposalDetails.from_dict(self.proposal))
        if not isinstance(self.similarity, HopSimilarity):
            object.__setattr__(self, "similarity", HopSimilarity.from_dict(self.similarity))
        if not isinstance(self.counts, HopCounts):
            object.__setattr__(self, "counts", HopCounts.from_dict(self.counts))
        if not isinstance(self.timings_ms, Timings):
            object.__setattr__(self, "timings_ms", Timings.from_dict(self.timings_ms))

    def plain_fields(self) -> dict[str, Any]:
        """The fields as they are written out: the proposal, counts, timings and similarity as the JSON objects they
        always were."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        plain = {
            **fields,
            "proposal": self.proposal.to_dict(),
            "counts": self.counts.to_dict(),
            "timings_ms": self.timings_ms.as_dict(),
            "similarity": self.similarity.to_dict(),
            "entities": [e.to_dict() for e in self.entities],
        }
        if not self.entities:  # a hop without an entity stage is written as hops were before it
            del plain["entities"]
        if self.fusion is None:  # likewise a hop without a recorded BM25 weight
            del plain["fusion"]
        else:
            plain["fusion"] = self.fusion.to_dict()
        if self.text_query is None:  # and one whose full-text search was given its query
            del plain["text_query"]
        if self.vector_query is None:  # and one searched with its own vector
            del plain["vector_query"]
        return plain


@dataclass(frozen=True)
class RankedMemory:
    """One memory of a trace's final merged order. A replay's ranking also says where each memory stood in the
    trace it replayed (``old_rank`` ... ``context_change``), and lists the memories of that trace it did not rank
    (``rank`` None; ``reason`` forgotten | filtered | hop_not_replayed; a forgotten one with its tombstone).

    The JSON form has the keys traces have always had: the ranking's eight, a replay's four only in a replay's
    entries, ``forgotten`` only when set (:meth:`to_dict`). Read back with :meth:`from_dict`."""

    id: str
    kind: Kind
    hop: int  # the hop whose copy was ranked
    final: float | None  # None: the replay did not rank it
    rank: int | None  # 1-based; None: the replay did not rank it
    in_context: bool
    reason: Reason  # context | budget | budget_stop | cap (and a replay's forgotten | filtered | hop_not_replayed)
    tokens: int = 0
    # A replay's entries only:
    old_rank: int | None = None  # its rank in the replayed trace (None: it was not ranked there)
    rank_change: int | None = None  # old_rank - rank: positive moved up
    old_in_context: bool | None = None
    context_change: str | None = None  # entered | left | stayed | out
    forgotten: Tombstone | None = None  # the tombstone of a memory the replay left out because it was forgotten

    def __post_init__(self) -> None:
        # Read from a stored trace, the names arrive as plain strings: keep the enums.
        if type(self.kind) is not Kind:
            object.__setattr__(self, "kind", Kind(self.kind))
        if type(self.reason) is not Reason:
            object.__setattr__(self, "reason", Reason(self.reason))
        if self.forgotten is not None and not isinstance(self.forgotten, Tombstone):
            object.__setattr__(self, "forgotten", tombstone_or_none(self.forgotten))

    @property
    def replayed(self) -> bool:
        """Whether this is a replay's entry (it then compares itself with the replayed trace)."""
        return self.context_change is not None

    def to_dict(self) -> dict[str, Any]:
        keys = RANKING_KEYS + (REPLAY_KEYS if self.replayed else ())
        plain = {k: getattr(self, k) for k in keys}
        if self.forgotten is not None:
            plain["forgotten"] = self.forgotten.to_dict()
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
    settings: TraceSettings
    strategies: Strategies  # which strategy actually ran (llm or offline)
    hops: tuple[HopTrace, ...]
    stop_reason: str
    context: str
    context_ids: tuple[str, ...]
    context_tokens: int
    ranking: tuple[RankedMemory, ...]  # the final merged order
    timings_ms: Timings
    replay_of: str | None = None
    stop_details: dict[str, Any] = field(default_factory=dict)  # the reasoner's last proposal when it stopped the hops
    # memory id -> tombstone, for memories forgotten since the trace ran (redaction.py)
    forgotten: Mapping[str, Tombstone] = field(default_factory=dict)
    # the date window the question named (time_records.py; None: the time stage was off or it named no time)
    time_window: TimeWindow | None = None
    # the cue that the question asks about the user (speaker_stage.py; None: the speaker stage was off or it did not)
    speaker: str | None = None

    def __post_init__(self) -> None:
        # Built from a stored trace (or by hand), these arrive as plain mappings: keep the typed records.
        if self.time_window is not None and not isinstance(self.time_window, TimeWindow):
            object.__setattr__(self, "time_window", TimeWindow.from_dict(self.time_window))
        if not isinstance(self.settings, TraceSettings):
            object.__setattr__(self, "settings", TraceSettings.from_dict(self.settings))
        if not isinstance(self.strategies, Strategies):
            object.__setattr__(self, "strategies", Strategies.from_dict(self.strategies))
        if not isinstance(self.timings_ms, Timings):
            object.__setattr__(self, "timings_ms", Timings.from_dict(self.timings_ms))
        if any(not isinstance(t, Tombstone) for t in (self.forgotten or {}).values()):
            object.__setattr__(
                self, "forgotten", {i: Tombstone.from_dict(t) for i, t in (self.forgotten or {}).items()}
            )

    def plain_fields(self) -> dict[str, Any]:
        """The fields as they are written out: every typed part as the JSON object traces have always held."""
        # The two late fields are written only when set, so an older trace's stored form is unchanged.
        late = ("time_window", "speaker")
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in late}
        return {
            **fields,
            "settings": self.settings.to_dict(),
            "strategies": self.strategies.to_dict(),
            "ranking": [r.to_dict() for r in self.ranking],
            "timings_ms": self.timings_ms.as_dict(),
            "forgotten": {i: t.to_dict() for i, t in self.forgotten.items()},
            **({"time_window": self.time_window.to_dict()} if self.time_window is not None else {}),
            **({"speaker": self.speaker} if self.speaker is not None else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = to_plain(self)
        return plain
