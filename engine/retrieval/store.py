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
from ..storage.database import one_row
from .trace import OLDER_TRACE_SETTINGS, CandidateTrace, HopTrace, RankedMemory, RetrievalTrace

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


# What a hard-forgotten memory's text becomes in a trace's assembled context.
FORGOTTEN_TEXT = "[forgotten memory {id}]"
REDACTED_PROPOSAL = "made from a forgotten memory's text"
REDACTED_QUERY = "[query made from a forgotten memory]"


def redact_trace(data: dict[str, Any], ids: set[str], tombstone: dict[str, Any]) -> None:
    """Mark the candidates ``ids`` of a trace (its plain JSON form) as forgotten with ``tombstone``.

    Soft (archived): only the mark; the text stays, as it does in the store. Hard: every copy of the memory's text
    goes: the candidates' ``text`` and ``preceding_text``, its block in the assembled ``context`` (the context is
    rebuilt from the ranking with a placeholder), and what the offline bridge reasoner quoted from it (``from_text``
    or ``also_from``, the names and terms it took, and the later hop's query made of them). Scores, ranks and ids
    stay, so the trace still explains the retrieval. A hard tombstone is never downgraded by a later soft one."""
    hard = tombstone.get("mode") == "hard"
    texts: dict[str, str] = {}
    forgotten = data.setdefault("forgotten", {})
    for hop in data.get("hops", ()):
        for c in hop.get("candidates", ()):
            if c["id"] not in ids or (c.get("forgotten") or {}).get("mode") == "hard":
                continue
            c["forgotten"] = dict(tombstone)
            forgotten[c["id"]] = dict(tombstone)
            if hard:
                texts.setdefault(c["id"], c.get("text") or "")
                c["text"], c["preceding_text"] = "", ""
    if not hard or not texts:
        return
    data["context"] = _redacted_context(data, texts)
    quoted = [t for t in texts.values() if t]
    # A hop's proposal is what made its query; the offline bridge reasoner's quotes the memory it took names from
    # (from_text), and the query is made of those names.
    for hop in data.get("hops", ()):
        if hop.get("hop", 1) > 1 and _quotes(hop.get("proposal"), quoted):
            hop["proposal"] = {"redacted": REDACTED_PROPOSAL}
            hop["query"] = hop["relevance_text"] = REDACTED_QUERY
    if _quotes(data.get("stop_details"), quoted):
        data["stop_details"] = {"redacted": REDACTED_PROPOSAL}


def _quotes(details: Any, texts: Sequence[str]) -> bool:
    if not isinstance(details, dict):
        return False
    # The offline bridge reasoner quotes the best result (from_text) and the next best ones it took names from.
    quotes = [details.get("from_text"), *(details.get("also_from") or ())]
    return any(q and (q in t or t.startswith(str(q))) for q in quotes for t in texts)


def _redacted_context(data: dict[str, Any], texts: Mapping[str, str]) -> str:
    """The context rebuilt from the trace's ranking with each forgotten memory's text replaced (the format of
    stages.render_context). When the rebuild with the original texts does not give back the stored context (a
    format from another version), the texts are replaced where they stand instead."""
    context = data.get("context") or ""
    if not context:
        return context
    by_hop = {(h.get("hop"), c["id"]): c for h in data.get("hops", ()) for c in h.get("candidates", ())}

    def render(replace: bool) -> str:
        parts = ["=== RELEVANT MEMORIES ===", ""]
        for r in data.get("ranking", ()):
            if not r.get("in_context"):
                continue
            c = by_hop.get((r.get("hop"), r["id"]))
            if c is None:
                return ""
            text = texts.get(r["id"], c.get("text") or "")
            if replace and r["id"] in texts:
                text = FORGOTTEN_TEXT.format(id=r["id"])
            parts += [f"[{c.get('created_at')}] (confidence: {float(r.get('final') or 0):.2f})", text, ""]
        parts.append("=== END MEMORIES ===")
        return "\n".join(parts)

    if render(False) == context:
        return render(True)
    for item_id, text in texts.items():
        if text:
            context = context.replace(text, FORGOTTEN_TEXT.format(id=item_id))
    return context


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

    def mark_forgotten(self, conn, user_id: str, ids: Sequence[str], tombstone: dict[str, Any]) -> int:
        """Put a forget's tombstone into every stored trace of ``user_id`` that has one of ``ids`` among its
        candidates, inside the forget's own transaction (so the forget and the traces change together or not at
        all). A hard forget also blanks the memories' texts: see :func:`redact_trace`. Returns the traces changed.

        Traces stored before migration 0005 have no ``memory_ids`` yet: they are unpacked here once and get it."""
        wanted = set(ids)
        if not wanted:
            return 0
        rows = conn.execute(
            "SELECT id, body, body_packed, memory_ids FROM traces WHERE user_id=? AND "
            "(memory_ids IS NULL OR list_has_any(memory_ids, ?::VARCHAR[]))",
            [user_id, sorted(wanted)],
        ).fetchall()
        changed = 0
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
            redact_trace(data, wanted, tombstone)
            conn.execute(
                "UPDATE traces SET body=NULL, body_packed=?, memory_ids=? WHERE id=?",
                [
                    pack_body(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)),
                    listed,
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
