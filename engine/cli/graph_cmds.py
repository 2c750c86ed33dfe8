"""CLI commands of graph memory: ``memlens graph extract|entities|relations|timeline|neighbours``.

``graph extract`` draws the graph of stored items (a store that predates the graph); the others only read. An entity
is named by its id (``ent_...``) or by its name (resolved as ``engine.graph.resolve`` does: case, spacing and a
leading article do not matter).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from .args import add_page, add_user, bounded_int
from .output import Col, Result, pairs, plain, table

if TYPE_CHECKING:
    from ..records import Entity, Relation
    from .main import Context, Parser, Subcommands

ENTITY_COLS = [Col("name", "name", 40), Col("type", "type", 14), Col("id", "id", 28), Col("created_at", "created")]
RELATION_COLS = [
    Col("subject", "subject", 28),
    Col("predicate", "predicate", 20),
    Col("object", "object", 28),
    Col("valid_from", "valid from"),
    Col("valid_to", "valid to"),
    Col("method", "method", 8),
    Col("id", "id", 28),
]


def entity_of(ctx: Context, user: str, ref: str) -> Entity:
    """The entity named by id or by name; NotFound names what was looked for."""
    if ref.startswith("ent_"):
        try:
            return ctx.engine.graph.entity(user, ref)
        except NotFound:
            pass  # a name that happens to start like an id
    found = ctx.engine.graph.resolve(user, ref)
    if found is None:
        raise NotFound(f"no entity {ref[:80]!r} for user {user!r}")
    return found


def relation_row(r: Relation) -> dict[str, Any]:
    row: dict[str, Any] = plain(r)
    row["sources"] = [{"type": s.type, "id": s.id} for s in r.sources]
    return row


def _footer(total: int, shown: int, offset: int, what: str) -> str:
    if total <= shown and offset == 0:
        return f"{total} {what}"
    return f"{what} {offset + 1 if shown else offset}-{offset + shown} of {total}"


def cmd_extract(ctx: Context) -> Result:
    a = ctx.args
    tty = bool(getattr(ctx.stderr, "isatty", lambda: False)())

    def progress(done: int, total: int) -> None:  # on a terminal only: a log or a pipe gets the counts at the end
        ctx.stderr.write(f"\rgraph extract: items {done}/{total}" + ("\n" if done >= total else ""))
        ctx.stderr.flush()

    counts = ctx.engine.graph.extract(a.user, only_missing=not a.all, progress=progress if tty else None)
    return Result(counts, lambda c: pairs(c))


def cmd_entities(ctx: Context) -> Result:
    a = ctx.args
    page = ctx.engine.graph.list_entities(a.user, query=a.query, type=a.type, limit=a.limit, offset=a.offset)
    rows = plain(list(page.rows))
    return Result(
        rows,
        lambda r: table(r, ENTITY_COLS, "(no entities)") + "\n" + _footer(page.total, len(r), page.offset, "entities"),
    )


def cmd_relations(ctx: Context) -> Result:
    a = ctx.args
    entity = entity_of(ctx, a.user, a.entity).id if a.entity else None
    page = ctx.engine.graph.relations(
        a.user,
        entity,
        predicate=a.predicate,
        as_of=a.as_of,
        include_history=a.history,
        limit=a.limit,
        offset=a.offset,
    )
    rows = [relation_row(r) for r in page.rows]
    return Result(
        rows,
        lambda r: table(r, RELATION_COLS, "(no relations)")
        + "\n"
        + _footer(page.total, len(r), page.offset, "relations"),
    )


def cmd_timeline(ctx: Context) -> Result:
    a = ctx.args
    subject = entity_of(ctx, a.user, a.entity)
    rows = [relation_row(r) for r in ctx.engine.graph.timeline(a.user, subject.id, a.predicate)]
    cols = [*RELATION_COLS[2:6], Col("superseded_by", "superseded by", 28), Col("id", "id", 28)]
    return Result(rows, lambda r: table(r, cols, "(no versions)"))


def cmd_neighbours(ctx: Context) -> Result:
    a = ctx.args
    start = entity_of(ctx, a.user, a.entity)
    hood = ctx.engine.graph.neighbourhood(a.user, [start.id], depth=a.depth, predicates=a.predicate, as_of=a.as_of)
    data = {
        "start": list(hood.start),
        "entities": [{**plain(e), "distance": hood.distance.get(e.id)} for e in hood.entities],
        "relations": [relation_row(r) for r in hood.relations],
        "truncated": hood.truncated,
    }

    def human(d: dict[str, Any]) -> str:
        ents = sorted(d["entities"], key=lambda e: (e["distance"] if e["distance"] is not None else 99, e["name"]))
        text = table(ents, [Col("distance", "hops", 4), *ENTITY_COLS[:3]], "(no entities)")
        text += "\n\n" + table(d["relations"], RELATION_COLS[:5], "(no relations)")
        return text + ("\n(truncated: more relations than the cap)" if d["truncated"] else "")

    return Result(data, human)


def register(sub: Subcommands, common: Parser) -> None:
    group = sub.add_parser(
        "graph",
        parents=[common],
        help="graph memory: extract, entities, relations, a fact's timeline, neighbours",
        description="Graph memory: entities and relations drawn from memories, with their validity over time.",
    )
    graph_sub = group.add_subparsers(dest="graph_command", metavar="GRAPH_COMMAND", parser_class=type(group))
    group.set_defaults(handler=_usage(group))

    def add(name: str, handler: Any, help: str) -> argparse.ArgumentParser:
        p = graph_sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    p = add("extract", cmd_extract, "draw the graph of stored items that have none yet (a store older than the graph)")
    add_user(p, required=False)
    p.add_argument("--all", action="store_true", help="every item, not only those that name no entity yet")
    p.set_defaults(graph_writes=True)

    p = add("entities", cmd_entities, "a user's entities, most mentioned first")
    add_user(p)
    p.add_argument("--query", metavar="Q", help="only entities whose name contains Q")
    p.add_argument("--type", metavar="T", help="only entities of this type (person, place, organisation, ...)")
    add_page(p)

    p = add("relations", cmd_relations, "relations valid now (or as of a time, or every version), newest first")
    add_user(p)
    p.add_argument("--entity", metavar="NAME|ID", help="only relations of this entity (subject or object)")
    p.add_argument("--predicate", metavar="P", help="only this predicate (e.g. works_at)")
    p.add_argument("--as-of", dest="as_of", metavar="TIME", help="what was valid then (ISO-8601)")
    p.add_argument("--history", action="store_true", help="every version, superseded ones too")
    add_page(p, 100)

    p = add("timeline", cmd_timeline, "every version of a fact (subject + predicate), oldest first")
    add_user(p)
    p.add_argument("--entity", required=True, metavar="NAME|ID", help="the subject")
    p.add_argument("--predicate", required=True, metavar="P", help="the predicate (e.g. works_at)")

    p = add("neighbours", cmd_neighbours, "the entities and relations within --depth hops of an entity")
    add_user(p)
    p.add_argument("--entity", required=True, metavar="NAME|ID", help="the start")
    p.add_argument("--depth", type=bounded_int(0, 4), default=1, metavar="N", help="hops (0-4, default 1)")
    p.add_argument("--predicate", action="append", metavar="P", help="only relations of this predicate (repeatable)")
    p.add_argument("--as-of", dest="as_of", metavar="TIME", help="what was valid then (ISO-8601)")


def _usage(group: argparse.ArgumentParser) -> Any:
    def handler(ctx: Context) -> None:
        from .main import UsageError

        raise UsageError(f"give a graph command: {group.format_usage().strip()}")

    return handler
