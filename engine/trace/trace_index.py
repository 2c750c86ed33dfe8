"""The trace table: every stored trace, filtered, sorted and paged in SQL from the columns a trace is stored with
(no body is unpacked), and the origin each newly stored trace is recorded with.

A trace's origin is set by whoever asks for the retrieval, not by the pipeline: the dashboard and evaluation runs
wrap their calls in :func:`recording_origin`; everything else (the Python API, MCP, the CLI) is an agent's. A context
variable carries it, so the retrieval pipeline's signature does not change and a thread of its own (each Streamlit
session runs in one) starts as an agent's again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..clock import parse_time
from ..errors import InvalidInput
from ..ids import check_id
from ..memory.base import page_args
from ..presets import PRESETS
from ..records import Page
from ..store.sql.database import Connection, one_row
from ..validation import check_int, check_number, check_text
from ..vocab import TraceOrigin

_ORIGIN: ContextVar[TraceOrigin] = ContextVar("memlens_trace_origin", default=TraceOrigin.AGENT)

# The origins a trace is stored with from now on ("unknown" is only ever inferred for older rows).
RECORDED_ORIGINS: tuple[TraceOrigin, ...] = (
    TraceOrigin.AGENT,
    TraceOrigin.DASHBOARD,
    TraceOrigin.EVALUATION,
    TraceOrigin.IMPORT,
    TraceOrigin.LANGGRAPH,
)


def check_origin(value: object) -> TraceOrigin:
    """A trace origin by its name (a TraceOrigin is one), or InvalidInput naming the ones there are."""
    if isinstance(value, str):
        try:
            return TraceOrigin(value)
        except ValueError:
            pass
    raise InvalidInput(
        f"unknown trace origin {str(value)[:30]!r}; use one of {', '.join(o.value for o in TraceOrigin)}"
    )


def current_origin() -> TraceOrigin:
    """The origin a trace stored now is recorded with (``agent`` unless a caller said otherwise)."""
    return _ORIGIN.get()


@contextmanager
def recording_origin(origin: str) -> Iterator[None]:
    """Traces stored inside this block are recorded with ``origin`` (``dashboard``, ``evaluation``, ...)."""
    token = _ORIGIN.set(check_origin(origin))
    try:
        yield
    finally:
        _ORIGIN.reset(token)


# Sort keys -> the SQL expression (code, never user text). Ties are broken by the newest, then the id.
_SORT_SQL: dict[str, str] = {
    "created_at": "t.created_at",
    "latency": "t.total_ms",
    "hops": "t.hops",
    "user": "t.user_id",
    "question": "t.question",
    "origin": "t.origin",
    "labels": "coalesce(f.n, 0)",
}
TRACE_SORTS: tuple[str, ...] = tuple(_SORT_SQL)
MAX_TEXT_CHARS = 1_000


@dataclass(frozen=True)
class TraceFilter:
    """Which stored traces a listing shows. Every field narrows; the defaults show every trace.

    ``text`` is found anywhere in the question, ignoring case. ``since``/``until`` bound the time it was stored
    (``until`` excluded). ``min_ms``/``max_ms`` bound the whole retrieval's latency. ``labelled`` True keeps the
    traces with at least one feedback label, False those without. ``origins`` keeps those origins (empty: all);
    ``exclude_origins`` drops those (the dashboard leaves ``evaluation`` out unless asked)."""

    user_id: str | None = None
    text: str = ""
    since: datetime | str | None = None
    until: datetime | str | None = None
    preset: str | None = None
    hops: int | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    labelled: bool | None = None
    origins: tuple[str, ...] = ()
    exclude_origins: tuple[str, ...] = ()


def _where(flt: TraceFilter) -> tuple[str, list[Any]]:
    """The WHERE clause and its parameters. Values travel as parameters only."""
    parts: list[str] = []
    params: list[Any] = []
    if flt.user_id is not None:
        parts.append("t.user_id = ?")
        params.append(check_id(flt.user_id, "user id"))
    if flt.text:
        check_text(flt.text, "question text", MAX_TEXT_CHARS, blank_ok=True)
        if flt.text.strip():
            parts.append("strpos(lower(t.question), lower(?)) > 0")
            params.append(flt.text.strip())
    if flt.since is not None:
        parts.append("t.created_at >= ?")
        params.append(parse_time(flt.since, "since"))
    if flt.until is not None:
        parts.append("t.created_at < ?")
        params.append(parse_time(flt.until, "until"))
    if flt.preset is not None:
        if not isinstance(flt.preset, str) or flt.preset not in PRESETS:
            raise InvalidInput(f"unknown preset {str(flt.preset)[:30]!r}; use one of {', '.join(sorted(PRESETS))}")
        # A trace stored before presets were recorded in their own column (NULL) is not said to have any.
        parts.append("t.preset = ?")
        params.append(flt.preset)
    if flt.hops is not None:
        parts.append("t.hops = ?")
        params.append(check_int(flt.hops, "hops", lo=0, hi=1_000))
    if flt.min_ms is not None:
        parts.append("t.total_ms >= ?")
        params.append(check_number(flt.min_ms, "min_ms", lo=0, hi=1e12))
    if flt.max_ms is not None:
        parts.append("t.total_ms <= ?")
        params.append(check_number(flt.max_ms, "max_ms", lo=0, hi=1e12))
    if flt.labelled is not None:
        if not isinstance(flt.labelled, bool):
            raise InvalidInput("labelled must be True, False or None")
        parts.append("f.n IS NOT NULL" if flt.labelled else "f.n IS NULL")
    for field, values, op in (("origins", flt.origins, "IN"), ("exclude_origins", flt.exclude_origins, "NOT IN")):
        if not isinstance(values, (tuple, list, set, frozenset)):
            raise InvalidInput(f"{field} must be a list of origins, not {type(values).__name__}")
        if values:
            checked = [check_origin(o).value for o in values]
            parts.append(f"coalesce(t.origin, 'unknown') {op} ({', '.join('?' for _ in checked)})")
            params.extend(checked)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


# Current labels per trace (a label replaced by a change of mind or toggled off has ``replaced_at``: migration
# 0008), joined once: "labelled" and the labels column read it.
_FROM = (
    "FROM traces t LEFT JOIN (SELECT trace_id, count(*) AS n FROM feedback WHERE trace_id IS NOT NULL "
    "AND replaced_at IS NULL GROUP BY trace_id) f ON f.trace_id = t.id"
)
_KEYS = (
    "trace_id",
    "user_id",
    "session_id",
    "question",
    "hops",
    "stop_reason",
    "embedder",
    "reasoner",
    "total_ms",
    "context_ids",
    "created_at",
    "origin",
    "preset",
    "labels",
)


def list_trace_rows(
    conn: Connection,
    flt: TraceFilter,
    sort: str = "created_at",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> Page[dict[str, Any]]:
    """One page of trace summaries (no bodies) that ``flt`` keeps, sorted by ``sort`` (a key of :data:`TRACE_SORTS`)."""
    limit, offset = page_args(limit, offset)
    if sort not in TRACE_SORTS:
        raise InvalidInput(f"cannot sort traces by {str(sort)[:30]!r}; use one of {', '.join(TRACE_SORTS)}")
    where, params = _where(flt)
    direction = "DESC" if descending else "ASC"
    # NULL latencies (a trace without timings) sort last either way.
    order = f"{_SORT_SQL[sort]} {direction} NULLS LAST, t.created_at DESC, t.id"
    total = one_row(conn.execute(f"SELECT count(*) {_FROM}{where}", params))[0]
    rows = conn.execute(
        "SELECT t.id, t.user_id, t.session_id, t.question, t.hops, t.stop_reason, t.embedder, t.strategy, "
        "t.total_ms, t.context_ids, t.created_at, coalesce(t.origin, 'unknown'), t.preset, coalesce(f.n, 0) "
        f"{_FROM}{where} ORDER BY {order} LIMIT ? OFFSET ?",
        params + [int(limit), int(offset)],
    ).fetchall()
    return Page(tuple(dict(zip(_KEYS, r)) for r in rows), int(total), int(limit), int(offset))
