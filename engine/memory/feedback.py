"""Retrieval feedback as an event log; ``net`` (useful +1, harmful -1) is derived from it (llmemory §6.5).

Labels are per labeller: one (user, labeller, trace, memory) has at most one current label. Labelling it again with
the same label changes nothing, a different label replaces the earlier one (kept with ``replaced_at`` and delta 0,
so the history stays readable and ``net``, a plain sum of deltas, counts each labeller's label on each trace once),
and :meth:`FeedbackLog.toggle` takes a label off when it is given again (the dashboard's buttons).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_ids
from ..records import FeedbackEvent
from ..store.sql.database import Connection, one_row
from .base import Backends, page_args
from .label_queue import Agreement, QueueEntry, agreement, build_queue, check_labeller, label_rows

LABELS = {"useful": 1, "harmful": -1}
MAX_NOTE_CHARS = 2000
FEEDBACK_COLUMNS = "id, user_id, item_id, label, delta, trace_id, hop, note, created_at, labeller, replaced_at"
# One key of a label; trace_id is compared through coalesce because a label may have no trace (ids are never '').
_SAME_KEY = "user_id=? AND labeller=? AND item_id=? AND coalesce(trace_id, '')=?"
# Labels imported (or written by an older memlens) may stack on one key: all but the newest become replaced, when
# the next one came, as migration 0008 did for the rows before it.
_SETTLE_SQL = """
UPDATE feedback SET delta = 0, replaced_at = later.next_at FROM (
    SELECT id, lead(created_at) OVER (
        PARTITION BY user_id, labeller, item_id, trace_id ORDER BY created_at, id) AS next_at
    FROM feedback WHERE user_id = ? AND replaced_at IS NULL) AS later
