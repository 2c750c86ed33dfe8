"""Writing extractions into the graph, in the caller's transaction: entities found by name (one per name per user),
relations merged with an identical one instead of added twice, and exclusive predicates kept as a timeline.

An exclusive predicate (``Settings.graph_exclusive_predicates``) holds one value at a time. Its relations for one
subject form a timeline ordered by ``valid_from``; a new value at time t goes in between the version valid at t (its
predecessor, closed at t and ``superseded_by`` the new one) and the next later version (its successor: the new one is
valid until the successor starts and ``superseded_by`` it). So facts arriving out of order (an import of old
conversations after newer ones) still give the timeline their times say. A value equal to its predecessor's adds a
source to it rather than a version (llmemory archives even an identical edge, §3.7 [QUIRK]; memlens follows the
reference's recommendation). Nothing here deletes: only a hard forget does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import utcnow
from ..config import normalise_predicate
from ..ids import new_id
from ..records import FactSource, GraphWrite, SourcedExtraction
from ..store.sql.database import Connection
from .base import dumps, insert_rows

ENTITY_TYPES = (
    ("id", "str"),
    ("user_id", "str"),
    ("name", "str"),
    ("name_key", "str"),
    ("type", "str"),
    ("aliases", "str"),
    ("provenance", "str"),
    ("created_at", "ts"),
    ("updated_at", "ts"),
    ("archived_at", "ts"),
)
RELATION_TYPES = (
    ("id", "str"),
    ("user_id", "str"),
    ("subject_id", "str"),
    ("predicate", "str"),
    ("object_id", "str"),
    ("valid_from", "ts"),
    ("valid_to", "ts"),
    ("superseded_by", "str"),
    ("sources", "str"),
    ("method", "str"),
    ("confidence", "float"),
    ("created_at", "ts"),
    ("archived_at", "ts"),
    ("archive_reason", "str"),
)
MENTION_TYPES = (
    ("user_id", "str"),
    ("entity_id", "str"),
    ("kind", "str"),
    ("memory_id", "str"),
    ("method", "str"),
    ("created_at", "ts"),
)
MAX_NAME_CHARS = 200
MAX_PREDICATE_CHARS = 80
GENERIC_TYPE = "concept"


def name_key(name: str) -> str:
    """What makes two entity names the same entity: equal up to case, surrounding and repeated whitespace, and a
    leading article ("The Louvre" is "louvre")."""
    words = str(name).casefold().split()
    if len(words) > 1 and words[0] in {"the", "a", "an"}:
        words = words[1:]
    return " ".join(words)


def execute_rows(conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """One statement for each row: DuckDB's executemany, a loop on PostgreSQL (PgConnection has only execute)."""
    many = getattr(conn, "executemany", None)
    if many is not None:
        many(sql, rows)
        return
    for row in rows:
        conn.execute(sql, row)


def clean_name(name: object) -> str:
    return " ".join(str(name or "").split())[:MAX_NAME_CHARS]


def clean_type(kind: object) -> str:
    return "_".join(str(kind or "").strip().lower().split())[:40] or GENERIC_TYPE


@dataclass
class _Version:
    """A stored or new relation while a write is being planned."""

    id: str
    subject_id: str
    predicate: str
    object_id: str
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: str | None
    sources: list[dict[str, str]]
    method: str
    confidence: float | None
    new: bool = False
    changed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _add_sources(version: _Version, sources: Sequence[FactSource]) -> bool:
    have = {(s["type"], s["id"]) for s in version.sources}
    added = False
    for s in sources:
        if (s.type, s.id) not in have:
            version.sources.append({"type": s.type, "id": s.id})
            have.add((s.type, s.id))
            added = True
    return added


