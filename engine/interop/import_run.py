"""Writing what an importer read (an ``ImportSource``) into memlens: one all-or-nothing ingest, idempotent, with a
report of what was mapped, skipped, already present and written.

- **All or nothing.** The records go through the JSONL ingest (engine/memory/transfer.py): every record is
  validated and every reference checked before anything is written, and the write is one transaction whose vectors
  are removed again if it fails. A record memlens refuses raises InvalidInput naming the *source's* record (its
  origin, kind and id), not a line of a file the user never saw.
- **Idempotent.** Importers give their memories ids derived from the source's own ids (``import_id``), so a second
  import of the same source finds them stored and writes nothing: memories whose id is taken (or that were
  hard-forgotten in memlens since: a forget is not undone by importing again), the outcomes of skills already
  present, working slots and category summaries equal to what is stored, graph records the user already has, and
  messages the session already holds (same role and text, counted: a session that says "yes" twice keeps both; the
  time is not compared, because a source that keeps no time per message, llmemory, stamps them all with the
  session's last activity, which moves when the conversation goes on). A memory changed at the source after the
  first import keeps the first import's copy: the report counts it as already present.
- **One entity per name.** An imported entity named like an active entity the user already has in memlens (say,
  one the offline extraction drew from an earlier import) joins that entity: its relations point to the stored one,
  and the report notes it (memlens keeps one active entity per name and would otherwise refuse the import).
- **Embedded by memlens.** The ingest embeds every text with the store's own model; a source's vectors are never
  read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..memory.base import loads
from ..memory.graph_write import clean_name, name_key
from ..memory.ingest_duplicates import already_stored
from .import_source import ImportSkip, ImportSource

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..store.sql.database import Connection

_ID_TABLES = {"item": "items", "episode": "episodes", "skill": "skills", "entity": "entities", "relation": "relations"}
_MEMORY_KINDS = ("item", "episode", "skill")  # the kinds a forget can remove for good
_LINE = re.compile(r"^line (\d+): ")
_MESSAGE_KEY = ("user_id", "session_id", "role", "content")  # what makes an imported message the same one


@dataclass(frozen=True)
class ImportReport:
    """What one import did. ``mapped``: the source's records mapped to memlens records, per record kind;
    ``skipped``: what the importer left out and why; ``already_present``: records memlens already held (a repeated
    import), per kind; ``written``: records written per kind (with ``dry_run``, what would be written: nothing was);
    ``notes``: what the importer wants the reader to know about the source."""

    origin: str
    location: str
    mapped: Mapping[str, int]
    skipped: tuple[ImportSkip, ...]
    already_present: Mapping[str, int]
    written: Mapping[str, int]
    dry_run: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def total_written(self) -> int:
        return sum(self.written.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the CLI's ``--json``)."""
        return {
            "origin": self.origin,
            "location": self.location,
            "dry_run": self.dry_run,
            "mapped": dict(self.mapped),
            "written": dict(self.written),
            "already_present": dict(self.already_present),
            "skipped": [{"kind": s.kind, "source_id": s.source_id, "reason": s.reason} for s in self.skipped],
            "notes": list(self.notes),
        }


def record_label(origin: str, rec: Mapping[str, Any]) -> str:
    """How an error names a record: its origin, kind and the source's id (or its session, for a message)."""
    prov = rec.get("provenance")
    source = prov.get("origin") if isinstance(prov, Mapping) else None
    if isinstance(source, Mapping) and source.get("id") not in (None, ""):
        return f"{origin} {rec.get('kind')} {str(source['id'])[:80]!r}"
    if rec.get("kind") == "message":
        return f"{origin} message in session {str(rec.get('session_id'))[:80]!r}"
    ident = rec.get("id") or rec.get("name") or rec.get("slot") or rec.get("skill_id") or ""
    return f"{origin} {rec.get('kind')} {str(ident)[:80]!r}"


