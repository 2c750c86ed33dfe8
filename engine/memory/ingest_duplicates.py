"""Which records of an ingest file the store already holds, for the records that carry no id.

A record with an id is refused when the id is taken (transfer.py); a record without one (every message, outcome,
feedback label and forget-log entry; an item, episode or skill whose line gives no ``id``) would be stored again, so
ingesting one file twice doubled it silently. Such a record counts as *already stored* when a stored row of the same
user equals it in every field the record's kind is identified by, below; a time the line leaves out is not compared
(the import would stamp it with the current time). Matching is by count: a file holding a record twice against one
stored copy has one already stored, so a conversation that says "yes" twice keeps both answers.

- message: session, role, content, created_at
- item (without id): category, content, created_at
- episode (without id): session, summary, outcome, created_at
- skill (without id): name, kind, description, body, created_at
- outcome: skill id, success, episode id, at
- feedback: memory id, label, trace id, hop, note, created_at
- forget_log: memory kind, ids, mode, reason, at
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from ..store.sql.database import Connection

# record kind -> (table, the columns compared, the time column last)
RecordKey = tuple[Any, ...]  # (user, the record's fields..., its time or None)
_STORED: dict[str, tuple[str, tuple[str, ...]]] = {
    "message": ("messages", ("session_id", "role", "content", "created_at")),
    "item": ("items", ("category", "content", "created_at")),
    "episode": ("episodes", ("session_id", "summary", "outcome", "created_at")),
    "skill": ("skills", ("name", "kind", "description", "body", "created_at")),
    "outcome": ("skill_outcomes", ("skill_id", "success", "episode_id", "occurred_at")),
    "feedback": ("feedback", ("item_id", "label", "trace_id", "hop", "note", "created_at")),
    "forget_log": ("forget_log", ("memory_type", "ids", "mode", "reason", "occurred_at")),
}
TIME_FIELD = {"message": "created_at", "outcome": "at", "forget_log": "at"}  # else "created_at"


def _norm(value: Any) -> Any:
    """One form for a value read from either store or prepared from a line (JSON text or parsed, a timestamp)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    return value


def record_key(kind: str, rec: dict[str, Any], prepared: Any) -> RecordKey | None:
    """The identity of a validated record without an id as (user, fields..., time or None), or None when the
    record carries an id (or is a category summary or a working slot: those replace, they never double)."""
    if kind not in _STORED or (kind in ("item", "episode", "skill") and rec.get("id") is not None):
        return None
    if kind == "message":
        user, session, role, content, at = prepared
        fields: tuple[Any, ...] = (session, role, content)
    elif kind == "item":
        user, at, fields = prepared.user_id, prepared.created_at, (prepared.category, prepared.content)
    elif kind == "episode":
        e = prepared
        user, at, fields = e.user_id, e.created_at, (e.session_id, e.summary, e.outcome)
    elif kind == "skill":
        s = prepared
        user, at, fields = s.user_id, s.created_at, (s.name, s.kind, s.description, s.body)
    elif kind == "outcome":
        user, skill_id, success, episode_id, at = prepared
        fields = (skill_id, success, episode_id)
    elif kind == "feedback":
        user, item_id, label, _delta, trace_id, hop, note, at = prepared[:8]  # then labeller, replaced_at
        fields = (item_id, label, trace_id, hop, note or "")
    else:
        user, memory_type, ids, _count, mode, reason, _actor, at = prepared
        fields = (memory_type, tuple(json.loads(ids)), mode, reason)
    given = rec.get(TIME_FIELD.get(kind, "created_at")) is not None
    return (user, *(_norm(f) for f in fields), _norm(at) if given else None)


def already_stored(conn: Connection, keys: dict[str, list[RecordKey | None]]) -> dict[str, list[int]]:
    """Per record kind, the positions (in the plan's list of that kind) of the records the store already holds."""
    out: dict[str, list[int]] = {}
    for kind, kind_keys in keys.items():
        users = sorted({k[0] for k in kind_keys if k is not None})
        if not users:
            continue
        table, columns = _STORED[kind]
        sql = f"SELECT user_id, {', '.join(columns)} FROM {table} WHERE user_id IN (SELECT unnest(?))"
        params: list[Any] = [users]
        if kind == "message":  # only the file's sessions: a large import in chunks reads no more than it needs
            sql += " AND session_id IN (SELECT unnest(?))"
            params.append(sorted({k[1] for k in kind_keys if k is not None}))
        rows = conn.execute(sql, params).fetchall()
        full: Counter[RecordKey] = Counter()
        untimed: Counter[RecordKey] = Counter()
        for r in rows:
            values = list(r)
            if kind == "forget_log":  # JSON: text from DuckDB, parsed from PostgreSQL
                n = 1 + columns.index("ids")
                values[n] = json.loads(values[n]) if isinstance(values[n], str) else values[n]
            if kind == "feedback":
                values[5] = values[5] or ""
            row = tuple(_norm(v) for v in values)
            full[row] += 1
            untimed[row[:-1]] += 1
        found = []
        for n, key in enumerate(kind_keys):
            if key is None:
                continue
            if key[-1] is not None:
                if full[key] > 0:
                    full[key] -= 1
                    untimed[key[:-1]] -= 1
                    found.append(n)
            elif untimed[key[:-1]] > 0:
                untimed[key[:-1]] -= 1
                found.append(n)
        if found:
            out[kind] = found
    return out
