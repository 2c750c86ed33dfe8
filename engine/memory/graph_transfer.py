"""A user's graph in the JSONL export and back: ``entity``, ``relation`` and ``mention`` records (the kinds
engine/store/schema.py declares for the graph tables).

Records keep their ids, validity and supersession exactly, archived rows included, so an export ingested into a fresh
store gives the same timelines. Ingest is part of the all-or-nothing import (ingest_plan.py reads, ingest_write.py
writes): each record is validated, and references are checked against the file and the store before anything is
written: a relation's subject and object, what superseded it, a mention's entity. A record whose id the store already
holds for the same user is left as it is (ingesting a file twice changes nothing); an id of another user's row, or a
new entity named like an active entity the user already has under another id (two entities for one name), is
refused with its line. An import that carries graph records is not extracted again (ingest_write.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import validation
from ..clock import optional_time, parse_time, utcnow
from ..config import normalise_predicate
from ..errors import InvalidInput
from ..ids import check_id
from ..records import KINDS
from ..store.sql.database import Connection
from .base import Backends, dumps, insert_rows, loads
from .graph_write import (
    ENTITY_TYPES,
    MAX_NAME_CHARS,
    MAX_PREDICATE_CHARS,
    MENTION_TYPES,
    RELATION_TYPES,
    clean_name,
    clean_type,
    name_key,
)

GRAPH_RECORD_KINDS = ("entity", "relation", "mention")
MAX_ALIASES = 100
MAX_SOURCES = 10_000
MAX_SOURCE_CHARS = 300
MAX_REASON_CHARS = 1000


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def export_graph(b: Backends, user_id: str) -> Iterator[dict[str, Any]]:
    """A user's entities, relations (every version, archived ones too) and mentions as JSON-ready records."""
    with b.db.read() as conn:
        entities = conn.execute(
            "SELECT id, name, type, aliases, provenance, created_at, updated_at, archived_at FROM entities "
            "WHERE user_id=? ORDER BY created_at, id",
            [user_id],
        ).fetchall()
        relations = conn.execute(
            "SELECT id, subject_id, predicate, object_id, valid_from, valid_to, superseded_by, sources, method, "
            "confidence, created_at, archived_at, archive_reason FROM relations WHERE user_id=? "
            "ORDER BY valid_from, created_at, id",
            [user_id],
        ).fetchall()
        mentions = conn.execute(
            "SELECT entity_id, kind, memory_id, method, created_at FROM entity_mentions WHERE user_id=? "
            "ORDER BY entity_id, kind, memory_id",
            [user_id],
        ).fetchall()
    for eid, name, kind, aliases, provenance, created, updated, archived in entities:
        yield {
            "kind": "entity",
            "user_id": user_id,
            "id": eid,
            "name": name,
            "type": kind,
            "aliases": list(loads(aliases) or []),
            "provenance": loads(provenance) or {},
            "created_at": _iso(created),
            "updated_at": _iso(updated),
            "archived_at": _iso(archived),
        }
    for r in relations:
        yield {
            "kind": "relation",
            "user_id": user_id,
            "id": r[0],
            "subject_id": r[1],
            "predicate": r[2],
            "object_id": r[3],
            "valid_from": _iso(r[4]),
            "valid_to": _iso(r[5]),
            "superseded_by": r[6],
            "sources": list(loads(r[7]) or []),
            "method": r[8],
            "confidence": r[9],
            "created_at": _iso(r[10]),
            "archived_at": _iso(r[11]),
            "archive_reason": r[12],
        }
    for entity_id, memory_kind, memory_id, method, created in mentions:
        yield {
            "kind": "mention",
            "user_id": user_id,
            "entity_id": entity_id,
            "memory_kind": memory_kind,
            "memory_id": memory_id,
            "method": method,
            "created_at": _iso(created),
        }


