"""MCP tools over graph memory (llmemory §3.6-3.8, with validity over time): entities, an entity's relations now, as
of a time or with their whole history, a breadth-first traversal (llmemory's ``traverse``) and the versions of one
fact. They read ``engine.graph`` only.

An entity is named by its id or by its name (or an alias): the id is tried first, then the name. One relation a
line: ``[rel_id] subject predicate object (valid from ... until ...; superseded by ...; from <sources>; method m)``.
Forgotten (archived) entities and relations are never shown.
"""

from __future__ import annotations

from datetime import datetime

from .. import validation
from ..clock import parse_time
from ..config import normalise_predicate
from ..engine import MemoryEngine
from ..errors import InvalidInput, NotFound
from ..ids import ID_PATTERN, check_id
from ..memory.graph import MAX_DEPTH
from ..records import Entity, Relation
from .server import Bool, Int, _short
from .timeline_tools import ToolDecorator, stamp

MAX_LISTED = 1_000  # entities or relations one call lists
MAX_TRAVERSED = 200  # relations one traversal returns
MAX_PREDICATES = 50
SHOWN_SOURCES = 3


def find_entity(engine: MemoryEngine, user_id: str, ref: str) -> Entity:
    """The active entity whose id, name or alias is ``ref`` (the id first), else :class:`NotFound`."""
    check_id(user_id, "user id")
    validation.check_text(ref, "entity", 200)
    if ID_PATTERN.fullmatch(ref):
        try:
            found = engine.graph.entity(user_id, ref)
        except NotFound:
            pass
        else:
            if found.archived_at is None:
                return found
    entity = engine.graph.resolve(user_id, ref)
    if entity is None:
        raise NotFound(f"no entity named {_short(ref, 80)!r} (nor with that id) for user {user_id!r}")
    return entity


def check_predicate(value: str) -> str:
    validation.check_text(value, "predicate", 80)
    predicate = normalise_predicate(value)
    if not predicate:
        raise InvalidInput("predicate is blank")
    return predicate


def relation_line(rel: Relation) -> str:
    """One relation with its validity, what superseded it, where it came from and which extractor made it."""
    valid = f"valid from {stamp(rel.valid_from)}"
    if rel.valid_to is not None:
        valid += f" until {stamp(rel.valid_to)}"
    notes = [valid]
    if rel.superseded_by:
        notes.append(f"superseded by {rel.superseded_by}")
    if rel.sources:
        shown = ", ".join(f"{s.type} {s.id}" for s in rel.sources[:SHOWN_SOURCES])
        more = len(rel.sources) - SHOWN_SOURCES
        notes.append(f"from {shown}" + (f" and {more} more" if more > 0 else ""))
    notes.append(f"method {rel.method}")
    names = f"{_short(rel.subject, 200)} {rel.predicate} {_short(rel.object, 200)}"
    return f"[{rel.id}] {names} ({'; '.join(notes)})"


def entity_label(entity: Entity) -> str:
    return f"{_short(entity.name, 200)} [{entity.id}]"


def when_text(as_of: datetime | None) -> str:
    return "valid now" if as_of is None else f"valid at {stamp(as_of)}"


