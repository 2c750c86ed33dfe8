"""Timelines (llmemory §8, ``memory_timeline`` and ``memory_timeline_context``): ``engine.timeline``.

What was memorised and said lately, newest first, and the semantic items written just before and after one item or
moment. llmemory stamps every short-term message with its session's last update (or now); memlens keeps each
message's own time, so a timeline interleaves facts and messages as they happened. Forgotten (archived) items never
appear.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .. import validation
from ..clock import parse_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id
from ..records import Item, Message
from ..store.sql.database import Connection, one_row
from .base import Backends
from .semantic import ITEM_COLUMNS, _item

MAX_HOURS = 876_000.0  # a century: enough for "everything", small enough that now - hours stays a valid time
MIN_HOURS = 0.01
MAX_ENTRIES = 1_000  # entries one timeline returns (the MCP tool shows 20)
MAX_AROUND = 100  # items on either side of a timeline context's anchor
MESSAGE_COLUMNS = "user_id, session_id, seq, role, content, tokens, created_at"


@dataclass(frozen=True)
class TimelineEntry:
    """One fact (``item``) or one message (``message``) of a timeline, at its own time."""

    at: datetime
    item: Item | None = None
    message: Message | None = None


@dataclass(frozen=True)
class RecentActivity:
    """The newest entries since ``since`` (newest first) and how many the window holds in all (``total``)."""

    since: datetime
    entries: tuple[TimelineEntry, ...]
    total: int


@dataclass(frozen=True)
class ItemsAround:
    """Items in creation order around ``anchor``: ``target`` is the item anchored on (None when a timestamp has no
    item at or after it), ``before`` and ``after`` its neighbours, both oldest first."""

    anchor: datetime
    target: Item | None
    before: tuple[Item, ...]
    after: tuple[Item, ...]


def _ordered(entry: TimelineEntry) -> tuple[datetime, int, str]:
    # Newest first; at the same instant a fact before a message (a fact is usually drawn from what was just said).
    if entry.item is not None:
        return (entry.at, 1, entry.item.id)
    assert entry.message is not None
    return (entry.at, 0, f"{entry.message.session_id}#{entry.message.seq:012d}")


class Timeline:
    """``engine.timeline``: recent facts and messages, and the items around one item or moment."""

    def __init__(self, b: Backends) -> None:
        self.b = b

    def recent(
        self,
        user_id: str,
        hours: float = 24,
        include_messages: bool = True,
        limit: int = 20,
        now: datetime | str | None = None,
    ) -> RecentActivity:
        """The user's semantic items (and, with ``include_messages``, messages of every session) created in the
        last ``hours`` hours before ``now``, newest first, at most ``limit`` of them, with the window's total.
        Each message keeps its own time (llmemory stamped them all with the session's last update)."""
        check_id(user_id, "user id")
        span = validation.check_number(hours, "hours", lo=MIN_HOURS, hi=MAX_HOURS)
        limit = validation.check_int(limit, "limit", lo=1, hi=MAX_ENTRIES)
        if not isinstance(include_messages, bool):
            raise InvalidInput("include_messages must be true or false")
        end = utcnow() if now is None else parse_time(now, "now")
        since = end - timedelta(hours=span)
        if since < validation.EARLIEST:
            since = validation.EARLIEST
        entries: list[TimelineEntry] = []
        with self.b.db.read() as conn:
            cond = "user_id=? AND archived_at IS NULL AND created_at >= ? AND created_at <= ?"
            params: list[Any] = [user_id, since, end]
            total = int(one_row(conn.execute(f"SELECT count(*) FROM items WHERE {cond}", params))[0])
            rows = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE {cond} ORDER BY created_at DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            entries += [TimelineEntry(item.created_at, item=item) for item in map(_item, rows)]
            if include_messages:
                cond = "user_id=? AND created_at >= ? AND created_at <= ?"
                total += int(one_row(conn.execute(f"SELECT count(*) FROM messages WHERE {cond}", params))[0])
                rows = conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {cond} "
                    "ORDER BY created_at DESC, session_id DESC, seq DESC LIMIT ?",
                    [*params, limit],
                ).fetchall()
                entries += [TimelineEntry(m.created_at, message=m) for m in (Message(*r) for r in rows)]
        entries.sort(key=_ordered, reverse=True)
        return RecentActivity(since, tuple(entries[:limit]), total)

    def around(
        self,
        user_id: str,
        item_id: str | None = None,
        timestamp: datetime | str | None = None,
        before: int = 5,
        after: int = 5,
    ) -> ItemsAround:
        """Up to ``before`` items created just before and ``after`` just after an anchor, in creation order: the item
        ``item_id``, or the first item created at or after ``timestamp`` (exactly one of the two)."""
        check_id(user_id, "user id")
        if (item_id is None) == (timestamp is None):
            raise InvalidInput("give exactly one of item_id and timestamp")
        n_before = validation.check_int(before, "before", lo=0, hi=MAX_AROUND)
        n_after = validation.check_int(after, "after", lo=0, hi=MAX_AROUND)
        with self.b.db.read() as conn:
            if item_id is not None:
                check_id(item_id, "item id")
                row = conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id=? AND id=?", [user_id, item_id]
                ).fetchone()
                if row is None:
                    raise NotFound(f"no semantic item {item_id!r} for user {user_id!r}")
                found = _item(row)
                if found.archived_at is not None:
                    raise NotFound(f"semantic item {item_id!r} was forgotten")
                target: Item | None = found
                anchor = found.created_at
            else:
                anchor = parse_time(timestamp, "timestamp")
                row = conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id=? AND archived_at IS NULL AND created_at >= ? "
                    "ORDER BY created_at, id LIMIT 1",
                    [user_id, anchor],
                ).fetchone()
                target = _item(row) if row else None
            earlier = self._neighbours(conn, user_id, target, anchor, n_before, later=False)
            later = self._neighbours(conn, user_id, target, anchor, n_after, later=True) if target else []
        return ItemsAround(anchor, target, tuple(reversed(earlier)), tuple(later))

    @staticmethod
    def _neighbours(
        conn: Connection, user_id: str, target: Item | None, anchor: datetime, n: int, *, later: bool
    ) -> list[Item]:
        """The ``n`` active items nearest the target in creation order (ties on time broken by id), on one side;
        without a target, the items created before ``anchor``."""
        if n == 0:
            return []
        params: list[Any]
        if target is None:
            side, params = "created_at < ?", [anchor]
        else:
            op = ">" if later else "<"
            side = f"(created_at {op} ? OR (created_at = ? AND id {op} ?))"
            params = [target.created_at, target.created_at, target.id]
        order = "created_at, id" if later else "created_at DESC, id DESC"
        rows = conn.execute(
            f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id=? AND archived_at IS NULL AND {side} "
            f"ORDER BY {order} LIMIT ?",
            [user_id, *params, n],
        ).fetchall()
        return [_item(r) for r in rows]