def _taken(conn: Connection, records: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, id) of the records whose id the store already holds, or (for memories) that a forget removed."""
    taken: set[tuple[str, str]] = set()
    for kind, table in _ID_TABLES.items():
        ids = sorted({str(r["id"]) for r in records if r.get("kind") == kind and r.get("id")})
        if ids:
            rows = conn.execute(f"SELECT id FROM {table} WHERE id IN (SELECT unnest(?))", [ids]).fetchall()
            taken |= {(kind, row[0]) for row in rows}
    users = sorted({str(r["user_id"]) for r in records if r.get("kind") in _MEMORY_KINDS and r.get("user_id")})
    if users:
        forgotten = {
            row[0]
            for row in conn.execute(
                "SELECT u.mid FROM forget_log f, unnest(CAST(f.ids AS VARCHAR[])) AS u(mid) "
                "WHERE f.mode = 'hard' AND f.user_id IN (SELECT unnest(?))",
                [users],
            ).fetchall()
        }
        taken |= {
            (str(r["kind"]), str(r["id"]))
            for r in records
            if r.get("kind") in _MEMORY_KINDS and r.get("id") in forgotten
        }
    return taken


def _unchanged(conn: Connection, rec: dict[str, Any]) -> bool:
    """Whether a working slot or category summary equals what the store holds (those replace: equal is present)."""
    if rec.get("kind") == "working":
        row = conn.execute(
            "SELECT value FROM working_slots WHERE user_id=? AND session_id=? AND slot=?",
            [rec.get("user_id"), rec.get("session_id"), rec.get("slot")],
        ).fetchone()
        return row is not None and loads(row[0]) == rec.get("value")  # JSON text (DuckDB) or parsed (PostgreSQL)
    row = conn.execute(
        "SELECT summary FROM categories WHERE user_id=? AND name=?", [rec.get("user_id"), rec.get("name")]
    ).fetchone()
    return row is not None and row[0] == rec.get("summary")


def _stored_messages(conn: Connection, records: tuple[dict[str, Any], ...]) -> Counter[tuple[Any, ...]]:
    """(user, session, role, content) of the stored messages of the sessions the records write to, counted."""
    keys = {
        (r["user_id"], r["session_id"])
        for r in records
        if r.get("kind") == "message" and isinstance(r.get("user_id"), str) and isinstance(r.get("session_id"), str)
    }
    if not keys:
        return Counter()
    rows = conn.execute(
        "SELECT user_id, session_id, role, content FROM messages WHERE user_id IN (SELECT unnest(?)) "
        "AND session_id IN (SELECT unnest(?))",
        [sorted({k[0] for k in keys}), sorted({k[1] for k in keys})],
    ).fetchall()
    return Counter(tuple(r) for r in rows if (r[0], r[1]) in keys)


def _joined_entities(
    conn: Connection, records: tuple[dict[str, Any], ...], taken: set[tuple[str, str]]
) -> dict[str, str]:
    """Imported entity id -> the id of the active entity of the same user and name the store already holds under
    another id (one name is one entity in memlens)."""
    wanted: dict[tuple[str, str], str] = {}  # (user, name key) -> imported entity id
    for r in records:
        if r.get("kind") == "entity" and ("entity", r.get("id")) not in taken:
            user, name = r.get("user_id"), r.get("name")
            if isinstance(user, str) and isinstance(name, str) and isinstance(r.get("id"), str):
                wanted[(user, name_key(clean_name(name)))] = r["id"]
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT user_id, name_key, id FROM entities WHERE archived_at IS NULL AND user_id IN (SELECT unnest(?)) "
        "AND name_key IN (SELECT unnest(?))",
        [sorted({u for u, _ in wanted}), sorted({k for _, k in wanted})],
    ).fetchall()
    return {wanted[(u, k)]: stored for u, k, stored in rows if (u, k) in wanted and wanted[(u, k)] != stored}


def _split(
    conn: Connection, records: tuple[dict[str, Any], ...]
) -> tuple[list[dict[str, Any]], Counter[str], list[str]]:
    """The records still to write (in order), per kind how many the store already holds, and notes on entities that
    joined stored ones."""
    taken = _taken(conn, list(records))
    present: Counter[str] = Counter()
    dropped_skills = {(r.get("user_id"), r.get("id")) for r in records if ("skill", r.get("id")) in taken}
    messages = _stored_messages(conn, records)
    joined = _joined_entities(conn, records, taken)
    notes = []
    out = []
    for rec in records:
        kind = str(rec.get("kind"))
        if kind in _ID_TABLES and (kind, rec.get("id")) in taken:
            present[kind] += 1
            if kind in _MEMORY_KINDS:
                continue  # entities and relations stay: the ingest leaves a stored one as it is
        elif kind == "outcome" and (rec.get("user_id"), rec.get("skill_id")) in dropped_skills:
            present[kind] += 1  # counted on its skill when that skill was imported before
            continue
        elif kind in ("working", "category") and _unchanged(conn, rec):
            present[kind] += 1
            continue
        elif kind == "message" and all(isinstance(rec.get(k), str) for k in _MESSAGE_KEY):
            key = tuple(rec[k] for k in _MESSAGE_KEY)
            if messages[key] > 0:
                messages[key] -= 1
                present[kind] += 1
                continue
        elif kind == "entity" and rec.get("id") in joined:
            present[kind] += 1
            notes.append(
                f"entity {str(rec.get('name'))[:60]!r} of {rec.get('user_id')} joined stored entity {joined[rec['id']]}"
            )
            continue
        elif kind == "relation" and joined:
            rec = {
                k: joined.get(v, v) if k in ("subject_id", "object_id") and isinstance(v, str) else v
                for k, v in rec.items()
            }
        out.append(rec)
    return out, present, notes


def _renamed(exc: InvalidInput, origin: str, records: list[dict[str, Any]]) -> InvalidInput:
    """The ingest's error with its JSONL line replaced by the source record it came from."""
    text = str(exc.args[0]) if exc.args else str(exc)
    found = _LINE.match(text)
    if found is None or not 0 < int(found.group(1)) <= len(records):
        return InvalidInput(f"{origin} import refused: {text}")
    rec = records[int(found.group(1)) - 1]
    return InvalidInput(f"{origin} import refused, {record_label(origin, rec)}: {text[found.end() :]}")


