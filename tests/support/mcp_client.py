"""Drive a real MCP server (a ``python -m engine mcp`` subprocess) from synchronous tests.

The ``mcp`` client is async and its transports must be entered and left in one task, so :class:`SyncMcp` runs an
event loop in a thread with one task that owns the connection; tests call :meth:`call` / :meth:`tools` and get the
results back synchronously. One server per test module keeps the start-up cost (imports, model) paid once.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 300  # the server imports torch and loads the model before it answers; slow under load


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without a developer's OPENAI_/MEMLENS_ variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMLENS_"))}
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, **extra)
    return env


@dataclass(frozen=True)
class ToolResult:
    is_error: bool
    text: str
    structured: Any


class SyncMcp:
    """An ``mcp.Client`` connected to ``target`` (stdio parameters or a transport), usable from sync code."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._client: mcp.Client | None = None
        self._owner = asyncio.run_coroutine_threadsafe(self._own(), self._loop)
        deadline = time.monotonic() + START_TIMEOUT_S
        while self._client is None:
            if self._owner.done():
                self._owner.result()  # raises what went wrong
                raise RuntimeError("the MCP client stopped before it connected")
            if time.monotonic() > deadline:
                raise TimeoutError("the MCP server did not answer in time")
            time.sleep(0.05)

    async def _own(self) -> None:
        self._stop = asyncio.Event()
        async with mcp.Client(self._target, read_timeout_seconds=START_TIMEOUT_S) as client:
            self._client = client
            await self._stop.wait()

    def _run(self, coro: Any, timeout: float = 180) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def tools(self) -> list[Any]:
        assert self._client is not None
        return list(self._run(self._client.list_tools()).tools)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        assert self._client is not None
        result = self._run(self._client.call_tool(name, arguments or {}))
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return ToolResult(bool(result.is_error), text, result.structured_content)

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        try:
            self._owner.result(60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


def stdio_server(store: Path, **env: str) -> StdioServerParameters:
    """Parameters that make the client start ``python -m engine --store STORE mcp`` from the project root."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "engine", "--store", str(store), "mcp"], env=clean_env(**env), cwd=str(ROOT)
    )


@asynccontextmanager
async def http_transport(url: str, token: str | None = None):
    """A streamable-HTTP transport that sends ``Authorization: Bearer <token>`` on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http_server(store: Path, port: int, *extra: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "engine", "--store", str(store), "mcp", "--http", "--port", str(port), *extra],
        cwd=ROOT,
        env=clean_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_port(
    proc: subprocess.Popen, port: int, timeout_s: float = START_TIMEOUT_S, host: str = "127.0.0.1"
) -> None:
    """Wait until the server accepts connections on ``host`` (or fail with its stderr if it exited)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the MCP server exited with {proc.returncode}: {proc.communicate()[1][-3000:]}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("the MCP HTTP server did not start in time")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


def ok(client: SyncMcp, tool: str, **args: Any) -> str:
    """The text of a tool call that must succeed."""
    result = client.call(tool, args)
    assert not result.is_error, result.text
    return result.text


def refused(client: SyncMcp, tool: str, **args: Any) -> str:
    """The error text of a tool call that must be refused cleanly (a named error, no traceback)."""
    result = client.call(tool, args)
    assert result.is_error, f"{tool} accepted {args!r}: {result.text}"
    assert "Traceback" not in result.text
    return result.text
