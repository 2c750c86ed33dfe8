"""JSONL import and export of a user's memory. Import is all or nothing: every line is validated first, a bad line
is reported with its number, and nothing from the file is written."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..clock import optional_time, utcnow
from ..errors import InvalidInput, MemlensError
from ..ids import check_id
from ..records import Episode, Item, Skill
from ..store.sql.database import Connection
from ..validation import MAX_JSON_DEPTH, check_text, parse_json
from .base import Backends, StoredRecord
from .episodic import EpisodicMemory
from .export import export_records
from .feedback import FeedbackLog
from .forgetting import Forgetter
from .ingest_duplicates import RecordKey, already_stored, record_key
from .procedural import SkillLibrary
from .semantic import SemanticMemory, check_category
from .sessions import SessionStore
from .working import WorkingMemory, check_slot

_R = TypeVar("_R", bound=StoredRecord)
MAX_RECORD_CHARS = 64_000_000  # one JSONL line: an episode of many long steps is far below this
PROGRESS_BATCH = 32  # records embedded between two progress reports (the model batches 32 at a time anyway)
Progress = Callable[[str, int, int], None]  # kind, records done, records of that kind
# A memory kind's records being imported and the module that writes them
_Source = tuple[str, Sequence[_R], Any]
RECORD_KINDS = ("message", "item", "category", "episode", "skill", "outcome", "feedback", "working", "forget_log")


@dataclass
class IngestPlan:
    items: list[Item] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    # Validated rows, in the column order their module writes them (sessions, semantic, skills, feedback)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    categories: list[tuple[str, str, str]] = field(default_factory=list)  # user, name, summary
    outcomes: list[tuple[Any, ...]] = field(default_factory=list)
    feedback: list[tuple[Any, ...]] = field(default_factory=list)
    working: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    forget_log: list[list[Any]] = field(default_factory=list)
    # record kind -> per record of its list, its identity when it carries no id (ingest_duplicates.py), else None
    keys: dict[str, list[RecordKey | None]] = field(default_factory=dict)
    # (record kind, index in its list) -> line number, so a reference error can name its line
    lines: dict[tuple[str, int], int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {
            "message": len(self.messages),
            "item": len(self.items),
            "category": len(self.categories),
            "episode": len(self.episodes),
            "skill": len(self.skills),
            "outcome": len(self.outcomes),
            "feedback": len(self.feedback),
            "working": sum(len(v) for v in self.working.values()),
            "forget_log": len(self.forget_log),
        }


def _leave_out(plan: IngestPlan, found: dict[str, list[int]]) -> None:
    """Drop the records at ``found``'s positions from the plan (before anything is written)."""
    names = {
        "message": "messages",
        "item": "items",
        "episode": "episodes",
        "skill": "skills",
        "outcome": "outcomes",
        "feedback": "feedback",
        "forget_log": "forget_log",
    }
    for kind, positions in found.items():
        drop = set(positions)
        records = getattr(plan, names[kind])
        setattr(plan, names[kind], [r for n, r in enumerate(records) if n not in drop])
        plan.keys[kind] = [k for n, k in enumerate(plan.keys[kind]) if n not in drop]


def _take(rec: dict[str, Any], allowed: set[str], required: set[str]) -> dict[str, Any]:
    unknown = set(rec) - allowed - {"kind"}
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = required - set(rec)
    if missing:
        raise InvalidInput(f"missing field(s) {', '.join(sorted(missing))}")
    return {k: v for k, v in rec.items() if k != "kind"}


