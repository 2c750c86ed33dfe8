"""Transports for the MCP server: stdio, and streamable HTTP guarded by a bearer token.

HTTP binds to 127.0.0.1 by default. Binding to any other address exposes the agent's memory to the network, so it
needs ``MEMLENS_MCP_TOKEN``; with a token set every request must carry ``Authorization: Bearer <token>`` (401
otherwise), on loopback too.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import InvalidInput
from .validation import text_problem

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
MIN_NETWORK_TOKEN_CHARS = 16  # a short token is guessable over the network; loopback keeps any token

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_binding(host: str, port: int, token: str) -> None:
    """Refuse a non-loopback bind without a token (and nonsense ports) before anything is opened."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidInput(f"port must be an integer from 1 to 65535, got {port!r}")
    if not isinstance(host, str) or not host or "\x00" in host or text_problem(host):
        raise InvalidInput("give a host to bind to")
    if not is_loopback(host) and not token:
        raise InvalidInput(
            f"refusing to serve MCP on non-loopback host {host[:60]!r} without a token: "
            "set MEMLENS_MCP_TOKEN (clients send it as 'Authorization: Bearer <token>')"
        )
    if not is_loopback(host) and len(token.strip()) < MIN_NETWORK_TOKEN_CHARS:
        raise InvalidInput(
            f"refusing to serve MCP on non-loopback host {host[:60]!r} with a token of "
            f"{len(token.strip())} characters: a network-facing token needs at least "
            f"{MIN_NETWORK_TOKEN_CHARS} (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


class BearerAuth:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>``; lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):  # constant time: the token is a secret
            await self.app(scope, receive, send)
            return
        body = b'{"error": "unauthorized: send Authorization: Bearer <MEMLENS_MCP_TOKEN>"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def run_stdio(server: Any) -> None:
    """Serve over stdin/stdout until the client closes the pipe; every request gets an answer, even one that
    cannot be read (``engine.mcp_stdio``)."""
    import anyio

    from .mcp_stdio import serve_stdio

    anyio.run(serve_stdio, server)


def run_http(server: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str = "") -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (with bearer auth when a token is given)."""
    import anyio
    import uvicorn

    check_http_binding(host, port, token)
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if token:
        app = BearerAuth(app, token)
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
