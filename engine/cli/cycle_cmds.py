"""CLI commands of the maintenance cycle (llmemory §7.6): ``maintain`` (consolidate -> reflect -> mine skills -> TTL
expiry) and ``consolidate``, both a preview unless ``--apply``, and ``maintenance-log``, the audit log of what was
applied."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..records import MaintenanceReport
from .args import add_session, add_user, bounded_int, id_type
from .output import Col, Result, plain, table

if TYPE_CHECKING:
    from .main import Context, Handler, Parser, Subcommands


def report_text(report: MaintenanceReport) -> str:
    """Each step with its changes, one line each; an error as llmemory prints it (``error (step): msg``)."""
    verb = "Applied" if report.applied else "Preview of"
    lines = [f"{verb} maintenance run {report.run_id} for {report.user_id}: {report.change_count} change(s)"]
    for step in report.steps:
        lines.append(f"{step.name}: {len(step.changes)} change(s)" + (f" [{step.note}]" if step.note else ""))
        lines += [f"  - {c.summary}" for c in step.changes]
        if step.error is not None:
            lines.append(f"error ({step.name}): {step.error}")
    if not report.applied and report.change_count:
        lines.append("Rerun with --apply to make these changes.")
    return "\n".join(lines)


def _result(report: MaintenanceReport) -> Result:
    data = plain(report)
    # A step that failed is reported, not raised (the others ran); the exit status still tells a script.
    return Result(data, lambda _: report_text(report), exit_code=1 if report.errors else 0)


def cmd_maintain(ctx: Context) -> Result:
    a = ctx.args
    report = ctx.engine.maintenance.maintain(
        a.user,
        consolidate=a.consolidate,
        reflect=a.reflect,
        mine_skills=a.mine_skills,
        expire=a.expire,
        reflection_window=a.window,
        mining_window=a.mining_window,
        apply=a.apply,
        actor="cli",
    )
    return _result(report)


def cmd_consolidate(ctx: Context) -> Result:
    a = ctx.args
    report = ctx.engine.maintenance.consolidate(
        a.user, a.session, apply=a.apply, clear_session=a.clear_session, actor="cli"
    )
    return _result(report)


def cmd_maintenance_log(ctx: Context) -> Result:
    entries = plain(ctx.engine.maintenance.log(ctx.args.user, ctx.args.run, limit=ctx.args.limit))
    cols = [
        Col("occurred_at", "at"),
        Col("user_id", "user", 16),
        Col("run_id", "run", 20),
        Col("step", "step", 11),
        Col("action", "action", 14),
        Col("target_kind", "kind", 10),
        Col("actor", "actor", 10),
        Col("target_ids", "ids", 60),
    ]
    return Result(entries, lambda r: table(r, cols, "(no maintenance-log entries)"))


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    p = add(
        "maintain",
        cmd_maintain,
        "the maintenance cycle: consolidate sessions, reflect, mine skills, expire by TTL; a preview unless --apply",
    )
    add_user(p)
    p.add_argument("--apply", action="store_true", help="make the changes (default: preview only)")
    toggles: list[tuple[str, str, Any]] = [
        ("consolidate", "consolidate every session's unconsolidated messages", True),
        ("reflect", "reflect over recent episodes into insights", True),
        ("expire", "soft-forget episodes and skills past their TTL settings", True),
    ]
    for name, what, default in toggles:
        p.add_argument(f"--{name}", action=argparse.BooleanOptionalAction, default=default, help=f"{what} (default on)")
    p.add_argument(
        "--mine-skills",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mine skills from recent episodes and register them (default: the skill_mining_enabled setting)",
    )
    p.add_argument("--window", type=bounded_int(1, 1000), default=10, metavar="N", help="reflection window (10)")
    p.add_argument(
        "--mining-window", type=bounded_int(1, 1000), default=20, metavar="N", help="mining window (default 20)"
    )

    p = add(
        "consolidate",
        cmd_consolidate,
        "turn a session's unconsolidated messages into semantic memories that name them; a preview unless --apply",
    )
    add_user(p)
    add_session(p)
    p.add_argument("--apply", action="store_true", help="make the changes (default: preview only)")
    p.add_argument("--clear-session", action="store_true", help="then delete the session's messages")

    p = add("maintenance-log", cmd_maintenance_log, "the audit log of applied maintenance changes, newest first")
    add_user(p, required=False)
    p.add_argument("--run", type=id_type("run id"), default=None, metavar="RUN", help="one run's changes")
    p.add_argument("--limit", type=bounded_int(1, 100_000), default=200, metavar="N", help="rows (default 200)")
