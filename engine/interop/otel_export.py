"""OpenTelemetry export: span data (otel_spans.py) through the OpenTelemetry SDK to an OTLP/HTTP endpoint or a file.

Off by default. With the setting ``otel_export`` on, :func:`attach_export` hooks an open engine: every retrieval,
write and forget is handed to a worker thread that builds its spans once the engine is quiet (:class:`LiveExport`)
and gives them to the SDK's ``BatchSpanProcessor``, which sends them in batches from its own thread. The caller's
cost is one queue put; the spans' times are the trace's own (otel_spans.py), so the export never reads a clock for a
retrieval.

Where spans go: the ``opentelemetry-exporter-otlp-proto-http`` exporter reads the standard variables itself
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``, ...;
default http://localhost:4318/v1/traces). Spans carry the resource attributes ``service.name=memlens`` and
``openinference.project.name=memlens`` (Phoenix files them under that project).

The packages are optional installs (requirements-dev.txt): they are imported only when an export is made.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..clock import parse_time
from ..errors import InvalidInput
from ..trace.trace_index import TraceFilter
from ..vocab import MemoryStatus
from .otel_spans import (
    CREATE_MEMORY,
    UPDATE_MEMORY,
    MemoryWrite,
    SpanData,
    delete_span,
    iso_to_ns,
    retrieval_spans,
    write_span,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from ..engine import MemoryEngine

log = logging.getLogger(__name__)
SERVICE_NAME = "memlens"
PROJECT_NAME = "memlens"  # Phoenix's project (resource attribute openinference.project.name)
_STOP = object()
MAX_SPAN_ATTRIBUTES = 100_000


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:  # an optional install
        raise InvalidInput(
            "OpenTelemetry export needs the opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http packages "
            "(pip install -r requirements-dev.txt)"
        ) from None
    return sdk_trace


def otlp_exporter(endpoint: str | None = None, headers: dict[str, str] | None = None) -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter: ``endpoint`` is the full traces URL (…/v1/traces); None lets the exporter
    read the OTEL_EXPORTER_OTLP_* variables."""
    _sdk()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter: SpanExporter = OTLPSpanExporter(endpoint=endpoint, headers=headers)
    return exporter