def run_import(engine: MemoryEngine, source: ImportSource, *, dry_run: bool = False) -> ImportReport:
    """Write ``source`` into ``engine``'s store, all or nothing, skipping what a previous import already wrote.

    With ``dry_run`` every record is validated and checked as for a real import (a bad record raises the same
    InvalidInput naming it) and nothing is written; ``written`` then counts what an import would write."""
    transfer = engine.admin.transfer
    mapped = Counter(str(r.get("kind")) for r in source.records)
    with transfer.b.db.read() as conn:
        records, present, joined = _split(conn, source.records)
    try:
        plan = transfer.plan(json.dumps(r, ensure_ascii=False) for r in records)
    except InvalidInput as exc:
        raise _renamed(exc, source.origin, records) from None
    with transfer.b.db.read() as conn:
        found = already_stored(conn, plan.keys)  # records without an id (messages) the store holds
    for kind, positions in found.items():
        present[kind] += len(positions)
    if dry_run:
        counts = plan.counts()
        written = {k: n - len(found.get(k, ())) for k, n in counts.items()}
    else:
        written = transfer.apply(plan, skip_existing=True)
        written.pop("skipped", None)
    written = {k: n for k, n in written.items() if n}
    return ImportReport(
        origin=source.origin,
        location=source.location,
        mapped=dict(sorted(mapped.items())),
        skipped=source.skipped,
        already_present=dict(sorted((k, n) for k, n in present.items() if n)),
        written=dict(sorted(written.items())),
        dry_run=dry_run,
        notes=(*source.notes, *joined),
    )
