"""``copy-store``: move a store between an embedded folder and a team store (PostgreSQL + s3://), no re-embedding."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import Result, pairs, plain

if TYPE_CHECKING:
    from .main import Context, Parser, Subcommands


def cmd_copy_store(ctx: Context) -> Result:
    from ..config import Settings
    from ..store.copy import copy_store

    a = ctx.args

    def progress(name: str, n: int) -> None:
        ctx.stderr.write(f"  {name}: {n}\n")
        ctx.stderr.flush()

    report = copy_store(
        a.source,
        a.destination,
        a.from_vectors or "",
        a.to_vectors or "",
        Settings.from_env(ctx.environ),
        progress,
    )
    data = plain(report)

    def human(d: dict[str, Any]) -> str:
        head = f"copied {d['source']} -> {d['destination']} (counts checked on both sides)\n"
        return head + pairs(d["rows"]) + "\n" + pairs(d["vectors"] or {"vector tables": 0})

    return Result(data, human)


def register(sub: Subcommands, common: Parser) -> None:
    help = (
        "copy every row (traces, logs, evaluations included) and every vector table from one store into a new "
        "empty one: embedded folder -> team store (postgresql://... with --to-vectors s3://...) or back; "
        "nothing is re-embedded and the counts are compared at the end"
    )
    p = sub.add_parser("copy-store", parents=[common], help=help, description=help)
    p.set_defaults(handler=cmd_copy_store)
    p.add_argument("source", metavar="SRC", help="the store to copy: a folder or postgresql://user:password@host/db")
    p.add_argument("destination", metavar="DST", help="an empty (or new) store: a folder or postgresql://...")
    p.add_argument("--from-vectors", metavar="URI", help="the source team store's vectors (s3://bucket/prefix)")
    p.add_argument("--to-vectors", metavar="URI", help="the destination team store's vectors (s3://bucket/prefix)")