class Transfer:
    def __init__(
        self,
        b: Backends,
        sessions: SessionStore,
        working: WorkingMemory,
        semantic: SemanticMemory,
        episodic: EpisodicMemory,
        skills: SkillLibrary,
        feedback: FeedbackLog,
        forgetter: Forgetter,
    ) -> None:
        self.b, self.sessions, self.working, self.semantic = b, sessions, working, semantic
        self.episodic, self.skills, self.feedback, self.forgetter = episodic, skills, feedback, forgetter

    # -- import -----------------------------------------------------------------------------------------------------
    def plan(self, lines: Iterable[str]) -> IngestPlan:
        plan = IngestPlan()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                # Depth, size, huge numbers, NaN and lone surrogates; a record holds a slot value one level down.
                rec = parse_json(line, "the record", max_depth=MAX_JSON_DEPTH + 1, max_chars=MAX_RECORD_CHARS)
                if not isinstance(rec, dict):
                    raise InvalidInput("each line must be a JSON object")
                self._add(plan, rec)
                lists: dict[str, list[Any]] = {
                    "item": plan.items,
                    "episode": plan.episodes,
                    "skill": plan.skills,
                    "outcome": plan.outcomes,
                    "feedback": plan.feedback,
                }
                listed = lists.get(rec["kind"])
                if listed is not None:
                    plan.lines[(rec["kind"], len(listed) - 1)] = number
                keyed_lists: dict[str, list[Any]] = {"message": plan.messages, "forget_log": plan.forget_log, **lists}
                keyed = keyed_lists.get(rec["kind"])
                if keyed is not None:
                    plan.keys.setdefault(rec["kind"], []).append(record_key(rec["kind"], rec, keyed[-1]))
            except MemlensError as exc:
                raise InvalidInput(f"line {number}: {exc}") from None
        self._check_references(plan)
        return plan

    def _add(self, plan: IngestPlan, rec: dict[str, Any]) -> None:
        kind = rec.get("kind")
        if kind not in RECORD_KINDS:
            raise InvalidInput(f"unknown record kind {str(kind)[:30]!r}; use one of {', '.join(RECORD_KINDS)}")
        if kind == "message":
            r = _take(
                rec,
                {"user_id", "session_id", "role", "content", "created_at"},
                {"user_id", "session_id", "role", "content"},
            )
            plan.messages.append(
                self.sessions.validate(r["user_id"], r["session_id"], r["role"], r["content"], r.get("created_at"))
            )
        elif kind == "item":
            r = _take(
                rec,
                {
                    "user_id",
                    "id",
                    "category",
                    "content",
                    "importance",
                    "evergreen",
                    "provenance",
                    "source",
                    "created_at",
                    "archived_at",
                    "preceding_text",
                },
                {"user_id", "content"},
            )
            plan.items.append(self.semantic.prepare(**r))
        elif kind == "category":
            r = _take(rec, {"user_id", "name", "summary"}, {"user_id", "name", "summary"})
            check_id(r["user_id"], "user id")
            check_category(r["name"])
            check_text(r["summary"], "summary", self.b.settings.max_text_chars, blank_ok=True)
            plan.categories.append((r["user_id"], r["name"], r["summary"]))
        elif kind == "episode":
            r = _take(
                rec,
                {
                    "user_id",
                    "id",
                    "session_id",
                    "steps",
                    "summary",
                    "outcome",
                    "importance",
                    "created_at",
                    "provenance",
                    "archived_at",
                },
                {"user_id", "steps"},
            )
            plan.episodes.append(self.episodic.prepare(**r))
        elif kind == "skill":
            r = _take(
                rec,
                {
                    "user_id",
                    "id",
                    "name",
                    "skill_kind",
                    "description",
                    "body",
                    "version",
                    "provenance",
                    "created_at",
                    "archived_at",
                },
                {"user_id", "name", "body"},
            )
            r["kind"] = r.pop("skill_kind", "prompt")
            plan.skills.append(self.skills.prepare(**r))
        elif kind == "outcome":
            r = _take(rec, {"user_id", "skill_id", "success", "episode_id", "at"}, {"user_id", "skill_id", "success"})
            check_id(r["user_id"], "user id")
            check_id(r["skill_id"], "skill id")
            if not isinstance(r["success"], bool):
                raise InvalidInput("success must be true or false")
            if r.get("episode_id") is not None:
                check_id(r["episode_id"], "episode id")
            plan.outcomes.append(
                (r["user_id"], r["skill_id"], r["success"], r.get("episode_id"), optional_time(r.get("at"), "at"))
            )
        elif kind == "feedback":
            r = _take(
                rec,
                {"user_id", "item_id", "label", "trace_id", "hop", "note", "created_at"},
                {"user_id", "item_id", "label"},
            )
            plan.feedback.append(self.feedback.prepare(**r))
        elif kind == "working":
            r = _take(rec, {"user_id", "session_id", "slot", "value"}, {"user_id", "session_id", "slot", "value"})
            check_id(r["user_id"], "user id")
            check_id(r["session_id"], "session id")
            check_slot(r["slot"])
            plan.working.setdefault((r["user_id"], r["session_id"]), {})[r["slot"]] = r["value"]
        else:
            r = _take(
                rec,
                {"user_id", "memory_type", "ids", "count", "mode", "reason", "actor", "at"},
                {"user_id", "memory_type", "ids", "mode", "reason"},
            )
            plan.forget_log.append(self.forgetter.prepare_entry(**r))

    def _check_references(self, plan: IngestPlan) -> None:
        """Ids must be new (in the file and the store); outcomes must name skills and feedback memories, in the
        file or already stored. Each error names its line. An existing id must be refused here: writing it would
        fail and the rollback would delete the existing memory's vectors along with the new ones."""
        tables: tuple[tuple[str, str, Sequence[Any]], ...] = (
            ("item", "items", plan.items),
            ("episode", "episodes", plan.episodes),
            ("skill", "skills", plan.skills),
        )
        with self.b.db.read() as conn:
            for kind, table, records in tables:
                first: dict[str, int] = {}
                for n, r in enumerate(records):
                    line = plan.lines.get((kind, n), 0)
                    if r.id in first:
                        raise InvalidInput(
                            f"line {line}: {kind} id {r.id!r} appears twice (first on line {first[r.id]})"
                        )
                    first[r.id] = line
                taken = conn.execute(
                    f"SELECT id FROM {table} WHERE id IN (SELECT unnest(?)) ORDER BY id", [list(first)]
                ).fetchall()
                if taken:
                    raise InvalidInput(
                        f"line {first[taken[0][0]]}: {kind} id {taken[0][0]!r} already exists in the store"
                    )
            skills = {(s.user_id, s.id) for s in plan.skills}
            memories = skills | {(i.user_id, i.id) for i in plan.items} | {(e.user_id, e.id) for e in plan.episodes}
            forgotten = self._hard_forgotten(conn, plan)
            for n, (user_id, skill_id, *_) in enumerate(plan.outcomes):
                # An outcome of a hard-forgotten skill stays in the store (the researcher's record, like a label),
                # so an export carries it and an import must accept it.
                if (
                    (user_id, skill_id) not in skills
                    and (user_id, skill_id) not in forgotten
                    and conn.execute("SELECT 1 FROM skills WHERE user_id=? AND id=?", [user_id, skill_id]).fetchone()
                    is None
                ):
                    raise InvalidInput(
                        f"line {plan.lines.get(('outcome', n), 0)}: outcome names unknown skill "
                        f"{skill_id!r} for user {user_id!r}"
                    )
            for n, f in enumerate(plan.feedback):
                if (
                    (f[0], f[1]) not in memories
                    and (f[0], f[1]) not in forgotten
                    and not self.feedback.existing_ids(conn, f[0], [f[1]])
                ):
                    raise InvalidInput(
                        f"line {plan.lines.get(('feedback', n), 0)}: feedback names unknown memory "
                        f"{f[1]!r} for user {f[0]!r}"
                    )

    def _hard_forgotten(self, conn: Connection, plan: IngestPlan) -> set[tuple[str, str]]:
        """(user, id) of the memories the file's or the store's forget log names as hard-forgotten. A label or a
        skill's outcome stays when its memory is hard-forgotten (the researcher's record; the tombstone says what it
        was about), so an export carries it and an import must accept it."""
        named = {(e[0], i) for e in plan.forget_log if e[4] == "hard" for i in json.loads(e[2])}
        users = sorted({f[0] for f in plan.feedback} | {o[0] for o in plan.outcomes})
        if users:
            rows = conn.execute(
                "SELECT f.user_id, u.mid FROM forget_log f, unnest(CAST(f.ids AS VARCHAR[])) AS "
                "u(mid) WHERE f.mode = 'hard' AND f.user_id IN (SELECT unnest(?))",
                [users],
            ).fetchall()
            named |= {(r[0], r[1]) for r in rows}
        return named

    def apply(self, plan: IngestPlan, progress: Progress | None = None, skip_existing: bool = False) -> dict[str, int]:
        """Write a validated plan: vectors first, then one DuckDB transaction; vectors are removed if it fails.

        Returns the records written per kind; and ``already_stored``, how many records without an id the store held
        before (ingest_duplicates.py): written again, or with ``skip_existing`` left out (counted as ``skipped``)."""
        with self.b.db.read() as conn:
            found = already_stored(conn, plan.keys)
        repeated = sum(len(v) for v in found.values())
        if skip_existing and repeated:
            _leave_out(plan, found)
        extra = {("skipped" if skip_existing else "already_stored"): repeated} if repeated else {}
        return self._apply_plan(plan, progress) | extra

    def _apply_plan(self, plan: IngestPlan, progress: Progress | None) -> dict[str, int]:
        skills = self.skills.resolve(plan.skills)
        added: list[tuple[str, list[str]]] = []
        sources = (
            ("semantic", plan.items, self.semantic),
            ("episodic", plan.episodes, self.episodic),
            ("procedural", skills, self.skills),
        )
        with ExitStack() as intents:
            # Noted before the first vector: a crash part-way leaves vectors whose rows never committed, and the
            # next open removes exactly those. Vectors are upserted by id, so importing the file again after such a
            # crash can never leave two vectors for one memory.
            for kind, records, _ in sources:
                intents.enter_context(self.b.intent(kind, [r.id for r in records if r.archived_at is None]))
            return self._apply(plan, sources, added, progress)

    def _apply(
        self,
        plan: IngestPlan,
        sources: tuple[_Source[Item], _Source[Episode], _Source[Skill]],
        added: list[tuple[str, list[str]]],
        progress: Progress | None,
    ) -> dict[str, int]:
        skills = sources[2][1]
        try:
            for kind, records, module in sources:
                active = [r for r in records if r.archived_at is None]
                for start in range(0, len(active), 512):
                    chunk = active[start : start + 512]
                    # Embedded in small batches so a progress bar moves every few seconds even on a slow machine
                    # (one 512-record batch was one silent step); written to the index as one batch.
                    texts, parts = [], []
                    for sub in range(0, len(chunk), PROGRESS_BATCH):
                        t, v = self.b.record_vectors(module, chunk[sub : sub + PROGRESS_BATCH])
                        texts += t
                        parts.append(v)
                        if progress:
                            progress(kind, start + min(sub + PROGRESS_BATCH, len(chunk)), len(active))
                    vectors = np.vstack(parts) if len(parts) > 1 else parts[0]
                    self.b.index.add(
                        kind, [r.id for r in chunk], [r.user_id for r in chunk], texts, vectors, upsert=True
                    )
                    added.append((kind, [r.id for r in chunk]))
            with self.b.db.write() as conn:
                self.semantic.insert(conn, plan.items)
                self.episodic.insert(conn, plan.episodes)
                self.skills.insert(conn, skills)
                for user_id, name, summary in plan.categories:
                    self.semantic.set_category_summary(user_id, name, summary, conn=conn)
                self.sessions.add_messages([m for m in plan.messages], conn=conn)
                self._insert_outcomes(conn, plan, skills)
                if plan.feedback:
                    self.feedback.record(
                        plan.feedback, conn=conn, check_traces=False, forgotten=self._hard_forgotten(conn, plan)
                    )
                for (user_id, session_id), slots in plan.working.items():
                    self.working.update(user_id, session_id, slots, source="ingest", conn=conn)
                self.forgetter.insert_entries(conn, plan.forget_log)
        except BaseException:
            for kind, ids in added:
                self.b.index.delete(kind, ids)
            raise
        return plan.counts()

    def _insert_outcomes(self, conn: Connection, plan: IngestPlan, skills: Sequence[Skill]) -> None:
        """Count each outcome on its skill; an outcome of a hard-forgotten skill (no row: checked in
        _check_references) is stored as the event alone, as the forget left it."""
        named = sorted({o[1] for o in plan.outcomes})
        stored = {
            (r[0], r[1])
            for r in conn.execute("SELECT user_id, id FROM skills WHERE id IN (SELECT unnest(?))", [named]).fetchall()
        } | {(s.user_id, s.id) for s in skills}
        for user_id, skill_id, success, episode_id, at in plan.outcomes:
            if (user_id, skill_id) in stored:
                self.skills.ingest_outcome(conn, user_id, skill_id, success, episode_id, at)
            else:
                conn.execute(
                    "INSERT INTO skill_outcomes (skill_id, user_id, success, episode_id, occurred_at) "
                    "VALUES (?,?,?,?,?)",
                    [skill_id, user_id, success, episode_id, at or utcnow()],
                )

    # -- export -----------------------------------------------------------------------------------------------------
    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Every record of a user as JSON-ready dicts in an order :meth:`plan` reads back (export.py)."""
        return export_records(self, user_id)
