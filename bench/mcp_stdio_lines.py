"""How long the MCP stdio server takes to answer a ping sent right behind one hostile line (issue 29: a 50 MB malformed
line took ~40 s to reject and the request behind it got no answer in 30 s).

    python bench/mcp_stdio_lines.py [--mb 50] [--runs 3]

Starts ``python -m engine --store TMP mcp`` once, then for each kind of line writes it followed by a ping and times
from the end of the write to the ping's answer (median of ``--runs``). Lines over the limit (4 MiB, HTTP's 413 limit)
are refused unread; lines under it are scanned for their id by a linear pass over tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import table

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 4 * 1024 * 1024
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def lines(mb: int) -> list[tuple[str, bytes]]:
    big = mb * 1024 * 1024
    return [
        (f"{mb} MB, id first, unclosed", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"' + b"a" * big),
        (f"{mb} MB of top-level keys, no id", b'{"jsonrpc":"2.0",' + b'"k":0,' * (big // 6)),
        (f"{mb} MB of garbage", b"x" * big),
        ("4 MiB of nested [1,", (b'{"jsonrpc":"2.0","params":' + b"[1," * (LIMIT // 3))[:LIMIT]),
        ("4 MiB of [],", (b'{"jsonrpc":"2.0","params":[' + b"[]," * (LIMIT // 3))[:LIMIT]),
        ("4 MiB of top-level keys", (b'{"jsonrpc":"2.0",' + b'"k":0,' * (LIMIT // 6))[:LIMIT]),
    ]


class Server:
    def __init__(self, store: Path) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LANCEDB_LOG": "error"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "--store", str(store), "mcp"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.buffer = b""
        self.send(json.dumps(INIT).encode())
        self.until_id(0)
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def until_id(self, request_id: int, timeout_s: float = 300) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" in self.buffer:
                line, _, self.buffer = self.buffer.partition(b"\n")
                if json.loads(line).get("id") == request_id:
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {request_id} in {timeout_s} s")
            if select.select([self.proc.stdout.fileno()], [], [], left)[0]:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise RuntimeError("the server exited")
                self.buffer += chunk

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "store")
        rows = []
        request_id = 100
        try:
            for label, line in lines(args.mb):
                times = []
                for _ in range(args.runs):
                    request_id += 1
                    server.send(line)
                    start = time.perf_counter()
                    server.send(f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping"}}'.encode())
                    server.until_id(request_id)
                    times.append(time.perf_counter() - start)
                rows.append((label, len(line), statistics.median(times), max(times)))
        finally:
            server.close()
    print(table(["line", "bytes", "ping answered after (s, median)", "max (s)"], rows))


if __name__ == "__main__":
    main()
