"""Forgetting graph memory (llmemory §3.8, with the forget log and the cascade from memories [memlens]).

Two ways a graph row is forgotten, both inside the caller's transaction (forgetting.py's ``Forgetter`` owns the
transaction, the forget-log entry and the trace redaction):

- **directly** (``engine.graph.forget`` / ``engine.forgetting.forget(user, "graph", ids, ...)``): ids are entity
  and/or relation ids. An entity takes its relations (as subject or object) and its mentions with it.
- **by cascade** when memories are forgotten: their ``entity_mentions`` go, and a relation whose every memory source
  is now forgotten goes too (a hard forget also strips a forgotten memory from the sources of a relation that
  another live memory still supports); an entity left with no mention and no relation goes with it, since its name
  was drawn from the forgotten text.

Soft: ``archived_at`` set (relations also get ``archive_reason``; their validity stays as it was, so a query with
``include_archived`` shows them where they held); the rows stay, fetchable by id, and every other query skips them.
Hard: the rows are deleted. Either way an exclusive predicate's timeline is mended around a removed version: its
predecessor is valid again until the removed version's successor (or from then on), so "as of" queries do not show a
gap where the forgotten value stood. Mentions carry no text and are deleted in both modes (they only lead retrieval
to memories). A direct forget writes one forget-log entry of memory_type "graph"; a cascade is covered by the
memories' own entry (one entry per call, as before the graph).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..store.schema import KIND_TABLES
from ..store.sql.database import Connection
from ..vocab import GRAPH
from .base import dumps
from .graph_write import execute_rows

GRAPH_KIND = GRAPH  # the forget log's memory_type for entities and relations
MAX_SQL_SEARCHED = 50  # memories whose relations are looked up by a substring test in SQL (more: one Python pass)


@dataclass
class GraphForgetOutcome:
    """What one forget did to the graph: the entity and relation ids it archived or deleted (in that order), the ids
    asked for that were not found (or, soft, already archived), and the texts of hard-deleted rows as stored traces
    may quote them (id -> entity name or relation sentence) for redaction."""

    entities: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    mentions: int = 0

    @property
    def affected(self) -> list[str]:
        return [*self.entities, *self.relations]


def _sources(value: Any) -> list[dict[str, str]]:
    raw = json.loads(value) if isinstance(value, str) else value
    return [s for s in raw or [] if isinstance(s, dict)]


def _relation_texts(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """relation id -> "subject predicate object", read before the rows go (a trace may quote the sentence)."""
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT r.id, s.name, r.predicate, o.name FROM relations r JOIN entities s ON s.id = r.subject_id "
        "JOIN entities o ON o.id = r.object_id WHERE r.id IN (SELECT unnest(?))",
        [list(ids)],
    ).fetchall()
    return {r[0]: f"{r[1]} {r[2]} {r[3]}" for r in rows}


def _mend_timelines(conn: Connection, user_id: str, removed: Sequence[str]) -> None:
    """Re-link every remaining relation that a removed version had superseded past the removed run of versions: it
    is valid until the next remaining version starts (superseded by it), or again open when none follows. Read
    before the removed rows change (their own validity is what says where the run ends)."""
    if not removed:
        return
    gone = set(removed)
    rows = conn.execute(
        "SELECT id, valid_to, superseded_by FROM relations WHERE user_id=? AND id IN (SELECT unnest(?))",
        [user_id, sorted(gone)],
    ).fetchall()
    nxt = {r[0]: (r[1], r[2]) for r in rows}
    before = conn.execute(
        "SELECT id, superseded_by FROM relations WHERE user_id=? AND archived_at IS NULL "
        "AND superseded_by IN (SELECT unnest(?))",
        [user_id, sorted(gone)],
    ).fetchall()
    updates = []
    for rid, successor in before:
        if rid in gone:
            continue
        valid_to, superseded_by = None, successor
        seen: set[str] = set()
        while superseded_by in gone and superseded_by not in seen:  # walk past a run of removed versions
            seen.add(superseded_by)
            valid_to, superseded_by = nxt[superseded_by]
        updates.append([valid_to, superseded_by, rid])
    if updates:
        execute_rows(conn, "UPDATE relations SET valid_to=?, superseded_by=? WHERE id=?", updates)


def _remove_relations(
    conn: Connection, user_id: str, ids: Sequence[str], mode: str, reason: str, now: datetime, out: GraphForgetOutcome
) -> None:
    if not ids:
        return
    ids = list(ids)
    _mend_timelines(conn, user_id, ids)
    if mode == "hard":
        out.texts.update(_relation_texts(conn, ids))
        conn.execute("DELETE FROM relations WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, ids])
    else:
        conn.execute(
            "UPDATE relations SET archived_at=?, archive_reason=? WHERE user_id=? AND id IN (SELECT unnest(?))",
            [now, reason, user_id, ids],
        )
    out.relations += [i for i in ids if i not in out.relations]


def _remove_entities(
    conn: Connection, user_id: str, ids: Sequence[str], mode: str, now: datetime, out: GraphForgetOutcome
) -> None:
    if not ids:
        return
    ids = list(ids)
    out.mentions += int(
        conn.execute(
            "SELECT count(*) FROM entity_mentions WHERE user_id=? AND entity_id IN (SELECT unnest(?))", [user_id, ids]
        ).fetchall()[0][0]
    )
    conn.execute("DELETE FROM entity_mentions WHERE user_id=? AND entity_id IN (SELECT unnest(?))", [user_id, ids])
    if mode == "hard":
        rows = conn.execute(
            "SELECT id, name FROM entities WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, ids]
        ).fetchall()
        out.texts.update({r[0]: r[1] for r in rows})
        conn.execute("DELETE FROM entities WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, ids])
    else:
        conn.execute(
            "UPDATE entities SET archived_at=?, updated_at=? WHERE user_id=? AND id IN (SELECT unnest(?))",
            [now, now, user_id, ids],
        )
    out.entities += [i for i in ids if i not in out.entities]


def forget_graph(
    conn: Connection, user_id: str, ids: Sequence[str], mode: str, reason: str, now: datetime
) -> GraphForgetOutcome:
    """Forget entities and relations by id (validated ids, inside the caller's transaction). Soft skips what is
    already archived (reported unknown, like a memory); hard deletes archived rows too."""
    out = GraphForgetOutcome()
    live = " AND archived_at IS NULL" if mode == "soft" else ""
    entities = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM entities WHERE user_id=? AND id IN (SELECT unnest(?)){live}", [user_id, list(ids)]
        ).fetchall()
    ]
    relations = {
        r[0]
        for r in conn.execute(
            f"SELECT id FROM relations WHERE user_id=? AND id IN (SELECT unnest(?)){live}", [user_id, list(ids)]
        ).fetchall()
    }
    # An entity's relations, either direction (archived ones too when hard: no row may keep its name).
    if entities:
        relations.update(
            r[0]
            for r in conn.execute(
                "SELECT id FROM relations WHERE user_id=? AND (subject_id IN (SELECT unnest(?)) "
                f"OR object_id IN (SELECT unnest(?))){live}",
                [user_id, entities, entities],
            ).fetchall()
        )
    found = set(entities) | relations
    order = [i for i in ids if i in relations] + sorted(relations - set(ids))
    _remove_relations(conn, user_id, order, mode, reason, now, out)
    _remove_entities(conn, user_id, entities, mode, now, out)
    out.unknown = [i for i in ids if i not in found]
    return out


def forget_derived(
    conn: Connection, user_id: str, kind: str, memory_ids: Sequence[str], mode: str, reason: str, now: datetime
) -> GraphForgetOutcome:
    """The cascade of forgetting memories (``kind``, ``memory_ids``; their rows already archived or deleted in this
    transaction): their mentions, the relations no live memory supports any more, and the entities left with
    nothing. Hard also drops the forgotten memories from the sources of the relations that stay."""
    out = GraphForgetOutcome()
    if not memory_ids:
        return out
    wanted = set(memory_ids)
    touched = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT entity_id FROM entity_mentions WHERE user_id=? AND kind=? "
            "AND memory_id IN (SELECT unnest(?))",
            [user_id, kind, sorted(wanted)],
        ).fetchall()
    }
    out.mentions = int(
        conn.execute(
            "SELECT count(*) FROM entity_mentions WHERE user_id=? AND kind=? AND memory_id IN (SELECT unnest(?))",
            [user_id, kind, sorted(wanted)],
        ).fetchall()[0][0]
    )
    conn.execute(
        "DELETE FROM entity_mentions WHERE user_id=? AND kind=? AND memory_id IN (SELECT unnest(?))",
        [user_id, kind, sorted(wanted)],
    )
    # Relations naming one of the memories among their sources, checked on the parsed sources below. A few ids are
    # found in SQL by their quoted JSON form (a substring test, no pattern); many (an expiry of old episodes) by
    # one pass over the user's relations instead of a substring test per id and row.
    live = " AND r.archived_at IS NULL" if mode == "soft" else ""
    select = f"SELECT r.id, r.subject_id, r.object_id, r.sources FROM relations r WHERE r.user_id=?{live}"
    if len(wanted) <= MAX_SQL_SEARCHED:
        rows = conn.execute(
            select + " AND EXISTS (SELECT 1 FROM (SELECT unnest(?) AS q) m "
            "WHERE strpos(CAST(r.sources AS VARCHAR), m.q) > 0)",
            [user_id, [json.dumps(m) for m in sorted(wanted)]],
        ).fetchall()
    else:
        rows = conn.execute(select, [user_id]).fetchall()
    candidates = []
    for rid, subject_id, object_id, sources in rows:
        parsed = _sources(sources)
        if any(s.get("type") == kind and s.get("id") in wanted for s in parsed):
            candidates.append((rid, subject_id, object_id, parsed))
    others = {
        (str(s.get("type")), str(s.get("id")))
        for *_, parsed in candidates
        for s in parsed
        if s.get("type") in KIND_TABLES and not (s.get("type") == kind and s.get("id") in wanted)
    }
    alive = _live_memories(conn, user_id, others)
    gone, keep = [], []
    for rid, subject_id, object_id, parsed in candidates:
        touched.update((subject_id, object_id))
        rest = [s for s in parsed if not (s.get("type") == kind and s.get("id") in wanted)]
        if any((str(s.get("type")), str(s.get("id"))) in alive for s in rest):
            if mode == "hard":
                keep.append([dumps(rest), rid])
        else:
            gone.append(rid)
    if keep:
        execute_rows(conn, "UPDATE relations SET sources=? WHERE id=?", keep)
    _remove_relations(conn, user_id, gone, mode, reason, now, out)
    _remove_entities(conn, user_id, _orphans(conn, user_id, touched, mode), mode, now, out)
    return out


def _live_memories(conn: Connection, user_id: str, sources: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (kind, id) among ``sources`` whose memory is stored and not archived."""
    alive: set[tuple[str, str]] = set()
    for kind, table in KIND_TABLES.items():
        ids = sorted(i for k, i in sources if k == kind)
        if ids:  # table names from our own registry, ids as a parameter
            rows = conn.execute(
                f"SELECT id FROM {table} WHERE user_id=? AND archived_at IS NULL AND id IN (SELECT unnest(?))",
                [user_id, ids],
            ).fetchall()
            alive.update((kind, r[0]) for r in rows)
    return alive


def _orphans(conn: Connection, user_id: str, entity_ids: set[str], mode: str) -> list[str]:
    """The entities among ``entity_ids`` no memory mentions and no relation names (soft: no active relation; hard:
    no relation at all, since an archived relation still shows the name)."""
    if not entity_ids:
        return []
    live = " AND r.archived_at IS NULL" if mode == "soft" else ""
    rows = conn.execute(
        "SELECT e.id FROM entities e WHERE e.user_id=? AND e.id IN (SELECT unnest(?))"
        + (" AND e.archived_at IS NULL" if mode == "soft" else "")
        + " AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.user_id=e.user_id AND m.entity_id=e.id) "
        "AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.user_id=e.user_id "
        f"AND (r.subject_id=e.id OR r.object_id=e.id){live}) ORDER BY e.id",
        [user_id, sorted(entity_ids)],
    ).fetchall()
    return [r[0] for r in rows]