# -- ingest: records read and checked -----------------------------------------------------------------------------
@dataclass
class GraphPlan:
    """Validated graph rows of an import, in their tables' column order, each with its line number."""

    entities: list[list[Any]] = field(default_factory=list)
    relations: list[list[Any]] = field(default_factory=list)
    mentions: list[list[Any]] = field(default_factory=list)
    lines: dict[tuple[str, int], int] = field(default_factory=dict)
    # Ids of the file's entities and relations the store already holds for the same user: left as stored. They stay
    # in the lists above, so a plan still says it carried a graph (its items are then not extracted again).
    stored: set[str] = field(default_factory=set)

    def fresh(self, rows: list[list[Any]]) -> list[list[Any]]:
        return [r for r in rows if r[0] not in self.stored]


def _fields(rec: dict[str, Any], allowed: set[str], required: set[str]) -> dict[str, Any]:
    unknown = set(rec) - allowed - {"kind"}
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = required - set(rec)
    if missing:
        raise InvalidInput(f"missing field(s) {', '.join(sorted(missing))}")
    return rec


def _method(value: object) -> str:
    return validation.check_text(value if value is not None else "import", "method", 40).strip()


def _entity(r: dict[str, Any]) -> list[Any]:
    _fields(
        r,
        {"user_id", "id", "name", "type", "aliases", "provenance", "created_at", "updated_at", "archived_at"},
        {"user_id", "id", "name"},
    )
    user_id, eid = check_id(r["user_id"], "user id"), check_id(r["id"], "entity id")
    name = clean_name(validation.check_text(r["name"], "entity name", MAX_NAME_CHARS))
    aliases = r.get("aliases") or []
    if not isinstance(aliases, list) or len(aliases) > MAX_ALIASES:
        raise InvalidInput(f"aliases must be a list of at most {MAX_ALIASES} names")
    aliases = [clean_name(validation.check_text(a, "alias", MAX_NAME_CHARS)) for a in aliases]
    provenance = r.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise InvalidInput("provenance must be a JSON object")
    kind = clean_type(validation.check_optional_text(r.get("type"), "entity type", 40))
    created = optional_time(r.get("created_at"), "created_at") or utcnow()
    updated = optional_time(r.get("updated_at"), "updated_at") or created
    archived = optional_time(r.get("archived_at"), "archived_at")
    return [eid, user_id, name, name_key(name), kind, dumps(aliases), dumps(provenance), created, updated, archived]


def _sources(value: object) -> list[dict[str, str]]:
    if not isinstance(value, list) or len(value) > MAX_SOURCES:
        raise InvalidInput(f"sources must be a list of at most {MAX_SOURCES:,} {{type, id}} objects")
    out = []
    for s in value:
        if not isinstance(s, dict) or set(s) != {"type", "id"}:
            raise InvalidInput("each source must be an object with exactly type and id")
        out.append(
            {
                "type": validation.check_text(s["type"], "source type", 40),
                "id": validation.check_text(s["id"], "source id", MAX_SOURCE_CHARS),
            }
        )
    return out


def _relation(r: dict[str, Any]) -> list[Any]:
    _fields(
        r,
        {
            "user_id",
            "id",
            "subject_id",
            "predicate",
            "object_id",
            "valid_from",
            "valid_to",
            "superseded_by",
            "sources",
            "method",
            "confidence",
            "created_at",
            "archived_at",
            "archive_reason",
        },
        {"user_id", "id", "subject_id", "predicate", "object_id", "valid_from"},
    )
    user_id, rid = check_id(r["user_id"], "user id"), check_id(r["id"], "relation id")
    subject, obj = check_id(r["subject_id"], "subject id"), check_id(r["object_id"], "object id")
    predicate = normalise_predicate(validation.check_text(r["predicate"], "predicate", MAX_PREDICATE_CHARS))
    valid_from = parse_time(r["valid_from"], "valid_from")
    valid_to = optional_time(r.get("valid_to"), "valid_to")
    if valid_to is not None and valid_to < valid_from:
        raise InvalidInput("valid_to is before valid_from")
    superseded_by = r.get("superseded_by")
    if superseded_by is not None:
        check_id(superseded_by, "superseded_by")
        if superseded_by == rid:
            raise InvalidInput("a relation cannot supersede itself")
    confidence = r.get("confidence")
    if confidence is not None:
        confidence = validation.check_number(confidence, "confidence", lo=0.0, hi=1.0)
    reason = r.get("archive_reason")
    if reason is not None:
        reason = validation.check_text(reason, "archive_reason", MAX_REASON_CHARS, blank_ok=True)
    return [
        rid,
        user_id,
        subject,
        predicate,
        obj,
        valid_from,
        valid_to,
        superseded_by,
        dumps(_sources(r.get("sources") or [])),
        _method(r.get("method")),
        confidence,
        optional_time(r.get("created_at"), "created_at") or utcnow(),
        optional_time(r.get("archived_at"), "archived_at"),
        reason,
    ]


