"""CLI commands of the traced retrieval pipeline: retrieve, trace, traces, replay and feedback.

A trace is a document, so ``retrieve``, ``trace`` and ``replay`` print it as JSON (``RetrievalTrace.to_dict()``)
whether or not ``--json`` is given; ``--summary`` prints a short table of the final ranking instead.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..config import HOPS_RANGE, parse_assignments
from ..presets import PRESETS
from ..trace.records import RetrievalTrace
from ..trace.trace_index import TraceFilter
from ..vocab import TraceOrigin
from .args import MEMORY_ID, OFFSET, TRACE, add_session, add_user, bounded_int, joined
from .output import Col, Result, cell, counted, plain, size, table

if TYPE_CHECKING:
    from .main import Context, Handler, Parser, Subcommands


def _summary(trace: RetrievalTrace) -> str:
    """A reading of a trace (or replay) for people: the hops' queries and the final ranking."""
    head = [
        f"trace {trace.trace_id}" + (f" (replay of {trace.replay_of})" if trace.replay_of else ""),
        f"question: {cell(trace.question, 200)}",
        f"stop: {trace.stop_reason}   context: {len(trace.context_ids)} memories, {trace.context_tokens} tokens",
    ]
    for h in trace.hops:
        head.append(
            f"hop {h.hop}: {cell(h.query, 120)}  [{h.proposed_by}]  found {h.counts.found}, kept {h.counts.kept}"
        )
    texts = {c.id: c.text for h in trace.hops for c in h.candidates}
    rows = [
        {**r.to_dict(), "text": texts.get(r.id, ""), "context": "yes" if r.in_context else (r.reason or "")}
        for r in trace.ranking
    ]
    cols = [Col("rank", "rank", 4)]
    if any(r.replayed for r in trace.ranking):
        cols += [Col("old_rank", "old", 4), Col("context_change", "change", 8)]
    cols += [
        Col("final", "final", 6),
        Col("hop", "hop", 3),
        Col("kind", "kind", 10),
        Col("id", "id", 28),
        Col("context", "context", 11),
        Col("text", "text", 70),
    ]
    return "\n".join(head) + "\n\n" + table(rows, cols, "(no candidates)")


def _trace_result(ctx: Context, trace: RetrievalTrace) -> Result:
    def summary(_data: Any) -> str:
        return _summary(trace)

    return Result(trace.to_dict(), summary if ctx.args.summary and not getattr(ctx.args, "json", False) else None)


def cmd_retrieve(ctx: Context) -> Result:
    a = ctx.args
    overrides = parse_assignments(a.set)
    trace = ctx.engine.retrieval.retrieve(
        a.user,
        joined(a.question),
        session_id=a.session,
        hops=a.hops,
        budget=a.budget,
        overrides=overrides or None,
        now=a.now,
        preset=a.preset,
    )
    return _trace_result(ctx, trace)


def cmd_trace(ctx: Context) -> Result:
    return _trace_result(ctx, ctx.engine.traces.get(ctx.args.id, ctx.args.user))


def cmd_replay(ctx: Context) -> Result:
    overrides = parse_assignments(ctx.args.set)
    return _trace_result(ctx, ctx.engine.retrieval.replay(ctx.args.id, overrides or None))


def cmd_traces(ctx: Context) -> Result:
    a = ctx.args
    origins = tuple(a.origin or ())
    filters = TraceFilter(text=a.text or "", origins=origins)  # the dashboard's trace table filters
    page = ctx.engine.traces.list_traces(a.user, limit=a.limit, offset=a.offset, filters=filters)
    rows = plain(list(page.rows))
    cols = [
        Col("created_at", "at"),
        Col("trace_id", "trace", 22),
        Col("user_id", "user", 16),
        Col("origin", "origin", 10),
        Col("hops", "hops", 4),
        Col("stop_reason", "stop", 14),
        Col("question", "question", 70),
    ]
    return Result(rows, lambda r: table(r, cols, "(no traces)") + f"\n{len(r)} of {page.total} traces")


def cmd_prune_traces(ctx: Context) -> Result:
    a = ctx.args
    plan = ctx.engine.traces.prune(a.older_than, a.user, keep_labelled=not a.include_labelled, apply=a.apply)
    data = plain(plan)

    def human(d: dict[str, Any]) -> str:
        verb = "Deleted" if d["applied"] else "Would delete"
        who = f"of {d['user_id']}" if d["user_id"] else "of every user"
        head = (
            f"{verb} {counted(d['count'], 'trace')} {who} created before {cell(d['cutoff'], 16)} UTC "
            f"({size(d['bytes'])} of trace bodies)"
        )
        if d["kept_labelled"]:
            head += f"; kept {d['kept_labelled']} older ones that feedback labels point to (--include-labelled)"
        if not d["count"]:
            return head
        cols = [
            Col("created_at", "at"),
            Col("trace_id", "trace", 22),
            Col("user_id", "user", 16),
            Col("question", "question", 70),
        ]
        more = f"\n(the {len(d['sample'])} newest shown)" if d["count"] > len(d["sample"]) else ""
        tail = "" if d["applied"] else "\nRerun with --apply to delete them."
        return head + "\n" + table(d["sample"], cols) + more + tail

    return Result(data, human)


