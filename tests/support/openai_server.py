"""A small OpenAI-compatible HTTP server for tests: the real ``openai`` client talks to it through ``base_url``.

It serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` on 127.0.0.1 (a free port) from a thread.
Each endpoint has a queue of scripted replies; when the queue is empty, chat answers ``default_chat`` and embeddings
are deterministic hash-seeded unit vectors of ``dim`` dimensions. Every request is captured (method, path, headers,
JSON body) so tests can assert on what memlens sent.

Scripted replies (``server.script("chat", ...)``):

- a ``str``: a chat answer with that content (usage fields included);
- ``Reply(status=500)`` / ``Reply(status=429)``: an OpenAI-style error body with that status;
- ``Reply(delay_s=3.0, ...)``: sleep before answering (longer than the client timeout -> the client times out);
- ``Reply(raw=b"not json")``: a garbage body with status 200;
- ``Reply(body={...})``: any JSON body (malformed shapes).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

TEST_KEY = "sk-memlens-test-secret-0123456789"
ENDPOINTS = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings"}


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # chat answer text
    body: Any = None  # a JSON body sent as is
    raw: bytes | None = None  # bytes sent as is (garbage)
    delay_s: float = 0.0
    headers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Captured:
    method: str
    path: str
    headers: dict
    body: Any

    @property
    def prompt(self) -> str:
        """The user message of a chat request ("" for other requests)."""
        try:
            return "\n".join(m.get("content", "") for m in self.body.get("messages", []))
        except AttributeError:
            return ""


def hashed_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text`` (same text, same vector; different texts, near-orthogonal)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return [float(x) for x in v / np.linalg.norm(v)]


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class FakeOpenAI:
    """Start with ``with FakeOpenAI() as server:``; ``server.base_url`` goes into Settings.openai_base_url."""

    def __init__(self, dim: int = 8, default_chat: str | Callable[[str], str] = "DONE") -> None:
        self.dim = dim
        self.default_chat = default_chat
        self.requests: list[Captured] = []
        self._queues: dict[str, deque] = {"chat": deque(), "embeddings": deque()}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                server._send(self, 404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, endpoint: str, *replies: str | Reply) -> None:
        """Queue replies for ``chat`` or ``embeddings``; each request consumes one."""
        with self._lock:
            self._queues[endpoint].extend(replies)

    def reset(self) -> None:
        """Forget captured requests and pending scripted replies."""
        with self._lock:
            self.requests.clear()
            for q in self._queues.values():
                q.clear()

    def pending(self, endpoint: str) -> int:
        with self._lock:
            return len(self._queues[endpoint])

    def captured(self, endpoint: str | None = None) -> list[Captured]:
        with self._lock:
            reqs = list(self.requests)
        if endpoint is None:
            return reqs
        return [r for r in reqs if ENDPOINTS.get(r.path) == endpoint]

    # -- serving ----------------------------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        path = h.path.split("?", 1)[0]
        endpoint = ENDPOINTS.get(path)
        with self._lock:
            self.requests.append(Captured("POST", path, {k.lower(): v for k, v in h.headers.items()}, body))
            reply = self._queues[endpoint].popleft() if endpoint and self._queues[endpoint] else None
        if endpoint is None:
            self._send(h, 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply is None:
            reply = Reply()
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw is not None:
            self._send_bytes(h, reply.status, reply.raw, "text/plain")
            return
        if reply.body is not None:
            self._send(h, reply.status, reply.body)
            return
        if reply.status >= 400:
            kind = "rate_limit_error" if reply.status == 429 else "server_error"
            headers = {"retry-after-ms": "1", **reply.headers} if reply.status == 429 else reply.headers
            self._send(h, reply.status, {"error": {"message": f"scripted {reply.status}", "type": kind}}, headers)
            return
        if endpoint == "chat":
            self._send(h, 200, self._chat_body(body, reply.content))
        else:
            self._send(h, 200, self._embedding_body(body))

    def _chat_body(self, req: Any, content: str | None) -> dict:
        prompt = "\n".join(m.get("content", "") for m in (req or {}).get("messages", []))
        if content is None:
            content = self.default_chat(prompt) if callable(self.default_chat) else self.default_chat
        pt, ct = _tokens(prompt), _tokens(content)
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": (req or {}).get("model", "test-chat"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }

    def _embedding_body(self, req: Any) -> dict:
        texts = (req or {}).get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        tokens = sum(_tokens(str(t)) for t in texts)
        return {
            "object": "list",
            "model": (req or {}).get("model", "test-embed"),
            "data": [
                {"object": "embedding", "index": n, "embedding": hashed_vector(str(t), self.dim)}
                for n, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict | None = None) -> None:
        FakeOpenAI._send_bytes(h, status, json.dumps(body).encode("utf-8"), "application/json", headers)

    @staticmethod
    def _send_bytes(
        h: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str, headers: dict | None = None
    ) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass


def llm_settings(base, server: FakeOpenAI, **overrides: Any):
    """``base`` Settings pointed at ``server`` with a fake key, a 1 s timeout, 2 retries and a tiny backoff."""
    return base.with_overrides(
        {
            "openai_api_key": TEST_KEY,
            "openai_base_url": server.base_url,
            "chat_model": "test-chat",
            "llm_timeout_s": 1.0,
            "llm_retries": 2,
            "llm_backoff_s": 0.01,
            "embedder": "local",
            # Graph extraction through the LLM is one more chat call per item written: tests that script or count
            # chat calls would see it, so it is opted into (graph_extraction="llm") by the tests about it.
            "graph_extraction": "offline",
            **overrides,
        }
    )
