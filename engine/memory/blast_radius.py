"""A memory's blast radius: every trace it was a candidate in, the contexts it entered (and at which rank), the
evaluation cases it touched and the labels it received, so a memory labelled harmful can be followed to
everything it reached before it is forgotten.

Traces are found by their ``memory_ids`` column (every candidate's id; migration 0005), never by unpacking bodies:
at 1k traces that is one indexed-list scan. Traces stored before 0005 have no list yet and are found by their
``context_ids`` text instead."""

from __future__ import annotations

import json
from typing import Any

from ..records import FeedbackEvent
from ..store.schema import KIND_TABLES
from .base import Backends, like_pattern, loads
from .feedback import FeedbackLog
from .insight_records import BlastCase, BlastRadius, BlastTrace

_TEXT_COLUMN = {"items": "content", "episodes": "summary", "skills": "description"}


def _stored(conn: Any, user_id: str, memory_id: str) -> tuple[str, str, str]:
    """The memory's kind, text and state now."""
    for kind, table in KIND_TABLES.items():
        row = conn.execute(
            f"SELECT {_TEXT_COLUMN[table]}, archived_at FROM {table} WHERE id=? AND user_id=?", [memory_id, user_id]
        ).fetchone()
        if row is not None:
            return kind, row[0], "forgotten (soft)" if row[1] is not None else "active"
    return "", "", "not stored"


def blast_radius(b: Backends, feedback: FeedbackLog, user_id: str, memory_id: str, limit: int) -> BlastRadius:
    quoted = like_pattern(json.dumps(memory_id))
    with b.db.read() as conn:
        kind, text, state = _stored(conn, user_id, memory_id)
        touched = (
            "FROM traces WHERE user_id=? AND (list_has_any(memory_ids, ?::VARCHAR[]) OR "
            "(memory_ids IS NULL AND CAST(context_ids AS VARCHAR) LIKE ? ESCAPE '\\'))"
        )
        params = [user_id, [memory_id], quoted]
        # Every trace's context is read as text, only the listed ones' parsed: a memory can sit in thousands.
        contexts = conn.execute(f"SELECT id, CAST(context_ids AS VARCHAR) {touched}", params).fetchall()
        in_context = sorted(t for t, text in contexts if text is not None and json.dumps(memory_id) in text)
        traces = conn.execute(
            f"SELECT id, question, created_at, context_ids {touched} ORDER BY created_at DESC, id LIMIT ?",
            [*params, limit],
        ).fetchall()
        ranks: dict[str, int | None] = {}
        for trace_id, _, _, context_ids in traces:
            context = loads(context_ids) or []
            ranks[trace_id] = context.index(memory_id) + 1 if memory_id in context else None
        results = (
            conn.execute(
                "SELECT r.run_id, r.case_id, r.question, u.set_name FROM eval_results r "
                "JOIN eval_runs u ON u.id = r.run_id WHERE r.user_id=? AND r.trace_id IN (SELECT unnest(?)) "
                "ORDER BY u.set_name, r.case_id, r.run_id",
                [user_id, in_context],
            ).fetchall()
            if in_context
            else []
        )
        expecting = conn.execute(
            "SELECT set_name, case_id, question, expected FROM eval_cases WHERE user_id=? AND "
            "CAST(expected AS VARCHAR) LIKE ? ESCAPE '\\' ORDER BY set_name, case_id",
            [user_id, quoted],
        ).fetchall()
    labels = feedback.events(user_id, item_id=memory_id, limit=10_000, current_only=True)  # replaced labels are history
    by_trace: dict[str, list[FeedbackEvent]] = {}
    for event in labels:
        if event.trace_id is not None:
            by_trace.setdefault(event.trace_id, []).append(event)
    shown = tuple(
        BlastTrace(t, question, created_at, ranks[t], tuple(by_trace.get(t, ())))
        for t, question, created_at, _ in traces
    )
    cases: dict[tuple[str, str], BlastCase] = {}
    for set_name, case_id, question, expected in expecting:
        if memory_id in (loads(expected) or []):  # the LIKE found candidates; the JSON decides
            cases[(set_name, case_id)] = BlastCase(set_name, case_id, question, True, ())
    for run_id, case_id, question, set_name in results:
        case = cases.get((set_name, case_id), BlastCase(set_name, case_id, question, False, ()))
        cases[(set_name, case_id)] = BlastCase(set_name, case_id, case.question, case.expected, (*case.runs, run_id))
    return BlastRadius(
        memory_id,
        kind,
        text,
        state,
        len(contexts),
        len(in_context),
        shown,
        tuple(cases[k] for k in sorted(cases)),
        tuple(labels),
    )
