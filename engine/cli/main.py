"""``python -m engine``: the parser, the engine opened once per run, and the translation of every error into one
line on stderr (exit 2 for bad input, missing files and named engine errors; exit 1 for anything unexpected)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from ..errors import MemlensError
from ..process_env import prepare_process_environment
from . import (
    browse_cmds,
    cycle_cmds,
    dashboard_cmd,
    eval_cmds,
    graph_cmds,
    import_cmds,
    lifecycle_cmds,
    maintenance_cmds,
    mcp_cmd,
    otel_cmds,
    retrieval_cmds,
    store_cmds,
    transfer_cmds,
)
from .output import Result, dumps, one_line

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import MemoryEngine

PROG = "memlens"
EXIT_OK, EXIT_UNEXPECTED, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A command line argparse refused (reported as one line, exit 2)."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so every error is one line."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# What each command module's register() adds its commands to, and what a command runs (None: it wrote its own output).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"
Handler: TypeAlias = "Callable[[Context], Result | None]"


def _common() -> Parser:
    """Global options, accepted before or after the command (SUPPRESS keeps a later default from hiding them)."""
    p = Parser(add_help=False)
    p.add_argument(
        "--store",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="store folder, or a team store's postgresql://user:password@host/db (default: $MEMLENS_STORE, "
        "else data/store)",
    )
    p.add_argument(
        "--vectors",
        metavar="URI",
        default=argparse.SUPPRESS,
        help="where a team store's vectors live: s3://bucket/prefix (default: $MEMLENS_VECTORS; AWS_* variables "
        "give the endpoint, region and keys)",
    )
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON on stdout instead of a table"
    )
    p.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an unexpected error"
    )
    return p


def build_parser() -> Parser:
    common = _common()
    parser = Parser(
        prog=PROG,
        parents=[common],
        description="memlens: open up an agent's memory. Every command takes --store PATH and --json.",
        epilog="Errors print one line on stderr and exit with status 2.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    # Registration order is the order of `memlens --help` and docs/cli.md.
    transfer_cmds.register(sub, common)
    import_cmds.register(sub, common)
    browse_cmds.register(sub, common)
    lifecycle_cmds.register(sub, common)
    cycle_cmds.register(sub, common)
    graph_cmds.register(sub, common)
    maintenance_cmds.register(sub, common)
    retrieval_cmds.register(sub, common)
    otel_cmds.register(sub, common)
    mcp_cmd.register(sub, common)
    dashboard_cmd.register(sub, common)
    eval_cmds.register(sub, common)
    store_cmds.register(sub, common)
    return parser


@dataclass
class Context:
    """What a command handler gets: its arguments, the streams, and the engine (opened on first use, once)."""

    args: argparse.Namespace
    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str] | None = None
    _engine: MemoryEngine | None = field(default=None, repr=False)

    @property
    def engine(self) -> MemoryEngine:
        if self._engine is None:
            from ..engine import DB_FILE, MemoryEngine
            from ..store.location import require_existing_store, store_location
            from .read_commands import reads_only

            settings = self.settings()
            if reads_only(self.args):  # a read never creates the store it was pointed at
                require_existing_store(store_location(settings.store, settings.vectors), DB_FILE)
            self._engine = MemoryEngine.open(settings=settings)
        return self._engine

    def settings(self) -> Settings:
        """The settings the command's store opens with: the environment's, with --store, --vectors and
        --version-retention on top."""
        from ..config import Settings

        explicit = {"store": self.args.store} if getattr(self.args, "store", None) is not None else {}
        if getattr(self.args, "vectors", None) is not None:
            explicit["vectors"] = self.args.vectors
        if getattr(self.args, "version_retention", None) is not None:
            explicit["vector_version_retention_s"] = self.args.version_retention
        return Settings.from_env(self.environ, **explicit)


def _os_message(exc: OSError) -> str:
    what = f" {exc.filename!r}" if exc.filename is not None else ""
    return f"cannot access{what}: {exc.strerror or exc}"


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    raise_unexpected: bool = False,
) -> int:
    """Run one command; returns the exit status. ``environ`` replaces ``os.environ`` for settings (tests);
    ``raise_unexpected`` lets tests see the traceback of a bug instead of a one-line message."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = raise_unexpected or "--debug" in argv
    try:
        with contextlib.redirect_stdout(out):  # --help and --version print to our stdout, then exit 0
            args = build_parser().parse_args(argv)
        if not args.command:
            raise UsageError(f"give a command (see `{PROG} --help`)")
        ctx = Context(args, out, err, environ)
        result: Result | None = args.handler(ctx)
        if result is not None:
            if getattr(args, "json", False) or result.human is None:
                out.write(dumps(result.data) + "\n")
            else:
                text = result.human(result.data)
                out.write(text + ("\n" if text and not text.endswith("\n") else ""))
        out.flush()
        return result.exit_code if result is not None else EXIT_OK
    except (UsageError, MemlensError) as exc:
        err.write(f"error: {one_line(str(exc))}\n")
        return EXIT_ERROR
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # `... | head`: the reader left; not an error worth a message
            return EXIT_OK
        err.write(f"error: {one_line(_os_message(exc))}\n")
        return EXIT_ERROR
    except SystemExit as exc:  # argparse's --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        err.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence of a CLI: one line, never a traceback, unless asked
        if debug:
            raise
        err.write(
            f"error: unexpected {type(exc).__name__}: {one_line(str(exc), 300)} "
            f"(rerun with --debug for the traceback)\n"
        )
        return EXIT_UNEXPECTED


def run() -> None:
    """Console entry point: exit with :func:`main`'s status (stdout closed early by a pipe reader is fine)."""
    prepare_process_environment()
    status = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(status)
