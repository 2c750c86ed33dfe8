"""``engine.insights``: questions asked of a whole store rather than one trace, for one user at a time.

What is read live and what is precomputed (the page must answer in under a second at 100k memories, 1k traces):

- memories in no context of the last N traces, and queries whose context came back empty: live SQL over the
  ``traces`` columns (``context_ids``, ``memory_ids``), never a trace body;
- superseded or ended facts still recalled: live, the relations whose validity ended against the last N traces;
- near-duplicates and echoes: an all-pairs vector comparison (insight_refresh.py), computed by :meth:`refresh` on
  demand into tables (migration 0009); readers show when that was. A forget drops a pair at once (the reads join the
  active items), a new memory waits for the next refresh;
- a memory's blast radius: live, from the traces' ``memory_ids`` column (engine/trace/blast_radius.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..ids import check_id
from ..records import Page
from ..store.sql.database import Connection, one_row
from ..validation import check_int, check_number
from .base import Backends, page_args
from .blast_radius import blast_radius
from .feedback import FeedbackLog
from .graph import RELATION_COLUMNS, RELATION_FROM
from .insight_records import (
    BlastRadius,
    Echo,
    EmptyQuery,
    InsightMemory,
    InsightRefresh,
    NearDuplicate,
    StaleRecall,
    UnusedMemories,
)
from .insight_refresh import InsightRefresher

TRACES_RULE = (1, 100_000)  # how many of the newest traces a "last N traces" question looks at


def _ids(value: Any) -> list[str]:
    """A ``context_ids`` JSON array (text in DuckDB, already a list from PostgreSQL) as a list."""
    if value is None:
        return []
    return list(json.loads(value) if isinstance(value, str) else value)


def _memory(row: Sequence[Any]) -> InsightMemory:
    return InsightMemory(row[0], row[1], row[2], row[3])


class StoreInsights:
    def __init__(self, b: Backends, feedback: FeedbackLog) -> None:
        self.b = b
        self.feedback = feedback
        self._refresher = InsightRefresher(b)

    # -- precomputed: near-duplicates and echoes ---------------------------------------------------------------------
    def refresh(self, user_id: str, min_similarity: float | None = None) -> InsightRefresh:
        """Compute the user's near-duplicate pairs (cosine >= ``min_similarity``, default the
        ``near_duplicate_similarity`` setting) and echoes again, replacing what an earlier refresh stored.
        Takes seconds at 100k memories (one pass over the user's vectors), so pages call it on demand only."""
        check_id(user_id, "user id")
        floor = self._threshold(min_similarity)
        self.b.db.refuse_if_read_only()
        return self._refresher.refresh(user_id, floor)

    def refreshed(self, user_id: str) -> InsightRefresh | None:
        """When the user's near-duplicates and echoes were last computed, or None if never."""
        check_id(user_id, "user id")
        with self.b.db.read() as conn:
            row = conn.execute(
                "SELECT user_id, refreshed_at, items, pairs, echoes, min_similarity, seconds FROM insight_refreshes "
                "WHERE user_id=?",
                [user_id],
            ).fetchone()
        return None if row is None else InsightRefresh(*row)

    def near_duplicates(
        self, user_id: str, min_similarity: float | None = None, limit: int = 50, offset: int = 0
    ) -> Page[NearDuplicate]:
        """Pairs of the user's active memories within ``min_similarity`` (at least the last refresh's), most
        similar first. A pair with a memory forgotten since the refresh is left out."""
        check_id(user_id, "user id")
        floor = self._threshold(min_similarity)
        limit, offset = page_args(limit, offset)
        with self.b.db.read() as conn:
            where, params = self._live_pairs(conn, user_id, floor)
            total = one_row(conn.execute(f"SELECT count(*) FROM near_duplicates d WHERE {where}", params))[0]
            # the page's pairs first (a top-N of one table), then their two memories' texts
            rows = conn.execute(
                "SELECT a.id, a.content, a.category, a.created_at, b.id, b.content, b.category, b.created_at, "
                "d.similarity FROM (SELECT a_id, b_id, similarity FROM near_duplicates d WHERE "
                f"{where} ORDER BY similarity DESC, a_id, b_id LIMIT ? OFFSET ?) d "
                "JOIN items a ON a.id = d.a_id JOIN items b ON b.id = d.b_id ORDER BY d.similarity DESC, a.id, b.id",
                [*params, limit, offset],
            ).fetchall()
        pairs = tuple(NearDuplicate(_memory(r[0:4]), _memory(r[4:8]), float(r[8])) for r in rows)
        return Page(pairs, int(total), limit, offset)

    @staticmethod
    def _live_pairs(conn: Connection, user_id: str, floor: float) -> tuple[str, list[Any]]:
        """The WHERE clause of the user's pairs at ``floor`` whose memories are both still active. The refresh kept
        active memories only, and every forget since is in the forget log (forgetting.py writes it in the same
        transaction), so the few ids forgotten since the refresh are left out instead of joining 100k items."""
        where, params = "d.user_id=? AND d.similarity >= ?", [user_id, floor]
        done = conn.execute("SELECT refreshed_at FROM insight_refreshes WHERE user_id=?", [user_id]).fetchone()
        if done is None:
            return where, params
        logged = conn.execute(
            "SELECT ids FROM forget_log WHERE user_id=? AND memory_type='semantic' AND occurred_at >= ?",
            [user_id, done[0]],
        ).fetchall()
        gone = sorted({i for (ids,) in logged for i in _ids(ids)})
        if gone:
            where += " AND d.a_id NOT IN (SELECT unnest(?)) AND d.b_id NOT IN (SELECT unnest(?))"
            params += [gone, gone]
        return where, params

    def echoes(self, user_id: str, limit: int = 50, offset: int = 0) -> Page[Echo]:
        """The user's active memories that repeat what the agent was given before they were written (as of the last
        refresh), newest memory first."""
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        joined = "FROM echoes e JOIN items m ON m.id = e.memory_id AND m.archived_at IS NULL WHERE e.user_id=?"
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) {joined}", [user_id]))[0]
            rows = conn.execute(
                "SELECT m.id, m.content, m.category, m.created_at, e.source, e.source_id, e.trace_id, e.given_at, "
                f"e.similarity {joined} ORDER BY m.created_at DESC, m.id, e.source, e.source_id LIMIT ? OFFSET ?",
                [user_id, limit, offset],
            ).fetchall()
            texts = self._source_texts(conn, user_id, rows)
        out = tuple(
            Echo(_memory(r[0:4]), r[4], r[5], texts.get((r[4], r[5]), ""), r[6], r[7], float(r[8])) for r in rows
        )
        return Page(out, int(total), limit, offset)

    @staticmethod
    def _source_texts(conn: Connection, user_id: str, rows: Sequence[Sequence[Any]]) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for r in rows:
            source, source_id = r[4], r[5]
            if source == "context":
                found = conn.execute(
                    "SELECT content FROM items WHERE id=? AND user_id=?", [source_id, user_id]
                ).fetchone()
            else:
                session_id, _, seq = str(source_id).rpartition("#")
                found = conn.execute(
                    "SELECT content FROM messages WHERE user_id=? AND session_id=? AND seq=?",
                    [user_id, session_id, int(seq) if seq.isdigit() else -1],
                ).fetchone()
            out[(source, source_id)] = found[0] if found else ""
        return out

    def _threshold(self, value: float | None) -> float:
        if value is None:
            return float(self.b.settings.near_duplicate_similarity)
        return check_number(value, "min_similarity", lo=0.5, hi=1.0)

    # -- live: the last N traces -------------------------------------------------------------------------------------
    def _recent(self, conn: Connection, user_id: str, traces: int) -> list[tuple[Any, ...]]:
        rows = conn.execute(
            "SELECT id, question, created_at, context_ids, memory_ids FROM traces WHERE user_id=? "
            "ORDER BY created_at DESC, id LIMIT ?",
            [user_id, traces],
        ).fetchall()
        return [tuple(r) for r in rows]

    def never_retrieved(self, user_id: str, traces: int = 100, limit: int = 50, offset: int = 0) -> UnusedMemories:
        """The user's active semantic memories that were in the context of none of the user's last ``traces``
        traces, oldest first."""
        check_id(user_id, "user id")
        traces = check_int(traces, "traces", lo=TRACES_RULE[0], hi=TRACES_RULE[1])
        limit, offset = page_args(limit, offset)
        with self.b.db.read() as conn:
            recent = self._recent(conn, user_id, traces)
            used = sorted({i for r in recent for i in _ids(r[3])})
            where = "user_id=? AND archived_at IS NULL"
            params: list[Any] = [user_id]
            if used:
                where += " AND id NOT IN (SELECT unnest(?))"
                params.append(used)
            total = one_row(conn.execute(f"SELECT count(*) FROM items WHERE {where}", params))[0]
            rows = conn.execute(
                f"SELECT id, content, category, created_at FROM items WHERE {where} ORDER BY created_at, id "
                "LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return UnusedMemories(len(recent), int(total), tuple(_memory(r) for r in rows))

    def empty_queries(self, user_id: str, limit: int = 50, offset: int = 0) -> Page[EmptyQuery]:
        """The user's traces whose context came back empty (nothing found, or every candidate filtered out),
        newest first."""
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        where = "user_id=? AND (context_ids IS NULL OR json_array_length(context_ids) = 0)"
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM traces WHERE {where}", [user_id]))[0]
            rows = conn.execute(
                f"SELECT id, question, created_at, memory_ids FROM traces WHERE {where} "
                "ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                [user_id, limit, offset],
            ).fetchall()
        out = tuple(EmptyQuery(r[0], r[1], r[2], len(r[3] or [])) for r in rows)
        return Page(out, int(total), limit, offset)

    def stale_recalls(self, user_id: str, traces: int = 200, limit: int = 200) -> list[StaleRecall]:
        """Facts (graph relations) superseded or ended that the user's last ``traces`` traces still recalled after
        their validity ended: a memory the fact was drawn from in the context, or the fact itself among the
        entity stage's finds. Newest recall first, at most ``limit``."""
        check_id(user_id, "user id")
        traces = check_int(traces, "traces", lo=TRACES_RULE[0], hi=TRACES_RULE[1])
        limit = page_args(limit)[0]
        with self.b.db.read() as conn:
            recent = self._recent(conn, user_id, traces)
            if not recent:
                return []
            # Ended facts by id and sources only (a large graph has thousands); names are read for those recalled.
            ended = conn.execute(
                "SELECT id, sources FROM relations WHERE user_id=? AND archived_at IS NULL AND valid_to IS NOT NULL",
                [user_id],
            ).fetchall()
            in_context = {m for r in recent for m in _ids(r[3])}
            found_ids = {m for r in recent for m in r[4] or []}
            wanted = [
                rid
                for rid, sources in ended
                if rid in found_ids or any(isinstance(x, dict) and x.get("id") in in_context for x in _ids(sources))
            ]
            relations = (
                conn.execute(
                    f"SELECT {RELATION_COLUMNS} FROM {RELATION_FROM} WHERE r.id IN (SELECT unnest(?))", [wanted]
                ).fetchall()
                if wanted
                else []
            )
        by_source: dict[str, list[tuple[Any, ...]]] = {}
        for rel in relations:
            by_source.setdefault(rel[0], []).append(tuple(rel))  # the entity stage finds the fact by its own id
            for s in _ids(rel[10]):
                if isinstance(s, dict) and s.get("type") in ("semantic", "episodic", "procedural"):
                    by_source.setdefault(str(s.get("id")), []).append(tuple(rel))
        out: list[StaleRecall] = []
        for trace_id, question, created_at, context_ids, memory_ids in recent:
            found = [(m, True) for m in _ids(context_ids)] + [(m, False) for m in memory_ids or []]
            seen: set[str] = set()
            for memory_id, in_context in found:
                for rel in by_source.get(memory_id, []):
                    if rel[0] in seen or (not in_context and memory_id != rel[0]) or created_at < rel[8]:
                        continue
                    seen.add(rel[0])
                    fact = f"{rel[3]} {rel[4].replace('_', ' ')} {rel[6]}"
                    out.append(StaleRecall(rel[0], fact, rel[8], rel[9], memory_id, trace_id, question, created_at))
            if len(out) >= limit:
                break
        return out[:limit]

    def blast_radius(self, user_id: str, memory_id: str, limit: int = 200) -> BlastRadius:
        """Everything one memory touched: every trace it was a candidate in (newest ``limit`` listed), the contexts
        it entered, the evaluation cases expecting it or whose run had it in context, and every label it received.
        A memory never stored (or hard-forgotten) still shows the traces that name it."""
        check_id(user_id, "user id")
        check_id(memory_id, "memory id")
        limit = page_args(limit, max_limit=10_000)[0]
        return blast_radius(self.b, self.feedback, user_id, memory_id, limit)