class JsonLinesExporter:
    """A span exporter (the SDK's exporter interface, duck-typed) writing each span as one line of JSON, the SDK's
    own ``ReadableSpan.to_json``, to ``out``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        with self._lock:
            for span in spans:
                self.out.write(span.to_json(indent=None) + "\n")
            self.out.flush()
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None


class SpanEmitter:
    """Span data turned into SDK spans of one ``TracerProvider`` (its parent links and times as given). ``batch``:
    a ``BatchSpanProcessor`` (exports from its own thread); otherwise each span is exported as it ends."""

    def __init__(self, exporter: SpanExporter | JsonLinesExporter, batch: bool = True) -> None:
        sdk_trace = _sdk()
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        resource = Resource.create({"service.name": SERVICE_NAME, "openinference.project.name": PROJECT_NAME})
        # The SDK keeps 128 attributes a span by default; a hop's documents alone can pass that (4 per candidate).
        limits = sdk_trace.SpanLimits(max_span_attributes=MAX_SPAN_ATTRIBUTES)
        self.provider: TracerProvider = sdk_trace.TracerProvider(
            resource=resource, span_limits=limits, shutdown_on_exit=False
        )
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("memlens.interop.otel_export")
        self.emitted = 0

    def emit(self, spans: Iterable[SpanData]) -> None:
        from opentelemetry import trace as trace_api

        def start(data: SpanData, parent: Any) -> None:
            context = trace_api.set_span_in_context(parent) if parent is not None else None
            kind = trace_api.SpanKind.CLIENT if data.client else trace_api.SpanKind.INTERNAL
            span = self.tracer.start_span(
                data.name, context=context, kind=kind, attributes=dict(data.attributes), start_time=data.start_ns
            )
            if "error.type" in data.attributes:
                span.set_status(trace_api.Status(trace_api.StatusCode.ERROR, str(data.attributes["error.type"])))
            for child in data.children:
                start(child, span)
            span.end(end_time=max(data.end_ns, data.start_ns))
            self.emitted += 1

        for root in spans:
            start(root, None)

    def flush(self, timeout_s: float = 30.0) -> bool:
        return bool(self.provider.force_flush(int(timeout_s * 1000)))

    def shutdown(self) -> None:
        self.provider.shutdown()


class LiveExport:
    """The export hooked into an engine: span data is built and emitted by one worker thread, off the caller's path.

    The worker is Python code: run while a retrieval runs, it would take the GIL each time the retrieval's native
    calls (the model, LanceDB, DuckDB) give it up, and the retrieval would wait to get it back. So it waits until no
    hooked call has run for ``QUIET_S`` (an agent's LLM call, its own work), or at most ``MAX_DEFER_S`` after a call
    handed its spans over (under back-to-back calls it then runs beside them). ``flush()`` does not wait: it asks the
    worker to finish what it holds and the SDK to export it."""

    QUIET_S = 0.05
    MAX_DEFER_S = 2.0

    def __init__(self, emitter: SpanEmitter, capture_content: bool = True) -> None:
        self.emitter = emitter
        self.capture_content = capture_content
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending = 0
        self._active = 0  # hooked calls running now
        self._last_end = 0.0  # time.monotonic() when the last one ended
        self._flushing = 0
        self._idle = threading.Condition()
        self._worker = threading.Thread(target=self._run, name="memlens-otel-export", daemon=True)
        self._worker.start()
        atexit.register(self.close)  # registered after the provider: runs first, so the queue drains into it

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """Mark a hooked call as running (the worker keeps quiet meanwhile)."""
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._last_end = time.monotonic()
                self._idle.notify_all()

    def submit(self, build: Callable[[], Sequence[SpanData]]) -> None:
        """Hand over a function that builds spans; it runs on the worker thread."""
        with self._idle:
            self._pending += 1
        self._queue.put((time.monotonic(), build))

    def _wait_for_quiet(self, since: float) -> None:
        with self._idle:
            while not self._flushing:
                now = time.monotonic()
                if now - since >= self.MAX_DEFER_S:
                    return
                if self._active == 0:
                    quiet = now - self._last_end
                    if quiet >= self.QUIET_S:
                        return
                    self._idle.wait(self.QUIET_S - quiet)
                else:
                    self._idle.wait(self.MAX_DEFER_S - (now - since))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            since, build = item
            try:
                self._wait_for_quiet(since)
                self.emitter.emit(build())
            except Exception as exc:  # an export must never break the agent: logged and dropped
                log.warning("OpenTelemetry export dropped spans (%s: %s)", type(exc).__name__, exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Have the worker build what was handed over now, then wait for the SDK to export it."""
        with self._idle:
            self._flushing += 1
            self._idle.notify_all()
            try:
                if not self._idle.wait_for(lambda: self._pending == 0, timeout=timeout_s):
                    return False
            finally:
                self._flushing -= 1
        return self.emitter.flush(timeout_s)

    def close(self) -> None:
        if not self._worker.is_alive():
            return
        self.flush()
        self._queue.put(_STOP)
        self._worker.join(timeout=5)
        self.emitter.shutdown()


def _one_span(make: Callable[..., SpanData], *args: Any) -> tuple[SpanData, ...]:
    return (make(*args),)


def _now_ns() -> int:
    return time.time_ns()


def _hook(
    target: Any,
    name: str,
    after: Callable[[tuple[Any, ...], dict[str, Any], Any, int, int], None],
    export: LiveExport,
) -> None:
    """Replace ``target.name`` on the instance with a wrapper that runs the call as ``export.calling()`` and then
    calls ``after(args, kwargs, result, t0, t1)`` (internal calls through ``self.name`` go through it too)."""
    original = getattr(target, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with export.calling():
            t0 = _now_ns()
            result = original(*args, **kwargs)
            after(args, kwargs, result, t0, _now_ns())
        return result

    wrapped.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(target, name, wrapped)


def attach_export(engine: MemoryEngine, export: LiveExport) -> LiveExport:
    """Hook ``engine`` so that its retrievals (``search_memory``), writes of items, episodes and skills
    (``create_memory``), working-memory slots and skill outcomes (``update_memory``) and forgets (``delete_memory``)
    are exported through ``export``."""
    capture = export.capture_content

    def retrieved(args: tuple[Any, ...], kwargs: dict[str, Any], trace: Any, t0: int, t1: int) -> None:
        export.submit(lambda: retrieval_spans(trace, capture))

    def created(kind: str, text_of: Callable[[Any], str], meta_of: Callable[[Any], dict[str, Any]]) -> Any:
        def after(args: tuple[Any, ...], kwargs: dict[str, Any], records: Any, t0: int, t1: int) -> None:
            by_user: dict[str, list[MemoryWrite]] = {}
            for r in records or ():
                by_user.setdefault(r.user_id, []).append(MemoryWrite(r.id, kind, text_of(r), meta_of(r)))
            for user, writes in by_user.items():
                export.submit(partial(_one_span, write_span, CREATE_MEMORY, user, writes, t0, t1, capture))

        return after

    def slot_set(args: tuple[Any, ...], kwargs: dict[str, Any], value: Any, t0: int, t1: int) -> None:
        user_id, session_id, slot = (list(args) + [kwargs.get(k) for k in ("user_id", "session_id", "slot")])[:3]
        write = MemoryWrite(f"{session_id}/{slot}", "working", str(value), {"session_id": session_id, "slot": slot})
        export.submit(lambda: (write_span(UPDATE_MEMORY, str(user_id), [write], t0, t1, capture),))

    def outcome(args: tuple[Any, ...], kwargs: dict[str, Any], skill: Any, t0: int, t1: int) -> None:
        if getattr(skill, "id", None) is None:
            return
        meta = {"success_count": getattr(skill, "success_count", None), "failure_count": skill.failure_count}
        write = MemoryWrite(skill.id, "procedural", "", meta)
        export.submit(lambda: (write_span(UPDATE_MEMORY, skill.user_id, [write], t0, t1, False),))

    def forgot(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, t0: int, t1: int) -> None:
        if not result.forgotten:
            return
        user_id = args[0] if args else kwargs["user_id"]
        actor = kwargs.get("actor", args[5] if len(args) > 5 else "api")
        ids = tuple(result.forgotten)
        export.submit(lambda: (delete_span(user_id, result.memory_type, ids, result.mode, actor, t0, t1),))

    _hook(engine.retrieval, "retrieve", retrieved, export)
    _hook(engine.items, "add", created("semantic", lambda i: i.content, lambda i: {"category": i.category}), export)
    _hook(engine.episodes, "add", created("episodic", lambda e: e.searchable_text, lambda e: {}), export)
    _hook(engine.skills, "add", created("procedural", lambda s: f"{s.name}: {s.description}", lambda s: {}), export)
    _hook(engine.working, "set", slot_set, export)
    _hook(engine.skills, "report_outcome", outcome, export)
    _hook(engine.forgetting, "forget", forgot, export)
    return export


def live_export_for(engine: MemoryEngine) -> LiveExport | None:
    """The live export the engine's settings ask for (``otel_export``), hooked into it; None when it is off."""
    settings = engine.settings
    if not settings.otel_export:
        return None
    emitter = SpanEmitter(otlp_exporter())
    return attach_export(engine, LiveExport(emitter, settings.otel_capture_content))


def write_json_lines(path: Path) -> tuple[SpanEmitter, TextIO]:
    """An emitter writing spans as JSON lines to ``path`` (created or overwritten), and the open file to close."""
    out = path.open("w", encoding="utf-8")
    return SpanEmitter(JsonLinesExporter(out), batch=False), out


def stored_spans(
    engine: MemoryEngine, filters: TraceFilter, limit: int, capture_content: bool = True, forgets: bool = True
) -> tuple[list[SpanData], int]:
    """Spans of the stored traces ``filters`` keeps (newest first, at most ``limit``), and of the forget log's
    entries in the same user and time window when ``forgets``; returns them and the number of traces. A memory the
    store no longer holds (hard-forgotten, or not in this store) is exported without its text, whatever the stored
    trace kept."""
    spans: list[SpanData] = []
    page = engine.traces.list_traces(limit=limit, filters=filters)
    for row in page.rows:
        trace = engine.traces.get(row["trace_id"])
        ids = sorted({c.id for h in trace.hops for c in h.candidates} | {r.id for r in trace.ranking})
        states = engine.traces.memory_states(trace.user_id, ids) if ids else {}
        gone = {i for i, s in states.items() if s.status in (MemoryStatus.FORGOTTEN, MemoryStatus.MISSING)}
        spans.extend(retrieval_spans(trace, capture_content, gone))
    if forgets:
        since = parse_time(filters.since, "since") if filters.since is not None else None
        for entry in engine.forgetting.log(filters.user_id, limit=limit):
            when = parse_time(entry.at, "forget time")
            if since is not None and when < since:
                continue
            at = iso_to_ns(when)
            spans.append(delete_span(entry.user_id, entry.memory_type, entry.ids, entry.mode, entry.actor, at, at))
    return spans, len(page.rows)
