"""CLI commands that change what a user's memory holds: working-memory slots, forgetting (and its audit log),
session pruning by a lifecycle rule, and reflection into insights."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..memory.working import check_slot, parse_json_value
from ..vocab import FORGET_TARGETS, ForgetMode
from .args import MEMORY_ID, add_session, add_user, bounded_int
from .browse_cmds import SESSION_COLS
from .output import Col, Result, plain, table

if TYPE_CHECKING:
    from .main import Context, Handler, Parser, Subcommands


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


# -- session lifecycle and reflection --------------------------------------------------------------------------------
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


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

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
    p.add_argument("--kind", required=True, choices=FORGET_TARGETS, help="memory kind (graph: entities, relations)")
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
