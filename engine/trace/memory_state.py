"""Where a memory id stands now: active, archived (soft-forgotten), hard-forgotten (only the forget log remembers
it) or never stored. Read by the "Why not?" analysis for memories no hop of a trace saw."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..ids import check_id, check_ids
from ..memory.base import Backends
from ..store.schema import KIND_TABLES as TABLES
from ..vocab import ForgetMode, MemoryStatus
from .why_not import MemoryState


def _when(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if hasattr(value, "strftime") else str(value)[:16]


def memory_states(b: Backends, user_id: str, ids: Sequence[str]) -> dict[str, MemoryState]:
    """The state of each id of ``user_id`` (one query per memory table and one over the forget log)."""
    check_id(user_id, "user id")
    wanted = list(dict.fromkeys(check_ids(ids, "id")))
    out: dict[str, MemoryState] = {}
    if not wanted:
        return out
    with b.db.read() as conn:
        for kind, table in TABLES.items():
            rows = conn.execute(
                f"SELECT id, archived_at FROM {table} WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, wanted]
            ).fetchall()
            for item_id, archived_at in rows:
                out[item_id] = MemoryState(
                    item_id, MemoryStatus.ACTIVE if archived_at is None else MemoryStatus.ARCHIVED, kind
                )
        rest = [i for i in wanted if i not in out or out[i].status == MemoryStatus.ARCHIVED]
        log = (
            conn.execute(
                "SELECT memory_type, ids, mode, reason, actor, occurred_at FROM forget_log "
                "WHERE user_id=? ORDER BY occurred_at DESC, id DESC",
                [user_id],
            ).fetchall()
            if rest
            else []
        )
    for kind, ids_json, mode, reason, actor, at in log:
        logged = set(json.loads(ids_json) if isinstance(ids_json, str) else ids_json or [])
        for item_id in rest:
            if item_id not in logged:
                continue
            prior = out.get(item_id)
            if mode == ForgetMode.HARD and prior is None:
                out[item_id] = MemoryState(
                    item_id, MemoryStatus.FORGOTTEN, kind, f"hard-forgotten on {_when(at)} by {actor}, reason: {reason}"
                )
            elif mode == ForgetMode.SOFT and prior is not None and prior.status == MemoryStatus.ARCHIVED:
                if prior.detail:
                    continue
                out[item_id] = MemoryState(
                    item_id, MemoryStatus.ARCHIVED, kind, f"archived on {_when(at)} by {actor}, reason: {reason}"
                )
    for item_id in wanted:
        out.setdefault(item_id, MemoryState(item_id, MemoryStatus.MISSING, None, ""))
    return out
