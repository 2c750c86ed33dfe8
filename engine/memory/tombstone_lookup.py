"""Which of a trace's memories were forgotten since, and the tombstone each left (what a replay and why-not report).

A replay asks this for every candidate of a stored trace (hundreds of ids), so it is on the replay's hot path. The
answer only needs two facts per id: whether its row is archived (soft) and whether a hard forget-log entry names it
while its row is gone (hard). Both are impossible for a user who has no forget-log entry and no archived row, which
is most users most of the time, so one cheap probe (no id list bound) answers them first. Matching hundreds of ids
against a 100k-row table costs milliseconds per table in DuckDB (the primary key's index is not used for an ``IN``
list), so the full lookup only visits the tables the probe named and only their archived rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..store.schema import KIND_TABLES
from ..store.sql.database import Connection

FORGET_LOG = "forget_log"
_TABLES = tuple(KIND_TABLES.values())

# One row per table that holds anything forgotten for the user (LIMIT 1 each: existence, not a count).
_PROBE = " UNION ALL ".join(
    [f"SELECT '{FORGET_LOG}' AS t FROM (SELECT 1 FROM {FORGET_LOG} WHERE user_id=$1 LIMIT 1) AS f"]
    + [
        f"SELECT '{t}' AS t FROM (SELECT 1 FROM {t} WHERE user_id=$1 AND archived_at IS NOT NULL LIMIT 1) AS {t[0]}"
        for t in _TABLES
    ]
)
_LOGGED = (
    "SELECT f.id, f.memory_type, f.mode, f.reason, f.actor, f.occurred_at, u.mid FROM forget_log f, "
    "unnest(CAST(f.ids AS VARCHAR[])) AS u(mid) WHERE f.user_id=? AND u.mid IN (SELECT unnest(?)) "
    "ORDER BY f.occurred_at, f.id"
)


def forgotten_among(conn: Connection, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The forgotten ones among ``ids`` (distinct, non-empty) of a user, each with its tombstone: hard (no row, named
    by a hard forget-log entry: the newest) or soft (archived; the newest soft entry naming it, if any, else one
    worded from the row's ``archived_at``)."""
    holding = {r[0] for r in conn.execute(_PROBE, [user_id]).fetchall()}
    if not holding:
        return {}
    entries: dict[str, dict[str, dict[str, Any]]] = {}  # id -> mode -> its newest tombstone
    if FORGET_LOG in holding:
        for log_id, kind, mode, reason, actor, at, mid in conn.execute(_LOGGED, [user_id, list(ids)]).fetchall():
            entries.setdefault(mid, {})[mode] = tombstone(log_id, mode, at, actor, reason, kind)
    archived: dict[str, Any] = {}
    for table in (t for t in _TABLES if t in holding):
        archived.update(
            conn.execute(
                f"SELECT id, archived_at FROM {table} WHERE user_id=? AND archived_at IS NOT NULL "
                "AND id IN (SELECT unnest(?))",
                [user_id, list(ids)],
            ).fetchall()
        )
    hard_named = [i for i in ids if "hard" in entries.get(i, {}) and i not in archived]
    present = _present(conn, user_id, hard_named) if hard_named else set()
    out: dict[str, dict[str, Any]] = {}
    for i in ids:
        if i in archived:
            out[i] = entries.get(i, {}).get("soft") or {
                "mode": "soft",
                "at": archived[i].isoformat(),
                "actor": None,
                "reason": None,
                "forget_log_id": None,
            }
        elif i in hard_named and i not in present:
            out[i] = entries[i]["hard"]
    return out


def _present(conn: Connection, user_id: str, ids: list[str]) -> set[str]:
    """Which of ``ids`` still have a row (a hard forget-log entry can name an id written again since)."""
    sql = " UNION ALL ".join(f"SELECT id FROM {t} WHERE user_id=? AND id IN (SELECT unnest(?))" for t in _TABLES)
    return {r[0] for r in conn.execute(sql, [user_id, ids] * len(_TABLES)).fetchall()}


def tombstone(
    log_id: int | None, mode: str, at: Any, actor: str, reason: str, kind: str | None = None
) -> dict[str, Any]:
    """What a forgotten memory leaves in a trace: the forget log's entry (when, by whom, why)."""
    return {
        "mode": mode,
        "at": at.isoformat() if hasattr(at, "isoformat") else str(at),
        "actor": actor.strip(),
        "reason": reason.strip(),
        "forget_log_id": log_id,
        **({"kind": kind} if kind else {}),
    }
