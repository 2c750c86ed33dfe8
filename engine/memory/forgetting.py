"""Forgetting with an audit log (llmemory §7.2, with the mode and actor recorded [memlens]).

Soft: archived in DuckDB (still fetchable by id) and removed from the vector/full-text index, so it can no longer be
retrieved. Hard: deleted from DuckDB and from LanceDB. Every call writes one forget-log entry listing only the ids
actually affected; unknown ids are reported back, not logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, MemlensError, StoreCorrupt
from ..ids import check_id, check_ids, lance_literal
from ..records import KINDS, ForgetLogEntry, ForgetResult
from ..store.schema import KIND_TABLES
from ..store.sql.database import Connection
from ..vocab import ForgetMode
from .base import Backends, dumps, page_args
from .graph_forget import GRAPH_KIND, GraphForgetOutcome, forget_derived, forget_graph
from .maintenance_redact import memory_texts, redact_log
from .tombstone_lookup import forgotten_among, tombstone

MODES = tuple(ForgetMode)
MAX_REASON_CHARS = 1000
log = logging.getLogger(__name__)


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or kind not in KINDS:  # (isinstance: the kind, typed as the str it is)
        raise InvalidInput(f"unknown memory kind {str(kind)[:30]!r}; use semantic, episodic, procedural or graph")
    return kind


def check_log_kind(kind: object) -> str:
    """A forget-log entry's memory_type: a memory kind, or "graph" (entities and relations)."""
    return GRAPH_KIND if kind == GRAPH_KIND else check_kind(kind)


