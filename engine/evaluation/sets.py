"""Expectation sets in DuckDB: create, list, rename-free edit and delete sets and their cases.

A set name and a case id follow the engine's id rule. Cases keep the memories a question should recall (of any kind,
several allowed), an optional session, retrieval time and category, and where they came from (pinned from a trace,
imported from a benchmark, written by hand). Adding a case whose id is already in the set replaces it, which keeps
benchmark imports idempotent.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_ids, check_text, new_id
from ..memory.base import Backends, insert_rows
from .records import SOURCES, EvalCase, EvalSet

if TYPE_CHECKING:
    from ..store.sql.database import Connection

MAX_DESCRIPTION = 2000
MAX_EXPECTED = 200
CASE_COLUMNS = "set_name, case_id, user_id, question, session_id, now, expected, category, source, added_at"
CASE_TYPES = (
    ("set_name", "str"),
    ("case_id", "str"),
    ("user_id", "str"),
    ("question", "str"),
    ("session_id", "str"),
    ("now", "ts"),
    ("expected", "str"),
    ("category", "str"),
    ("source", "str"),
    ("added_at", "ts"),
)
CASE_KEYS = {"case_id", "user_id", "question", "session_id", "now", "expected", "category", "source"}


def check_set_name(name: object) -> str:
    return check_id(name, "set name")


def _case(row: Sequence[Any]) -> EvalCase:
    return EvalCase(row[0], row[1], row[2], row[3], row[4], row[5], tuple(json.loads(row[6])), row[7], row[8], row[9])


class ExpectationSets:
    def __init__(self, b: Backends) -> None:
        self.b = b

    # -- sets ---------------------------------------------------------------------------------------------------
    def create(self, name: str, description: str = "", exist_ok: bool = False) -> EvalSet:
        check_set_name(name)
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION or "\x00" in description:
            raise InvalidInput(f"a set description is text of at most {MAX_DESCRIPTION} characters")
        with self.b.db.write() as conn:
            if conn.execute("SELECT 1 FROM eval_sets WHERE name=?", [name]).fetchone():
                if not exist_ok:
                    raise InvalidInput(f"expectation set {name!r} already exists")
            else:
                conn.execute("INSERT INTO eval_sets VALUES (?,?,?)", [name, description.strip(), utcnow()])
            # Read back inside the transaction: a read after the commit could fail (StoreBusy) about a set that
            # was created, and a caller retrying would be told it already exists.
            return self._get(conn, name)

    def list(self) -> list[EvalSet]:
        with self.b.db.read() as conn:
            return self._list(conn)

    @staticmethod
    def _list(conn: Connection, name: str | None = None) -> builtins.list[EvalSet]:
        where, params = ("WHERE s.name = ? ", [name]) if name is not None else ("", [])
        rows = conn.execute(
            "SELECT s.name, s.description, s.created_at, "
            f"(SELECT count(*) FROM eval_runs r WHERE r.set_name = s.name) FROM eval_sets s {where}ORDER BY s.name",
            params,
        ).fetchall()
        cats = conn.execute(
            "SELECT set_name, coalesce(category, ''), count(*) FROM eval_cases "
            f"{where.replace('s.name', 'set_name')}GROUP BY 1, 2 ORDER BY 1, 2",
            params,
        ).fetchall()
        by_set: dict[str, dict[str, int]] = {}
        for set_name, cat, n in cats:
            by_set.setdefault(set_name, {})[cat] = int(n)
        return [
            EvalSet(r[0], r[1], sum(by_set.get(r[0], {}).values()), by_set.get(r[0], {}), int(r[3]), r[2]) for r in rows
        ]

    def get(self, name: str) -> EvalSet:
        check_set_name(name)
        with self.b.db.read() as conn:
            return self._get(conn, name)

    def _get(self, conn: Connection, name: str) -> EvalSet:
        found = self._list(conn, name)
        if not found:
            raise NotFound(f"no expectation set {name!r}")
        return found[0]

    def exists(self, name: str) -> bool:
        with self.b.db.read() as conn:
            return conn.execute("SELECT 1 FROM eval_sets WHERE name=?", [check_set_name(name)]).fetchone() is not None

    def delete(self, name: str) -> int:
        """Delete a set, its cases, its runs and their traces; returns the number of runs deleted."""
        check_set_name(name)
        with self.b.db.write() as conn:
            if not conn.execute("SELECT 1 FROM eval_sets WHERE name=?", [name]).fetchone():
                raise NotFound(f"no expectation set {name!r}")
            runs = [r[0] for r in conn.execute("SELECT id FROM eval_runs WHERE set_name=?", [name]).fetchall()]
            conn.execute(
                "DELETE FROM traces WHERE id IN (SELECT trace_id FROM eval_results WHERE run_id IN (SELECT unnest(?)))",
                [runs],
            )
            conn.execute("DELETE FROM eval_results WHERE run_id IN (SELECT unnest(?))", [runs])
            conn.execute("DELETE FROM eval_runs WHERE set_name=?", [name])
            conn.execute("DELETE FROM eval_cases WHERE set_name=?", [name])
            conn.execute("DELETE FROM eval_sets WHERE name=?", [name])
        return len(runs)

    # -- cases --------------------------------------------------------------------------------------------------
    def prepare(
        self,
        set_name: str,
        user_id: str,
        question: str,
        expected: Iterable[str],
        *,
        case_id: str | None = None,
        session_id: str | None = None,
        now: Any = None,
        category: str | None = None,
        source: str = "manual",
        added_at: Any = None,
    ) -> EvalCase:
        """Validate one case without writing it."""
        check_set_name(set_name)
        check_id(user_id, "user id")
        check_text(question, "question", self.b.settings.max_text_chars)
        if isinstance(expected, str):
            expected = [expected]
        ids = list(dict.fromkeys(check_ids(list(expected), "expected memory id")))
        if not ids:
            raise InvalidInput("a case needs at least one expected memory id")
        if len(ids) > MAX_EXPECTED:
            raise InvalidInput(f"a case has at most {MAX_EXPECTED} expected memories")
        if session_id is not None:
            check_id(session_id, "session id")
        if category is not None and category != "":
            category = str(check_id(str(category), "category"))
        else:
            category = None
        if source not in SOURCES:
            raise InvalidInput(f"unknown case source {str(source)[:20]!r}; use {', '.join(SOURCES)}")
        return EvalCase(
            set_name,
            check_id(case_id, "case id") if case_id is not None else new_id("case"),
            user_id,
            question,
            session_id,
            optional_time(now, "now"),
            tuple(ids),
            category,
            source,
            optional_time(added_at, "added_at") or utcnow(),
        )

    def add(self, cases: Sequence[EvalCase], create_set: bool = False) -> builtins.list[EvalCase]:
        """Write prepared cases in one transaction; a case id already in its set is replaced."""
        if not cases:
            return []
        names = {c.set_name for c in cases}
        with self.b.db.write() as conn:
            for name in names:
                if not conn.execute("SELECT 1 FROM eval_sets WHERE name=?", [name]).fetchone():
                    if not create_set:
                        raise NotFound(f"no expectation set {name!r}")
                    conn.execute("INSERT INTO eval_sets VALUES (?,?,?)", [name, "", utcnow()])
            keys = [[c.set_name, c.case_id] for c in cases]
            if len({tuple(k) for k in keys}) != len(keys):
                raise InvalidInput("duplicate case ids in one write")
            for name in names:
                conn.execute(
                    "DELETE FROM eval_cases WHERE set_name=? AND case_id IN (SELECT unnest(?))",
                    [name, [c.case_id for c in cases if c.set_name == name]],
                )
            insert_rows(
                conn,
                "eval_cases",
                CASE_TYPES,
                [
                    [
                        c.set_name,
                        c.case_id,
                        c.user_id,
                        c.question,
                        c.session_id,
                        c.now,
                        json.dumps(list(c.expected)),
                        c.category,
                        c.source,
                        c.added_at,
                    ]
                    for c in cases
                ],
            )
        return list(cases)

    def cases(self, set_name: str, category: str | None = None) -> builtins.list[EvalCase]:
        check_set_name(set_name)
        sql, params = f"SELECT {CASE_COLUMNS} FROM eval_cases WHERE set_name=?", [set_name]
        if category is not None:
            sql += " AND coalesce(category, '') = ?"
            params.append(str(category))
        with self.b.db.read() as conn:
            if not conn.execute("SELECT 1 FROM eval_sets WHERE name=?", [set_name]).fetchone():
                raise NotFound(f"no expectation set {set_name!r}")
            rows = conn.execute(sql + " ORDER BY added_at, case_id", params).fetchall()
        return [_case(r) for r in rows]

    def get_case(self, set_name: str, case_id: str) -> EvalCase:
        check_set_name(set_name)
        check_id(case_id, "case id")
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {CASE_COLUMNS} FROM eval_cases WHERE set_name=? AND case_id=?", [set_name, case_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no case {case_id!r} in expectation set {set_name!r}")
        return _case(row)

    def update_case(self, set_name: str, case_id: str, changes: Mapping[str, Any]) -> EvalCase:
        """Edit a case's question, expected ids, session, now or category (validated like a new case)."""
        old = self.get_case(set_name, case_id)
        bad = set(changes) - (CASE_KEYS - {"case_id", "source"})
        if bad:
            raise InvalidInput(f"cannot change {sorted(bad)[0]!r} of a case")
        fields = {
            "user_id": old.user_id,
            "question": old.question,
            "expected": old.expected,
            "session_id": old.session_id,
            "now": old.now,
            "category": old.category,
            **dict(changes),
        }
        new = self.prepare(
            set_name,
            fields.pop("user_id"),
            fields.pop("question"),
            fields.pop("expected"),
            case_id=case_id,
            source=old.source,
            added_at=old.added_at,
            **fields,
        )
        self.add([new])
        return new

    def delete_case(self, set_name: str, case_id: str) -> None:
        self.get_case(set_name, case_id)
        with self.b.db.write() as conn:
            conn.execute("DELETE FROM eval_cases WHERE set_name=? AND case_id=?", [set_name, case_id])
