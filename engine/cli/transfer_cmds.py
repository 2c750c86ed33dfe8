"""CLI commands that move records into and out of a store: the bundled demo, a JSONL import, a user's export."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import InvalidInput
from .args import add_user
from .output import Progress, Result, dumps

if TYPE_CHECKING:
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
    "entity": "entities",
    "relation": "relations",
    "mention": "entity mentions",
    "eval_case": "expectation cases (set demo, run once: see eval-sets)",
    "already_stored": "records already in the store (written again; --skip-existing leaves them out)",
    "skipped": "records already in the store (skipped)",
}


def counts_line(counts: dict[str, int]) -> str:
    """``3 messages, 2 items``: the record counts of a load, an import or a reindex, in words."""
    shown = [f"{n} {_PLURAL.get(k, k)}" for k, n in counts.items() if n]
    return ", ".join(shown) if shown else "nothing"


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
        return f"Loaded the demo into {d['store']}: {counts_line(d['counts'])}."

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
        {"file": ctx.args.file, "counts": counts}, lambda d: f"Ingested {d['file']}: {counts_line(d['counts'])}."
    )


def cmd_export(ctx: Context) -> None:
    # JSON lines, streamed: one record per line, read back by `ingest` (the --json flag changes nothing here).
    write = ctx.stdout.write
    for record in ctx.engine.admin.export(ctx.args.user):
        write(dumps(record, indent=None) + "\n")


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
        "outcome, feedback, working, forget_log, entity, relation, mention; - reads stdin",
    )
    p.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave out records without an id that the store already holds (else written again and counted as "
        "already stored)",
    )

    p = add("export", cmd_export, "print every record of a user as JSON lines that `ingest` reads back")
    add_user(p)