def register_graph_tools(engine: MemoryEngine, tool: ToolDecorator) -> None:
    """Add the graph tools to a server being built."""

    @tool
    def memory_graph_entities(user_id: str, query: str | None = None, limit: Int = 20) -> str:
        """Entities of the graph (people, places, organisations, concepts), most mentioned first, optionally those
        whose name contains ``query``: ``[id] name (type)``."""
        limit = validation.check_int(limit, "limit", lo=1, hi=MAX_LISTED)
        page = engine.graph.list_entities(user_id, query, limit=limit)
        if not page.rows:
            return f"No entities match {_short(query, 80)!r}." if query else "No entities found."
        lines = [f"Found {page.total} entities (showing {len(page.rows)}):"]
        for e in page.rows:
            aliases = f"; also {', '.join(_short(a, 80) for a in e.aliases)}" if e.aliases else ""
            lines.append(f"[{e.id}] {_short(e.name, 200)} ({e.type}{aliases})")
        return "\n".join(lines)

    @tool
    def memory_graph_relations(
        user_id: str,
        entity: str,
        predicate: str | None = None,
        as_of: str | None = None,
        include_history: Bool = False,
        limit: Int = 50,
    ) -> str:
        """An entity's relations (it as subject or object; by name or id) valid now, valid at ``as_of`` (ISO-8601),
        or every version with ``include_history``; newest first, one a line with validity and sources."""
        pred = check_predicate(predicate) if predicate is not None else None
        when = parse_time(as_of, "as_of") if as_of is not None else None
        if when is not None and include_history:
            raise InvalidInput("give as_of or include_history, not both")
        limit = validation.check_int(limit, "limit", lo=1, hi=MAX_LISTED)
        ent = find_entity(engine, user_id, entity)
        page = engine.graph.relations(user_id, ent.id, pred, when, include_history, limit=limit)
        scope = "every version" if include_history else when_text(when)
        if not page.rows:
            return f"No relations of {entity_label(ent)}{f' {pred}' if pred else ''} ({scope})."
        head = f"Relations of {entity_label(ent)} ({scope}; showing {len(page.rows)} of {page.total}):"
        return "\n".join([head, *(relation_line(r) for r in page.rows)])

    @tool
    def memory_graph_traverse(
        user_id: str, entity: str, depth: Int = 2, as_of: str | None = None, predicates: list[str] | None = None
    ) -> str:
        """Breadth-first from an entity over relations in both directions (llmemory's traverse), up to ``depth``
        hops, valid now or at ``as_of``, optionally only some ``predicates``: one relation a line with its hop."""
        depth = validation.check_int(depth, "depth", lo=1, hi=MAX_DEPTH)
        when = parse_time(as_of, "as_of") if as_of is not None else None
        wanted = None
        if predicates is not None:
            validation.check_int(len(predicates), "number of predicates", lo=1, hi=MAX_PREDICATES)
            wanted = [check_predicate(p) for p in predicates]
        ent = find_entity(engine, user_id, entity)
        hood = engine.graph.neighbourhood(user_id, [ent.id], depth, wanted, when, MAX_TRAVERSED)
        if not hood.relations:
            return f"{entity_label(ent)} has no relations ({when_text(when)})."

        def hop(rel: Relation) -> int:
            # A relation is reached one hop past the nearer of its two entities.
            return min(hood.distance.get(rel.subject_id, depth), hood.distance.get(rel.object_id, depth)) + 1

        ordered = sorted(hood.relations, key=lambda r: (hop(r), r.subject, r.predicate, r.object, r.id))
        lines = [
            f"Graph around {entity_label(ent)}, depth {depth} ({when_text(when)}): {len(hood.entities)} entities, "
            f"{len(ordered)} relations"
        ]
        lines += [f"[hop {hop(r)}] {relation_line(r)}" for r in ordered]
        if hood.truncated:
            lines.append(f"(Stopped at {MAX_TRAVERSED} relations: ask for a smaller depth or fewer predicates.)")
        return "\n".join(lines)

    @tool
    def memory_graph_timeline(user_id: str, entity: str, predicate: str) -> str:
        """Every version of one fact (``entity predicate ...``, e.g. where someone works), oldest first: when each
        was valid and which newer one superseded it."""
        pred = check_predicate(predicate)
        ent = find_entity(engine, user_id, entity)
        versions = [r for r in engine.graph.timeline(user_id, ent.id, pred) if r.archived_at is None]
        if not versions:
            return f"No versions of {entity_label(ent)} {pred}."
        lines = [f"Timeline of {entity_label(ent)} {pred}: {len(versions)} version(s), oldest first:"]
        for n, rel in enumerate(versions, 1):
            current = " — current" if rel.valid_to is None else ""
            lines.append(f"{n}. {relation_line(rel)}{current}")
        return "\n".join(lines)
