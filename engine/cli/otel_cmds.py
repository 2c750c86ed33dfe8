"""``memlens export-otel``: stored traces (and the forget log) as OpenTelemetry spans, sent to an OTLP/HTTP endpoint
or written to a file as JSON lines (engine/interop/otel_export.py, span layout in engine/interop/otel_spans.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trace.trace_index import TraceFilter
from ..vocab import TraceOrigin
from .args import add_user, bounded_int
from .output import Result

if TYPE_CHECKING:
    from .main import Context, Parser, Subcommands


def _human(data: dict[str, Any]) -> str:
    return f"Exported {data['spans']} spans ({data['traces']} traces, {data['forgets']} forgets) to {data['to']}" + (
        "." if data["flushed"] else "; the endpoint did not take them all in time."
    )


def cmd_export_otel(ctx: Context) -> Result:
    from ..interop.otel_export import SpanEmitter, otlp_exporter, stored_spans, write_json_lines

    a = ctx.args
    filters = TraceFilter(user_id=a.user, since=a.since, origins=tuple(a.origin or ()))
    spans, traces = stored_spans(ctx.engine, filters, a.limit, not a.no_content, not a.no_forgets)
    if a.file:
        emitter, out = write_json_lines(Path(a.file))
        destination = str(a.file)
    else:
        emitter, out = SpanEmitter(otlp_exporter(a.endpoint)), None
        destination = a.endpoint or "the OTEL_EXPORTER_OTLP_* endpoint (default http://localhost:4318/v1/traces)"
    try:
        emitter.emit(spans)
        flushed = emitter.flush()
    finally:
        emitter.shutdown()
        if out is not None:
            out.close()
    forgets = sum(1 for s in spans if s.name == "delete_memory")
    total = sum(1 for root in spans for _ in root.walk())
    data = {"traces": traces, "forgets": forgets, "spans": total, "to": destination, "flushed": flushed}
    return Result(data, _human)


def register(sub: Subcommands, common: Parser) -> None:
    p = sub.add_parser(
        "export-otel",
        parents=[common],
        help="send stored traces as OpenTelemetry spans to an OTLP endpoint (Phoenix, ...) or a JSON-lines file",
        description="Stored traces (newest first) as search_memory spans with their hops and stages, and the "
        "forget log as delete_memory spans. Without --file they go over OTLP/HTTP to --endpoint, else to what the "
        "OTEL_EXPORTER_OTLP_* variables name. A hard-forgotten memory's text is never exported.",
    )
    p.set_defaults(handler=cmd_export_otel)
    add_user(p, required=False)
    p.add_argument("--since", metavar="ISO", help="only traces stored at or after this time")
    p.add_argument(
        "--origin",
        action="append",
        choices=[o.value for o in TraceOrigin],
        help="only traces of this origin (repeatable): agent, dashboard, evaluation, import, unknown",
    )
    p.add_argument("--limit", type=bounded_int(1, 100_000), default=100, metavar="N", help="traces (default 100)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--endpoint", metavar="URL", help="OTLP/HTTP traces URL, e.g. http://127.0.0.1:6006/v1/traces")
    where.add_argument("--file", metavar="PATH", help="write the spans here as JSON lines instead of sending them")
    p.add_argument("--no-content", action="store_true", help="leave texts out: ids, scores and ranks only")
    p.add_argument("--no-forgets", action="store_true", help="leave the forget log's delete_memory spans out")