class Forgetter:
    def __init__(
        self,
        b: Backends,
        mark_traces: Callable[[Connection, str, Sequence[str], dict[str, Any], dict[str, str]], int] | None = None,
        purges: Any = None,
    ) -> None:
        self.b = b
        # Called inside the forget's transaction with (conn, user_id, ids, tombstone): the traces (trace/store.py)
        self.mark_traces = mark_traces
        self.purges = purges  # storage.purges.VectorPurges: removes a hard-forgotten text from LanceDB's files

    def forget(
        self,
        user_id: str,
        kind: str,
        ids: Sequence[str],
        reason: str,
        mode: str = "soft",
        actor: str = "api",
        also: Callable[[Connection, Sequence[str]], None] | None = None,
    ) -> ForgetResult:
        """Forget memories of ``kind`` (semantic, episodic, procedural) by id, or with kind "graph" entities and
        relations (graph_forget.py). What the graph drew from forgotten memories goes in the same transaction (their
        mentions, the relations and entities nothing else supports); the memories' forget-log entry covers it. A hard
        forget also takes their texts out of the maintenance log (maintenance_redact.py). ``also(conn, affected)``
        runs in the forget's transaction when something was forgotten (maintenance's audit row of a TTL expiry)."""
        check_id(user_id, "user id")
        check_log_kind(kind)
        ids = list(dict.fromkeys(check_ids(ids, "id")))
        if not ids:
            raise InvalidInput("give at least one id to forget")
        if mode not in MODES:
            raise InvalidInput(f"unknown forget mode {str(mode)[:20]!r}; use soft or hard")
        validation.check_text(reason, "reason (required to forget)", MAX_REASON_CHARS)
        validation.check_text(actor, "actor", 100)
        if kind == GRAPH_KIND:
            return self._forget_graph(user_id, ids, reason, mode, actor)
        table = KIND_TABLES[kind]
        now = utcnow()
        # Refused before anything is written: a forget whose vectors cannot be deleted would commit the archive
        # and the log entry and then fail (each retry logging again), leaving the memory's vector behind.
        self.b.db.refuse_if_read_only()
        self.check_vectors_deletable(kind, ids)
        quoted_texts: dict[str, str] = {}
        with self.b.intent(kind, ids) as note:
            with self.b.db.write() as conn:
                rows = conn.execute(
                    f"SELECT id, archived_at FROM {table} WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, ids]
                ).fetchall()
                state = {r[0]: r[1] for r in rows}
                if mode == "soft":
                    affected = [i for i in ids if i in state and state[i] is None]
                    if affected:
                        conn.execute(
                            f"UPDATE {table} SET archived_at=? WHERE user_id=? AND id IN (SELECT unnest(?))",
                            [now, user_id, affected],
                        )
                else:
                    affected = [i for i in ids if i in state]
                    if affected and kind == "semantic":
                        # An item's text is what a trace quotes; read before the row goes, so a question that quoted
                        # it is redacted even when no trace showed the item as a candidate (soft-forgotten first).
                        quoted_texts = dict(
                            conn.execute(
                                "SELECT id, content FROM items WHERE user_id=? AND id IN (SELECT unnest(?))",
                                [user_id, affected],
                            ).fetchall()
                        )
                    if affected:
                        redact_log(conn, user_id, affected, memory_texts(conn, user_id, kind, affected))
                        conn.execute(
                            f"DELETE FROM {table} WHERE user_id=? AND id IN (SELECT unnest(?))", [user_id, affected]
                        )
                log_id = self._log(conn, user_id, kind, affected, mode, reason, actor, now)
                if affected and self.mark_traces is not None:
                    self.mark_traces(
                        conn, user_id, affected, tombstone(log_id, mode, now, actor, reason, kind), quoted_texts
                    )
                # What the graph drew from these memories goes with them, all or nothing (graph_forget.py); this
                # entry is its audit record (the cascade follows from it), so the log keeps one entry per call.
                derived = forget_derived(conn, user_id, kind, affected, mode, reason, now)
                self._redact_graph(conn, user_id, derived, log_id, mode, reason, actor, now)
                if affected and mode == "hard" and self.purges is not None:
                    self.purges.owe(conn, kind, now)
                if affected and also is not None:
                    also(conn, affected)
            # After the commit: retrieval also checks DuckDB, so nothing forgotten returns even while a vector is
            # left. The forget is done and is reported so (a retry would log it twice); a vector delete that still
            # fails here (a disk that filled meanwhile) keeps the journal note, and the next open finishes it.
            try:
                self.b.index.delete(kind, affected, every_model=True)
                if affected and mode == "hard" and self.purges is not None:
                    self.purges.start(kind)
            except Exception as exc:
                note.keep()
                log.warning(
                    "forget of %d %s memories committed; their vectors are left to the next open (its journal "
                    "note) or, on a team store, to `repair` (%s: %s)",
                    len(affected),
                    kind,
                    type(exc).__name__,
                    exc,
                )
        unknown = tuple(i for i in ids if i not in state)
        return ForgetResult(kind, mode, tuple(affected), unknown)

    @staticmethod
    def _log(
        conn: Connection, user_id: str, kind: str, ids: Sequence[str], mode: str, reason: str, actor: str, now: Any
    ) -> int:
        inserted = conn.execute(
            "INSERT INTO forget_log (user_id, memory_type, ids, count, mode, reason, actor, occurred_at) "
            "VALUES (?,?,?,?,?,?,?,?) RETURNING id",
            [user_id, kind, dumps(list(ids)), len(ids), mode, reason.strip(), actor.strip(), now],
        ).fetchone()
        assert inserted is not None  # INSERT ... RETURNING always yields the new row
        return int(inserted[0])

    def _redact_graph(
        self,
        conn: Connection,
        user_id: str,
        done: GraphForgetOutcome,
        log_id: int,
        mode: str,
        reason: str,
        actor: str,
        now: Any,
    ) -> None:
        """A hard forget's deleted entity names and relation sentences replaced where stored traces quote them."""
        if mode == "hard" and done.affected and self.mark_traces is not None:
            self.mark_traces(
                conn, user_id, done.affected, tombstone(log_id, mode, now, actor, reason, GRAPH_KIND), done.texts
            )
        if mode == "hard" and done.affected:
            # A relation's sentence where the maintenance log quotes it; entity names are words of other memories.
            sentences = {i: [t] for i, t in done.texts.items() if not i.startswith("ent_")}
            redact_log(conn, user_id, done.affected, sentences)

    def _forget_graph(self, user_id: str, ids: list[str], reason: str, mode: str, actor: str) -> ForgetResult:
        """Kind "graph": entities and relations by id (graph_forget.py), one forget-log entry listing what was
        affected (an entity's relations included); no vectors to delete."""
        self.b.db.refuse_if_read_only()
        now = utcnow()
        with self.b.db.write() as conn:
            done = forget_graph(conn, user_id, ids, mode, reason, now)
            log_id = self._log(conn, user_id, GRAPH_KIND, done.affected, mode, reason, actor, now)
            self._redact_graph(conn, user_id, done, log_id, mode, reason, actor, now)
        return ForgetResult(GRAPH_KIND, mode, tuple(done.affected), tuple(done.unknown))

    def check_vectors_deletable(self, kind: str, ids: Sequence[str]) -> None:
        """Read the id column of the rows of ``ids`` in every vector table of ``kind`` (every embedding model's: a
        forget deletes from each), as the delete will: StoreCorrupt naming the table if it cannot be read."""
        index = self.b.index
        try:
            tables = [index.table(kind, create=False)]
            tables += [
                index.db.open_table(n) for n in index.kind_tables(kind) if tables[0] is None or n != tables[0].name
            ]
            for tb in tables:
                for start in range(0, len(ids), 500):
                    if tb is not None:
                        tb.count_rows("id IN (" + ", ".join(lance_literal(i) for i in ids[start : start + 500]) + ")")
        except MemlensError:
            raise
        except Exception as exc:
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise StoreCorrupt(
                f"the {kind} vector table in {index.uri} cannot be read ({type(exc).__name__}: {first}); nothing was "
                "forgotten. Run `python -m engine repair` to rebuild it from DuckDB, then forget again"
            ) from None

    def tombstones(self, user_id: str, ids: Sequence[str], conn: Connection | None = None) -> dict[str, dict[str, Any]]:
        """The forgotten ones among ``ids`` of a user, each with its tombstone: hard (no row, named by a hard
        forget-log entry: the newest) or soft (archived; the newest soft entry naming it, if any)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        if conn is not None:
            return forgotten_among(conn, user_id, ids)
        with self.b.db.read() as c:
            return forgotten_among(c, user_id, ids)

    def log(self, user_id: str | None = None, limit: int = 1000) -> list[ForgetLogEntry]:
        """Audit entries, newest first."""
        params: list[Any] = []
        where = ""
        if user_id is not None:
            where = "WHERE user_id = ?"
            params.append(check_id(user_id, "user id"))
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT id, user_id, memory_type, ids, count, mode, reason, actor, occurred_at "
                "FROM forget_log "
                f"{where} ORDER BY occurred_at DESC, id DESC LIMIT ?",
                params + [page_args(limit)[0]],
            ).fetchall()
        return [ForgetLogEntry(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8]) for r in rows]

    def prepare_entry(
        self,
        user_id: str,
        memory_type: str,
        ids: Sequence[str],
        mode: str,
        reason: str,
        actor: str = "ingest",
        at: Any = None,
        count: int | None = None,
    ) -> list[Any]:
        """Validate an audit entry being imported verbatim (export/ingest round trip)."""
        check_id(user_id, "user id")
        check_log_kind(memory_type)
        ids = check_ids(ids, "id")
        if mode not in MODES:
            raise InvalidInput(f"unknown forget mode {str(mode)[:20]!r}")
        validation.check_text(reason, "reason", MAX_REASON_CHARS, blank_ok=True)
        actor = validation.check_optional_text(actor, "actor", 100) or "ingest"
        count = len(ids) if count is None else validation.check_int(count, "count", "count")
        return [user_id, memory_type, dumps(ids), count, mode, reason, actor, optional_time(at, "at") or utcnow()]

    def insert_entries(self, conn: Connection, entries: Sequence[list[Any]]) -> None:
        for e in entries:
            conn.execute(
                "INSERT INTO forget_log (user_id, memory_type, ids, count, mode, reason, actor, occurred_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                e,
            )
