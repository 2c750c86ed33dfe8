"""Frozen records that cross the engine's public API. Pages and the CLI render these; nothing else leaves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from .vocab import KINDS, Kind

__all__ = ["KINDS", "Kind"]  # re-exported: the memory kinds are defined once, in vocab.py
_Row = TypeVar("_Row")  # what a Page holds
ROLES = ("user", "assistant", "system", "tool", "tool_result")
TYPED_SLOTS = (
    "goals",
    "current_task",
    "retrieved_context",
    "scratchpad",
    "last_observation",
    "intermediate_reasoning",
)
SKILL_KINDS = ("prompt", "template", "code")


def to_plain(value: Any) -> Any:
    """Turn records (and nested lists/dicts of them) into JSON-ready plain data. A record whose written form leaves
    out fields that hold nothing (e.g. a trace's ranking entries) says which with a ``plain_fields()`` method."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "plain_fields"):
            return {k: to_plain(v) for k, v in value.plain_fields().items()}
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Page(Generic[_Row]):
    """One page of a listing that was paginated in the database."""

    rows: tuple[_Row, ...]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class SessionInfo:
    user_id: str
    session_id: str
    created_at: datetime | None
    last_activity_at: datetime | None
    message_count: int
    token_count: int


@dataclass(frozen=True)
class Message:
    user_id: str
    session_id: str
    seq: int
    role: str
    content: str
    tokens: int
    created_at: datetime


@dataclass(frozen=True)
class PrunePlan:
    """Sessions a lifecycle rule would delete (``applied`` says whether they were)."""

    user_id: str
    rule: str  # idle | stale | max
    sessions: tuple[SessionInfo, ...]
    message_count: int
    applied: bool


@dataclass(frozen=True)
class TracePrunePlan:
    """Stored traces older than a cutoff that pruning would delete (``applied`` says whether it did)."""

    user_id: str | None  # None: every user
    older_than_days: float
    cutoff: datetime  # traces created before this
    count: int
    bytes: int  # the stored trace bodies' size
    kept_labelled: int  # older traces kept because a feedback label points to them
    sample: tuple[dict[str, Any], ...]  # up to 20 of them, newest first: trace_id, user_id, question, created_at
    applied: bool


@dataclass(frozen=True)
class SlotEdit:
    id: int
    user_id: str
    session_id: str
    slot: str
    old_value: Any
    new_value: Any
    source: str
    at: datetime


@dataclass(frozen=True)
class Item:
    id: str
    user_id: str
    category: str
    content: str
    importance: float
    evergreen: bool
    provenance: dict[str, Any]  # JSON: where the memory came from (source, sources, method...)
    source: str
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None
    preceding_text: str = ""  # what came right before it where it was said (e.g. the previous turn); embedded with it


@dataclass(frozen=True)
class Category:
    user_id: str
    name: str
    summary: str
    item_count: int
    updated_at: datetime | None


@dataclass(frozen=True)
class Step:
    observation: str = ""
    action: str = ""
    result: str = ""
    timestamp: str | None = None


@dataclass(frozen=True)
class Episode:
    id: str
    user_id: str
    session_id: str | None
    steps: tuple[Step, ...]
    summary: str
    outcome: str | None
    importance: float
    provenance: dict[str, Any]  # JSON: where the memory came from (source, sources, method...)
    created_at: datetime
    archived_at: datetime | None = None

    @property
    def searchable_text(self) -> str:
        parts = [self.summary, self.outcome or ""]
        for s in self.steps:
            parts += [s.observation, s.action, s.result]
        return "\n".join(p for p in parts if p and p.strip())


@dataclass(frozen=True)
class Skill:
    id: str
    user_id: str
    name: str
    version: int
    kind: str
    description: str
    body: str
    success_count: int
    failure_count: int
    provenance: dict[str, Any]  # JSON: where the memory came from (source, sources, method...)
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None

    @property
    def trials(self) -> int:
        return self.success_count + self.failure_count

    @property
    def success_rate(self) -> float:
        """Parity with llmemory: s/(s+f), 0.5 when there are no outcomes."""
        return self.success_count / self.trials if self.trials else 0.5

    @property
    def searchable_text(self) -> str:
        return "\n".join(p for p in (self.name, self.description, self.body) if p and p.strip())


@dataclass(frozen=True)
class RankedSkill:
    """A skill with its proven-utility ranking: Wilson 95% interval beside the raw rate and trial count."""

    skill: Skill
    rank: int
    success_rate: float
    trials: int
    wilson_lower: float
    wilson_upper: float
    few_trials: bool


@dataclass(frozen=True)
class SkillOutcome:
    id: int
    skill_id: str
    user_id: str
    success: bool
    episode_id: str | None
    at: datetime


@dataclass(frozen=True)
class FeedbackEvent:
    id: int
    user_id: str
    item_id: str
    label: str  # useful | harmful
    delta: int
    trace_id: str | None
    hop: int | None
    note: str
    created_at: datetime


@dataclass(frozen=True)
class ForgetResult:
    memory_type: str
    mode: str
    forgotten: tuple[str, ...]
    unknown: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.forgotten)


@dataclass(frozen=True)
class ForgetLogEntry:
    id: int
    user_id: str
    memory_type: str
    ids: tuple[str, ...]
    count: int
    mode: str
    reason: str
    actor: str
    at: datetime


@dataclass(frozen=True)
class SearchHit:
    id: str
    kind: str
    text: str
    score: float
    vector_similarity: float | None
    fts_score: float | None
    created_at: datetime | None


@dataclass(frozen=True)
class StoreStats:
    store: str
    embedder: str
    embedding_dim: int
    llm: str
    users: int
    sessions: int
    messages: int
    working_slots: int
    items: int
    categories: int
    episodes: int
    skills: int
    feedback_events: int
    forget_log_entries: int
    traces: int
    per_user: dict[str, dict[str, int]] = field(default_factory=dict)  # user -> table -> rows
    warnings: tuple[str, ...] = ()
    # per memory kind: without_row / without_vector / duplicated ids, or unreadable (admin.StoreAdmin.orphans)
    orphans: dict[str, dict[str, Any]] = field(default_factory=dict)
