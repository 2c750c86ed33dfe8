"""Raw MCP traffic for hostile-input tests: bytes a real client library would refuse to send (lone surrogate escapes,
invalid UTF-8, JSON nested 900 levels, 5,000-digit numbers) written straight to a server's stdin or HTTP endpoint,
and each answer awaited for at most a fixed time. ``None`` means no answer came: the failure these tests look for."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.mcp_client import ROOT, START_TIMEOUT_S, clean_env

ANSWER_TIMEOUT_S = 60  # generous for a busy CI machine; a missing answer waits this long, then fails
PROTOCOL = "2025-06-18"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def tool_call(request_id: int, name: str, arguments_json: str) -> bytes:
    """A tools/call line whose arguments are given as raw JSON text (so they can be hostile)."""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments_json}}}}}'
    ).encode("utf-8", "surrogatepass")


class RawStdio:
    """``python -m engine --store S mcp`` with pipes; :meth:`ask` writes one line and waits for one answer line."""

    def __init__(self, store: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "--store", str(store), "mcp"],
            cwd=ROOT,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._buffer = b""
        first = self.ask(json.dumps(INIT).encode(), START_TIMEOUT_S)
        assert first is not None and "result" in first, first
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def _line(self, timeout_s: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def ask(self, line: bytes, timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any] | None:
        """Send a request and return the parsed answer, or None when none came within ``timeout_s``."""
        self.send(line)
        answer = self._line(timeout_s)
        return None if answer is None else json.loads(answer)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


class RawHttp:
    """A streamable-HTTP MCP session driven with urllib: initialize, then :meth:`ask` posts raw bodies."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        status, answer, headers = self._post(json.dumps(INIT).encode(), START_TIMEOUT_S)
        assert status == 200 and answer and "result" in answer, (status, answer)
        self.headers["Mcp-Session-Id"] = headers["mcp-session-id"]
        self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', ANSWER_TIMEOUT_S)

    def _post(self, body: bytes, timeout_s: float) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        request = urllib.request.Request(self.url, data=body, method="POST", headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, _answer(response.read()), {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as exc:
            return exc.code, _answer(exc.read()), {}

    def ask(self, body: bytes, timeout_s: float = ANSWER_TIMEOUT_S) -> tuple[int, dict[str, Any] | None]:
        """(HTTP status, the JSON-RPC answer or None). A timeout raises (urllib's own), which fails the test."""
        status, answer, _ = self._post(body, timeout_s)
        return status, answer


def _answer(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC message in a JSON body or in the ``data:`` lines of a server-sent-events body."""
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return None
    if text.startswith("{"):
        return json.loads(text)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(data[-1]) if data else None


def refused_text(answer: dict[str, Any]) -> str | None:
    """The refusal's text: a tool error's text, or a JSON-RPC error's message; None for a successful result."""
    if "error" in answer:
        return str(answer["error"].get("message", ""))
    result = answer.get("result") or {}
    if result.get("isError"):
        return "\n".join(c.get("text", "") for c in result.get("content", []))
    return None
