"""Transports for the MCP server: stdio, and streamable HTTP guarded by a bearer token.

HTTP binds to 127.0.0.1 by default. Binding to any other address exposes the agent's memory to the network, so it
needs ``MEMLENS_MCP_TOKEN``; with a token set every request must carry ``Authorization: Bearer <token>`` (401
otherwise), on loopback too.

On a loopback address (any 127/8 address, ``localhost`` in any case, ``::1``) the server is open to local clients, so
it checks every request's ``Host`` and ``Origin`` against the loopback names (DNS-rebinding protection: a web page
whose name an attacker re-points at 127.0.0.1 sends its own name in ``Host``, 421, or ``Origin``, 403). The MCP
library turns this on by itself only for the exact spellings ``127.0.0.1``, ``localhost`` and ``::1``.

Both transports take messages of at most :data:`MAX_MESSAGE_BYTES`: HTTP answers a larger body 413, stdio refuses a
larger line before reading it as JSON. A request whose JSON-RPC ``id`` is neither a string nor an integer (``1.5``,
an object) gets a JSON-RPC error, not the silent 202 the library gives what it then reads as a notification.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..validation import text_problem

if TYPE_CHECKING:  # the library is imported when a server starts, not when the CLI checks its arguments
    from mcp.server.transport_security import TransportSecuritySettings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
MIN_NETWORK_TOKEN_CHARS = 16  # a short token is guessable over the network; loopback keeps any token
# The MCP library's HTTP body limit (``DEFAULT_MAX_REQUEST_BODY_SIZE``), passed to it explicitly and used for stdio
# lines too, so one number bounds a message on either transport.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# How a client may name a loopback server. The port is left open (``:*``): a DNS-rebinding page sends its own host
# name, never one of these, while an SSH tunnel or a port forward legitimately sends another port.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
BAD_ID_MESSAGE = "Invalid request: the id must be an integer or a string"

Scope = dict[str, Any]
Message = dict[str, Any]  # an ASGI event: {"type": "http.request", "body": ...}
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
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


def url_host(host: str) -> str:
    """``host`` as it appears in a URL or a ``Host`` header: an IPv6 address in brackets."""
    bare = host.strip()
    return f"[{bare.strip('[]')}]" if ":" in bare else bare


def transport_security(host: str) -> TransportSecuritySettings:
    """The MCP library's ``TransportSecuritySettings`` for a bind address: on loopback, ``Host`` must be a loopback
    name (or the bound address as given) and ``Origin``, when sent, an ``http://`` origin on one of them. A
    non-loopback bind is reached by names memlens cannot know; its bearer token guards it instead."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    bound = url_host(host)
    names = sorted({*LOOPBACK_NAMES, bound, bound.lower()})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        # bare names too: a client on port 80 sends no port
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[*(f"http://{n}" for n in names), *(f"http://{n}:*" for n in names)],
    )


def bad_id(body: bytes) -> bool:
    """True when ``body`` is one JSON-RPC request (it has a ``method``) with an ``id`` that is neither a string nor an
    integer. The MCP library reads such a message as a notification and answers nothing."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: the library answers it with a parse error
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return False
    request_id = message["id"]
    return not (type(request_id) is str or type(request_id) is int)  # noqa: E721 - bool is an int subclass


class RequestIdCheck:
    """ASGI middleware: a POSTed request whose ``id`` is not a string or an integer gets HTTP 400 with a JSON-RPC
    error (id null, as over stdio), not a 202 with an empty body. Reads at most :data:`MAX_MESSAGE_BYTES`; a larger
    body goes on to the library, which answers 413. A request the library's header checks refuse (a foreign ``Host``
    or ``Origin``, a wrong content type) goes on too, to be refused by them as any other."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.app = app
        self.headers_check = TransportSecurityMiddleware(security)
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[Message] = []
        size, complete = 0, False
        while size <= self.max_bytes:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                complete = True
                break
        if complete and size <= self.max_bytes:
            body = b"".join(m.get("body", b"") for m in chunks)
            if bad_id(body) and await self.headers_pass(scope):
                await send_json(
                    send, 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": BAD_ID_MESSAGE}}
                )
                return

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    async def headers_pass(self, scope: Scope) -> bool:
        from starlette.requests import Request

        return await self.headers_check.validate_request(Request(scope), is_post=True) is None


async def send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
    cannot be read (``engine.mcp.stdio``)."""
    import anyio

    from .stdio import serve_stdio

    anyio.run(serve_stdio, server)


def run_http(server: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str = "") -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (with bearer auth when a token is given)."""
    import anyio
    import uvicorn

    check_http_binding(host, port, token)
    security = transport_security(host)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, max_request_body_size=MAX_MESSAGE_BYTES, transport_security=security
    )
    app = RequestIdCheck(app, security)
    if token:
        app = BearerAuth(app, token)
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
