"""``memlens import mem0|letta|llmemory``: memory kept by another system imported into the store (all or nothing,
idempotent: importing the same source again writes nothing and says so; engine/interop/import_run.py)."""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .output import Result
from .transfer_cmds import counts_line

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..interop.import_run import ImportReport
    from .main import Context, Parser, Subcommands

SHOWN_SKIPS = 10  # the human report lists this many skipped things; --json lists them all


def _human(data: dict[str, Any]) -> str:
    what = "Would import" if data["dry_run"] else "Imported"
    lines = [f"{what} from {data['origin']} ({data['location']}): {counts_line(data['written'])}."]
    if data["already_present"]:
        lines.append(f"Already in the store (from an earlier import): {counts_line(data['already_present'])}.")
    if data["skipped"]:
        reasons = Counter(s["reason"] for s in data["skipped"])
        lines.append(f"Left out {len(data['skipped'])}:")
        lines += [f"  {n} × {reason}" for reason, n in reasons.most_common(SHOWN_SKIPS)]
        if len(reasons) > SHOWN_SKIPS:
            lines.append(f"  … and {len(reasons) - SHOWN_SKIPS} more reasons (--json lists every one)")
    if data["dry_run"]:
        lines.append("Nothing was written (--dry-run).")
    if data.get("store_created") is False:
        lines.append("The store does not exist yet, and the dry run did not create it.")
    return "\n".join(lines)


def _result(report: ImportReport, new_store: bool) -> Result:
    data = report.to_dict()
    if new_store:
        data["store_created"] = False
    return Result(data, _human)


@contextmanager
def _store(ctx: Context) -> Iterator[tuple[MemoryEngine, bool]]:
    """The store to import into, and whether it is new. A dry run into an embedded store that does not exist yet runs
    against an empty scratch store that is removed afterwards: a dry run writes nothing, not even the folder."""
    from ..engine import DB_FILE, MemoryEngine
    from ..store.location import store_location

    settings = ctx.settings()
    folder = store_location(settings.store, settings.vectors).folder
    if not ctx.args.dry_run or folder is None or (folder / DB_FILE).is_file():
        yield ctx.engine, False
        return
    with tempfile.TemporaryDirectory(prefix="memlens-dry-run-") as scratch:
        engine = MemoryEngine.open(settings=settings.with_overrides({"store": str(Path(scratch) / "store")}))
        try:
            yield engine, True
        finally:
            engine.close()


def cmd_import_letta(ctx: Context) -> Result:
    a = ctx.args
    with _store(ctx) as (engine, new):
        return _result(engine.imports.letta(a.source, user_id=a.user, dry_run=a.dry_run), new)


def cmd_import_llmemory(ctx: Context) -> Result:
    a = ctx.args
    with _store(ctx) as (engine, new):
        return _result(engine.imports.llmemory(a.source, user_ids=a.user or None, dry_run=a.dry_run), new)


def cmd_import_mem0(ctx: Context) -> Result:
    a = ctx.args
    scopes = {"user_ids": a.user, "agent_ids": a.agent, "run_ids": a.run}
    options = {name: ids for name, ids in scopes.items() if ids}
    with _store(ctx) as (engine, new):
        return _result(engine.imports.mem0(a.source, dry_run=a.dry_run, **options), new)


def register(sub: Subcommands, common: Parser) -> None:
    top = sub.add_parser(
        "import",
        parents=[common],
        help="import memory kept by mem0, Letta or llmemory (all or nothing; again writes nothing new)",
        description="Import memory kept by another system. All or nothing: a record memlens refuses is named and "
        "nothing is written. Importing the same source again writes nothing and says so.",
    )
    systems = top.add_subparsers(dest="system", metavar="SYSTEM", required=True)

    def add(name: str, handler: Any, help: str, source: str, source_help: str) -> argparse.ArgumentParser:
        p = systems.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        p.add_argument("source", metavar=source, help=source_help)
        p.add_argument("--dry-run", action="store_true", help="check and report what would be written; write nothing")
        return p

    p = add(
        "letta",
        cmd_import_letta,
        "a Letta agent file: core memory blocks as working slots, passages as items, messages as sessions",
        "FILE.af",
        "the agent file (JSON)",
    )
    p.add_argument("--user", help="the memlens user to import into (default: the first agent's name)")
    p = add(
        "llmemory",
        cmd_import_llmemory,
        "an llmemory store: facts, categories, episodes, skills, the graph and short-term sessions",
        "FOLDER",
        "llmemory's long_term_storage_path (LLMEMORY_STORAGE_PATH)",
    )
    p.add_argument("--user", action="append", help="import only this user (repeat for several)")
    p = add(
        "mem0",
        cmd_import_mem0,
        "a mem0 store, read through mem0's own API (pip install mem0ai)",
        "CONFIG.json",
        "the mem0 configuration (what mem0.Memory.from_config takes) as a JSON file",
    )
    p.add_argument("--user", action="append", help="import only this mem0 user (repeat for several)")
    p.add_argument("--agent", action="append", help="import only this mem0 agent's memories (repeat for several)")
    p.add_argument("--run", action="append", help="import only this mem0 run's memories (repeat for several)")
