"""Traces as stored records in DuckDB: save, fetch, list, delete, prune by age; the packed body (zstd, or zlib
before migration 0003) around the JSON form of codec.py."""

from __future__ import annotations

import dataclasses
import json
import logging
import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
import zstandard

from .. import validation
from ..clock import parse_time, utcnow
from ..errors import InvalidInput, NotFound, StoreCorrupt
from ..ids import check_id
from ..memory.base import Backends
from ..records import Page, TracePrunePlan
from ..store.sql.database import Connection, one_row
from .codec import trace_from_dict, trace_json_bytes
from .records import RetrievalTrace, Tombstone
from .redaction import graph_ids, redact_graph, redact_quotes, redact_trace
from .trace_index import TraceFilter, check_origin, current_origin, list_trace_rows

log = logging.getLogger(__name__)


def _memory_ids(trace: RetrievalTrace) -> list[str]:
    """The ids a forget looks a trace up by (its ``memory_ids`` column): every candidate's, and the entities and
    relations its entity stage recorded (a hard forget of one rewrites the trace: redaction.redact_graph)."""
    return sorted({c.id for hop in trace.hops for c in hop.candidates} | graph_ids(trace))


def _readable(trace_id: str, body: Any, packed: bytes | None) -> RetrievalTrace | None:
    """A stored trace as records, or None (with a warning) when it cannot be read: a forget then has nothing it
    could redact in it, and must not stop for it."""
    try:
        return trace_from_dict(_body_data(trace_id, body, packed))
    except StoreCorrupt as exc:
        log.warning("forget could not rewrite %s", exc)
    except InvalidInput as exc:
        log.warning("forget could not rewrite trace %r: %s", trace_id, exc)
    return None


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def pack_body(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(data)


def unpack_body(packed: bytes) -> bytes:
    """A zstd frame, or a zlib stream written before migration 0003."""
    if packed[:4] == _ZSTD_MAGIC:
        return zstandard.ZstdDecompressor().decompress(packed)
    return zlib.decompress(packed)


def _body_data(trace_id: str, body: Any, packed: bytes | None) -> dict[str, Any]:
    try:
        raw = unpack_body(packed) if packed is not None else body
        try:
            data: dict[str, Any] = orjson.loads(raw)
        except orjson.JSONDecodeError:  # written by the json module before orjson: it may hold NaN or Infinity
            data = json.loads(raw)
        return data
    except (zstandard.ZstdError, zlib.error, ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise StoreCorrupt(
            f"trace {trace_id!r} is stored but unreadable ({type(exc).__name__}: "
            f"{str(exc)[:120]}); delete it with delete_trace"
        ) from None


class TraceStore:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def save(self, trace: RetrievalTrace, conn: Connection | None = None, origin: str | None = None) -> None:
        """Store a trace; ``origin`` says where it came from (vocab.TraceOrigin), by default the one the caller's
        :func:`~engine.trace.trace_index.recording_origin` block set (``agent`` outside any)."""
        recorded = check_origin(origin) if origin is not None else current_origin()
        body = pack_body(trace_json_bytes(trace))
        args = [
            trace.trace_id,
            trace.user_id,
            trace.session_id,
            trace.question,
            len(trace.hops),
            trace.stop_reason,
            trace.settings.embedder,
            trace.strategies.reasoner,
            trace.timings_ms.get("pipeline"),
            json.dumps(list(trace.context_ids)),
            body,
            trace.created_at,
            _memory_ids(trace),
            recorded.value,
            trace.settings.preset,
        ]
        sql = (
            "INSERT INTO traces (id, user_id, session_id, question, hops, stop_reason, embedder, strategy, "
            "total_ms, context_ids, body_packed, created_at, memory_ids, origin, preset) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        )
        if conn is not None:
            conn.execute(sql, args)
        else:
            with self.b.db.write() as c:
                c.execute(sql, args)

    def get(self, trace_id: str, user_id: str | None = None) -> RetrievalTrace:
        check_id(trace_id, "trace id")
        sql, params = "SELECT body, body_packed FROM traces WHERE id=?", [trace_id]
        if user_id is not None:
            sql += " AND user_id=?"
            params.append(check_id(user_id, "user id"))
        with self.b.db.read() as conn:
            row = conn.execute(sql, params).fetchone()
        if row is None:
            raise NotFound(f"no trace {trace_id!r}")
        return trace_from_dict(_body_data(trace_id, row[0], row[1]))

    def mark_forgotten(
        self,
        conn: Connection,
        user_id: str,
        ids: Sequence[str],
        tombstone: Mapping[str, Any] | Tombstone,
        known_texts: Mapping[str, str] | None = None,
    ) -> int:
        """Put a forget's tombstone into every stored trace of ``user_id`` that has one of ``ids`` among its
        candidates, inside the forget's own transaction (so the forget and the traces change together or not at
        all). A hard forget also blanks the memories' texts (see :func:`redact_trace`) and replaces them where a
        trace of the user quotes them in its question, hop queries or proposals (:func:`redact_quotes`; the question
        column too). ``known_texts`` are the memories' texts read before their rows went (items), so a quote is
        found even when no trace showed the memory. Returns the traces changed.

        Traces stored before migration 0005 have no ``memory_ids`` yet: they are unpacked here once and get it."""
        wanted = set(ids)
        if not wanted:
            return 0
        rows = conn.execute(
            "SELECT id, body, body_packed, memory_ids FROM traces WHERE user_id=? AND "
            "(memory_ids IS NULL OR list_has_any(memory_ids, ?::VARCHAR[]))",
            [user_id, sorted(wanted)],
        ).fetchall()
        tomb = Tombstone.from_dict(tombstone)
        traces: dict[str, RetrievalTrace] = {}
        # forgotten id -> its text as the traces show it (the row is already deleted)
        texts: dict[str, str] = dict(known_texts or {}) if tomb.hard else {}
        for trace_id, body, packed, memory_ids in rows:
            trace = _readable(trace_id, body, packed)
            if trace is None:
                continue
            listed = _memory_ids(trace)
            if wanted.isdisjoint(listed):
                if memory_ids is None:
                    conn.execute("UPDATE traces SET memory_ids=? WHERE id=?", [listed, trace_id])
                continue
            traces[trace_id] = trace
            for h in trace.hops:
                for c in h.candidates:
                    if c.id in wanted and c.text and not (c.forgotten is not None and c.forgotten.hard):
                        texts.setdefault(c.id, c.text)
        if tomb.hard and texts:
            # A trace that quoted the text without retrieving the memory (asked before it was stored, or ranked it
            # out of reach): found by its question, the one field stored outside the packed body.
            quoted = [t for t in texts.values() if t.strip()]
            found = conn.execute(
                "SELECT id, body, body_packed FROM traces WHERE user_id=? AND ("
                + " OR ".join("strpos(question, ?) > 0" for _ in quoted)
                + ")",
                [user_id, *quoted],
            ).fetchall()
            for trace_id, body, packed in found:
                if trace_id not in traces and (trace := _readable(trace_id, body, packed)) is not None:
                    traces[trace_id] = trace
        for trace_id, trace in traces.items():
            trace = redact_trace(trace, wanted, tomb)
            if tomb.hard:
                trace = redact_graph(redact_quotes(trace, texts), wanted)
            conn.execute(
                "UPDATE traces SET body=NULL, body_packed=?, memory_ids=?, question=? WHERE id=?",
                [pack_body(trace_json_bytes(trace)), _memory_ids(trace), trace.question, trace_id],
            )
        return len(traces)

    def list_traces(
        self,
        user_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        filters: TraceFilter | None = None,
        sort: str = "created_at",
        descending: bool = True,
    ) -> Page[dict[str, Any]]:
        """Trace summaries (no bodies), newest first unless ``sort`` (created_at, latency, hops, user, question,
        origin, labels) says otherwise, paginated in the database. ``filters`` narrows them (user, text of the
        question, dates, preset, hops, latency, labelled or not, origin: :class:`TraceFilter`); ``user_id``, when
        given, wins over the filter's. Each row carries its ``origin``, ``preset`` (None before migration 0011) and
        number of feedback ``labels``."""
        flt = filters if filters is not None else TraceFilter()
        if not isinstance(flt, TraceFilter):
            raise InvalidInput(f"filters must be a TraceFilter, got {type(flt).__name__}")
        if user_id is not None:
            flt = dataclasses.replace(flt, user_id=user_id)
        with self.b.db.read() as conn:
            page = list_trace_rows(conn, flt, sort, bool(descending), limit, offset)
        for d in page.rows:
            d["context_ids"] = json.loads(d["context_ids"] or "[]")
        return page

    def users(self) -> list[str]:
        """The users with at least one stored trace, in order (a user may have traces and no session)."""
        with self.b.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM traces ORDER BY user_id").fetchall()]

    def delete(self, trace_id: str, user_id: str | None = None) -> None:
        # Checks existence without reading the body, so an unreadable trace can still be deleted.
        check_id(trace_id, "trace id")
        sql, params = "DELETE FROM traces WHERE id=?", [trace_id]
        if user_id is not None:
            sql += " AND user_id=?"
            params.append(check_id(user_id, "user id"))
        with self.b.db.write() as conn:
            if not conn.execute(sql + " RETURNING id", params).fetchall():
                raise NotFound(f"no trace {trace_id!r}")

    def prune(
        self,
        older_than_days: float,
        user_id: str | None = None,
        keep_labelled: bool = True,
        apply: bool = False,
        now: datetime | None = None,
    ) -> TracePrunePlan:
        """The traces created more than ``older_than_days`` ago (of one user, or every user's); deleted only when
        ``apply`` is true. A trace a feedback label points to is evidence for that label, so it is kept unless
        ``keep_labelled`` is false. DuckDB reuses the freed space; the file does not shrink."""
        validation.check_number(older_than_days, "older_than_days", "older_than_days")
        now = parse_time(now, "now") if now is not None else utcnow()
        cutoff = now - timedelta(days=float(older_than_days))
        where = "t.created_at < ?"
        params: list[Any] = [cutoff]
        if user_id is not None:
            where += " AND t.user_id = ?"
            params.append(check_id(user_id, "user id"))
        labelled = "EXISTS (SELECT 1 FROM feedback f WHERE f.trace_id = t.id)"
        chosen = f"{where} AND NOT {labelled}" if keep_labelled else where
        size = "coalesce(octet_length(t.body_packed), 0) + coalesce(strlen(CAST(t.body AS VARCHAR)), 0)"
        with self.b.db.write() as conn:
            count, nbytes = one_row(
                conn.execute(f"SELECT count(*), coalesce(sum({size}), 0) FROM traces t WHERE {chosen}", params)
            )
            kept = (
                one_row(conn.execute(f"SELECT count(*) FROM traces t WHERE {where} AND {labelled}", params))[0]
                if keep_labelled
                else 0
            )
            rows = conn.execute(
                f"SELECT t.id, t.user_id, t.question, t.created_at FROM traces t WHERE {chosen} "
                "ORDER BY t.created_at DESC, t.id LIMIT 20",
                params,
            ).fetchall()
            if apply and count:
                conn.execute(f"DELETE FROM traces t WHERE {chosen}", params)
        sample = tuple({"trace_id": r[0], "user_id": r[1], "question": r[2], "created_at": r[3]} for r in rows)
        return TracePrunePlan(
            user_id, float(older_than_days), cutoff, int(count), int(nbytes), int(kept), sample, bool(apply and count)
        )
