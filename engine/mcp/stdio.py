"""The MCP stdio transport, answering every request.

The MCP library's own stdio transport hands a line it cannot read (a ``\\ud800`` escape, JSON nested deeper than its
parser allows, a 5,000-digit number, bytes that are not UTF-8) to the session as a bare exception. The session logs it
and drops it: the client, which sent a request with an id, waits forever. This transport reads the same lines but, when
one cannot be read, recovers the request's ``id`` and ``method`` with a small non-recursive scan and answers at once:
a ``tools/call`` gets a tool error (``isError: true``, text ``InvalidInput: ...``) that an agent's model can read, any
other request a JSON-RPC error. A notification (no id) cannot be answered and is dropped, as JSON-RPC prescribes.

A line longer than ``MAX_MESSAGE_BYTES`` (HTTP's 413 limit) is never held whole nor parsed: its first part is kept to
find the id, the rest is read and dropped, and the request is refused by name, so the line after it is read at once.
A request whose id is neither an integer nor a string (``1.5``, ``{}``; the library reads it as a notification) gets
a JSON-RPC error with a null id, as over HTTP.

Answers the server cannot encode (a lone surrogate in a result) become a JSON-RPC error for the same id instead of
killing the writer. Standard input and output are claimed as the library does (stray prints go to stderr).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import accumulate, islice
from typing import Any

import anyio
import mcp_types as types
from mcp.server import stdio as upstream
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from .http import BAD_ID_MESSAGE, MAX_MESSAGE_BYTES

MAX_ID_CHARS = 200
# A JSON-RPC message has four keys, so some twenty tokens at its top level. Reading no more than this many bounds the
# scan of a line like {"a":1,"b":1,... or {"a":[][][]... to a fixed cost; such a line is not a message to answer by id.
MAX_TOP_LEVEL_TOKENS = 4000
MIN_WINDOW = 256  # characters of a nested value read at once at first (see request_head)
READ_CHUNK = 1 << 20  # the tail of an oversized line is read and dropped in pieces of this size


def read_line(stream: Any, limit: int = MAX_MESSAGE_BYTES) -> tuple[bytes, int]:
    """The next line of a binary stream, read no further than ``limit`` bytes (plus its newline) into memory, and
    the line's full size (larger than the bytes returned when the line was over the limit). A longer line is read to
    its end and dropped piecewise, so one huge line neither fills memory nor is ever handed to the JSON parser.
    ``(b"", 0)`` at the end of the stream."""
    line = stream.readline(limit + 1)
    size = len(line)
    if size <= limit or line.endswith(b"\n"):
        return line, size
    while True:
        rest = stream.readline(READ_CHUNK)
        size += len(rest)
        if not rest or rest.endswith(b"\n"):
            return line, size


# One token of a JSON text at the top level of the message: a string (an unterminated one runs to the end), a run of
# openers or of closers, a comma, or a number. Everything else (colons, blanks, true, garbage) is skipped by the regex
# engine, not by a Python loop.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[{\[]+|[}\]]+|,|-?\d+(?:[.eE][-+.eE\d]*)?')
# Inside a nested value only brackets outside strings matter: a whole run of them, strings and anything else up to an
# unterminated string is one token, whose brackets ``_nested_run`` counts with C code, so ``[],[],...`` or
# ``["a","a",...]`` is not millions of Python steps.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_NESTED = re.compile(rf'(?:[^"]+|{_STRING})+|"[^"\\]*(?:\\.[^"\\]*)*')
_STRINGS = re.compile(_STRING)
_BRACKET_OR_STRING = re.compile(rf"{_STRING}|[{{}}\[\]]")
_NOT_BRACKET = re.compile(r"[^{}\[\]]+")
_STEP = {"{": 1, "[": 1, "}": -1, "]": -1}


def _nested_run(run: str, depth: int) -> tuple[int, int]:
    """The depth after ``run`` (whole strings and other text) entered at ``depth`` (> 1) and how many of its
    characters were read: all of them, or up to the bracket that brings the depth back to 1 (the top level, which is
    read token by token)."""
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", run))
    closers = brackets.count("}") + brackets.count("]")
    if closers < depth - 1:  # cannot get back to the top level within this run
        return depth + len(brackets) - 2 * closers, len(run)
    levels = list(accumulate(map(_STEP.__getitem__, brackets)))
    try:
        k = levels.index(1 - depth)
    except ValueError:
        return depth + levels[-1], len(run)
    outside = (m for m in _BRACKET_OR_STRING.finditer(run) if m.group()[0] != '"')
    return 1, next(islice(outside, k, None)).end()


def request_head(text: str) -> tuple[Any, str | None, bool]:
    """The top-level ``id`` (int or str, else None), ``method`` and whether an ``id`` key is there at all, of a
    JSON-RPC message that may be malformed, too deep or too big to parse: one linear pass over its tokens, no
    recursion, reading at most :data:`MAX_TOP_LEVEL_TOKENS` at the top level."""
    found: dict[str, Any] = {}
    depth = tokens = pos = 0
    window = MIN_WINDOW
    key: str | None = None
    expect_key = has_id = False
    while len(found) < 2:
        if depth > 1:
            # A nested value is read in windows that double while it lasts and shrink back when it ends, so each
            # return to the top level costs about what was read since the last: linear, even for [] [] [] ...
            end = min(len(text), pos + window)
            match = _NESTED.search(text, pos, end)
            if match is None:
                break
            token = match.group()
            if token[0] == '"' and not _STRINGS.match(token):
                if end == len(text):
                    break  # an unterminated string runs to the end
                window *= 2  # the string goes on past the window
                continue
            depth, read = _nested_run(token, depth)
            pos = match.start() + read
            window = window * 2 if depth > 1 else MIN_WINDOW
            continue
        match = _TOKEN.search(text, pos)
        tokens += 1
        if match is None or tokens > MAX_TOP_LEVEL_TOKENS:
            break
        pos = match.end()
        token = match.group()
        ch = token[0]
        if ch == '"':
            if depth == 1 and expect_key:
                key = _string(token)
                expect_key = False
                has_id = has_id or key == "id"
            elif depth == 1 and key in ("id", "method"):
                value = _string(token)
                if value is not None and len(value) <= MAX_ID_CHARS:
                    found[key] = value
                key = None
        elif ch in "{[":
            if depth == 0 and token == "{":
                expect_key = True
            depth += len(token)
        elif ch in "}]":
            depth -= len(token)
        elif ch == ",":
            if depth == 1:
                expect_key, key = True, None
        elif depth == 1 and key == "id":  # a number
            if len(token) <= 19 and token.lstrip("-").isdigit():
                found["id"] = int(token)
            key = None
    method = found.get("method")
    return found.get("id"), method if isinstance(method, str) else None, has_id


def _string(token: str) -> str | None:
    if len(token) >= 2 and token[-1] == '"' and "\\" not in token:
        return token[1:-1]  # no escape: the common case, without the JSON parser
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


def bad_id_refusal() -> types.JSONRPCError:
    """The answer to a request whose id is neither an integer nor a string (it cannot be echoed); HTTP gives the
    same (``engine.mcp.http.RequestIdCheck``)."""
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=types.INVALID_REQUEST, message=BAD_ID_MESSAGE)
    )


def too_long_refusal(head: bytes, size: int) -> types.JSONRPCMessage | None:
    """The answer to a line over :data:`MAX_MESSAGE_BYTES`, addressed by the id found in its first part."""
    problem = (
        f"the request is {size:,} bytes, over the limit of {MAX_MESSAGE_BYTES:,} bytes for one message "
        "(the same limit as over HTTP)"
    )
    return refusal(head.decode("utf-8", errors="replace"), problem)


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
                    while True:
                        raw, size = await anyio.to_thread.run_sync(read_line, stdin_buffer)
                        if not raw:
                            break
                        if size > len(raw):  # over the limit: only its first part was kept
                            answer = await anyio.to_thread.run_sync(too_long_refusal, raw, size)
                            if answer is not None:
                                await emit(encode(answer))
                            continue
                        if not raw.strip():
                            continue
                        text = raw.decode("utf-8", errors="replace")
                        try:
                            raw.decode("utf-8")  # strict: an invalid byte is refused, not silently replaced
                            message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the client gets an answer
                            # the id scan is linear but in Python: off the event loop, which keeps serving answers
                            answer = await anyio.to_thread.run_sync(refusal, text, describe(exc))
                            if answer is not None:
                                await emit(encode(answer))
                            continue
                        if isinstance(message, types.JSONRPCNotification) and request_head(text)[2]:
                            # {"id": 1.5, "method": ...} reads as a notification, but its sender waits for an answer
                            await emit(encode(bad_id_refusal()))
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
