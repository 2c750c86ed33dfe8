"""CLI commands that look after a store as a whole: counts and warnings, and the vector tables' upkeep (reindex,
repair after a crash, optimize)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .args import add_user
from .output import Col, Progress, Result, pairs, plain, size, table
from .transfer_cmds import counts_line

if TYPE_CHECKING:
    from .main import Context, Handler, Parser, Subcommands


def cmd_stats(ctx: Context) -> Result:
    data = plain(ctx.engine.admin.stats())

    def human(d: dict[str, Any]) -> str:
        top = pairs({k: v for k, v in d.items() if k not in ("per_user", "warnings", "orphans", "graph")})
        top += "\ngraph  " + ", ".join(f"{n} {k}" for k, n in (d.get("graph") or {}).items())
        rows = [{"user": u, **c} for u, c in d["per_user"].items()]
        cols = [Col("user", "user", 40)] + [
            Col(k, k, 10)
            for k in ("sessions", "messages", "items", "episodes", "skills", "traces", "entities", "relations")
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
    return Result(counts, lambda d: f"Reindexed {counts_line(d)} with {engine.embedder.name}.")


def cmd_keys(ctx: Context) -> Result:
    progress = Progress(ctx.stderr, "keys")
    try:
        counts = ctx.engine.admin.build_keys(ctx.args.user, progress=progress, kinds=ctx.args.kinds)
    finally:
        progress.close()
    return Result(counts, lambda d: f"Built {d['keys']} key(s) of {d['items']} item(s) of {d['users']} user(s).")


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


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    add("stats", cmd_stats, "counts per memory kind and user, backends, warnings")
    add("reindex", cmd_reindex, "rebuild this embedding model's vectors from the stored memories")
    p = add(
        "keys",
        cmd_keys,
        "build the semantic memories' extra keys (facts, the next turn, sentences) again from the stored memories",
    )
    add_user(p, required=False)
    p.add_argument(
        "--kinds",
        choices=("all", "facts", "next", "sentences"),
        help="which keys to build (default: the memory_keys_write_kinds setting, all); the deep preset reads "
        "sentence keys only",
    )
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
