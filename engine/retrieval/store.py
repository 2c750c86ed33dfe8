"""Traces as stored records in DuckDB: save, fetch, list, delete, prune by age, and back from JSON."""

from __future__ import annotations

import json
import math
import zlib
from datetime import datetime, timedelta
from typing import Any

import orjson
import zstandard

from ..clock import utcnow
from ..errors import InvalidInput, NotFound, StoreCorrupt
from ..ids import check_id
from ..memory.base import Backends, page_args
from ..records import Page, TracePrunePlan
from ..storage.database import one_row
from .trace import OLDER_TRACE_SETTINGS, CandidateTrace, HopTrace, RetrievalTrace


def trace_from_dict(data: dict[str, Any]) -> RetrievalTrace:
    try:
        hops = tuple(HopTrace(**{**h, "candidates": tuple(CandidateTrace(**c) for c in h["candidates"])})
                     for h in data["hops"])
        return RetrievalTrace(**{**data, "hops": hops, "context_ids": tuple(data["context_ids"]),
                                 "ranking": tuple(data["ranking"]),
                                 "settings": {**OLDER_TRACE_SETTINGS, **data["settings"]}})
    except (KeyError, TypeError) as exc:
        raise InvalidInput(f"not a memlens trace: {exc}") from None


def trace_json_bytes(trace: RetrievalTrace) -> bytes:
    """The stored form of a trace: UTF-8 JSON. orjson writes a 2-hop trace (~200 candidates, ~300 kB) in ~0.6 ms,
    the json module in ~6 ms (measured, bench/latency.py store); the JSON is the same up to whitespace. orjson
    walks the records (dataclasses), dicts, lists and datetimes itself and refuses anything else."""
    return orjson.dumps(trace, option=orjson.OPT_NON_STR_KEYS)


def trace_json(trace: RetrievalTrace) -> str:
    return trace_json_bytes(trace).decode("utf-8")


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def pack_body(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(data)


def unpack_body(packed: bytes) -> bytes:
    """A zstd frame, or a zlib stream written before migration 0003."""
    if packed[:4] == _ZSTD_MAGIC:
        return zstandard.ZstdDecompressor().decompress(packed)
    return zlib.decompress(packed)


class TraceStore:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def save(self, trace: RetrievalTrace, conn=None) -> None:
        body = pack_body(trace_json_bytes(trace))
        args = [trace.trace_id, trace.user_id, trace.session_id, trace.question, len(trace.hops), trace.stop_reason,
                trace.settings.get("embedder"), trace.strategies.get("reasoner"),
                trace.timings_ms.get("pipeline"), json.dumps(list(trace.context_ids)), body, trace.created_at]
        sql = ("INSERT INTO traces (id, user_id, session_id, question, hops, stop_reason, embedder, strategy, "
               "total_ms, "
               "context_ids, body_packed, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")
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
        try:
            body = unpack_body(row[1]) if row[1] is not None else row[0]
            try:
                data = orjson.loads(body)
            except orjson.JSONDecodeError:  # written by the json module before orjson: it may hold NaN or Infinity
                data = json.loads(body)
        except (zstandard.ZstdError, zlib.error, ValueError) as exc:  # JSONDecodeError is a ValueError
            raise StoreCorrupt(f"trace {trace_id!r} is stored but unreadable ({type(exc).__name__}: "
                               f"{str(exc)[:120]}); delete it with delete_trace") from None
        return trace_from_dict(data)

    def list_traces(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> Page:
        """Trace summaries (no bodies) newest first, paginated in the database."""
        limit, offset = page_args(limit, offset)
        where, params = "", []
        if user_id is not None:
            where = "WHERE user_id = ?"
            params.append(check_id(user_id, "user id"))
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM traces {where}", params))[0]
            rows = conn.execute(
                "SELECT id, user_id, session_id, question, hops, stop_reason, embedder, strategy, total_ms, "
                f"context_ids, created_at FROM traces {where} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                params + [int(limit), int(offset)]).fetchall()
        keys = ("trace_id", "user_id", "session_id", "question", "hops", "stop_reason", "embedder", "reasoner",
                "total_ms", "context_ids", "created_at")
        out = []
        for r in rows:
            d = dict(zip(keys, r))
            d["context_ids"] = json.loads(d["context_ids"] or "[]")
            out.append(d)
        return Page(tuple(out), total, int(limit), int(offset))

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

    def prune(self, older_than_days: float, user_id: str | None = None, keep_labelled: bool = True,
              apply: bool = False, now: datetime | None = None) -> TracePrunePlan:
        """The traces created more than ``older_than_days`` ago (of one user, or every user's); deleted only when
        ``apply`` is true. A trace a feedback label points to is evidence for that label, so it is kept unless
        ``keep_labelled`` is false. DuckDB reuses the freed space; the file does not shrink."""
        if isinstance(older_than_days, bool) or not isinstance(older_than_days, (int, float)) \
                or not math.isfinite(older_than_days) or older_than_days < 0 or older_than_days > 36_500:
            raise InvalidInput("older_than_days must be a number of days from 0 to 36500")
        cutoff = (now or utcnow()) - timedelta(days=float(older_than_days))
        where = "t.created_at < ?"
        params: list[Any] = [cutoff]
        if user_id is not None:
            where += " AND t.user_id = ?"
            params.append(check_id(user_id, "user id"))
        labelled = "EXISTS (SELECT 1 FROM feedback f WHERE f.trace_id = t.id)"
        chosen = f"{where} AND NOT {labelled}" if keep_labelled else where
        size = "coalesce(octet_length(t.body_packed), 0) + coalesce(strlen(CAST(t.body AS VARCHAR)), 0)"
        with self.b.db.write() as conn:
            count, nbytes = one_row(conn.execute(
                f"SELECT count(*), coalesce(sum({size}), 0) FROM traces t WHERE {chosen}", params))
            kept = one_row(conn.execute(f"SELECT count(*) FROM traces t WHERE {where} AND {labelled}",
                                params))[0] if keep_labelled else 0
            rows = conn.execute(f"SELECT t.id, t.user_id, t.question, t.created_at FROM traces t WHERE {chosen} "
                                "ORDER BY t.created_at DESC, t.id LIMIT 20", params).fetchall()
            if apply and count:
                conn.execute(f"DELETE FROM traces t WHERE {chosen}", params)
        sample = tuple({"trace_id": r[0], "user_id": r[1], "question": r[2], "created_at": r[3]} for r in rows)
        return TracePrunePlan(user_id, float(older_than_days), cutoff, int(count), int(nbytes), int(kept), sample,
                              bool(apply and count))
