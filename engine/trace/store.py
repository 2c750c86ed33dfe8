"""Traces as stored records in DuckDB: save, fetch, list, delete, prune by age, and back from JSON."""

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
from ..memory.base import Backends, page_args
from ..records import Page, TracePrunePlan
from ..store.sql.database import one_row
from .records import OLDER_TRACE_SETTINGS, CandidateTrace, HopTrace, RankedMemory, RetrievalTrace
from .redaction import redact_quotes, redact_trace

log = logging.getLogger(__name__)


def trace_from_dict(data: dict[str, Any]) -> RetrievalTrace:
    try:
        hops = tuple(
            HopTrace(**{**h, "candidates": tuple(CandidateTrace(**c) for c in h["candidates"])}) for h in data["hops"]
        )
        return RetrievalTrace(
            **{
                **data,
                "hops": hops,
                "context_ids": tuple(data["context_ids"]),
                "ranking": tuple(RankedMemory.from_dict(r) for r in data["ranking"]),
                "settings": {**OLDER_TRACE_SETTINGS, **data["settings"]},
            }
        )
    except (KeyError, TypeError, AttributeError) as exc:  # AttributeError: a ranking entry that is not an object
        raise InvalidInput(f"not a memlens trace: {exc}") from None


def trace_json_bytes(trace: RetrievalTrace) -> bytes:
    """The stored form of a trace: UTF-8 JSON. orjson writes a 2-hop trace (~200 candidates, ~300 kB) in ~0.6 ms,
    the json module in ~6 ms (measured, bench/latency.py store); the JSON is the same up to whitespace. orjson
    walks the records (dataclasses), dicts, lists and datetimes itself and refuses anything else. The ranking's
    entries are written in their own form (RankedMemory.to_dict: without the replay's keys outside a replay), which
    orjson would not know to leave out."""
    fields = {f.name: getattr(trace, f.name) for f in dataclasses.fields(trace)}
    fields["ranking"] = [r.to_dict() for r in trace.ranking]
    return orjson.dumps(fields, option=orjson.OPT_NON_STR_KEYS)


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


def _body_data(trace_id: str, body: Any, packed: bytes | None) -> dict[str, Any]:
    try:
        raw = unpack_body(packed) if packed is not None else body
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:  # written by the json module before orjson: it may hold NaN or Infinity
            return json.loads(raw)
    except (zstandard.ZstdError, zlib.error, ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise StoreCorrupt(
            f"trace {trace_id!r} is stored but unreadable ({type(exc).__name__}: "
            f"{str(exc)[:120]}); delete it with delete_trace"
        ) from None


class TraceStore:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def save(self, trace: RetrievalTrace, conn=None) -> None:
        body = pack_body(trace_json_bytes(trace))
        args = [
            trace.trace_id,
            trace.user_id,
            trace.session_id,
            trace.question,
            len(trace.hops),
            trace.stop_reason,
            trace.settings.get("embedder"),
            trace.strategies.get("reasoner"),
            trace.timings_ms.get("pipeline"),
            json.dumps(list(trace.context_ids)),
            body,
            trace.created_at,
            sorted({c.id for hop in trace.hops for c in hop.candidates}),
        ]
        sql = (
            "INSERT INTO traces (id, user_id, session_id, question, hops, stop_reason, embedder, strategy, "
            "total_ms, context_ids, body_packed, created_at, memory_ids) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
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
        conn,
        user_id: str,
        ids: Sequence[str],
        tombstone: dict[str, Any],
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
        hard = tombstone.get("mode") == "hard"
        bodies: dict[str, tuple[dict[str, Any], list[str]]] = {}
        # forgotten id -> its text as the traces show it (the row is already deleted)
        texts: dict[str, str] = dict(known_texts or {}) if hard else {}
        for trace_id, body, packed, memory_ids in rows:
            try:
                data = _body_data(trace_id, body, packed)
            except StoreCorrupt as exc:  # nothing readable to redact; say so rather than stop the forget
                log.warning("forget could not rewrite %s", exc)
                continue
            listed = sorted({c["id"] for h in data.get("hops", ()) for c in h.get("candidates", ())})
            if wanted.isdisjoint(listed):
                if memory_ids is None:
                    conn.execute("UPDATE traces SET memory_ids=? WHERE id=?", [listed, trace_id])
                continue
            bodies[trace_id] = (data, listed)
            for h in data.get("hops", ()):
                for c in h.get("candidates", ()):
                    if c["id"] in wanted and c.get("text") and not (c.get("forgotten") or {}).get("mode") == "hard":
                        texts.setdefault(c["id"], c["text"])
        if hard and texts:
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
                if trace_id in bodies:
                    continue
                try:
                    data = _body_data(trace_id, body, packed)
                except StoreCorrupt as exc:
                    log.warning("forget could not rewrite %s", exc)
                    continue
                bodies[trace_id] = (
                    data,
                    sorted({c["id"] for h in data.get("hops", ()) for c in h.get("candidates", ())}),
                )
        changed = 0
        for trace_id, (data, listed) in bodies.items():
            redact_trace(data, wanted, tombstone)
            if hard:
                redact_quotes(data, texts)
            conn.execute(
                "UPDATE traces SET body=NULL, body_packed=?, memory_ids=?, question=? WHERE id=?",
                [
                    pack_body(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)),
                    listed,
                    data.get("question", ""),
                    trace_id,
                ],
            )
            changed += 1
        return changed

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
                params + [int(limit), int(offset)],
            ).fetchall()
        keys = (
            "trace_id",
            "user_id",
            "session_id",
            "question",
            "hops",
            "stop_reason",
            "embedder",
            "reasoner",
            "total_ms",
            "context_ids",
            "created_at",
        )
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
