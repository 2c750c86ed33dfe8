"""Forgetting with an audit log (llmemory §7.2, with the mode and actor recorded [memlens]).

Soft: archived in DuckDB (still fetchable by id) and removed from the vector/full-text index, so it can no longer be
retrieved. Hard: deleted from DuckDB and from LanceDB. Every call writes one forget-log entry listing only the ids
actually affected; unknown ids are reported back, not logged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..clock import optional_time, utcnow
from ..errors import InvalidInput
from ..ids import check_id, check_ids
from ..records import KIND_TABLES, KINDS, ForgetLogEntry, ForgetResult
from .base import Backends, dumps, page_args

MODES = ("soft", "hard")
MAX_REASON_CHARS = 1000


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"unknown memory kind {str(kind)[:30]!r}; use semantic, episodic or procedural")
    return kind


class Forgetter:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def forget(self, user_id: str, kind: str, ids: Sequence[str], reason: str, mode: str = "soft",
               actor: str = "api") -> ForgetResult:
        check_id(user_id, "user id")
        check_kind(kind)
        ids = list(dict.fromkeys(check_ids(ids, "id")))
        if not ids:
            raise InvalidInput("give at least one id to forget")
        if mode not in MODES:
            raise InvalidInput(f"unknown forget mode {str(mode)[:20]!r}; use soft or hard")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON_CHARS or "\x00" in reason:
            raise InvalidInput("a reason (1-1000 characters, no NUL) is required to forget")
        if not isinstance(actor, str) or not actor.strip() or len(actor) > 100 or "\x00" in actor:
            raise InvalidInput("actor must be a short name")
        table = KIND_TABLES[kind]
        now = utcnow()
        with self.b.db.write() as conn:
            rows = conn.execute(f"SELECT id, archived_at FROM {table} WHERE user_id=? AND id IN (SELECT unnest(?))",
                                [user_id, ids]).fetchall()
            state = {r[0]: r[1] for r in rows}
            if mode == "soft":
                affected = [i for i in ids if i in state and state[i] is None]
                if affected:
                    conn.execute(f"UPDATE {table} SET archived_at=? WHERE user_id=? AND id IN (SELECT unnest(?))",
                                 [now, user_id, affected])
            else:
                affected = [i for i in ids if i in state]
                if affected:
                    conn.execute(f"DELETE FROM {table} WHERE user_id=? AND id IN (SELECT unnest(?))",
                                 [user_id, affected])
            conn.execute("INSERT INTO forget_log (user_id, memory_type, ids, count, mode, reason, actor, occurred_at) "
                         "VALUES (?,?,?,?,?,?,?,?)", [user_id, kind, dumps(affected), len(affected), mode,
                                                      reason.strip(), actor.strip(), now])
        # After the commit: retrieval also checks DuckDB, so even if this step failed nothing forgotten returns.
        self.b.index.delete(kind, affected)
        unknown = tuple(i for i in ids if i not in state)
        return ForgetResult(kind, mode, tuple(affected), unknown)

    def log(self, user_id: str | None = None, limit: int = 1000) -> list[ForgetLogEntry]:
        """Audit entries, newest first."""
        params: list[Any] = []
        where = ""
        if user_id is not None:
            where = "WHERE user_id = ?"
            params.append(check_id(user_id, "user id"))
        with self.b.db.read() as conn:
            rows = conn.execute("SELECT id, user_id, memory_type, ids, count, mode, reason, actor, occurred_at "
                                "FROM forget_log "
                                f"{where} ORDER BY occurred_at DESC, id DESC LIMIT ?",
                                params + [page_args(limit)[0]]).fetchall()
        return [ForgetLogEntry(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8]) for r in rows]

    def prepare_entry(self, user_id: str, memory_type: str, ids: Sequence[str], mode: str, reason: str,
                      actor: str = "ingest", at: Any = None, count: int | None = None) -> list:
        """Validate an audit entry being imported verbatim (export/ingest round trip)."""
        check_id(user_id, "user id")
        check_kind(memory_type)
        ids = check_ids(ids, "id")
        if mode not in MODES:
            raise InvalidInput(f"unknown forget mode {str(mode)[:20]!r}")
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS or "\x00" in reason:
            raise InvalidInput("reason must be text of at most 1000 characters")
        return [user_id, memory_type, dumps(ids), len(ids) if count is None else int(count), mode, reason,
                str(actor or "ingest")[:100], optional_time(at, "at") or utcnow()]

    def insert_entries(self, conn, entries: Sequence[list]) -> None:
        for e in entries:
            conn.execute("INSERT INTO forget_log (user_id, memory_type, ids, count, mode, reason, actor, occurred_at) "
                         "VALUES (?,?,?,?,?,?,?,?)", e)
