"""CLI commands over the stored memory: demo, ingest/export, browsing, search, skills, working memory, forgetting,
lifecycle pruning, episodes, reflection, stats and reindexing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import InvalidInput
from ..memory.working import check_slot, parse_json_value
from ..records import KINDS
from ..vocab import ForgetMode
from .args import MEMORY_ID, add_page, add_session, add_user, bounded_int, joined
from .output import Col, Progress, Result, dumps, pairs, plain, size, table

if TYPE_CHECKING:
    from ..records import Page, RankedSkill
    from .main import Context, Handler, Parser, Subcommands

_PLURAL = {
    "message": "messages",
    "item": "items",
    "category": "category summaries",
    "episode": "episodes",
    "skill": "skills",
    "outcome": "skill outcomes",
    "feedback": "feedback events",
    "working": "working slots",
    "forget_log": "forget-log entries",
    "eval_case": "expectation cases (set demo, run once: see eval-sets)",
    "already_stored": "records already in the store (written again; --skip-existing leaves them out)",
    "skipped": "records already in the store (skipped)",
}


def _counts_line(counts: dict[str, int]) -> str:
    shown = [f"{n} {_PLURAL.get(k, k)}" for k, n in counts.items() if n]
    return ", ".join(shown) if shown else "nothing"


# -- demo, ingest, export --------------------------------------------------------------------------------------------
def cmd_demo(ctx: Context) -> Result:
    engine = ctx.engine
    progress = Progress(ctx.stderr, "demo")
    try:
        counts = engine.admin.load_demo(reset=ctx.args.reset, progress=progress)
    finally:
        progress.close()
    data = {"status": "loaded" if counts else "already_loaded", "store": engine.location.display, "counts": counts}

    def human(d: dict[str, Any]) -> str:
        if d["status"] == "already_loaded":
            return f"The demo is already loaded in {d['store']} (use --reset to reload it)."
        return f"Loaded the demo into {d['store']}: {_counts_line(d['counts'])}."

    return Result(data, human)


def read_lines(name: str, stdin: TextIO | None = None) -> list[str]:
    """The file's lines split on newlines only (JSON text may hold U+2028, which str.splitlines would cut)."""
    if name == "-":
        text = (stdin or sys.stdin).read()
    else:
        path = Path(name)
        if path.is_dir():
            raise InvalidInput(f"{name!r} is a folder, not a JSONL file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            line = path.read_bytes()[: exc.start].count(b"\n") + 1
            raise InvalidInput(f"line {line}: not UTF-8 text") from None
    return [line.removesuffix("\r") for line in text.split("\n")]


def cmd_ingest(ctx: Context) -> Result:
    lines = read_lines(ctx.args.file)
    engine = ctx.engine
    progress = Progress(ctx.stderr, "ingest")
    try:
        counts = engine.admin.ingest_lines(lines, progress=progress, skip_existing=ctx.args.skip_existing)
    finally:
        progress.close()
    return Result(
        {"file": ctx.args.file, "counts": counts}, lambda d: f"Ingested {d['file']}: {_counts_line(d['counts'])}."
    )


def cmd_export(ctx: Context) -> None:
    # JSON lines, streamed: one record per line, read back by `ingest` (the --json flag changes nothing here).
    write = ctx.stdout.write
    for record in ctx.engine.admin.export(ctx.args.user):
        write(dumps(record, indent=None) + "\n")


# -- browsing --------------------------------------------------------------------------------------------------------
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


# -- search and skills -----------------------------------------------------------------------------------------------
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


# -- working memory --------------------------------------------------------------------------------------------------
def parse_slot_assignments(pairs_: list[str]) -> dict[str, Any]:
    """``SLOT=JSON`` pairs; every value is parsed before anything is written (one bad value writes nothing)."""
    slots: dict[str, Any] = {}
    for pair in pairs_:
        slot, sep, text = pair.partition("=")
        if not sep or not slot:
            raise InvalidInput(f"--set expects SLOT=JSON, got {pair[:60]!r}")
        slots[check_slot(slot)] = parse_json_value(text, slot)  # the name as typed: no silent trimming
    return slots


def cmd_working(ctx: Context) -> Result:
    a = ctx.args
    if a.set:
        slots = parse_slot_assignments(a.set)
        current = ctx.engine.working.update(a.user, a.session, slots, source="cli")
    else:
        current = ctx.engine.working.get(a.user, a.session)
    rows = [{"slot": k, "value": "" if v is None else json.dumps(v, ensure_ascii=False)} for k, v in current.items()]
    return Result(current, lambda _: table(rows, [Col("slot", "slot", 28), Col("value", "value (JSON)", 100)]))


# -- forgetting ------------------------------------------------------------------------------------------------------
def cmd_forget(ctx: Context) -> Result:
    a = ctx.args
    result = ctx.engine.forgetting.forget(a.user, a.kind, a.ids, a.reason, mode=a.mode, actor="cli")
    data = {"forgotten": result.count, "ids": list(result.forgotten), "unknown": list(result.unknown)}

    def human(d: dict[str, Any]) -> str:
        text = f"Forgot {d['forgotten']} {a.kind} memories ({a.mode}): {', '.join(d['ids']) or '-'}"
        return text + (f"\nUnknown ids: {', '.join(d['unknown'])}" if d["unknown"] else "")

    return Result(data, human)


def cmd_forget_log(ctx: Context) -> Result:
    entries = plain(ctx.engine.forgetting.log(ctx.args.user, limit=ctx.args.limit))
    cols = [
        Col("at", "at"),
        Col("memory_type", "kind", 10),
        Col("mode", "mode", 4),
        Col("count", "count", 5),
        Col("actor", "actor", 10),
        Col("reason", "reason", 40),
        Col("ids", "ids", 60),
    ]
    return Result(entries, lambda r: table(r, cols, "(no forget-log entries)"))


# -- lifecycle, reflection, maintenance ------------------------------------------------------------------------------
def cmd_prune(ctx: Context) -> Result:
    a = ctx.args
    plan = ctx.engine.sessions.prune(a.user, a.rule, apply=a.apply)
    data = plain(plan)

    def human(d: dict[str, Any]) -> str:
        verb = "Deleted" if d["applied"] else "Would delete"
        head = f"{verb} {len(d['sessions'])} sessions ({d['message_count']} messages) by rule {d['rule']}"
        tail = "" if d["applied"] or not d["sessions"] else "\nRerun with --apply to delete them."
        return head + "\n" + table(d["sessions"], SESSION_COLS, "") + tail if d["sessions"] else head

    return Result(data, human)


def cmd_reflect(ctx: Context) -> Result:
    items, strategy = ctx.engine.items.reflect(ctx.args.user, window=ctx.args.window)
    data = {"strategy": strategy, "insights": plain(items)}
    cols = [Col("id", "id", 28), Col("importance", "importance", 10), Col("content", "insight", 100)]
    return Result(data, lambda d: f"strategy: {d['strategy']}\n" + table(d["insights"], cols, "(no insights)"))


def cmd_stats(ctx: Context) -> Result:
    data = plain(ctx.engine.admin.stats())

    def human(d: dict[str, Any]) -> str:
        top = pairs({k: v for k, v in d.items() if k not in ("per_user", "warnings", "orphans")})
        rows = [{"user": u, **c} for u, c in d["per_user"].items()]
        cols = [Col("user", "user", 40)] + [
            Col(k, k, 10) for k in ("sessions", "messages", "items", "episodes", "skills", "traces")
        ]
        warn = "".join(f"\nwarning: {w}" for w in d["warnings"])
        return top + "\n\n" + table(rows, cols, "(no users)") + warn

    return Result(data, human)


def cmd_reindex(ctx: Context) -> Result:
    engine = ctx.engine
    progress = Progress(ctx.stderr, "reindex")
    try:
        counts = engine.admin.reindex(progress=progress)
    finally:
        progress.close()
    return Result(counts, lambda d: f"Reindexed {_counts_line(d)} with {engine.embedder.name}.")


def cmd_repair(ctx: Context) -> Result:
    engine = ctx.engine
    progress = Progress(ctx.stderr, "repair")
    try:
        done = engine.admin.repair(progress=progress)
    finally:
        progress.close()
    return Result(
        done,
        lambda d: "Repaired: "
        + "; ".join(
            f"{k}: {v['vectors_removed']} stray vector(s) removed, {v['vectors_written']} vector(s) written"
            + (", table rebuilt from DuckDB" if v.get("table_rebuilt") else "")
            for k, v in d.items()
        ),
    )


def cmd_optimize(ctx: Context) -> Result:
    before = ctx.engine.admin.disk_bytes()
    built = ctx.engine.admin.optimize()
    after = ctx.engine.admin.disk_bytes()
    retention = ctx.engine.settings.vector_version_retention_s
    return Result(
        {"vector_indexes_built": built, "store_bytes_before": before, "store_bytes_after": after},
        lambda d: "Optimized; new vector indexes: "
        + (", ".join(d["vector_indexes_built"]) or "none")
        + f"; store {size(d['store_bytes_before'])} -> {size(d['store_bytes_after'])} (LanceDB versions "
        f"replaced more than vector_version_retention_s = {retention:g} s ago are deleted)",
    )


# -- the parser ------------------------------------------------------------------------------------------------------
def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    p = add("demo", cmd_demo, "load the bundled demo dataset (idempotent)")
    p.add_argument("--reset", action="store_true", help="delete the demo users first and load it again")

    p = add("ingest", cmd_ingest, "import a JSONL file (all or nothing; a bad line is named and nothing is written)")
    p.add_argument(
        "file",
        metavar="FILE.jsonl",
        help="records of kinds message, item, category, episode, skill, "
        "outcome, feedback, working, forget_log; - reads stdin",
    )
    p.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave out records without an id that the store already holds (else written again and counted as "
        "already stored)",
    )

    p = add("export", cmd_export, "print every record of a user as JSON lines that `ingest` reads back")
    add_user(p)

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

    p = add("working", cmd_working, "show (or set) a session's working-memory slots")
    add_user(p)
    add_session(p)
    p.add_argument(
        "--set",
        action="append",
        metavar="SLOT=JSON",
        help="set a slot to a JSON value (null removes it); several --set are one transaction",
    )

    p = add("forget", cmd_forget, "forget memories: soft (archived, hidden) or hard (deleted everywhere)")
    add_user(p)
    p.add_argument("--kind", required=True, choices=KINDS, help="memory kind")
    p.add_argument(
        "--ids", required=True, nargs="+", action="extend", type=MEMORY_ID, metavar="ID", help="ids to forget"
    )
    p.add_argument("--reason", required=True, metavar="R", help="why (kept in the forget log)")
    p.add_argument("--mode", choices=tuple(ForgetMode), default=ForgetMode.SOFT, help="default soft")

    p = add("forget-log", cmd_forget_log, "the audit log of forgetting, newest first")
    add_user(p)
    p.add_argument("--limit", type=bounded_int(1, 100_000), default=1000, metavar="N", help="rows (default 1000)")

    p = add("prune", cmd_prune, "session lifecycle: preview (or --apply) the idle, stale or max rule")
    add_user(p)
    p.add_argument("--rule", required=True, choices=("idle", "stale", "max"), help="lifecycle rule")
    p.add_argument("--apply", action="store_true", help="delete the sessions (default: preview only)")

    p = add("reflect", cmd_reflect, "derive insights from the last episodes into the `insights` category")
    add_user(p)
    p.add_argument("--window", type=bounded_int(1, 1000), default=10, metavar="N", help="episodes (default 10)")

    add("stats", cmd_stats, "counts per memory kind and user, backends, warnings")
    add("reindex", cmd_reindex, "rebuild this embedding model's vectors from the stored memories")
    add(
        "repair",
        cmd_repair,
        "make the vectors agree with the stored memories after a crash: remove vectors "
        "without a memory, write missing or duplicated ones, rebuild an unreadable vector table",
    )
    p = add(
        "optimize",
        cmd_optimize,
        "compact the vector tables, fold new rows into their indexes, delete old "
        "LanceDB versions and give large tables (vector_index_min_rows) an approximate vector index",
    )
    p.add_argument(
        "--version-retention",
        type=float,
        default=None,
        metavar="SECONDS",
        dest="version_retention",
        help="delete LanceDB versions replaced more than SECONDS ago (default: the "
        "vector_version_retention_s setting, 600); 0 keeps only the latest: use it only when no other "
        "process has the store open",
    )
