"""Graph memory (llmemory §3.6-3.8, with validity over time [memlens]): ``engine.graph``.

Entities (one per name per user) and the relations between them, each relation valid from when it was said until a
newer value of an exclusive predicate superseded it (graph_write.py keeps that timeline). Every relation names the
memories and messages it was drawn from; ``entity_mentions`` records which memories name which entity, which is what
the retrieval's entity strategy follows. Queries "as of" a time return what was valid then.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import validation
from ..clock import optional_time, parse_time, utcnow
from ..config import normalise_predicate
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_ids
from ..records import (
    Entity,
    Extraction,
    FactSource,
    ForgetResult,
    GraphWrite,
    Neighbourhood,
    Page,
    Relation,
    SourcedExtraction,
    Triple,
)
from ..store.sql.database import Connection, Row, one_row
from .base import Backends, like_pattern, loads, page_args
from .graph_write import GraphWriter, clean_name, clean_type, name_key

if TYPE_CHECKING:
    from .forgetting import Forgetter
    from .graph_extraction import GraphExtraction, Progress

ENTITY_COLUMNS = "e.id, e.user_id, e.name, e.type, e.aliases, e.provenance, e.created_at, e.updated_at, e.archived_at"
RELATION_COLUMNS = (
    "r.id, r.user_id, r.subject_id, s.name, r.predicate, r.object_id, o.name, r.valid_from, r.valid_to, "
    "r.superseded_by, r.sources, r.method, r.confidence, r.created_at, r.archived_at, r.archive_reason"
)
RELATION_FROM = "relations r JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id"
MAX_DEPTH = 4
MAX_NEIGHBOURHOOD_RELATIONS = 2000


def _entity(row: Row) -> Entity:
    return Entity(
        row[0], row[1], row[2], row[3], tuple(loads(row[4]) or ()), loads(row[5]) or {}, row[6], row[7], row[8]
    )


def _relation(row: Row) -> Relation:
    sources = tuple(FactSource(str(s.get("type")), str(s.get("id"))) for s in loads(row[10]) or [])
    return Relation(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        sources,
        row[11],
        row[12],
        row[13],
        row[14],
        row[15],
    )


def graph_counts(conn: Connection, user_id: str | None = None) -> dict[str, int]:
    """``GraphMemory.stats``'s counts on an open connection (the store statistics read them too)."""
    where, params = ("WHERE user_id=?", [user_id]) if user_id is not None else ("", [])
    live = "AND archived_at IS NULL" if where else "WHERE archived_at IS NULL"
    entities = one_row(conn.execute(f"SELECT count(*) FROM entities {where} {live}", params))[0]
    rel = one_row(
        conn.execute(
            "SELECT count(*) FILTER (WHERE archived_at IS NULL AND valid_to IS NULL), "
            "count(*) FILTER (WHERE archived_at IS NULL AND valid_to IS NOT NULL), "
            f"count(*) FILTER (WHERE archived_at IS NOT NULL) FROM relations {where}",
            params,
        )
    )
    mentions = one_row(conn.execute(f"SELECT count(*) FROM entity_mentions {where}", params))[0]
    return {
        "entities": int(entities),
        "relations": int(rel[0] or 0),
        "superseded": int(rel[1] or 0),
        "archived": int(rel[2] or 0),
        "mentions": int(mentions),
    }


def _as_of(value: datetime | str | None) -> datetime | None:
    return None if value is None else (value if isinstance(value, datetime) else parse_time(value, "as of"))


def _valid_clause(as_of: datetime | None, include_history: bool) -> tuple[str, list[Any]]:
    """SQL for the relations valid at ``as_of`` (or valid now, without one), unless the whole history is wanted."""
    if include_history:
        return "", []
    if as_of is None:
        return " AND r.valid_to IS NULL", []
    return " AND r.valid_from <= ? AND (r.valid_to IS NULL OR r.valid_to > ?)", [as_of, as_of]