def _mention(r: dict[str, Any]) -> list[Any]:
    _fields(
        r,
        {"user_id", "entity_id", "memory_kind", "memory_id", "method", "created_at"},
        {"user_id", "entity_id", "memory_kind", "memory_id"},
    )
    if r["memory_kind"] not in KINDS:
        raise InvalidInput(f"unknown memory_kind {str(r['memory_kind'])[:30]!r}; use semantic, episodic or procedural")
    return [
        check_id(r["user_id"], "user id"),
        check_id(r["entity_id"], "entity id"),
        str(r["memory_kind"]),
        check_id(r["memory_id"], "memory id"),
        _method(r.get("method")),
        optional_time(r.get("created_at"), "created_at") or utcnow(),
    ]


def add_graph_record(plan: GraphPlan, rec: dict[str, Any], line: int) -> None:
    """Validate one graph record of an import into ``plan`` (InvalidInput naming the problem; the caller adds the
    line number)."""
    kind = rec["kind"]
    rows, make = {
        "entity": (plan.entities, _entity),
        "relation": (plan.relations, _relation),
        "mention": (plan.mentions, _mention),
    }[kind]
    rows.append(make(rec))
    plan.lines[(kind, len(rows) - 1)] = line


def _refuse(plan: GraphPlan, kind: str, n: int, message: str) -> InvalidInput:
    return InvalidInput(f"line {plan.lines.get((kind, n), 0)}: {message}")


def check_graph_references(conn: Connection, plan: GraphPlan) -> None:
    """Ids new or the same user's (then left as stored), references resolvable in the file or the store, one active
    entity per name; drops the records the store already holds. Raises InvalidInput naming the line."""
    if not (plan.entities or plan.relations or plan.mentions):
        return
    _dedupe_ids(plan)
    stored_entities = _stored(conn, "entities", [e[0] for e in plan.entities])
    stored_relations = _stored(conn, "relations", [r[0] for r in plan.relations])
    for kind, rows, stored in (
        ("entity", plan.entities, stored_entities),
        ("relation", plan.relations, stored_relations),
    ):
        for n, row in enumerate(rows):
            if row[0] in stored and stored[row[0]] != row[1]:
                raise _refuse(plan, kind, n, f"{kind} id {row[0]!r} already exists in the store for another user")
    plan.stored = set(stored_entities) | set(stored_relations)
    _check_names(conn, plan)
    entities = {(e[1], e[0]) for e in plan.entities} | _owned(
        conn,
        "entities",
        [r[2] for r in plan.relations] + [r[4] for r in plan.relations] + [m[1] for m in plan.mentions],
    )
    relations = {(r[1], r[0]) for r in plan.relations} | _owned(
        conn, "relations", [r[7] for r in plan.relations if r[7] is not None]
    )
    for n, r in enumerate(plan.relations):
        for what, ref in (("subject", r[2]), ("object", r[4])):
            if (r[1], ref) not in entities:
                raise _refuse(plan, "relation", n, f"relation {r[0]!r} names unknown {what} entity {ref!r}")
        if r[7] is not None and (r[1], r[7]) not in relations:
            raise _refuse(plan, "relation", n, f"relation {r[0]!r} is superseded by unknown relation {r[7]!r}")
    for n, m in enumerate(plan.mentions):
        if (m[0], m[1]) not in entities:
            raise _refuse(plan, "mention", n, f"mention names unknown entity {m[1]!r} for user {m[0]!r}")


