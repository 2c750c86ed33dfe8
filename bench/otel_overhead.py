"""What the OpenTelemetry export costs a retrieval (issue 31: at most 5 %): retrieve p50/p95 with the export off and
on, interleaved query by query on one store, the export sending every trace over OTLP/HTTP to a local sink process
(a stand-in for Phoenix or a collector that answers at once), and the export's own work per trace off the hot path.

    python bench/otel_overhead.py [--items 10000] [--store PATH] [--runs 80] [--hops 2] [--block 8]

``--store`` keeps the built store (bench/latency.py's synthetic memories) so a second run skips the embedding step.
"on" is the engine's own hook (engine/interop/otel_export.py): the caller pays a queue put; a worker thread builds the
spans once no call has run for 50 ms (at most 2 s later) and the SDK's BatchSpanProcessor sends them, both in this
process. Each "on" block ends with a flush, so the CPU line counts all the export's work; with blocks of back-to-back
calls longer than 2 s (``--block 20``) the worker runs beside them and their times show it. The last table is the
worker's CPU per trace, measured on its own.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import table
from latency import USER, build, pct
from synthetic import NAMES, TOPICS

from engine import MemoryEngine, Settings
from engine.interop.otel_export import JsonLinesExporter, LiveExport, SpanEmitter, attach_export, otlp_exporter
from engine.interop.otel_spans import retrieval_spans
from engine.providers.embedders import LocalMiniLM

# An OTLP/HTTP sink: answers every POST with 200 and an empty protobuf body, counts requests and bytes.
SINK = r"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def _cpu_of(call: Any, into: dict[str, float], key: str) -> Any:
    """``call`` that adds the CPU time its own thread spent in it to ``into[key]``."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return call(*args, **kwargs)
        finally:
            into[key] += time.thread_time() - t

    return timed


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--runs", type=int, default=80)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument(
        "--block",
        type=int,
        default=8,
        help="questions run off, then on (or on, then off) before the next block; a block of back-to-back calls "
        "longer than LiveExport.MAX_DEFER_S (2 s) makes the export's worker run beside the calls",
    )
    args = ap.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="memlens-otel-")) / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=LocalMiniLM())
    if engine.admin.stats().items < args.items:
        t = time.perf_counter()
        build(engine, args.items, 0, 0)
        print(f"built the store in {time.perf_counter() - t:.0f}s at {store}")
    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    try:
        port = int(sink.stdout.readline()) if sink.stdout else 0
        plain = engine.retrieval.retrieve
        sender = otlp_exporter(f"http://127.0.0.1:{port}/v1/traces")
        export = LiveExport(SpanEmitter(sender))
        # The export's own CPU, thread by thread: the worker's (build the spans, end them into the SDK) and the
        # BatchSpanProcessor's (encode to protobuf, POST); thread_time counts only the thread that runs the code.
        spent = {"worker": 0.0, "sender": 0.0}
        export.emitter.emit = _cpu_of(export.emitter.emit, spent, "worker")  # type: ignore[method-assign]
        sender.export = _cpu_of(sender.export, spent, "sender")
        attach_export(engine, export)
        submit = export.submit
        export.submit = lambda build: submit(_cpu_of(build, spent, "worker"))  # type: ignore[method-assign]
        hooked = engine.retrieval.retrieve
        queries = [
            f"What did {NAMES[i % len(NAMES)]} decide about {TOPICS[(i * 3) % len(TOPICS)]}?" for i in range(args.runs)
        ]
        for q in queries[:5]:  # warm caches and the model
            plain(USER, q, hops=args.hops)
            hooked(USER, q, hops=args.hops)
        off: list[float] = []
        on: list[float] = []
        cpu: dict[str, float] = {"off": 0.0, "on": 0.0}  # the process's CPU (every thread) per mode
        traces = []
        for start in range(0, len(queries), args.block):
            block = queries[start : start + args.block]
            # the same questions off and on, alternating which goes first, so a drift of the machine falls on both
            for mode in ("off", "on") if (start // args.block) % 2 == 0 else ("on", "off"):
                call, into = (plain, off) if mode == "off" else (hooked, on)
                c = time.process_time()
                for q in block:
                    engine.retrieval.pipeline.query_vectors.clear()  # a new question each time, as an agent asks
                    t = time.perf_counter()
                    traces.append(call(USER, q, hops=args.hops))
                    into.append(1000 * (time.perf_counter() - t))
                if mode == "on":
                    export.flush()  # the block's spans built and sent: their CPU is counted in this block
                cpu[mode] += time.process_time() - c
        t = time.perf_counter()
        flushed = export.flush()
        drain_ms = 1000 * (time.perf_counter() - t)
        export.close()
    finally:
        sink.terminate()
        sink.wait(timeout=10)
    p50_off, p50_on = statistics.median(off), statistics.median(on)
    mean_off, mean_on = statistics.fmean(off), statistics.fmean(on)
    print(f"store: {engine.admin.stats().items} items for one user; {len(queries)} queries x 2, {args.hops} hops")
    print(
        table(
            ["export", "p50 ms", "p95 ms", "mean ms", "vs off (p50)", "vs off (mean)"],
            [
                ["off", f"{p50_off:.1f}", f"{pct(off, 0.95):.1f}", f"{mean_off:.1f}", "", ""],
                [
                    "on (OTLP/HTTP, batched)",
                    f"{p50_on:.1f}",
                    f"{pct(on, 0.95):.1f}",
                    f"{mean_on:.1f}",
                    f"{100 * (p50_on / p50_off - 1):+.1f} %",
                    f"{100 * (mean_on / mean_off - 1):+.1f} %",
                ],
            ],
        )
    )
    paired = [b - a for a, b in zip(off, on)]  # the same question off and on, close in time: the drift cancels
    print(
        f"paired (on - off, same question): median {statistics.median(paired):+.1f} ms = "
        f"{100 * statistics.median(paired) / p50_off:+.1f} % of off p50"
    )
    worker_ms, sender_ms = (1000 * spent[k] / len(queries) for k in ("worker", "sender"))
    own = worker_ms + sender_ms
    print(
        f"the export's own CPU per retrieval: worker {worker_ms:.1f} ms + sender {sender_ms:.1f} ms = {own:.1f} ms "
        f"= {100 * own / p50_off:.1f} % of the retrieval's p50"
    )
    cpu_off, cpu_on = (1000 * cpu[m] / len(queries) for m in ("off", "on"))
    print(
        f"CPU per retrieval, every thread of the process (the export's worker and sender included): off "
        f"{cpu_off:.1f} ms, on {cpu_on:.1f} ms ({100 * (cpu_on / cpu_off - 1):+.1f} %)"
    )
    print(f"exported spans all taken by the sink: {flushed}; what was left to send at the end: {drain_ms:.0f} ms")
    print()
    # The worker's own work per trace (build the spans, end them into the SDK, serialise): off the caller's path.
    emitter = SpanEmitter(JsonLinesExporter(_Discard()), batch=False)  # type: ignore[arg-type]
    build_ms, emit_ms = [], []
    for trace in traces[: len(queries)]:  # CPU time of this thread: what the worker takes from the process
        t = time.thread_time()
        spans = retrieval_spans(trace)
        build_ms.append(1000 * (time.thread_time() - t))
        t = time.thread_time()
        emitter.emit(spans)
        emit_ms.append(1000 * (time.thread_time() - t))
    emitter.shutdown()
    per_trace = sum(1 for s in retrieval_spans(traces[0])[0].walk())
    print(f"the export worker's work per trace ({per_trace} spans), its CPU measured on its own:")
    print(
        table(
            ["step", "p50 CPU ms", "p95 CPU ms"],
            [
                ["build span data (otel_spans)", f"{statistics.median(build_ms):.2f}", f"{pct(build_ms, 0.95):.2f}"],
                ["SDK spans + JSON", f"{statistics.median(emit_ms):.2f}", f"{pct(emit_ms, 0.95):.2f}"],
            ],
        )
    )


if __name__ == "__main__":
    main()
