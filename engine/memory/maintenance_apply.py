"""Writing planned maintenance changes (engine/memory/maintenance_steps.py) and their audit rows.

Changes are written in units, each in ONE transaction together with its audit rows (``maintenance_log``), so an
applied change never lacks its row and a row never names a change that was not made: a consolidation chunk (its new
memories and the ``consolidated`` mark that covers its messages), a run of insights, one skill, one category summary,
one cleared session, one expiry (inside the forget's own transaction).

Each unit is checked twice: once before the work outside the lock (embedding, an LLM's graph extraction), so a stale
preview costs nothing, and again inside the writing transaction, under the store's write lock (DuckDB: one writer
process at a time; PostgreSQL: ``write()``'s advisory lock), where only what is still to do is written. That second
check is what makes two applies of one preview, or two runs at once, consolidate each message exactly once: the
later writer sees the earlier one's commit. Vectors are added inside that transaction too, for exactly what is
written (two applies of one preview share the previewed ids, and undoing one writer's vectors must never delete the
other's); a failure removes them again. The first failure stops the step and is reported, not raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..clock import utcnow
from ..errors import InvalidInput
from ..records import Item, MaintenanceChange, Skill
from ..store.sql.database import Connection
from .base import Backends, dumps
from .forgetting import Forgetter
from .maintenance_steps import INSIGHTS, TTL_REASON, pending_messages
from .procedural import SkillLibrary
from .semantic import SemanticMemory, same_text_key

NEW_ITEMS = ("memorize", "insight")  # changes that each add one semantic item
UNIT_RUNS = ("memorize", "insight")  # consecutive changes of these actions are written together


def units(changes: Sequence[MaintenanceChange]) -> list[Sequence[MaintenanceChange]]:
    """The all-or-nothing units of a step: a run of memorize changes with the ``consolidated`` mark after it (a
    chunk's memories and the mark that covers their messages), a run of insights, and every other change alone."""
    out: list[Sequence[MaintenanceChange]] = []
    i = 0
    while i < len(changes):
        j = i + 1
        if changes[i].action in UNIT_RUNS:
            while j < len(changes) and changes[j].action == changes[i].action:
                j += 1
            if changes[i].action == "memorize" and j < len(changes) and changes[j].action == "consolidated":
                j += 1
        out.append(changes[i:j])
        i = j
    return out


class ChangeWriter:
    def __init__(self, b: Backends, items: SemanticMemory, skills: SkillLibrary, forgetting: Forgetter) -> None:
        self.b = b
        self.items = items
        self.skills = skills
        self.forgetting = forgetting

    def apply(
        self, user_id: str, run_id: str, step: str, changes: Sequence[MaintenanceChange], actor: str
    ) -> tuple[list[MaintenanceChange], str | None]:
        """Write ``changes`` unit by unit, each with its audit rows in its transaction; returns what was applied and
        the error that stopped the step (None when it ran to the end)."""
        self.b.db.refuse_if_read_only()
        done: list[MaintenanceChange] = []
        try:
            for unit in units(changes):
                if unit[0].action == "expire":
                    done += self._expire(user_id, run_id, step, unit[0], actor)
                else:
                    done += self._write_unit(user_id, run_id, step, unit, actor)
        except Exception as exc:
            return done, f"{type(exc).__name__}: {exc}"
        return done, None

    # -- what is still to do -----------------------------------------------------------------------------------------
    def still_to_do(self, conn: Connection, user_id: str, unit: Sequence[MaintenanceChange]) -> list[MaintenanceChange]:
        """The changes of ``unit`` that nothing has done since they were planned, as read on ``conn``: messages not
        yet consolidated, memories and skills not yet stored (by id: this preview applied meanwhile; by text: an
        insight or a skill another run stored), a category summary not yet set, a session not yet cleared."""
        pending: dict[str, set[str]] = {}

        def still_pending(c: MaintenanceChange) -> tuple[str, ...]:
            sid = str(c.detail["session_id"])
            if sid not in pending:
                pending[sid] = {m.key for m in pending_messages(conn, user_id, sid).get(sid, [])}
            return tuple(k for k in (c.detail.get("messages") or c.target_ids) if k in pending[sid])

        new_ids = [c.target_ids[0] for c in unit if c.action in (*NEW_ITEMS, "register_skill")]
        taken = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM items WHERE id IN (SELECT unnest(?)) UNION ALL "
                "SELECT id FROM skills WHERE id IN (SELECT unnest(?))",
                [new_ids, new_ids],
            ).fetchall()
        }
        insights = {c.detail["content"] for c in unit if c.action == "insight"}
        stored = {
            same_text_key(r[0])
            for r in conn.execute(
                "SELECT content FROM items WHERE user_id=? AND category=? AND lower(trim(content)) IN "
                "(SELECT unnest(?))",
                [user_id, INSIGHTS, sorted({same_text_key(t) for t in insights})],
            ).fetchall()
        }
        out: list[MaintenanceChange] = []
        for c in unit:
            d = c.detail
            if c.action in (*NEW_ITEMS, "register_skill") and c.target_ids[0] in taken:
                continue
            if c.action == "memorize" and not still_pending(c):
                continue  # consolidated meanwhile (this preview applied before, or another run)
            if c.action == "insight" and same_text_key(d["content"]) in stored:
                continue
            if c.action == "consolidated":
                still = still_pending(c)
                if not still:
                    continue
                times = {k: v for k, v in d["message_times"].items() if k in still}
                c = replace(c, target_ids=still, detail={**d, "message_times": times})
            if (
                c.action == "register_skill"
                and conn.execute(
                    "SELECT 1 FROM skills WHERE user_id=? AND name=? AND body=?", [user_id, d["name"], d["body"]]
                ).fetchall()
            ):
                continue
            if c.action == "clear_session":
                (n,) = conn.execute(
                    "SELECT count(*) FROM messages WHERE user_id=? AND session_id=?", [user_id, c.target_ids[0]]
                ).fetchall()[0]
                if not n:
                    continue
                c = replace(c, detail={**d, "messages": int(n)})
            if (
                c.action == "summarise"
                and conn.execute(
                    "SELECT 1 FROM categories WHERE user_id=? AND name=? AND summary=?",
                    [user_id, c.target_ids[0], d["summary"][: self.b.settings.max_text_chars]],
                ).fetchall()
            ):
                continue  # this summary is the category's already (this preview applied before)
            if c.action not in (*NEW_ITEMS, "consolidated", "register_skill", "clear_session", "summarise"):
                raise InvalidInput(f"unknown maintenance action {c.action[:40]!r}")
            out.append(c)
        return out

    # -- writing -----------------------------------------------------------------------------------------------------
    def _write_unit(
        self, user_id: str, run_id: str, step: str, unit: Sequence[MaintenanceChange], actor: str
    ) -> list[MaintenanceChange]:
        with self.b.db.read() as conn:
            todo = self.still_to_do(conn, user_id, unit)
        if not todo:
            return []
        # The slow part before the lock: the memories' and skills' vectors, and an LLM's graph extraction.
        items = [self._item(user_id, c) for c in todo if c.action in NEW_ITEMS]
        skills = [self._skill(user_id, c) for c in todo if c.action == "register_skill"]
        module: SemanticMemory | SkillLibrary = self.items if items else self.skills
        records: Sequence[Item | Skill] = items or skills
        texts, vectors = self.b.record_vectors(module, records) if records else ([], np.zeros((0, 0)))
        graph = self.items.graph_extraction.for_items(items) if items else {}
        if records:
            self.b.index.table(module.kind)  # created now, outside the write lock (its creation takes that lock)
        ids = [r.id for r in records]
        with self.b.intent(module.kind, ids) as note:
            added: list[str] = []
            try:
                with self.b.db.write() as conn:
                    done = self.still_to_do(conn, user_id, unit)  # under the lock: what another writer did is seen
                    keep = {c.target_ids[0] for c in done if c.action in (*NEW_ITEMS, "register_skill")}
                    rows = [n for n, r in enumerate(records) if r.id in keep]
                    if rows:
                        added = [ids[n] for n in rows]
                        self.b.index.add(
                            module.kind, added, [user_id] * len(rows), [texts[n] for n in rows], vectors[rows]
                        )
                    self._write_rows(conn, user_id, done, [records[n] for n in rows], graph, keep)
                    self._log(conn, user_id, run_id, step, done, actor)
            except BaseException:
                if added:
                    try:
                        self.b.index.delete(module.kind, added)
                    except Exception:  # the note stays: the next open removes them; the rows' error is the one
                        pass
                    else:
                        note.settle()
                raise
        return done

    def _write_rows(
        self,
        conn: Connection,
        user_id: str,
        done: Sequence[MaintenanceChange],
        records: Sequence[Item | Skill],
        graph: dict[str, Any],
        keep: set[str],
    ) -> None:
        items = [r for r in records if isinstance(r, Item)]
        if items:
            kept = {u: [e for e in batch if e.memory and e.memory[1] in keep] for u, batch in graph.items()}
            self.items.insert(conn, items, kept)
        skills = [s for s in records if isinstance(s, Skill)]
        if skills:  # each the next version of its name, read under the lock
            self.skills.insert(conn, self.skills.number(conn, skills, [True] * len(skills)))
        for c in done:
            if c.action == "summarise":
                self.items.set_category_summary(user_id, c.target_ids[0], c.detail["summary"], conn)
            elif c.action == "clear_session":
                conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=?", [user_id, c.target_ids[0]])
                conn.execute("DELETE FROM sessions WHERE user_id=? AND session_id=?", [user_id, c.target_ids[0]])

    def _item(self, user_id: str, c: MaintenanceChange) -> Item:
        d = c.detail
        if c.action == "memorize":
            sources = [{"type": "message", "id": k} for k in d["messages"]]
            category, source = d["category"], "consolidate"
        else:
            sources = [{"type": "episode", "id": e} for e in d["episodes"]]
            category, source = INSIGHTS, "reflection"
        return self.items.prepare(
            user_id,
            d["content"],
            category,
            d["importance"],
            source=source,
            provenance={"sources": sources, "method": d["method"], "confidence": d.get("confidence")},
            id=c.target_ids[0],
            method=d["method"],
            preceding_text=d.get("preceding_text"),
        )

    def _skill(self, user_id: str, c: MaintenanceChange) -> Skill:
        d = c.detail
        provenance = {
            "method": "skill_mining",
            "sources": [{"type": "episode", "id": e} for e in d["episodes"]],
            "confidence": d["confidence"],
        }
        return self.skills.prepare(
            user_id, d["name"], d["body"], d.get("description") or "", d["kind"], None, provenance, id=c.target_ids[0]
        )

    def _expire(
        self, user_id: str, run_id: str, step: str, c: MaintenanceChange, actor: str
    ) -> list[MaintenanceChange]:
        """A soft forget whose audit row goes in the forget's own transaction, naming what it archived."""
        done: list[MaintenanceChange] = []

        def log(conn: Connection, affected: Sequence[str]) -> None:
            done.append(replace(c, target_ids=tuple(affected)))
            self._log(conn, user_id, run_id, step, done, actor)

        self.forgetting.forget(user_id, c.target_kind, list(c.target_ids), TTL_REASON, "soft", actor, also=log)
        return done

    @staticmethod
    def _log(
        conn: Connection, user_id: str, run_id: str, step: str, changes: Sequence[MaintenanceChange], actor: str
    ) -> None:
        """The audit rows of ``changes``, in the caller's transaction (the one that made the changes)."""
        at = utcnow()
        for c in changes:
            conn.execute(
                "INSERT INTO maintenance_log (user_id, run_id, step, action, target_kind, target_ids, detail, "
                "actor, occurred_at) VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    user_id,
                    run_id,
                    step,
                    c.action,
                    c.target_kind,
                    dumps(list(c.target_ids)),
                    dumps(c.detail, "maintenance detail"),
                    actor,
                    at,
                ],
            )
