"""Working memory: typed and custom JSON slots per session, with an edit history that can be restored."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..clock import utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id
from ..records import TYPED_SLOTS, SlotEdit
from ..store.sql.database import Connection
from ..validation import check_int, check_json_value, parse_json
from .base import Backends, dumps, loads, page_args

if TYPE_CHECKING:
    from ..providers.llm import LLM
    from .reasoning import ReasonResult

SLOT_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SOURCES = ("ui", "api", "agent", "cli", "ingest", "llm", "restore")  # restore: a value put back from the history
MAX_SLOT_JSON_CHARS = 256_000


def check_slot(name: object) -> str:
    if not isinstance(name, str) or not SLOT_PATTERN.fullmatch(name):
        raise InvalidInput(
            f"invalid slot name {str(name)[:40]!r}: use lowercase letters, digits and _ "
            "(starting with a letter, at most 64 characters)"
        )
    return name


def parse_json_value(text: str, slot: str = "value") -> Any:
    """Parse a slot value typed as JSON; the error names the line and column."""
    if not isinstance(text, str):
        raise InvalidInput("slot value must be JSON text")
    return parse_json(text, slot, max_chars=MAX_SLOT_JSON_CHARS)


class WorkingMemory:
    """``engine.working``: a session's slots, their edit history, and LLM reasoning written into a slot."""

    def __init__(self, b: Backends, llm: LLM) -> None:
        from .reasoning import Reasoner  # reasoning.py builds on this module's slot checks, so imported here

        self.b = b
        self._reasoner = Reasoner(self, llm)

    def get(self, user_id: str, session_id: str) -> dict[str, Any]:
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        with self.b.db.read() as conn:
            return self._slots(conn, user_id, session_id)

    @staticmethod
    def _slots(conn: Connection, user_id: str, session_id: str) -> dict[str, Any]:
        rows = conn.execute(
            "SELECT slot, value FROM working_slots WHERE user_id=? AND session_id=? ORDER BY slot",
            [user_id, session_id],
        ).fetchall()
        values = {slot: loads(value) for slot, value in rows}
        typed = {s: values.pop(s, None) for s in TYPED_SLOTS}
        return {**typed, **values}

    def update(
        self,
        user_id: str,
        session_id: str,
        slots: Mapping[str, Any],
        source: str = "api",
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Set several slots in one transaction (all or none). ``None`` deletes a slot."""
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        if source not in SOURCES:
            raise InvalidInput(f"unknown edit source {str(source)[:20]!r}")
        if not isinstance(slots, Mapping) or not slots:
            raise InvalidInput("give at least one slot to update")
        encoded = {}
        for slot, value in slots.items():
            check_slot(slot)
            if value is not None:
                check_json_value(value, f"slot {slot}", max_chars=MAX_SLOT_JSON_CHARS)
            text = None if value is None else dumps(value, f"slot {slot}")
            if text is not None and len(text) > MAX_SLOT_JSON_CHARS:
                raise InvalidInput(
                    f"slot {slot} value is {len(text):,} characters of JSON; the limit is {MAX_SLOT_JSON_CHARS:,}"
                )
            encoded[slot] = text
        if conn is not None:  # part of a caller's transaction: the caller reads the slots later
            self._apply(conn, user_id, session_id, encoded, source)
            return {}
        # The slots are read back inside the write's own transaction: a read after the commit would wait for the
        # store again, and its StoreBusy would tell the caller "not written" about an update already committed
        # (an agent retrying it would write it twice).
        with self.b.db.write() as c:
            self._apply(c, user_id, session_id, encoded, source)
            return self._slots(c, user_id, session_id)

    def _apply(
        self, conn: Connection, user_id: str, session_id: str, encoded: dict[str, str | None], source: str
    ) -> None:
        now = utcnow()
        for slot, text in encoded.items():
            old = conn.execute(
                "SELECT value FROM working_slots WHERE user_id=? AND session_id=? AND slot=?",
                [user_id, session_id, slot],
            ).fetchone()
            old_text = old[0] if old else None
            if old_text is not None and text is not None and loads(old_text) == loads(text):
                continue
            if old_text is None and text is None:
                continue
            if text is None:
                conn.execute(
                    "DELETE FROM working_slots WHERE user_id=? AND session_id=? AND slot=?", [user_id, session_id, slot]
                )
            else:
                conn.execute(
                    "INSERT INTO working_slots VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, session_id, "
                    "slot) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    [user_id, session_id, slot, text, now],
                )
            conn.execute(
                "INSERT INTO working_history (user_id, session_id, slot, old_value, new_value, source, "
                "occurred_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [user_id, session_id, slot, old_text, text, source, now],
            )

    def set_json(self, user_id: str, session_id: str, slot: str, text: str, source: str = "ui") -> dict[str, Any]:
        """Set a slot from JSON text; invalid JSON raises InvalidInput and writes nothing."""
        return self.update(user_id, session_id, {slot: parse_json_value(text, slot)}, source)

    def reason(
        self,
        user_id: str,
        session_id: str,
        template: str | Callable[[dict[str, Any]], str],
        into: str | None = "intermediate_reasoning",
        parse: str | Callable[[str], Any] | None = None,
    ) -> ReasonResult:
        """Fill ``{{slot}}`` from working memory, ask the LLM, write the answer into ``into`` (source ``llm``).
        Needs an LLM: without one (or when the call fails) raises LLMUnavailable and writes nothing."""
        return self._reasoner.reason(user_id, session_id, template, into, parse)

    def set(self, user_id: str, session_id: str, slot: str, value: Any, source: str = "api") -> Any:
        self.update(user_id, session_id, {slot: value}, source)
        return value

    def clear(self, user_id: str, session_id: str, source: str = "api") -> int:
        current = {k: v for k, v in self.get(user_id, session_id).items() if v is not None}
        if current:
            self.update(user_id, session_id, {k: None for k in current}, source)
        return len(current)

    def history(self, user_id: str, session_id: str, slot: str | None = None, limit: int = 100) -> list[SlotEdit]:
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        params: list[Any] = [user_id, session_id]
        extra = ""
        if slot is not None:
            extra = " AND slot = ?"
            params.append(check_slot(slot))
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT id, user_id, session_id, slot, old_value, new_value, source, occurred_at FROM "
                f"working_history WHERE user_id=? AND session_id=?{extra} ORDER BY id DESC LIMIT ?",
                params + [page_args(limit)[0]],
            ).fetchall()
        return [SlotEdit(r[0], r[1], r[2], r[3], loads(r[4]), loads(r[5]), r[6], r[7]) for r in rows]

    def restore(self, user_id: str, session_id: str, edit_id: int, which: str = "old", source: str = "ui") -> Any:
        """Put back the value a slot had before (``old``) or after (``new``) a recorded edit."""
        if which not in ("old", "new"):
            raise InvalidInput("which must be 'old' or 'new'")
        check_id(user_id, "user id")
        check_id(session_id, "session id")
        # int("abc") would be a raw ValueError, int(2.7) a silent 2: an edit id is an integer, named if not
        edit_id = check_int(edit_id, "edit id", lo=0, hi=2**63 - 1)
        with self.b.db.read() as conn:
            row = conn.execute(
                "SELECT slot, old_value, new_value FROM working_history WHERE id=? AND user_id=? AND session_id=?",
                [edit_id, user_id, session_id],
            ).fetchone()
        if row is None:
            raise NotFound(f"no working-memory edit {edit_id} in session {session_id!r}")
        value = loads(row[1] if which == "old" else row[2])
        self.update(user_id, session_id, {row[0]: value}, source)
        return value
