"""Aggregate counts for dashboards, computed in SQL: activity per day and memory kind, episode outcome counts.

One ``GROUP BY`` per table inside a single ``UNION ALL`` query, so the cost does not depend on how many rows a page
shows and nothing is loaded row by row.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from ..clock import optional_time
from ..ids import check_id
from .base import Backends

# kind -> (table, timestamp column). Archived memories still count as activity on the day they
# were written, since the chart shows when things happened, not what is live now.
ACTIVITY_SOURCES: dict[str, tuple[str, str]] = {
    "messages": ("messages", "created_at"),
    "semantic items": ("items", "created_at"),
    "episodes": ("episodes", "created_at"),
    "skill outcomes": ("skill_outcomes", "occurred_at"),
    "working-memory edits": ("working_history", "occurred_at"),
    "feedback labels": ("feedback", "created_at"),
    "retrieval traces": ("traces", "created_at"),
    "forget actions": ("forget_log", "occurred_at"),
}


def daily_activity(
    b: Backends, user_id: str | None = None, since: datetime | str | None = None, until: datetime | str | None = None
) -> list[dict[str, Any]]:
    """``[{"day": date, "kind": str, "count": int}]`` ordered by day then kind (UTC days), zero days omitted."""
    conditions: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        conditions.append("user_id = ?")
        params.append(check_id(user_id, "user id"))
    start = optional_time(since, "since")
    end = optional_time(until, "until")
    parts, args = [], []
    for kind, (table, column) in ACTIVITY_SOURCES.items():
        where = list(conditions)
        extra = list(params)
        if start is not None:
            where.append(f"{column} >= ?")
            extra.append(start)
        if end is not None:
            where.append(f"{column} <= ?")
            extra.append(end)
        cond = ("WHERE " + " AND ".join(where)) if where else ""
        # kind names are our constants, never user text; values go through parameters
        parts.append(
            f"SELECT CAST({column} AS DATE) AS day, '{kind}' AS kind, count(*) AS n FROM {table} {cond} GROUP BY 1"
        )
        args += extra
    sql = " UNION ALL ".join(parts) + " ORDER BY day, kind"
    with b.db.read() as conn:
        rows = conn.execute(sql, args).fetchall()
    return [{"day": _as_date(day), "kind": kind, "count": int(n)} for day, kind, n in rows]


def episode_outcome_counts(b: Backends, user_id: str) -> dict[str, int]:
    """Active episodes per outcome label (``""`` for episodes without one), most frequent first."""
    check_id(user_id, "user id")
    with b.db.read() as conn:
        rows = conn.execute(
            "SELECT coalesce(outcome, '') AS outcome, count(*) FROM episodes WHERE user_id = ? "
            "AND archived_at IS NULL GROUP BY 1 ORDER BY 2 DESC, 1",
            [user_id],
        ).fetchall()
    return {outcome: int(n) for outcome, n in rows}


def _as_date(value: Any) -> date:
    return value.date() if isinstance(value, datetime) else value
