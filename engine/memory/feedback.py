"""Retrieval feedback as an event log; ``net`` (useful +1, harmful -1) is derived from it (llmemory §6.5)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_ids
from ..records import FeedbackEvent
from ..store.sql.database import Connection, one_row
from .base import Backends, page_args

LABELS = {"useful": 1, "harmful": -1}
MAX_NOTE_CHARS = 2000
FEEDBACK_COLUMNS = "id, user_id, item_id, label, delta, trace_id, hop, note, created_at"


class FeedbackLog:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def existing_ids(self, conn: Connection, user_id: str, ids: Sequence[str]) -> set[str]:
        rows = conn.execute(
            "SELECT id FROM items WHERE user_id=? AND id IN (SELECT unnest(?)) UNION "
            "SELECT id FROM episodes WHERE user_id=? AND id IN (SELECT unnest(?)) UNION "
            "SELECT id FROM skills WHERE user_id=? AND id IN (SELECT unnest(?))",
            [user_id, list(ids)] * 3,
        ).fetchall()
        return {r[0] for r in rows}

    def prepare(
        self,
        user_id: str,
        item_id: str,
        label: str,
        trace_id: str | None = None,
        hop: int | None = None,
        note: str = "",
        created_at: Any = None,
    ) -> tuple[Any, ...]:
        check_id(user_id, "user id")
        check_id(item_id, "item id")
        if label not in LABELS:
            raise InvalidInput(f"unknown label {str(label)[:20]!r}; use useful or harmful")
        if trace_id is not None:
            check_id(trace_id, "trace id")
        validation.check_optional_int(hop, "hop", "hop")
        note = validation.check_optional_text(note or None, "note", MAX_NOTE_CHARS)
        return (
            user_id,
            item_id,
            label,
            LABELS[label],
            trace_id,
            hop,
            note,
            optional_time(created_at, "created_at") or utcnow(),
        )

    def label(
        self,
        user_id: str,
        item_id: str,
        label: str,
        trace_id: str | None = None,
        hop: int | None = None,
        note: str = "",
    ) -> FeedbackEvent:
        """Label a memory useful or harmful (optionally from a trace and hop)."""
        return self.record([self.prepare(user_id, item_id, label, trace_id, hop, note)])[0]

    def report(
        self,
        user_id: str,
        useful: Sequence[str] = (),
        harmful: Sequence[str] = (),
        trace_id: str | None = None,
        note: str = "",
    ) -> list[FeedbackEvent]:
        """llmemory's report_feedback: +1 per useful id, -1 per harmful id, in one transaction."""
        rows = [self.prepare(user_id, i, "useful", trace_id, None, note) for i in useful]
        rows += [self.prepare(user_id, i, "harmful", trace_id, None, note) for i in harmful]
        if not rows:
            raise InvalidInput("give at least one useful or harmful id")
        return self.record(rows)

    def record(
        self,
        rows: Sequence[tuple[Any, ...]],
        conn: Connection | None = None,
        check_traces: bool = True,
        forgotten: AbstractSet[tuple[str, str]] = frozenset(),
    ) -> list[FeedbackEvent]:
        """Append prepared events after checking every item (and trace) exists for that user.

        Imports pass ``check_traces=False``: an exported label keeps pointing at its trace even where the trace
        itself was not carried over; and ``forgotten``, the (user, id) pairs of hard-forgotten memories whose
        labels an export carries (the label points at the tombstone in the forget log).
        """
        if conn is None:
            with self.b.db.write() as c:
                return self._insert(c, rows, check_traces, forgotten)
        return self._insert(conn, rows, check_traces, forgotten)

    def _insert(
        self,
        conn: Connection,
        rows: Sequence[tuple[Any, ...]],
        check_traces: bool,
        forgotten: AbstractSet[tuple[str, str]] = frozenset(),
    ) -> list[FeedbackEvent]:
        by_user: dict[str, set[str]] = {}
        for r in rows:
            if (r[0], r[1]) not in forgotten:
                by_user.setdefault(r[0], set()).add(r[1])
        for user_id, ids in by_user.items():
            missing = ids - self.existing_ids(conn, user_id, sorted(ids))
            if missing:
                raise NotFound(f"no memory {sorted(missing)[0]!r} for user {user_id!r}")
        for r in rows:
            if (
                check_traces
                and r[4] is not None
                and conn.execute("SELECT 1 FROM traces WHERE id=? AND user_id=?", [r[4], r[0]]).fetchone() is None
            ):
                raise NotFound(f"no trace {r[4]!r} for user {r[0]!r}")
        out = []
        for r in rows:
            new_id = one_row(
                conn.execute(
                    "INSERT INTO feedback (user_id, item_id, label, delta, trace_id, hop, note, created_at) "
                    "VALUES (?,?,?,?,?,?,?,?) RETURNING id",
                    list(r),
                )
            )[0]
            out.append(FeedbackEvent(new_id, *r))
        return out

    def net(self, user_id: str, ids: Sequence[str], conn: Connection | None = None) -> dict[str, int]:
        """Net feedback per id (ids without events are absent)."""
        check_id(user_id, "user id")
        ids = check_ids(ids, "item id")
        if not ids:
            return {}
        sql = (
            "SELECT item_id, sum(delta) FROM feedback WHERE user_id=? AND item_id IN (SELECT unnest(?)) "
            "GROUP BY item_id"
        )
        if conn is not None:
            rows = conn.execute(sql, [user_id, ids]).fetchall()
        else:
            with self.b.db.read() as c:
                rows = c.execute(sql, [user_id, ids]).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def events(
        self, user_id: str, item_id: str | None = None, trace_id: str | None = None, limit: int = 500
    ) -> list[FeedbackEvent]:
        check_id(user_id, "user id")
        where, params = ["user_id = ?"], [user_id]
        if item_id is not None:
            where.append("item_id = ?")
            params.append(check_id(item_id, "item id"))
        if trace_id is not None:
            where.append("trace_id = ?")
            params.append(check_id(trace_id, "trace id"))
        with self.b.db.read() as conn:
            rows = conn.execute(
                f"SELECT {FEEDBACK_COLUMNS} FROM feedback WHERE {' AND '.join(where)} "
                "ORDER BY created_at DESC, id DESC LIMIT ?",  # imported labels keep their own times
                params + [page_args(limit)[0]],
            ).fetchall()
        return [FeedbackEvent(*r) for r in rows]

    def retract(self, user_id: str, event_id: int) -> FeedbackEvent:
        """Delete one label event of this user (an undo); returns what was deleted. The net is derived from the
        events, so it goes back to what it was before the label."""
        check_id(user_id, "user id")
        if isinstance(event_id, bool) or not isinstance(event_id, int) or event_id < 1:
            raise InvalidInput("event id must be a positive integer")
        with self.b.db.write() as conn:
            row = conn.execute(
                f"DELETE FROM feedback WHERE id=? AND user_id=? RETURNING {FEEDBACK_COLUMNS}", [event_id, user_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no feedback event {event_id} for user {user_id!r}")
        return FeedbackEvent(*row)

    def memory_texts(self, user_id: str, ids: Sequence[str]) -> dict[str, str]:
        """The text of each id that is a memory of this user (item content, episode summary, skill name and
        description), forgotten (archived) ones included; unknown ids are absent."""
        check_id(user_id, "user id")
        ids = check_ids(ids, "item id")
        if not ids:
            return {}
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT id, content FROM items WHERE user_id=? AND id IN (SELECT unnest(?)) UNION ALL "
                "SELECT id, summary FROM episodes WHERE user_id=? AND id IN (SELECT unnest(?)) UNION ALL "
                "SELECT id, name || ' v' || version || ': ' || coalesce(nullif(description, ''), body) FROM skills "
                "WHERE user_id=? AND id IN (SELECT unnest(?))",
                [user_id, list(ids)] * 3,
            ).fetchall()
        return {r[0]: r[1] for r in rows}
