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
    labeller: str = ""  # who labelled ('' on labels stored before labellers were recorded)
    replaced_at: datetime | None = None  # when a later label of the same labeller, trace and memory replaced it


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
    # graph memory: entities, relations valid now, superseded versions, archived relations, mentions (graph.stats)
    graph: dict[str, int] = field(default_factory=dict)


# --- graph memory ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entity:
    """A person, place, organisation or concept the graph knows, one per name per user (names compared by
    :func:`engine.memory.graph.name_key`); ``aliases`` are other names that resolve to it."""

    id: str
    user_id: str
    name: str
    type: str
    aliases: tuple[str, ...]
    provenance: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None


@dataclass(frozen=True)
class FactSource:
    """Where a relation was drawn from: a memory (``type`` = its kind, ``id`` = its id), a message (``type``
    "message", ``id`` "<session_id>#<seq>"), or a text's fingerprint (``type`` "text_sha256")."""

    type: str
    id: str

    @property
    def message(self) -> tuple[str, int] | None:
        """(session id, seq) of a message source, else None."""
        if self.type != "message" or "#" not in self.id:
            return None
        session, _, seq = self.id.rpartition("#")
        return (session, int(seq)) if seq.isdigit() else None


@dataclass(frozen=True)
class Relation:
    """``subject predicate object``, valid from ``valid_from`` until ``valid_to`` (None: still valid). A relation of
    an exclusive predicate is closed when a newer value arrives, and ``superseded_by`` names the relation that did it;
    ``archived_at`` is set when it was (soft-)forgotten."""

    id: str
    user_id: str
    subject_id: str
    subject: str
    predicate: str
    object_id: str
    object: str
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: str | None
    sources: tuple[FactSource, ...]
    method: str  # which extractor made it: llm, offline, manual, reflection ...
    confidence: float | None
    created_at: datetime
    archived_at: datetime | None = None
    archive_reason: str | None = None

    @property
    def sentence(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"

    def valid_at(self, when: datetime) -> bool:
        return self.valid_from <= when and (self.valid_to is None or when < self.valid_to)


@dataclass(frozen=True)
class Triple:
    """One (subject, predicate, object) an extractor found, with the entities' types."""

    subject: str
    predicate: str
    object: str
    subject_type: str = "concept"
    object_type: str = "concept"
    confidence: float | None = None


@dataclass(frozen=True)
class Extraction:
    """What an extractor drew from one text: named entities (name, type) and triples; ``method`` is the extractor
    (``llm`` or ``offline``), ``notes`` what went wrong if anything (an LLM failure, a malformed answer)."""

    entities: tuple[tuple[str, str], ...]
    triples: tuple[Triple, ...]
    method: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourcedExtraction:
    """An extraction ready to be written: when its facts became true (``at``: the memory's or message's time), the
    memory it mentions entities of (kind, id), and the sources its relations will name."""

    extraction: Extraction
    at: datetime
    memory: tuple[str, str] | None
    sources: tuple[FactSource, ...]


@dataclass(frozen=True)
class GraphWrite:
    """What one graph write changed: new entities and relations, relations that gained a source instead of being
    added again, relations closed by a newer value (old id, new id), and mentions linked."""

    entities_added: tuple[str, ...] = ()
    relations_added: tuple[str, ...] = ()
    relations_merged: tuple[str, ...] = ()
    superseded: tuple[tuple[str, str], ...] = ()
    mentions: int = 0


@dataclass(frozen=True)
class Neighbourhood:
    """The entities within ``depth`` relations of the start entities and the relations between them (breadth-first
    over both directions); ``distance`` maps each entity id to its hops from the nearest start."""

    start: tuple[str, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    distance: dict[str, int]
    truncated: bool = False  # the relation cap was reached before the whole depth was walked


@dataclass(frozen=True)
class MaintenanceChange:
    """One change a maintenance step makes (or, in a preview, would make): ``action`` on ``target_ids`` of
    ``target_kind`` (semantic, episodic, procedural, message, session, category), with what a reader needs to judge it
    in ``detail`` (a planned memory's text, the messages or episodes it came from, a TTL's cut-off)."""

    action: str
    target_kind: str
    target_ids: tuple[str, ...]
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """One line for people: what is done to what (the CLI, the MCP tools and the page show it)."""
        d = self.detail
        ids = ", ".join(self.target_ids[:5]) + (f" (+{len(self.target_ids) - 5})" if len(self.target_ids) > 5 else "")
        text = " ".join(str(d.get("content") or d.get("name") or "").split())
        text = text if len(text) <= 100 else text[:99] + "…"
        if self.action == "memorize":
            return f"new {d.get('category')} memory {ids}: {text!r} (from {', '.join(d.get('messages') or [])})"
        if self.action == "insight":
            return f"new insight {ids}: {text!r} (from {len(d.get('episodes') or [])} episodes)"
        if self.action == "register_skill":
            return f"register skill {text} as {ids} ({d.get('method')})"
        if self.action == "expire":
            return f"soft-forget {len(self.target_ids)} {self.target_kind} (older than {d.get('ttl_days')} days): {ids}"
        if self.action == "consolidated":
            return f"mark {len(self.target_ids)} messages of session {d.get('session_id')} consolidated"
        if self.action == "summarise":
            return f"update the summary of category {ids}"
        if self.action == "clear_session":
            return f"clear session {ids} ({d.get('messages')} messages)"
        return f"{self.action} {self.target_kind} {ids}"


@dataclass(frozen=True)
class MaintenanceStep:
    """One step of a maintenance run: its changes, the error that stopped it (the other steps still ran), and a
    note (the strategy that ran, or why it had nothing to do)."""

    name: str  # consolidate | reflect | mine_skills | expire
    changes: tuple[MaintenanceChange, ...] = ()
    error: str | None = None
    note: str = ""


@dataclass(frozen=True)
class MaintenanceReport:
    """What a maintenance run changed (``applied``) or would change (a preview): its steps in the order they ran.
    A preview can be applied as it stands with ``engine.maintenance.apply``."""

    run_id: str
    user_id: str
    applied: bool
    steps: tuple[MaintenanceStep, ...]
    actor: str = "api"
    at: datetime | None = None

    @property
    def change_count(self) -> int:
        return sum(len(s.changes) for s in self.steps)

    @property
    def errors(self) -> dict[str, str]:
        return {s.name: s.error for s in self.steps if s.error is not None}

    def step(self, name: str) -> MaintenanceStep | None:
        return next((s for s in self.steps if s.name == name), None)


@dataclass(frozen=True)
class MaintenanceLogEntry:
    """One applied maintenance change as the audit log keeps it (table ``maintenance_log``)."""

    id: int
    user_id: str
    run_id: str
    step: str
    action: str
    target_kind: str | None
    target_ids: tuple[str, ...]
    detail: dict[str, Any]
    actor: str
    occurred_at: datetime