class GraphMemory:
    """``engine.graph``: entities, relations with validity, mentions; written from extractions, read by name, by
    entity, as of a time, as a neighbourhood or a fact's timeline."""

    kind = "graph"

    def __init__(self, b: Backends) -> None:
        self.b = b
        self.forgetter: Forgetter | None = None  # set by MemoryEngine (forgetting.py writes the forget log)
        self.extraction: GraphExtraction | None = None  # set by MemoryEngine: the items' extractor (extract)

    @property
    def writer(self) -> GraphWriter:
        return GraphWriter(self.b.settings.exclusive_predicates)

    # -- writing ------------------------------------------------------------------------------------------------
    def write(self, conn: Connection, user_id: str, batch: Sequence[SourcedExtraction]) -> GraphWrite:
        """Write extractions inside the caller's transaction (with the memories they came from)."""
        return self.writer.write(conn, user_id, batch)

    def add_fact(
        self,
        user_id: str,
        subject: str,
        predicate: str,
        object: str,
        *,
        valid_from: datetime | str | None = None,
        sources: Sequence[FactSource] = (),
        subject_type: str = "concept",
        object_type: str = "concept",
        method: str = "manual",
        confidence: float | None = None,
    ) -> GraphWrite:
        """Add one fact by hand (or from a tool): exclusive predicates supersede as for extracted ones."""
        check_id(user_id, "user id")
        for value, what in ((subject, "subject"), (object, "object")):
            validation.check_text(value, what, 200)
        validation.check_text(predicate, "predicate", 80)
        if not normalise_predicate(predicate):
            raise InvalidInput("predicate is blank")
        if confidence is not None:
            confidence = validation.check_number(confidence, "confidence", lo=0.0, hi=1.0)
        for source in sources:  # stored as given: typed and bounded like an imported relation's (graph_transfer.py)
            if not isinstance(source, FactSource):
                raise InvalidInput("sources must be FactSource records")
            validation.check_text(source.type, "source type", 40)
            validation.check_text(source.id, "source id", 300)
        at = optional_time(valid_from, "valid_from") or utcnow()
        triple = Triple(
            clean_name(subject),
            predicate,
            clean_name(object),
            clean_type(subject_type),
            clean_type(object_type),
            confidence,
        )
        # A fact stated by hand is its own support: without a source of its own, merging it into an extracted one
        # would leave it to vanish when that memory is forgotten.
        own = tuple(sources) or (FactSource(method, "stated"),)
        batch = [SourcedExtraction(Extraction((), (triple,), method), at, None, own)]
        with self.b.db.write() as conn:
            return self.write(conn, user_id, batch)

    def forget(
        self, user_id: str, ids: Sequence[str], reason: str, mode: str = "soft", actor: str = "api"
    ) -> ForgetResult:
        """Forget entities and/or relations by id: soft archives them (hidden from every query, fetchable by id),
        hard deletes them and redacts their names from stored traces. An entity takes its relations and mentions
        with it; an exclusive predicate's timeline is mended around a removed version. One forget-log entry with
        memory_type "graph" lists what was affected; ids not found (or, soft, already archived) come back as
        ``unknown``. The same as ``engine.forgetting.forget(user_id, "graph", ...)`` (graph_forget.py)."""
        if self.forgetter is None:  # wired by MemoryEngine; a GraphMemory built alone has no forget log to write
            raise InvalidInput("this graph has no forgetter: open it through MemoryEngine")
        return self.forgetter.forget(user_id, "graph", ids, reason, mode, actor)

    # -- reading ------------------------------------------------------------------------------------------------
    def entity(self, user_id: str, entity_id: str) -> Entity:
        check_id(user_id, "user id")
        check_id(entity_id, "entity id")
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.user_id=? AND e.id=?", [user_id, entity_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no entity {entity_id!r} for user {user_id!r}")
        return _entity(row)

    def resolve(self, user_id: str, name: str) -> Entity | None:
        """The active entity called ``name`` (or having it as an alias), or None."""
        check_id(user_id, "user id")
        validation.check_text(name, "entity name", 200)
        key = name_key(name)
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.user_id=? AND e.archived_at IS NULL "
                "AND (e.name_key=? OR lower(CAST(e.aliases AS VARCHAR)) LIKE ? ESCAPE '\\') "
                "ORDER BY e.name_key=? DESC, e.created_at LIMIT 1",
                [user_id, key, like_pattern(json.dumps(key, ensure_ascii=False)), key],  # as aliases are stored
            ).fetchone()
        return _entity(row) if row else None

    def list_entities(
        self,
        user_id: str,
        query: str | None = None,
        type: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[Entity]:
        """Entities by name (most mentioned first), optionally those whose name contains ``query``."""
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        validation.check_optional_text(query, "query", 200)
        where, params = ["e.user_id = ?"], [user_id]
        if query:
            where.append("e.name ILIKE ? ESCAPE '\\'")
            params.append(like_pattern(query))
        if type:
            where.append("e.type = ?")
            params.append(clean_type(type))
        if not include_archived:
            where.append("e.archived_at IS NULL")
        cond = " AND ".join(where)
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM entities e WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT {ENTITY_COLUMNS} FROM entities e LEFT JOIN (SELECT entity_id, count(*) AS n FROM "
                "entity_mentions WHERE user_id=? GROUP BY entity_id) m ON m.entity_id = e.id "
                f"WHERE {cond} ORDER BY coalesce(m.n, 0) DESC, e.name, e.id LIMIT ? OFFSET ?",
                [user_id, *params, limit, offset],
            ).fetchall()
        return Page(tuple(_entity(r) for r in rows), total, limit, offset)

    def relations(
        self,
        user_id: str,
        entity_id: str | None = None,
        predicate: str | None = None,
        as_of: datetime | str | None = None,
        include_history: bool = False,
        include_archived: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> Page[Relation]:
        """Relations valid now (or at ``as_of``; every version with ``include_history``), optionally only those of
        ``entity_id`` (as subject or object) and of ``predicate``; newest first."""
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        when = _as_of(as_of)
        where, params = ["r.user_id = ?"], [user_id]
        if entity_id is not None:
            check_id(entity_id, "entity id")
            where.append("(r.subject_id = ? OR r.object_id = ?)")
            params += [entity_id, entity_id]
        if predicate:
            where.append("r.predicate = ?")
            params.append(normalise_predicate(predicate))
        if not include_archived:
            where.append("r.archived_at IS NULL")
        valid, valid_params = _valid_clause(when, include_history)
        cond = " AND ".join(where) + valid
        params += valid_params
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM {RELATION_FROM} WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT {RELATION_COLUMNS} FROM {RELATION_FROM} WHERE {cond} "
                "ORDER BY r.valid_from DESC, r.id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return Page(tuple(_relation(r) for r in rows), total, limit, offset)

    def relation(self, user_id: str, relation_id: str) -> Relation:
        check_id(user_id, "user id")
        check_id(relation_id, "relation id")
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {RELATION_COLUMNS} FROM {RELATION_FROM} WHERE r.user_id=? AND r.id=?", [user_id, relation_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no relation {relation_id!r} for user {user_id!r}")
        return _relation(row)

    def timeline(self, user_id: str, subject_id: str, predicate: str) -> list[Relation]:
        """Every version of ``subject predicate ...`` (archived ones too), oldest first: what superseded what."""
        check_id(user_id, "user id")
        check_id(subject_id, "entity id")
        with self.b.db.read() as conn:
            rows = conn.execute(
                f"SELECT {RELATION_COLUMNS} FROM {RELATION_FROM} WHERE r.user_id=? AND r.subject_id=? "
                "AND r.predicate=? ORDER BY r.valid_from, r.created_at, r.id",
                [user_id, subject_id, normalise_predicate(predicate)],
            ).fetchall()
        return [_relation(r) for r in rows]

    def neighbourhood(
        self,
        user_id: str,
        entity_ids: Sequence[str],
        depth: int = 1,
        predicates: Sequence[str] | None = None,
        as_of: datetime | str | None = None,
        max_relations: int = 500,
    ) -> Neighbourhood:
        """Breadth-first over both directions of the relations valid at ``as_of`` (now without one), up to
        ``depth`` hops from ``entity_ids``; at most ``max_relations`` relations (``truncated`` then says so)."""
        check_id(user_id, "user id")
        start = list(dict.fromkeys(check_ids(entity_ids, "entity id")))
        depth = validation.check_int(depth, "depth", lo=0, hi=MAX_DEPTH)
        cap = validation.check_int(max_relations, "max_relations", lo=1, hi=MAX_NEIGHBOURHOOD_RELATIONS)
        wanted = [normalise_predicate(p) for p in predicates or [] if normalise_predicate(p)]
        valid, valid_params = _valid_clause(_as_of(as_of), False)
        pred_sql = " AND r.predicate IN (SELECT unnest(?))" if wanted else ""
        distance = {e: 0 for e in start}
        found: dict[str, Relation] = {}
        truncated = False
        frontier = list(start)
        with self.b.db.read() as conn:
            for hop in range(1, depth + 1):
                if not frontier or truncated:
                    break
                rows = conn.execute(
                    f"SELECT {RELATION_COLUMNS} FROM {RELATION_FROM} WHERE r.user_id=? AND r.archived_at IS NULL "
                    f"AND (r.subject_id IN (SELECT unnest(?)) OR r.object_id IN (SELECT unnest(?))){valid}{pred_sql} "
                    "ORDER BY r.valid_from DESC, r.id LIMIT ?",
                    [user_id, frontier, frontier, *valid_params, *([wanted] if wanted else []), cap + 1],
                ).fetchall()
                nxt = []
                for row in rows:
                    rel = _relation(row)
                    if rel.id in found:
                        continue
                    if len(found) >= cap:
                        truncated = True
                        break
                    found[rel.id] = rel
                    for other in (rel.subject_id, rel.object_id):
                        if other not in distance:
                            distance[other] = hop
                            nxt.append(other)
                frontier = nxt
            rows = conn.execute(
                f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.user_id=? AND e.id IN (SELECT unnest(?))",
                [user_id, list(distance)],
            ).fetchall()
        entities = sorted((_entity(r) for r in rows), key=lambda e: (distance[e.id], e.name))
        return Neighbourhood(tuple(start), tuple(entities), tuple(found.values()), distance, truncated)

    def mentions(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
        """entity id -> the (kind, memory id) of every memory naming it."""
        check_id(user_id, "user id")
        ids = check_ids(entity_ids, "entity id")
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT entity_id, kind, memory_id FROM entity_mentions WHERE user_id=? "
                "AND entity_id IN (SELECT unnest(?)) ORDER BY entity_id, kind, memory_id",
                [user_id, ids],
            ).fetchall()
        out: dict[str, list[tuple[str, str]]] = {e: [] for e in ids}
        for eid, kind, memory_id in rows:
            out[eid].append((kind, memory_id))
        return out

    def entities_of(self, user_id: str, kind: str, memory_ids: Sequence[str]) -> dict[str, list[Entity]]:
        """memory id -> the active entities it names."""
        check_id(user_id, "user id")
        ids = check_ids(memory_ids, "memory id")
        with self.b.db.read() as conn:
            rows = conn.execute(
                f"SELECT m.memory_id, {ENTITY_COLUMNS} FROM entity_mentions m JOIN entities e ON e.id = m.entity_id "
                "WHERE m.user_id=? AND m.kind=? AND m.memory_id IN (SELECT unnest(?)) AND e.archived_at IS NULL "
                "ORDER BY m.memory_id, e.name",
                [user_id, kind, ids],
            ).fetchall()
        out: dict[str, list[Entity]] = {m: [] for m in ids}
        for row in rows:
            out[row[0]].append(_entity(row[1:]))
        return out

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        """Counts (of one user, or the store's): active entities, relations valid now, superseded versions, archived
        relations, mentions."""
        if user_id is not None:
            check_id(user_id, "user id")
        with self.b.db.read() as conn:
            return graph_counts(conn, user_id)

    # -- extraction on demand [part A] -----------------------------------------------------------------------------
    def extract(
        self, user_id: str | None = None, only_missing: bool = True, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Draw the graph of stored items (a store that predates the graph, or after changing the extractor): of
        one user or all, only items that name no entity yet (``only_missing``) or every item. Runs the extractor
        ``Settings.graph_extraction`` chooses (off: nothing), commits batch by batch (an interrupted run resumes),
        and running it again changes nothing. Returns counts: items, with_entities, entities_added,
        relations_added, relations_merged, superseded, mentions, fallbacks (LLM failures the offline rules
        covered), mode."""
        if user_id is not None:
            check_id(user_id, "user id")
        if not isinstance(only_missing, bool):
            raise InvalidInput("only_missing must be true or false")
        if self.extraction is None:
            raise InvalidInput("graph extraction is not wired to this engine")
        return self.extraction.extract_store(user_id, only_missing, progress)
