"""``python -m engine mcp``: serve the store's memory as MCP tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .args import bounded_int

if TYPE_CHECKING:
    from .main import Context, Parser, Subcommands


def cmd_mcp(ctx: Context) -> None:
    from ..config import Settings
    from ..process_env import prepare_process_environment

    prepare_process_environment()  # the MCP server is an entry point of its own (also when run in-process)
    from ..mcp.http import DEFAULT_HOST, DEFAULT_PORT, check_http_binding, run_http, run_stdio

    args = ctx.args
    explicit = {"store": args.store} if getattr(args, "store", None) is not None else {}
    token = Settings.from_env(ctx.environ, **explicit).mcp_token
    host = args.host or DEFAULT_HOST
    port = args.port or DEFAULT_PORT
    if not args.http and (args.host or args.port):
        from ..errors import InvalidInput

        raise InvalidInput("--host and --port need --http (stdio has no address)")
    if args.http:
        check_http_binding(host, port, token)  # refuse before paying for the engine
    from ..mcp.server import build_server

    server = build_server(ctx.engine)
    if args.http:
        ctx.stderr.write(f"memlens MCP server on http://{host}:{port}/mcp (store {ctx.engine.location.display})\n")
        ctx.stderr.flush()
        run_http(server, host, port, token)
    else:
        run_stdio(server)


def register(sub: Subcommands, common: Parser) -> None:
    help = "serve the memory as MCP tools (stdio by default; --http for streamable HTTP on 127.0.0.1)"
    p = sub.add_parser(
        "mcp",
        parents=[common],
        help=help,
        description=help + ". Binding to a non-loopback host "
        "needs MEMLENS_MCP_TOKEN; clients send it as 'Authorization: Bearer <token>'. On a loopback host every "
        "request must name a loopback host in Host and Origin (DNS-rebinding protection: 421/403 otherwise). A "
        "message may be at most 4 MiB on either transport.",
    )
    p.set_defaults(handler=cmd_mcp)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    p.add_argument("--host", metavar="H", help="address to bind with --http (default 127.0.0.1)")
    p.add_argument("--port", type=bounded_int(1, 65535), metavar="P", help="port with --http (default 8765)")
