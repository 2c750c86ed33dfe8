"""The MCP stdio transport, answering every request.

The MCP library's own stdio transport hands a line it cannot read (a ``\\ud800`` escape, JSON nested deeper than its
parser allows, a 5,000-digit number, bytes that are not UTF-8) to the session as a bare exception. The session logs it
and drops it: the client, which sent a request with an id, waits forever. This transport reads the same lines but, when
one cannot be read, recovers the request's ``id`` and ``method`` with a small non-recursive scan and answers at once:
a ``tools/call`` gets a tool error (``isError: true``, text ``InvalidInput: ...``) that an agent's model can read, any
other request a JSON-RPC error. A notification (no id) cannot be answered and is dropped, as JSON-RPC prescribes.

Answers the server cannot encode (a lone surrogate in a result) become a JSON-RPC error for the same id instead of
killing the writer. Standard input and output are claimed as the library does (stray prints go to stderr).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server import stdio as upstream
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

MAX_ID_CHARS = 200


def request_head(text: str) -> tuple[Any, str | None, bool]:
    """The top-level ``id`` (int or str, else None), ``method`` and whether an ``id`` key is there at all, of a
    JSON-RPC message that may be malformed, too deep or too big to parse: one linear pass, no recursion."""
    found: dict[str, Any] = {}
    depth = 0
    i, n = 0, len(text)
    key: str | None = None
    expect_key = has_id = False
    while i < n and len(found) < 2:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            token = text[i : end + 1]
            if depth == 1 and expect_key:
                key = _string(token)
                expect_key = False
                has_id = has_id or key == "id"
            elif depth == 1 and key in ("id", "method"):
                value = _string(token)
                if value is not None and len(value) <= MAX_ID_CHARS:
                    found[key] = value
                key = None
            i = end + 1
            continue
        if ch in "{[":
            depth += 1
            if depth == 1 and ch == "{":
                expect_key = True
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 1:
            expect_key, key = True, None
        elif depth == 1 and key == "id" and (ch.isdigit() or ch == "-"):
            end = i + 1
            while end < n and text[end].isdigit():
                end += 1
            if end - i <= 19 and text[end : end + 1] not in (".", "e", "E"):
                found["id"] = int(text[i:end])
            key = None
            i = end
            continue
        i += 1
    method = found.get("method")
    return found.get("id"), method if isinstance(method, str) else None, has_id


def _string(token: str) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def refusal(text: str, problem: str) -> types.JSONRPCMessage | None:
    """The answer to a line that could not be read, or None for a notification (nothing to answer)."""
    request_id, method, has_id = request_head(text)
    if request_id is None:
        if method is not None and not has_id:  # a notification: JSON-RPC forbids an answer
            return None
        return types.JSONRPCError(
            jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {problem}")
        )
    if method == "tools/call":
        result = types.CallToolResult(
            content=[types.TextContent(type="text", text=f"InvalidInput: {problem}")], is_error=True
        )
        return types.JSONRPCResponse(
            jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, exclude_none=True)
        )
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid request: {problem}"),
    )


def describe(exc: Exception) -> str:
    """A one-line reason a request could not be read, without echoing the (possibly huge) input."""
    if isinstance(exc, UnicodeDecodeError):
        return f"the request is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            msg = str(errors(include_input=False)[0].get("msg", "invalid"))[:200]
            if "escape" in msg or "surrogate" in msg:
                msg += " (a lone surrogate such as \\ud800 is not valid Unicode)"
            return f"the request could not be read: {msg}"
        except Exception:  # noqa: BLE001 - any failure here must still give an answer
            pass
    return f"the request could not be read: {type(exc).__name__}"


def encode(message: types.JSONRPCMessage) -> str:
    """One line of JSON; an answer that cannot be encoded becomes an error answer for the same id."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception as exc:  # noqa: BLE001 - e.g. a lone surrogate in a result: answer, do not die
        request_id = getattr(message, "id", None)
        if request_id is None:
            return ""
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"the answer could not be encoded as JSON ({type(exc).__name__})"
            ),
        )
        return error.model_dump_json(by_alias=True, exclude_unset=True)


@asynccontextmanager
async def answering_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """Like ``mcp.server.stdio.stdio_server`` (same streams, same claim of fds 0 and 1), but every request that
    cannot be read gets an answer."""
    restore_in = restore_out = None
    try:
        stdin_buffer, restore_in = upstream._claim_fd(0, sys.stdin, "rb", upstream._open_stdin_diversion)
        stdout_buffer, restore_out = upstream._claim_fd(1, sys.stdout, "wb", upstream._open_stdout_diversion)
        stdin = anyio.wrap_file(stdin_buffer)
        stdout = anyio.wrap_file(stdout_buffer)
        read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_reader = create_context_streams[SessionMessage](0)
        out_lock = anyio.Lock()

        async def emit(line: str) -> None:
            if line:
                async with out_lock:
                    await stdout.write(line.encode("utf-8") + b"\n")
                    await stdout.flush()

        async def reader() -> None:
            try:
                async with read_writer:
                    async for raw in stdin:
                        if not raw.strip():
                            continue
                        text = raw.decode("utf-8", errors="replace")
                        try:
                            raw.decode("utf-8")  # strict: an invalid byte is refused, not silently replaced
                            message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the client gets an answer
                            answer = refusal(text, describe(exc))
                            if answer is not None:
                                await emit(encode(answer))
                            continue
                        if isinstance(message, types.JSONRPCNotification) and request_head(text)[2]:
                            # {"id": 1.5, "method": ...} reads as a notification, but its sender waits for an answer
                            await emit(
                                encode(
                                    refusal(text, "the id must be an integer or a string")
                                    or types.JSONRPCError(
                                        jsonrpc="2.0",
                                        id=None,
                                        error=types.ErrorData(
                                            code=types.INVALID_REQUEST, message="Invalid request: bad id"
                                        ),
                                    )
                                )
                            )
                            continue
                        await read_writer.send(SessionMessage(message))
            except anyio.ClosedResourceError:
                await anyio.lowlevel.checkpoint()

        async def writer() -> None:
            try:
                async with write_reader:
                    async for session_message in write_reader:
                        await emit(encode(session_message.message))
            except anyio.ClosedResourceError:
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_stream, write_stream
    finally:
        if restore_out is not None:
            restore_out()
        if restore_in is not None:
            restore_in()


async def serve_stdio(server: Any) -> None:
    """Run an ``MCPServer`` over stdin/stdout with :func:`answering_stdio_server`."""
    low = server._lowlevel_server
    async with answering_stdio_server() as (read_stream, write_stream):
        await low.run(read_stream, write_stream, low.create_initialization_options())