class GraphWriter:
    """Plans and writes a batch of extractions for one user inside a given connection (all or nothing with the
    memories they were drawn from)."""

    def __init__(self, exclusive: frozenset[str]) -> None:
        self.exclusive = exclusive

    def write(self, conn: Connection, user_id: str, batch: Sequence[SourcedExtraction]) -> GraphWrite:
        if not batch:
            return GraphWrite()
        now = utcnow()
        ids = self._entities(conn, user_id, batch, now)
        entities_added = ids.pop("\0added")
        mentions = self._mentions(conn, user_id, batch, ids, now)
        added, merged, superseded = self._relations(conn, user_id, batch, ids, now)
        return GraphWrite(tuple(entities_added), tuple(added), tuple(merged), tuple(superseded), mentions)

    # -- entities -----------------------------------------------------------------------------------------------
    def _entities(
        self, conn: Connection, user_id: str, batch: Sequence[SourcedExtraction], now: datetime
    ) -> dict[str, Any]:
        """name key -> entity id for every name in the batch (new entities inserted); "\\0added" lists the new."""
        wanted: dict[str, tuple[str, str]] = {}  # key -> (name, type), the first specific type seen wins
        for se in batch:
            named = [*se.extraction.entities]
            for t in se.extraction.triples:
                named += [(t.subject, t.subject_type), (t.object, t.object_type)]
            for name, kind in named:
                name = clean_name(name)
                key = name_key(name)
                if not key:
                    continue
                kind = clean_type(kind)
                if key not in wanted or (wanted[key][1] == GENERIC_TYPE and kind != GENERIC_TYPE):
                    wanted[key] = (name, kind)
        rows = conn.execute(
            "SELECT name_key, id, type FROM entities WHERE user_id=? AND archived_at IS NULL "
            "AND name_key IN (SELECT unnest(?)) ORDER BY created_at, id",
            [user_id, list(wanted)],
        ).fetchall()
        ids: dict[str, Any] = {}
        upgrade: list[tuple[str, datetime, str]] = []
        for key, eid, kind in rows:
            if key in ids:
                continue
            ids[key] = eid
            if kind == GENERIC_TYPE and wanted[key][1] != GENERIC_TYPE:  # a concept later named as a person, a place
                upgrade.append((wanted[key][1], now, eid))
        if upgrade:
            execute_rows(conn, "UPDATE entities SET type=?, updated_at=? WHERE id=?", upgrade)
        fresh = []
        for key, (name, kind) in wanted.items():
            if key not in ids:
                ids[key] = new_id("ent")
                fresh.append(
                    [ids[key], user_id, name, key, kind, "[]", dumps({"method": "extraction"}), now, now, None]
                )
        insert_rows(conn, "entities", ENTITY_TYPES, fresh)
        ids["\0added"] = [r[0] for r in fresh]
        return ids

    # -- mentions -----------------------------------------------------------------------------------------------
    def _mentions(
        self,
        conn: Connection,
        user_id: str,
        batch: Sequence[SourcedExtraction],
        ids: dict[str, Any],
        now: datetime,
    ) -> int:
        """Which memory names which entity: replaced for every memory in the batch (extracting again is idempotent)."""
        per_memory: dict[tuple[str, str], tuple[set[str], str]] = {}
        for se in batch:
            if se.memory is None:
                continue
            names = [n for n, _ in se.extraction.entities]
            for t in se.extraction.triples:
                names += [t.subject, t.object]
            linked, _ = per_memory.setdefault(se.memory, (set(), se.extraction.method))
            linked.update(ids[k] for k in (name_key(clean_name(n)) for n in names) if k in ids)
        if not per_memory:
            return 0
        for kind in {k for k, _ in per_memory}:
            conn.execute(
                "DELETE FROM entity_mentions WHERE user_id=? AND kind=? AND memory_id IN (SELECT unnest(?))",
                [user_id, kind, [m for k, m in per_memory if k == kind]],
            )
        rows = [
            [user_id, eid, kind, memory_id, method, now]
            for (kind, memory_id), (linked, method) in per_memory.items()
            for eid in sorted(linked)
        ]
        insert_rows(conn, "entity_mentions", MENTION_TYPES, rows)
        return len(rows)

    # -- relations ----------------------------------------------------------------------------------------------
    def _relations(
        self,
        conn: Connection,
        user_id: str,
        batch: Sequence[SourcedExtraction],
        ids: dict[str, Any],
        now: datetime,
    ) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        facts = []
        for se in batch:
            for t in se.extraction.triples:
                subject, obj = ids.get(name_key(clean_name(t.subject))), ids.get(name_key(clean_name(t.object)))
                predicate = normalise_predicate(t.predicate)[:MAX_PREDICATE_CHARS]
                if subject and obj and predicate:
                    facts.append((se.at, subject, predicate, obj, se.sources, se.extraction.method, t.confidence))
        if not facts:
            return [], [], []
        facts.sort(key=lambda f: f[0])  # oldest first: a timeline grows forwards, as it would have live
        stored = conn.execute(
            "SELECT id, subject_id, predicate, object_id, valid_from, valid_to, superseded_by, sources, method, "
            "confidence FROM relations WHERE user_id=? AND archived_at IS NULL AND subject_id IN (SELECT unnest(?))",
            [user_id, list({f[1] for f in facts})],
        ).fetchall()
        timelines: dict[tuple[str, str], list[_Version]] = {}
        for r in stored:
            sources = json.loads(r[7]) if isinstance(r[7], str) else list(r[7] or [])
            version = _Version(r[0], r[1], r[2], r[3], r[4], r[5], r[6], sources, r[8], r[9])
            timelines.setdefault((r[1], r[2]), []).append(version)
        added: list[str] = []
        merged: list[str] = []
        superseded: list[tuple[str, str]] = []
        for at, subject, predicate, obj, sources, method, confidence in facts:
            line = timelines.setdefault((subject, predicate), [])
            if predicate in self.exclusive:
                line.sort(key=lambda v: (v.valid_from, v.id))
                before = [v for v in line if v.valid_from <= at]
                after = [v for v in line if v.valid_from > at]
                current = before[-1] if before else None
                if current is not None and current.object_id == obj:
                    current.changed |= _add_sources(current, sources)
                    merged.append(current.id)
                    continue
                if after and after[0].object_id == obj:  # the same value, said earlier than first stored: move back
                    first = after[0]
                    first.valid_from = at
                    first.changed = True
                    _add_sources(first, sources)
                    merged.append(first.id)
                    if current is not None:
                        current.valid_to, current.superseded_by, current.changed = at, first.id, True
                        superseded.append((current.id, first.id))
                    continue
                version = self._new(subject, predicate, obj, at, sources, method, confidence)
                if after:
                    version.valid_to, version.superseded_by = after[0].valid_from, after[0].id
                if current is not None:
                    current.valid_to, current.superseded_by, current.changed = at, version.id, True
                    superseded.append((current.id, version.id))
            else:
                same = next((v for v in line if v.object_id == obj and v.valid_to is None), None)
                if same is not None:
                    same.changed |= _add_sources(same, sources)
                    if at < same.valid_from:
                        same.valid_from, same.changed = at, True
                    merged.append(same.id)
                    continue
                version = self._new(subject, predicate, obj, at, sources, method, confidence)
            line.append(version)
            added.append(version.id)
        versions = [v for line in timelines.values() for v in line]
        insert_rows(
            conn,
            "relations",
            RELATION_TYPES,
            [
                [
                    v.id,
                    user_id,
                    v.subject_id,
                    v.predicate,
                    v.object_id,
                    v.valid_from,
                    v.valid_to,
                    v.superseded_by,
                    dumps(v.sources),
                    v.method,
                    v.confidence,
                    now,
                    None,
                    None,
                ]
                for v in versions
                if v.new
            ],
        )
        changed = [v for v in versions if v.changed and not v.new]
        if changed:
            execute_rows(
                conn,
                "UPDATE relations SET valid_from=?, valid_to=?, superseded_by=?, sources=? WHERE id=?",
                [[v.valid_from, v.valid_to, v.superseded_by, dumps(v.sources), v.id] for v in changed],
            )
        return added, list(dict.fromkeys(merged)), superseded

    @staticmethod
    def _new(
        subject: str,
        predicate: str,
        obj: str,
        at: datetime,
        sources: Sequence[FactSource],
        method: str,
        confidence: float | None,
    ) -> _Version:
        version = _Version(new_id("rel"), subject, predicate, obj, at, None, None, [], method, confidence, new=True)
        _add_sources(version, sources)
        return version
