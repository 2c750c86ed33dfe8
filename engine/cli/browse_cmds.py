"""CLI commands that list what a store holds: users, sessions and their messages, episodes, plain search, skills."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..records import KINDS
from .args import add_page, add_session, add_user, bounded_int, joined
from .output import Col, Result, plain, table

if TYPE_CHECKING:
    from ..records import Page, RankedSkill
    from .main import Context, Handler, Parser, Subcommands


def cmd_users(ctx: Context) -> Result:
    users = ctx.engine.sessions.users()
    cols = [Col("user_id", "user", 40)] + [
        Col(k, k, 10) for k in ("sessions", "messages", "items", "episodes", "skills", "traces")
    ]

    def human(_: object) -> str:
        # The counts only for the table: stats() also checks the vector tables, which --json never prints.
        stats = ctx.engine.admin.stats()
        return table([{"user_id": u, **stats.per_user.get(u, {})} for u in users], cols, "(no users)")

    return Result(users, human)


# Also the table of the sessions `prune` deletes (lifecycle_cmds.py).
SESSION_COLS = [
    Col("session_id", "session", 40),
    Col("user_id", "user", 24),
    Col("last_activity_at", "last activity"),
    Col("message_count", "messages", 8),
    Col("token_count", "tokens", 8),
]


def _page_footer(page: Page[Any], shown: int, what: str) -> str:
    if page.total <= shown and page.offset == 0:
        return f"{page.total} {what}"
    first = page.offset + 1 if shown else page.offset
    return f"{what} {first}-{page.offset + shown} of {page.total}"


def cmd_sessions(ctx: Context) -> Result:
    a = ctx.args
    page = ctx.engine.sessions.list_sessions(a.user, search=a.search, limit=a.limit, offset=a.offset)
    rows = plain(list(page.rows))
    return Result(
        rows, lambda r: table(r, SESSION_COLS, "(no sessions)") + "\n" + _page_footer(page, len(r), "sessions")
    )


def cmd_messages(ctx: Context) -> Result:
    a = ctx.args
    page = ctx.engine.sessions.messages(a.user, a.session, limit=a.limit, offset=a.offset)
    rows = plain(list(page.rows))
    cols = [Col("seq", "#", 5), Col("created_at", "at"), Col("role", "role", 11), Col("content", "content", 100)]
    return Result(rows, lambda r: table(r, cols, "(no messages)") + "\n" + _page_footer(page, len(r), "messages"))


def cmd_episodes(ctx: Context) -> Result:
    a = ctx.args
    page = ctx.engine.episodes.list_episodes(
        a.user, outcome=a.outcome, query=a.query, session_id=a.session, limit=a.limit, offset=a.offset
    )
    rows = plain(list(page.rows))
    cols = [
        Col("id", "id", 28),
        Col("created_at", "at"),
        Col("outcome", "outcome", 12),
        Col("importance", "importance", 10),
        Col("summary", "summary", 80),
    ]
    return Result(rows, lambda r: table(r, cols, "(no episodes)") + "\n" + _page_footer(page, len(r), "episodes"))


def cmd_search(ctx: Context) -> Result:
    a = ctx.args
    hits = ctx.engine.retrieval.search(a.user, joined(a.query), kind=a.kind, limit=a.limit)
    rows = [{"id": h.id, "kind": h.kind, "text": h.text, "score": h.score} for h in hits]
    cols = [Col("score", "score", 6), Col("kind", "kind", 10), Col("id", "id", 28), Col("text", "text", 90)]
    return Result(rows, lambda r: table(r, cols, "(no results)"))


def skill_row(r: RankedSkill) -> dict[str, Any]:
    s = r.skill
    return {
        "id": s.id,
        "name": s.name,
        "version": s.version,
        "kind": s.kind,
        "success_count": s.success_count,
        "failure_count": s.failure_count,
        "success_rate": r.success_rate,
        "wilson_lower": r.wilson_lower,
        "rank": r.rank,
        "trials": r.trials,
        "wilson_upper": r.wilson_upper,
        "few_trials": r.few_trials,
        "description": s.description,
    }


def cmd_skills(ctx: Context) -> Result:
    a = ctx.args
    query = joined(a.query) if a.query else None
    rows = [skill_row(r) for r in ctx.engine.skills.rank(a.user, query=query, kind=a.skill_kind, limit=a.limit)]
    cols = [
        Col("rank", "rank", 4),
        Col("name", "name", 36),
        Col("version", "v", 3),
        Col("kind", "kind", 8),
        Col("wilson_lower", "wilson_lo", 9),
        Col("success_rate", "rate", 6),
        Col("trials", "trials", 6),
        Col("id", "id", 28),
    ]
    return Result(rows, lambda r: table(r, cols, "(no skills)"))


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    add("users", cmd_users, "list users (with counts in the table)")

    p = add("sessions", cmd_sessions, "list a user's sessions, newest first")
    add_user(p)
    p.add_argument("--search", metavar="Q", help="only sessions whose id or messages contain Q")
    add_page(p)

    p = add("messages", cmd_messages, "show the messages of a session")
    add_user(p)
    add_session(p)
    add_page(p, 200)

    p = add("episodes", cmd_episodes, "list a user's episodes, newest first")
    add_user(p)
    add_session(p, required=False)
    p.add_argument("--outcome", metavar="O", help="only episodes with this outcome (e.g. success, failure)")
    p.add_argument("--query", metavar="Q", help="only episodes whose summary or steps contain Q")
    add_page(p)

    p = add("search", cmd_search, "plain hybrid search (vector + full text) across memory kinds")
    add_user(p)
    p.add_argument("--kind", choices=(*KINDS, "all"), default="all", help="memory kind (default all)")
    p.add_argument("--limit", type=bounded_int(1, 1000), default=10, metavar="N", help="results (default 10)")
    p.add_argument("query", nargs="+", metavar="QUERY", help="search text")

    p = add("skills", cmd_skills, "skills by proven utility (Wilson lower bound), with rate and trials")
    add_user(p)
    p.add_argument("--query", nargs="+", metavar="Q", help="only skills whose name, description or body contain Q")
    p.add_argument("--kind", dest="skill_kind", choices=("prompt", "template", "code"), help="skill kind")
    p.add_argument("--limit", type=bounded_int(1, 10_000), default=50, metavar="N", help="rows (default 50)")
