"""A hard forget's texts taken out of the maintenance audit log (``maintenance_log.detail``), inside the forget's own
transaction, as stored traces are redacted (engine/trace/redaction.py).

The log keeps copies of memory texts: a consolidated memory's content and the message before it, an insight's
content, a registered skill's name, description and body, a category summary. A hard forget must leave none of them
behind: the rows that name a forgotten memory get their text fields replaced with :data:`FORGOTTEN`, and every other
row of the user gets each forgotten text replaced where it quotes it verbatim (the next memory's ``preceding_text``
is the previous one's message). Ids, actions, times and the ``consolidated`` marks stay, so the log still says what
was done and consolidation still never makes a forgotten memory again from its message. A soft forget keeps them,
as it keeps the memory's row. A category summary an LLM wrote in its own words cannot be matched to a fact and
stays as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..store.sql.database import Connection
from .base import dumps

FORGOTTEN = "[forgotten]"
TEXT_FIELDS = ("content", "preceding_text", "summary", "name", "description", "body")
MIN_QUOTE_CHARS = 8  # shorter texts ("ok", a name) would blank unrelated words of other memories' texts

# The text columns of each kind's table: what the log may have copied of a memory of that kind. Not an item's
# preceding_text: that is the text of what came before it (another memory's message), which is not forgotten with it.
_TEXTS_SQL = {
    "semantic": "SELECT id, content FROM items",
    "episodic": "SELECT id, summary, outcome FROM episodes",
    "procedural": "SELECT id, body, description FROM skills",
}


def memory_texts(conn: Connection, user_id: str, kind: str, ids: Sequence[str]) -> dict[str, list[str]]:
    """The texts of memories of ``kind`` (read before their rows are deleted)."""
    sql = _TEXTS_SQL.get(kind)
    if sql is None or not ids:
        return {}
    rows = conn.execute(f"{sql} WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, list(ids)]).fetchall()
    return {r[0]: [t for t in r[1:] if isinstance(t, str) and t.strip()] for r in rows}


def redact_log(conn: Connection, user_id: str, ids: Sequence[str], texts: Mapping[str, Sequence[str]]) -> int:
    """Replace the forgotten memories' texts in the user's maintenance_log rows; returns how many rows changed."""
    forgotten = set(ids)
    quotes = sorted(
        {t for ts in texts.values() for t in ts if len(t.strip()) >= MIN_QUOTE_CHARS}, key=len, reverse=True
    )
    if not forgotten and not quotes:
        return 0
    changed = 0
    for row_id, target_ids, detail in conn.execute(
        "SELECT id, target_ids, detail FROM maintenance_log WHERE user_id=?", [user_id]
    ).fetchall():
        targets = _json(target_ids) or []
        before = _json(detail) or {}
        after = dict(before)
        if forgotten.intersection(targets):
            after.update({f: FORGOTTEN for f in TEXT_FIELDS if isinstance(after.get(f), str)})
        after = _unquote(after, quotes)
        if after != before:
            conn.execute("UPDATE maintenance_log SET detail=? WHERE id=?", [dumps(after), row_id])
            changed += 1
    return changed


def _unquote(value: Any, quotes: Sequence[str]) -> Any:
    if isinstance(value, str):
        for q in quotes:
            if q in value:
                value = value.replace(q, FORGOTTEN)
        return value
    if isinstance(value, dict):
        return {k: _unquote(v, quotes) for k, v in value.items()}
    if isinstance(value, list):
        return [_unquote(v, quotes) for v in value]
    return value


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
