"""Reading a JSONL import into a plan: every line parsed and validated, ids and references checked against the
file and the store, before anything is written (the all-or-nothing half of transfer.py's import)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..clock import optional_time
from ..errors import InvalidInput, MemlensError
from ..ids import check_id
from ..records import Episode, Item, Skill
from ..store.sql.database import Connection
from ..validation import MAX_JSON_DEPTH, check_text, parse_json
from .base import Backends
from .episodic import EpisodicMemory
from .feedback import FeedbackLog
from .forgetting import Forgetter
from .graph_transfer import GRAPH_RECORD_KINDS, GraphPlan, add_graph_record, check_graph_references, graph_counts
from .ingest_duplicates import RecordKey, record_key
from .procedural import SkillLibrary
from .semantic import SemanticMemory, check_category
from .sessions import SessionStore
from .working import check_slot

MAX_RECORD_CHARS = 64_000_000  # one JSONL line: an episode of many long steps is far below this
RECORD_KINDS = (
    "message",
    "item",
    "category",
    "episode",
    "skill",
    "outcome",
    "feedback",
    "working",
    "forget_log",
    *GRAPH_RECORD_KINDS,
)


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
    graph: GraphPlan = field(default_factory=GraphPlan)  # entity, relation and mention records (graph_transfer.py)
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
            **graph_counts(self.graph),
        }

    # The file's graph records, as ingest_write.py asks whether it carried any (then its items are not extracted).
    @property
    def entities(self) -> list[list[Any]]:
        return self.graph.entities

    @property
    def relations(self) -> list[list[Any]]:
        return self.graph.relations

    @property
    def mentions(self) -> list[list[Any]]:
        return self.graph.mentions


def _take(rec: dict[str, Any], allowed: set[str], required: set[str]) -> dict[str, Any]:
    unknown = set(rec) - allowed - {"kind"}
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = required - set(rec)
    if missing:
        raise InvalidInput(f"missing field(s) {', '.join(sorted(missing))}")
    return {k: v for k, v in rec.items() if k != "kind"}


class IngestPlanner:
    """The planning layer of ``Transfer`` (transfer.py), which sets these attributes."""

    b: Backends
    sessions: SessionStore
    semantic: SemanticMemory
    episodic: EpisodicMemory
    skills: SkillLibrary
    feedback: FeedbackLog
    forgetter: Forgetter

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
                if rec.get("kind") in GRAPH_RECORD_KINDS:
                    add_graph_record(plan.graph, rec, number)
                    continue
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
                {"user_id", "item_id", "label", "trace_id", "hop", "note", "created_at", "labeller", "replaced_at"},
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
            check_graph_references(conn, plan.graph)

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
