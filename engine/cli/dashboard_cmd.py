"""``memlens dashboard``: the Streamlit dashboard (app.py and pages/, found wherever memlens is installed) on
127.0.0.1, with the safe server options passed on the command line so they hold from any folder."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import TYPE_CHECKING

from .args import bounded_int

if TYPE_CHECKING:
    from .main import Context, Parser, Subcommands

DEFAULT_PORT = 8501
# The same options as the repository's .streamlit/config.toml (Streamlit reads that file only from the folder it is
# started in): loopback only, no file watcher, no e-mail prompt, no usage statistics, no deploy menu, no forced GC.
SERVER_OPTIONS = (
    "--server.headless=true",
    "--server.fileWatcherType=none",
    "--server.showEmailPrompt=false",
    "--browser.gatherUsageStats=false",
    "--client.toolbarMode=viewer",
    "--runner.postScriptGC=false",
)


def app_path() -> str:
    """The dashboard's entry script (the ``app`` module installed beside the ``engine`` package)."""
    spec = importlib.util.find_spec("app")
    if spec is None or spec.origin is None:
        from ..errors import NotFound

        raise NotFound("the dashboard (app.py) is not installed: run `pip install -e .` in a memlens clone")
    return spec.origin


def streamlit_command(host: str, port: int) -> list[str]:
    """The command line that serves the dashboard (``streamlit run app.py`` with memlens's server options)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        app_path(),
        f"--server.address={host}",
        f"--server.port={port}",
        *SERVER_OPTIONS,
    ]


def cmd_dashboard(ctx: Context) -> None:
    from ..process_env import child_environment

    args = ctx.args
    overrides = {}
    if getattr(args, "store", None) is not None:
        overrides["MEMLENS_STORE"] = str(args.store)
    if getattr(args, "vectors", None) is not None:
        overrides["MEMLENS_VECTORS"] = str(args.vectors)
    command = streamlit_command(args.host, args.port)
    ctx.stderr.write(f"memlens dashboard on http://{args.host}:{args.port}\n")
    ctx.stderr.flush()
    # Replaced by Streamlit's process: Ctrl-C and the exit status are the server's own.
    os.execve(sys.executable, command, child_environment(overrides))


def register(sub: Subcommands, common: Parser) -> None:
    help = "serve the dashboard (Streamlit) on 127.0.0.1; the store's demo data loads on a first start"
    p = sub.add_parser(
        "dashboard",
        parents=[common],
        help=help,
        description=help + ". A non-loopback --host serves nothing until MEMLENS_DASHBOARD_TOKEN is set (visitors "
        "sign in with it).",
    )
    p.set_defaults(handler=cmd_dashboard)
    p.add_argument("--host", default="127.0.0.1", metavar="H", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=bounded_int(1, 65535), default=DEFAULT_PORT, metavar="P", help="port (default 8501)")
