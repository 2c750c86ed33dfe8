"""The records of store insights (``engine.insights``): questions asked of a whole store rather than one trace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..records import FeedbackEvent


@dataclass(frozen=True)
class InsightRefresh:
    """When a user's near-duplicates and echoes were last computed, over how many memories, and how long it took."""

    user_id: str
    refreshed_at: datetime
    items: int
    pairs: int
    echoes: int
    min_similarity: float  # pairs below this were not kept; a page may show a stricter threshold
    seconds: float


@dataclass(frozen=True)
class InsightMemory:
    """A semantic memory as the insights show it."""

    id: str
    text: str
    category: str
    created_at: datetime


@dataclass(frozen=True)
class NearDuplicate:
    """Two active memories whose vectors are within the threshold (cosine similarity); ``a`` is the older."""

    a: InsightMemory
    b: InsightMemory
    similarity: float


@dataclass(frozen=True)
class Echo:
    """A memory repeating what the agent was given earlier: a memory in an earlier trace's context (``source`` is
    "context", ``source_id`` that memory's id, ``trace_id`` the trace) or an earlier assistant message (``source``
    "message", ``source_id`` "<session_id>#<seq>")."""

    memory: InsightMemory
    source: str
    source_id: str
    source_text: str  # "" when the source is gone (forgotten, or a pruned message)
    trace_id: str | None
    given_at: datetime
    similarity: float


@dataclass(frozen=True)
class UnusedMemories:
    """Active memories in no context of the user's last ``traces`` traces (a page of them, oldest first)."""

    traces: int  # how many traces were looked at (fewer than asked when the user has fewer)
    total: int
    rows: tuple[InsightMemory, ...]


@dataclass(frozen=True)
class EmptyQuery:
    """A trace whose context came back empty: nothing found (``candidates`` 0) or every candidate filtered out."""

    trace_id: str
    question: str
    created_at: datetime
    candidates: int


@dataclass(frozen=True)
class StaleRecall:
    """A superseded or ended fact still recalled: a trace's context held a memory the fact was drawn from (or its
    entity stage brought the fact itself) after the fact stopped being valid."""

    relation_id: str
    fact: str  # "subject predicate object"
    valid_to: datetime | None
    superseded_by: str | None
    memory_id: str  # the source memory in the context, or the relation's own id when the entity stage recalled it
    trace_id: str
    question: str
    recalled_at: datetime


@dataclass(frozen=True)
class BlastTrace:
    """One trace a memory entered: as a candidate only, or into the context (and at which rank there)."""

    trace_id: str
    question: str
    created_at: datetime
    context_rank: int | None  # 1-based position in the context; None when it stayed a candidate
    labels: tuple[FeedbackEvent, ...]


@dataclass(frozen=True)
class BlastCase:
    """An evaluation case a memory touched: expected by it, or in the context of one of its runs' traces."""

    set_name: str
    case_id: str
    question: str
    expected: bool
    runs: tuple[str, ...]  # the runs whose trace of this case had the memory in its context


@dataclass(frozen=True)
class BlastRadius:
    """Everything one memory touched: traces (newest first, at most ``shown``), contexts, evaluation cases and the
    labels it received, with the memory's state now."""

    memory_id: str
    kind: str
    text: str
    state: str  # active | forgotten (soft) | not stored
    traces_total: int
    contexts_total: int
    traces: tuple[BlastTrace, ...]
    cases: tuple[BlastCase, ...]
    labels: tuple[FeedbackEvent, ...]

    @property
    def harmful(self) -> int:
        return sum(1 for e in self.labels if e.label == "harmful")

    @property
    def useful(self) -> int:
        return sum(1 for e in self.labels if e.label == "useful")
