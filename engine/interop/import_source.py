"""What an importer reads from another memory system, before memlens writes anything: ingest records plus what was
left out and why. Every importer (mem0, Letta, llmemory) produces one ``ImportSource``; one writer turns it into an
all-or-nothing ingest and an ``ImportReport`` (engine/interop/import_run.py)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, NotFound


@dataclass(frozen=True)
class ImportSkip:
    """One thing of the source that was not imported: what it was (``kind``, e.g. "memory", "block", "message"), its
    id in the source, and why."""

    kind: str
    source_id: str
    reason: str


@dataclass(frozen=True)
class ImportSource:
    """A source read and mapped: ``origin`` names the system ("mem0", "letta", "llmemory"), ``location`` where it was
    read from (a path or a description), ``records`` are ingest records in the export's JSONL shape (each carries
    its provenance, with ``origin`` and the source's own id), ``skipped`` what was left out."""

    origin: str
    location: str
    records: tuple[dict[str, Any], ...]
    skipped: tuple[ImportSkip, ...] = ()
    notes: tuple[str, ...] = field(default=())


# -- the shape every importer gives its records (so one writer, the pages and re-imports read them alike) ----------
ORIGIN_NAMES = {"mem0": "mem0", "letta": "Letta", "llmemory": "llmemory"}  # origin -> how pages name it
ORIGIN_SESSION_SEPARATOR = ":"  # an imported session's id is "<origin>:<the source's session or agent>"


def import_id(origin: str, kind: str, *key: str) -> str:
    """The memlens id of an imported memory: derived from the origin, the memory kind and the source's own key (its
    id, and whatever makes that id unique there: the user, the agent), so importing the same source twice gives the
    same ids and the second import writes nothing. Example: ``letta_item_3f2a9c0b7d1e4a55``."""
    digest = hashlib.sha256("\x00".join((origin, kind, *key)).encode()).hexdigest()[:16]
    return f"{origin}_{kind}_{digest}"


def import_session_id(origin: str, source_session: str) -> str:
    """The memlens session id of an imported conversation: ``<origin>:<source session>`` with every character the id
    rule refuses replaced by ``_`` (cut to the id rule's 128 characters); pages read the origin back from it
    (:func:`session_origin`)."""
    cleaned = re.sub(r"[^A-Za-z0-9._:@+-]", "_", source_session).strip("_") or "default"
    return f"{origin}{ORIGIN_SESSION_SEPARATOR}{cleaned}"[:128]


def session_origin(session_id: str) -> str | None:
    """The system an importer read a session from, as pages name it (mem0, Letta, llmemory), or None."""
    head, sep, rest = session_id.partition(ORIGIN_SESSION_SEPARATOR)
    return ORIGIN_NAMES[head] if sep and rest and head in ORIGIN_NAMES else None


def origin_provenance(
    origin: str,
    source_id: str,
    *,
    method: str | None = None,
    sources: tuple[dict[str, str], ...] | list[dict[str, str]] = (),
    confidence: float | None = None,
    created_at: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An imported memory's provenance: llmemory's shape ``{sources, method, confidence, created_at}`` plus
    ``origin = {"system": origin, "id": source_id, **details}`` (the source's own id and anything else the source
    says about the memory: its user/agent/run, metadata, history events). ``method`` defaults to
    ``import:<origin>``; ``sources`` are the source's own provenance entries ``{type, id}``, kept as they are."""
    provenance: dict[str, Any] = {
        "sources": [dict(s) for s in sources],
        "method": method or f"import:{origin}",
        "origin": {**(details or {}), "system": origin, "id": source_id},
    }
    if confidence is not None:
        provenance["confidence"] = confidence
    if created_at is not None:
        provenance["created_at"] = created_at
    return provenance


def imported_origin(provenance: Any) -> tuple[str, str] | None:
    """(the source system as pages name it, the source's id) of an imported memory's provenance, else None."""
    origin = provenance.get("origin") if isinstance(provenance, dict) else None
    if not isinstance(origin, dict) or origin.get("system") not in ORIGIN_NAMES or origin.get("id") in (None, ""):
        return None
    return ORIGIN_NAMES[str(origin["system"])], str(origin["id"])


MAX_SOURCE_FILE_BYTES = 512 * 1024 * 1024  # one JSON file of a source: far above any agent file or memory store


def read_json_file(path: Path, what: str) -> Any:
    """A source's JSON file parsed: NotFound when it is missing, InvalidInput naming the file when it is not JSON."""
    if not path.is_file():
        raise NotFound(f"{what} {str(path)!r} does not exist")
    if path.stat().st_size > MAX_SOURCE_FILE_BYTES:
        raise InvalidInput(f"{what} {str(path)!r} is larger than {MAX_SOURCE_FILE_BYTES:,} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInput(f"{what} {str(path)!r} is not JSON: {exc}") from None


def slug(text: str, limit: int = 64) -> str:
    """``text`` as lowercase letters, digits and ``_`` (a slot or category name, a default user id)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit].strip("_")