def cmd_feedback(ctx: Context) -> Result:
    a = ctx.args
    events = ctx.engine.feedback.report(
        a.user, useful=a.useful or (), harmful=a.harmful or (), trace_id=a.trace, note=a.note or "", labeller=a.labeller
    )
    rows = plain(events)
    cols = [
        Col("item_id", "id", 28),
        Col("label", "label", 7),
        Col("delta", "delta", 5),
        Col("trace_id", "trace", 22),
        Col("labeller", "labeller", 16),
        Col("note", "note", 40),
    ]
    return Result(rows, lambda r: f"Recorded {len(r)} feedback labels.\n" + table(r, cols))


def days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text[:40]!r}") from None
    if not 0 <= value <= 36_500:  # also refuses nan
        raise argparse.ArgumentTypeError("use a number of days from 0 to 36500")
    return value


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    def add_set(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--set",
            action="append",
            metavar="KEY=VALUE",
            help="override a retrieval setting for this call (repeatable)",
        )

    def add_summary(p: argparse.ArgumentParser) -> None:
        p.add_argument("--summary", action="store_true", help="print a short table instead of the JSON trace")

    p = add("retrieve", cmd_retrieve, "run the traced retrieval pipeline and print the trace as JSON")
    add_user(p)
    add_session(p, required=False)
    p.add_argument("--hops", type=bounded_int(*HOPS_RANGE), metavar="N", help="hops (default: the hops setting, 1)")
    p.add_argument("--budget", type=bounded_int(1, 1_000_000), metavar="T", help="context token budget")
    p.add_argument("--now", metavar="ISO", help="the time decay is computed at (default: now)")
    p.add_argument("--preset", choices=sorted(PRESETS), help="a named set of retrieval settings (--set wins over it)")
    add_set(p)
    add_summary(p)
    p.add_argument("question", nargs="+", metavar="QUESTION", help="the question (or message)")

    p = add("trace", cmd_trace, "print a stored trace as JSON")
    p.add_argument("--id", required=True, type=TRACE, metavar="T", help="trace id")
    add_user(p, required=False)
    add_summary(p)

    p = add("traces", cmd_traces, "list stored traces, newest first")
    add_user(p, required=False)
    p.add_argument(
        "--origin",
        action="append",
        choices=[o.value for o in TraceOrigin],
        help="only traces of this origin (repeatable): agent (API, MCP, CLI), dashboard, evaluation, import, "
        "langgraph (a LangGraph agent's search through MemlensStore), unknown",
    )
    p.add_argument("--text", metavar="WORDS", help="only traces whose question contains these words (any case)")
    p.add_argument("--limit", type=bounded_int(1, 10_000), default=20, metavar="N", help="rows (default 20)")
    p.add_argument("--offset", type=OFFSET, default=0, metavar="N", help="rows to skip")

    p = add("prune-traces", cmd_prune_traces, "preview (or --apply) deleting stored traces older than some days")
    p.add_argument(
        "--older-than",
        required=True,
        type=days,
        metavar="DAYS",
        help="traces created more than DAYS ago (fractions allowed; 0: all of them)",
    )
    add_user(p, required=False)
    p.add_argument(
        "--include-labelled",
        action="store_true",
        help="also delete traces that feedback labels point to (kept by default: they are the labels' evidence)",
    )
    p.add_argument("--apply", action="store_true", help="delete them (default: preview only)")

    p = add("replay", cmd_replay, "re-rank a stored trace under other settings (no new search) and print it")
    p.add_argument("--id", required=True, type=TRACE, metavar="T", help="trace id")
    add_set(p)
    add_summary(p)

    p = add("feedback", cmd_feedback, "label memories useful (+1) or harmful (-1), optionally from a trace")
    add_user(p)
    p.add_argument("--useful", nargs="+", action="extend", type=MEMORY_ID, metavar="ID", help="useful memory ids")
    p.add_argument("--harmful", nargs="+", action="extend", type=MEMORY_ID, metavar="ID", help="harmful memory ids")
    p.add_argument("--trace", type=TRACE, metavar="T", help="the trace the labels come from")
    p.add_argument("--note", metavar="TEXT", help="a note kept with each event")
    p.add_argument(
        "--labeller",
        default="cli",
        metavar="NAME",
        help="who labels (default cli); each labeller has one label per trace and memory: a new one replaces it",
    )