WHERE feedback.id = later.id AND later.next_at IS NOT NULL
"""


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
        labeller: str = "",
        replaced_at: Any = None,
    ) -> tuple[Any, ...]:
        """One validated row (an import may carry '' as labeller: labels exported before labellers existed)."""
        check_id(user_id, "user id")
        check_id(item_id, "item id")
        if label not in LABELS:
            raise InvalidInput(f"unknown label {str(label)[:20]!r}; use useful or harmful")
        if trace_id is not None:
            check_id(trace_id, "trace id")
        validation.check_optional_int(hop, "hop", "hop")
        note = validation.check_optional_text(note or None, "note", MAX_NOTE_CHARS)
        labeller = check_labeller(labeller) if labeller else ""
        replaced = optional_time(replaced_at, "replaced_at")
        return (
            user_id,
            item_id,
            label,
            0 if replaced else LABELS[label],
            trace_id,
            hop,
            note,
            optional_time(created_at, "created_at") or utcnow(),
            labeller,
            replaced,
        )

    def label(
        self,
        user_id: str,
        item_id: str,
        label: str,
        trace_id: str | None = None,
        hop: int | None = None,
        note: str = "",
        labeller: str = "api",
    ) -> FeedbackEvent:
        """Set ``labeller``'s label of a memory (optionally from a trace and hop): the same label again keeps the
        one there is, a different one replaces it (a change of mind)."""
        labeller = check_labeller(labeller)
        row = self.prepare(user_id, item_id, label, trace_id, hop, note, labeller=labeller)
        with self.b.db.write() as conn:
            event = self._set(conn, row, toggle=False)
        assert event is not None  # _set returns None only when toggling off
        return event

    def toggle(
        self,
        user_id: str,
        item_id: str,
        label: str,
        trace_id: str | None = None,
        hop: int | None = None,
        note: str = "",
        labeller: str = "api",
    ) -> FeedbackEvent | None:
        """Like :meth:`label`, but the label the memory already has from this labeller and trace is taken off
        (returns None then): a button clicked twice leaves no label, not two."""
        labeller = check_labeller(labeller)
        row = self.prepare(user_id, item_id, label, trace_id, hop, note, labeller=labeller)
        with self.b.db.write() as conn:
            return self._set(conn, row, toggle=True)

    def clear(
        self, user_id: str, item_id: str, trace_id: str | None = None, labeller: str = "api"
    ) -> FeedbackEvent | None:
        """Take ``labeller``'s current label of the memory on this trace off (kept as replaced); returns it, or None
        when there was none."""
        check_id(user_id, "user id")
        check_id(item_id, "item id")
        if trace_id is not None:
            check_id(trace_id, "trace id")
        labeller = check_labeller(labeller)
        with self.b.db.write() as conn:
            current = self._current(conn, user_id, labeller, item_id, trace_id)
            if current is None:
                return None
            return self._replace(conn, current, utcnow())

    def report(
        self,
        user_id: str,
        useful: Sequence[str] = (),
        harmful: Sequence[str] = (),
        trace_id: str | None = None,
        note: str = "",
        labeller: str = "api",
    ) -> list[FeedbackEvent]:
        """llmemory's report_feedback: useful (+1) and harmful (-1) ids in one transaction, each set as
        :meth:`label` sets it (reporting the same ids again does not count them twice)."""
        labeller = check_labeller(labeller)
        rows = [self.prepare(user_id, i, "useful", trace_id, None, note, labeller=labeller) for i in useful]
        rows += [self.prepare(user_id, i, "harmful", trace_id, None, note, labeller=labeller) for i in harmful]
        if not rows:
            raise InvalidInput("give at least one useful or harmful id")
        if len({r[1] for r in rows}) < len(rows):
            raise InvalidInput("an id is listed twice (or both useful and harmful): give each memory one label")
        with self.b.db.write() as conn:
            self._check(conn, rows, True)
            return [e for e in (self._set(conn, r, toggle=False, checked=True) for r in rows) if e is not None]

    def _current(
        self, conn: Connection, user_id: str, labeller: str, item_id: str, trace_id: str | None
    ) -> FeedbackEvent | None:
        row = conn.execute(
            f"SELECT {FEEDBACK_COLUMNS} FROM feedback WHERE {_SAME_KEY} AND replaced_at IS NULL "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            [user_id, labeller, item_id, trace_id or ""],
        ).fetchone()
        return FeedbackEvent(*row) if row else None

    def _replace(self, conn: Connection, event: FeedbackEvent, at: Any) -> FeedbackEvent:
        conn.execute("UPDATE feedback SET delta = 0, replaced_at = ? WHERE id = ?", [at, event.id])
        return replace(event, delta=0, replaced_at=at)

    def _set(self, conn: Connection, row: tuple[Any, ...], toggle: bool, checked: bool = False) -> FeedbackEvent | None:
        if not checked:
            self._check(conn, [row], True)
        current = self._current(conn, row[0], row[8], row[1], row[4])
        if current is not None and current.label == row[2] and not toggle:
            return current  # the same label again: still one
        if current is not None:
            self._replace(conn, current, row[7])
            if current.label == row[2]:
                return None  # toggled off
        return self._insert_rows(conn, [row])[0]

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
        self._check(conn, rows, check_traces, forgotten)
        out = self._insert_rows(conn, rows)
        for user_id in sorted({r[0] for r in rows}):
            conn.execute(_SETTLE_SQL, [user_id])
        if not out:
            return out
        # Read back: settling may have marked some of them replaced (an id range: unnest(?) is typed text[] on
        # PostgreSQL, which a BIGINT id does not compare with).
        ids = [e.id for e in out]
        got = conn.execute(
            f"SELECT {FEEDBACK_COLUMNS} FROM feedback WHERE id BETWEEN ? AND ?", [min(ids), max(ids)]
        ).fetchall()
        by_id = {r[0]: FeedbackEvent(*r) for r in got}
        return [by_id[i] for i in ids]

    def _check(
        self,
        conn: Connection,
        rows: Sequence[tuple[Any, ...]],
        check_traces: bool,
        forgotten: AbstractSet[tuple[str, str]] = frozenset(),
    ) -> None:
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

    def _insert_rows(self, conn: Connection, rows: Sequence[tuple[Any, ...]]) -> list[FeedbackEvent]:
        out = []
        for r in rows:
            new_id = one_row(
                conn.execute(
                    "INSERT INTO feedback (user_id, item_id, label, delta, trace_id, hop, note, created_at, "
                    "labeller, replaced_at) VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id",
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
        self,
        user_id: str,
        item_id: str | None = None,
        trace_id: str | None = None,
        limit: int = 500,
        labeller: str | None = None,
        current_only: bool = False,
    ) -> list[FeedbackEvent]:
        """Label events newest first; ``current_only`` leaves out the labels a later one replaced."""
        check_id(user_id, "user id")
        where, params = ["user_id = ?"], [user_id]
        if labeller is not None:
            where.append("labeller = ?")
            params.append(check_labeller(labeller) if labeller else "")
        if current_only:
            where.append("replaced_at IS NULL")
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
            gone = FeedbackEvent(*row)
            if gone.replaced_at is None:  # the label it replaced is current again
                conn.execute(
                    "UPDATE feedback SET replaced_at = NULL, delta = CASE WHEN label = 'useful' THEN 1 ELSE -1 END "
                    f"WHERE id = (SELECT id FROM feedback WHERE {_SAME_KEY} ORDER BY created_at DESC, id DESC "
                    "LIMIT 1)",
                    [gone.user_id, gone.labeller, gone.item_id, gone.trace_id or ""],
                )
        return gone

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

    # -- labelling work: the queue, agreement between labellers, the labels as rows (label_queue.py) ----------------
    def queue(
        self,
        user_id: str,
        labeller: str = "api",
        since: Any = None,
        until: Any = None,
        run_id: str | None = None,
        unlabelled_only: bool = True,
    ) -> list[QueueEntry]:
        """The (trace, memory) pairs for ``labeller`` to label: every memory in the context of the user's traces
        created in [since, until) (evaluation traces left out), or of the traces of ``run_id``'s cases that lost an
        expected memory; ``unlabelled_only`` leaves out what this labeller already labelled. Newest trace first."""
        return build_queue(self, user_id, labeller, since, until, run_id, unlabelled_only)

    def agreement(self, user_id: str) -> Agreement:
        """Per pair of labellers, the 2x2 counts and Cohen's kappa on the (trace, memory) pairs both labelled."""
        return agreement(self, user_id)

    def export_labels(self, user_id: str, labeller: str | None = None) -> list[dict[str, Any]]:
        """The current labels (of one labeller, or all) as JSONL-ready rows with the memory's text and the
        trace's question, oldest first."""
        return label_rows(self, user_id, labeller)