def _dedupe_ids(plan: GraphPlan) -> None:
    for kind, rows in (("entity", plan.entities), ("relation", plan.relations)):
        first: dict[str, int] = {}
        for n, row in enumerate(rows):
            if row[0] in first:
                line = plan.lines.get((kind, first[row[0]]), 0)
                raise _refuse(plan, kind, n, f"{kind} id {row[0]!r} appears twice (first on line {line})")
            first[row[0]] = n
    seen: set[tuple[str, str, str, str]] = set()
    kept = []
    for m in plan.mentions:  # a mention is its key: the same one twice is one
        key = (m[0], m[1], m[2], m[3])
        if key not in seen:
            seen.add(key)
            kept.append(m)
    plan.mentions = kept


def _stored(conn: Connection, table: str, ids: Sequence[str]) -> dict[str, str]:
    """id -> user of the rows of ``table`` (ours: entities or relations) that already hold one of ``ids``."""
    if not ids:
        return {}
    rows = conn.execute(f"SELECT id, user_id FROM {table} WHERE id IN (SELECT unnest(?))", [list(ids)]).fetchall()
    return {r[0]: r[1] for r in rows}


def _owned(conn: Connection, table: str, ids: Sequence[str]) -> set[tuple[str, str]]:
    """(user, id) of the stored rows of ``table`` among ``ids``."""
    return {(u, i) for i, u in _stored(conn, table, sorted(set(ids))).items()}


def _check_names(conn: Connection, plan: GraphPlan) -> None:
    """One active entity per (user, name): in the file, and against the store."""
    active = {(e[1], e[3]): n for n, e in enumerate(plan.entities) if e[9] is None and e[0] not in plan.stored}
    seen: dict[tuple[str, str], int] = {}
    for n, e in enumerate(plan.entities):
        if e[9] is None and e[0] not in plan.stored:
            if (e[1], e[3]) in seen:
                raise _refuse(plan, "entity", n, f"two active entities are named {e[2]!r} for user {e[1]!r}")
            seen[(e[1], e[3])] = n
    for user_id in sorted({u for u, _ in active}):
        keys = [k for u, k in active if u == user_id]
        row = conn.execute(
            "SELECT name_key, id FROM entities WHERE user_id=? AND archived_at IS NULL "
            "AND name_key IN (SELECT unnest(?)) ORDER BY name_key LIMIT 1",
            [user_id, keys],
        ).fetchone()
        if row is not None:
            n = active[(user_id, row[0])]
            raise _refuse(
                plan,
                "entity",
                n,
                f"user {user_id!r} already has an entity named {plan.entities[n][2]!r} ({row[1]}); one name is one "
                "entity: leave the graph records out of this import or remove the user's graph first",
            )


# -- ingest: rows written -----------------------------------------------------------------------------------------
def insert_graph(conn: Connection, plan: GraphPlan) -> None:
    """Write the checked graph rows inside the import's transaction (mentions the store holds are left out)."""
    insert_rows(conn, "entities", ENTITY_TYPES, plan.fresh(plan.entities))
    insert_rows(conn, "relations", RELATION_TYPES, plan.fresh(plan.relations))
    if plan.mentions:
        users = sorted({m[0] for m in plan.mentions})
        have = {
            (r[0], r[1], r[2], r[3])
            for r in conn.execute(
                "SELECT user_id, entity_id, kind, memory_id FROM entity_mentions WHERE user_id IN (SELECT unnest(?)) "
                "AND entity_id IN (SELECT unnest(?))",
                [users, sorted({m[1] for m in plan.mentions})],
            ).fetchall()
        }
        insert_rows(conn, "entity_mentions", MENTION_TYPES, [m for m in plan.mentions if tuple(m[:4]) not in have])


def graph_counts(plan: GraphPlan) -> dict[str, int]:
    """Records written per kind (a mention the store already held is counted: it is one row either way)."""
    return {
        "entity": len(plan.fresh(plan.entities)),
        "relation": len(plan.fresh(plan.relations)),
        "mention": len(plan.mentions),
    }
