"""Reading an llmemory 0.2.x store into an ``ImportSource``: its file-based long-term store, its graph and its
short-term sessions (the formats: ../shared/docs/llmemory-reference.md §1–§5, written from the gem's source).

The folder is llmemory's ``long_term_storage_path`` (``LLMEMORY_STORAGE_PATH``, ``./llmemory_data``). Per user
``<user>/`` (the user id with every character outside ASCII ``[\\w.-]`` made ``_``; a folder holding none of the
parts below is not a user and is left out with the reason):

- ``items/item_N.json`` -> **semantic items** (category, content, importance, evergreen, created_at; llmemory's
  provenance ``{sources, method, confidence}`` kept, ``source_resource_id`` among the sources);
- ``categories/<name>.md`` -> **category summaries**;
- ``episodes/ep_N.json`` -> **episodes** (steps, summary, outcome, importance, archived_at; a step that is not an
  object is dropped, as llmemory drops it; an episode without steps is left out with the reason);
- ``skills/skill_N.json`` -> **skills** (every version), their success and failure counts as that many
  **outcomes** (at the skill's ``updated_at``: llmemory keeps counts, not events);
- ``graph.json`` -> the user's **graph**: ``{"nodes": [...], "edges": [...]}`` in the node and edge dict forms of
  §3.6 (an edge's target as ``object_id``, or ``target_id``); an archived edge stays archived;
- left out, with the reason: ``resources/`` (the raw text the facts were extracted from), ``memory/`` (daily logs),
  ``meta.json`` (id counters).

``short_term.json`` beside the users' folders holds the short-term store as llmemory keys it, ``"<user>:<session>"``
-> the session's state ``{messages: [{role, content}], last_activity_at}``: each session's **messages** (every
message at the session's last activity: llmemory keeps no time per message; a message without text is left out), a
``<session>:working_memory`` pseudo-session's slots as that session's **working memory** (a slot's name made
snake_case; one without letters left out), and the other pseudo-sessions (``__forget_log__``,
``__retrieval_feedback__``, ``__llm_usage__``) left out with the reason; a session without messages is left out.

What the reference leaves open, and what this reader decided:

- llmemory 0.2.x has no file backend for short-term memory or for the graph (short-term: memory/Redis/PostgreSQL;
  graph: memory/ActiveRecord), so ``short_term.json`` (a dump of the key/value store) and ``graph.json`` (the shape
  of ``llmemory graph USER --format json``, which the reference marks unverified) are this importer's formats.
- The exact JSON key spelling of each record is taken from the field lists of §3–§5 (Ruby symbols as strings).
- The user id is read back from the folder name; when ``short_term.json`` names exactly one user whose folder it is,
  that user's id (``brad@x.io`` of the short-term store and its folder ``brad_x.io`` are one memlens user). An id
  whose characters the folder name replaced and that no short-term key names comes back with ``_``.
- llmemory keeps counts of a skill's outcomes, not events: they become that many outcomes at ``updated_at``.
- An archived edge's successor is not recorded (only the reason's text, "replaced by X"): an imported archived
  relation has no ``superseded_by``; its validity ends at ``archived_at``.
- Two llmemory nodes of one name and different types become one memlens entity (memlens keeps one entity per name);
  the report's notes say which.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, NotFound
from ..memory.graph_write import name_key
from .import_source import (
    MAX_SOURCE_FILE_BYTES,
    ImportSkip,
    ImportSource,
    import_id,
    import_session_id,
    origin_provenance,
    read_json_file,
    slug,
)

ORIGIN = "llmemory"
SHORT_TERM_FILE = "short_term.json"
GRAPH_FILE = "graph.json"
_PSEUDO = re.compile(r"^__[a-z_]+__$")
_WORKING_SUFFIX = ":working_memory"


USER_PARTS = ("items", "categories", "episodes", "skills", "resources", "memory", "meta.json", GRAPH_FILE)


def safe_name(user_id: str) -> str:
    """llmemory's folder name of a user id (every character outside ``[\\w.-]`` becomes ``_``; Ruby's ``\\w`` is
    ASCII)."""
    return re.sub(r"[^\w.-]", "_", user_id, flags=re.ASCII)


def _numbered(folder: Path, prefix: str) -> list[Path]:
    """``prefix_N.json`` files in id order (item_2 before item_10)."""
    found = [p for p in folder.glob(f"{prefix}_*.json") if p.stem[len(prefix) + 1 :].isdigit()]
    return sorted(found, key=lambda p: int(p.stem[len(prefix) + 1 :]))


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one (an optional part of a record)."""
    return value if isinstance(value, Mapping) else {}


def _object(path: Path, what: str) -> dict[str, Any]:
    data = read_json_file(path, what)
    if not isinstance(data, dict):
        raise InvalidInput(f"llmemory {what} {str(path)!r} is not a JSON object")
    return data


class _Reader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: list[dict[str, Any]] = []
        self.skipped: list[ImportSkip] = []
        self.notes: list[str] = []

    def skip(self, kind: str, source_id: str, reason: str) -> None:
        self.skipped.append(ImportSkip(kind, source_id, reason))

    def provenance(self, user: str, ident: str, rec: Mapping[str, Any], method: str) -> dict[str, Any]:
        """An imported record's provenance: llmemory's own (sources, method, confidence) plus the origin. Sources as
        llmemory normalises them (§7.3): one without an id dropped, a missing type "unknown", a bare value an id."""
        prov = _mapping(rec.get("provenance"))
        listed: list[Any] = prov["sources"] if isinstance(prov.get("sources"), list) else []
        sources = [
            {"type": str(s.get("type") or "unknown"), "id": str(s["id"])}
            if isinstance(s, Mapping)
            else {"type": "unknown", "id": str(s)}
            for s in listed
            if (s.get("id") if isinstance(s, Mapping) else s) not in (None, "")
        ]
        resource = rec.get("source_resource_id")
        if resource not in (None, "") and {"type": "resource", "id": str(resource)} not in sources:
            sources.append({"type": "resource", "id": str(resource)})
        confidence = prov.get("confidence")
        return origin_provenance(
            ORIGIN,
            ident,
            method=str(prov.get("method") or method),
            sources=sources,
            confidence=confidence
            if isinstance(confidence, (int, float)) and not isinstance(confidence, bool)
            else None,
            details={"user_id": user},
        )

    def user(self, user: str, folder: Path) -> None:
        """One user's folder (``user`` is the memlens user id it is read into)."""
        for path in _numbered(folder / "items", "item"):
            self.item(user, _object(path, "item"), path)
        for path in sorted((folder / "categories").glob("*.md")):
            self.category(user, path)
        for path in _numbered(folder / "episodes", "ep"):
            self.episode(user, _object(path, "episode"), path)
        for path in _numbered(folder / "skills", "skill"):
            self.skill(user, _object(path, "skill"), path)
        if (folder / GRAPH_FILE).is_file():
            self.graph(user, _object(folder / GRAPH_FILE, "graph"), folder / GRAPH_FILE)
        for path in _numbered(folder / "resources", "res"):
            self.skip("resource", f"{user}/{path.stem}", "raw text the facts were extracted from (the facts name it)")
        for path in sorted((folder / "memory").glob("*.md")):
            self.skip("daily_log", f"{user}/{path.stem}", "a daily log: a digest of text whose facts are imported")
        if (folder / "meta.json").is_file():
            self.skip("meta", f"{user}/meta.json", "llmemory's id counters: memlens makes its own ids")

    def item(self, user: str, rec: dict[str, Any], path: Path) -> None:
        ident = str(rec.get("id") or path.stem)
        category = rec.get("category") or "general"
        name = slug(str(category)) or "general"
        if name != category:
            self.notes.append(f"item {ident} of {user}: category {str(category)[:40]!r} stored as {name!r}")
        record: dict[str, Any] = {
            "kind": "item",
            "user_id": user,
            "id": import_id(ORIGIN, "item", user, ident),
            "category": name,
            "content": rec.get("content"),
            "source": f"import:{ORIGIN}",
            "provenance": self.provenance(user, ident, rec, "fact_extraction"),
        }
        for key in ("importance", "evergreen", "created_at"):
            if rec.get(key) is not None:
                record[key] = rec[key]
        self.records.append(record)

    def category(self, user: str, path: Path) -> None:
        name = slug(path.stem) or "general"
        if path.stat().st_size > MAX_SOURCE_FILE_BYTES:
            raise InvalidInput(f"llmemory category {str(path)!r} is larger than {MAX_SOURCE_FILE_BYTES:,} bytes")
        try:
            summary = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"llmemory category {str(path)!r} is not UTF-8 text: {exc}") from None
        self.records.append({"kind": "category", "user_id": user, "name": name, "summary": summary})

    def episode(self, user: str, rec: dict[str, Any], path: Path) -> None:
        ident = str(rec.get("id") or path.stem)
        steps = rec.get("steps")
        if isinstance(steps, list):  # llmemory drops a step that is not an object (§4)
            steps = [s for s in steps if isinstance(s, Mapping)]
            if not steps:
                self.skip("episode", f"{user}/{ident}", "no steps: memlens keeps an episode as its steps")
                return
        record: dict[str, Any] = {
            "kind": "episode",
            "user_id": user,
            "id": import_id(ORIGIN, "episode", user, ident),
            "steps": steps,
            "provenance": self.provenance(user, ident, rec, "episode_recording"),
        }
        for key in ("summary", "outcome", "importance", "created_at", "archived_at"):
            if rec.get(key) is not None:
                record[key] = rec[key]
        self.records.append(record)

    def skill(self, user: str, rec: dict[str, Any], path: Path) -> None:
        ident = str(rec.get("id") or path.stem)
        skill_id = import_id(ORIGIN, "skill", user, ident)
        record: dict[str, Any] = {
            "kind": "skill",
            "user_id": user,
            "id": skill_id,
            "name": rec.get("name"),
            "body": rec.get("body"),
            "skill_kind": rec.get("kind") if rec.get("kind") in ("prompt", "template", "code") else "prompt",
            "description": rec.get("description") or "",
            "provenance": self.provenance(user, ident, rec, "registration"),
        }
        for key in ("version", "created_at", "archived_at"):
            if rec.get(key) is not None:
                record[key] = rec[key]
        self.records.append(record)
        at = rec.get("updated_at") or rec.get("created_at")
        for success, key in ((True, "success_count"), (False, "failure_count")):
            count = rec.get(key) or 0
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise InvalidInput(f"llmemory skill {ident!r} of {user}: {key} must be a count, got {count!r}")
            for _ in range(count):
                outcome: dict[str, Any] = {"kind": "outcome", "user_id": user, "skill_id": skill_id, "success": success}
                if at:
                    outcome["at"] = at
                self.records.append(outcome)

    def graph(self, user: str, data: dict[str, Any], path: Path) -> None:
        nodes, edges = data.get("nodes") or [], data.get("edges") or []
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise InvalidInput(f"llmemory graph {str(path)!r}: nodes and edges must be lists")
        entity_of: dict[str, str] = {}  # llmemory node id -> memlens entity id
        by_name: dict[str, str] = {}  # name (case-folded, as memlens keys entities) -> memlens entity id
        for node in nodes:
            if not isinstance(node, Mapping) or not node.get("id") or not isinstance(node.get("name"), str):
                raise InvalidInput(f"llmemory graph {str(path)!r}: a node without id or name: {str(node)[:80]}")
            ident, name = str(node["id"]), node["name"]
            key = name_key(name)
            if key in by_name:
                entity_of[ident] = by_name[key]
                self.notes.append(
                    f"node {ident} of {user} ({name!r}, {node.get('entity_type')}) joined the entity of that name"
                )
                continue
            entity_of[ident] = by_name[key] = import_id(ORIGIN, "entity", user, ident)
            props = _mapping(node.get("properties"))
            record: dict[str, Any] = {
                "kind": "entity",
                "user_id": user,
                "id": entity_of[ident],
                "name": name,
                "type": node.get("entity_type"),
                "provenance": self.provenance(user, ident, props, "entity_relation_extraction"),
            }
            for key_ in ("created_at", "updated_at"):
                if node.get(key_):
                    record[key_] = node[key_]
            self.records.append(record)
        for edge in edges:
            self.edge(user, edge, entity_of, path)

    def edge(self, user: str, edge: Any, entity_of: dict[str, str], path: Path) -> None:
        if not isinstance(edge, Mapping) or not edge.get("id"):
            raise InvalidInput(f"llmemory graph {str(path)!r}: an edge without id: {str(edge)[:80]}")
        ident = str(edge["id"])
        target = edge.get("object_id", edge.get("target_id"))
        ends = [entity_of.get(str(edge.get("subject_id"))), entity_of.get(str(target))]
        if None in ends:
            raise InvalidInput(f"llmemory edge {ident!r} of {user} names a node the graph does not hold")
        props = _mapping(edge.get("properties"))
        prov = self.provenance(user, ident, props, "entity_relation_extraction")
        created, archived = edge.get("created_at"), edge.get("archived_at")
        record: dict[str, Any] = {
            "kind": "relation",
            "user_id": user,
            "id": import_id(ORIGIN, "relation", user, ident),
            "subject_id": ends[0],
            "predicate": edge.get("predicate"),
            "object_id": ends[1],
            "valid_from": created,
            # Where the fact came from: llmemory's sources (text fingerprints) and the edge itself in llmemory.
            "sources": [*prov["sources"], {"type": ORIGIN, "id": ident}],
            "method": f"import:{ORIGIN}",
            "created_at": created,
        }
        if archived:
            reason = props.get("archive_reason") or props.get("reason")
            record |= {
                "valid_to": archived,
                "archived_at": archived,
                "archive_reason": str(reason or "archived in llmemory"),
            }
        self.records.append(record)

    def short_term(self, data: dict[str, Any], wanted: set[str] | None) -> None:
        """The short-term store's sessions (``wanted``: the folder names of the users to read, None for all)."""
        for key, state in data.items():
            user, _, session = str(key).partition(":")
            if wanted is not None and safe_name(user) not in wanted:
                continue
            if not isinstance(state, Mapping):
                raise InvalidInput(f"llmemory short-term state {str(key)[:80]!r} is not an object")
            if _PSEUDO.fullmatch(session):
                self.skip("pseudo_session", str(key), f"llmemory's {session.strip('_').replace('_', ' ')}: not memory")
            elif session.endswith(_WORKING_SUFFIX):
                target = import_session_id(ORIGIN, session[: -len(_WORKING_SUFFIX)])
                for slot, value in state.items():
                    self.slot(user, target, str(slot), value, str(key))
            else:
                self.session(user, session, state, str(key))

    def slot(self, user: str, session: str, slot: str, value: Any, key: str) -> None:
        """A working-memory slot; llmemory's slot names are any symbol, memlens's are snake_case (made so)."""
        name = slug(slot)
        if not name or not name[0].isalpha():
            self.skip("working", f"{key} {slot[:60]}", "a slot name with no letters memlens can keep")
            return
        if name != slot:
            self.notes.append(f"working slot {slot[:60]!r} of {key[:80]!r} stored as {name!r}")
        self.records.append({"kind": "working", "user_id": user, "session_id": session, "slot": name, "value": value})

    def session(self, user: str, session: str, state: Mapping[str, Any], key: str) -> None:
        messages = state.get("messages")
        if messages is None:  # llmemory starts a missing messages list afresh (§1.3): nothing to import
            self.skip("session", key, "no messages")
            return
        if not isinstance(messages, list):
            raise InvalidInput(f"llmemory session {key!r}: messages must be a list")
        at = state.get("last_activity_at")
        for n, message in enumerate(messages, 1):
            if not isinstance(message, Mapping):
                raise InvalidInput(f"llmemory session {key!r}: message {n} is not an object")
            if isinstance(message.get("content"), str) and not message["content"].strip():
                self.skip("message", f"{key} message {n}", "no text")
                continue
            record: dict[str, Any] = {
                "kind": "message",
                "user_id": user,
                "session_id": import_session_id(ORIGIN, session),
                "role": message.get("role"),
                "content": message.get("content"),
            }
            if at:
                record["created_at"] = at
            self.records.append(record)


def _short_term_users(data: Mapping[str, Any]) -> set[str]:
    """The user ids the short-term store's keys name (each key checked to be ``<user>:<session>``)."""
    users = set()
    for key in data:
        user, sep, session = str(key).partition(":")
        if not sep or not user or not session:
            raise InvalidInput(f"llmemory short-term key {str(key)[:80]!r} is not <user>:<session>")
        users.add(user)
    return users


def _user_ids(folders: Sequence[str], short_term_users: set[str]) -> dict[str, str]:
    """Folder name -> memlens user id: the one short-term user whose folder it is, else the folder name."""
    out = {}
    for name in folders:
        named = [u for u in short_term_users if safe_name(u) == name]
        out[name] = named[0] if len(named) == 1 else name
    return out


def read_llmemory(path: str | Path, *, user_ids: Sequence[str] | None = None) -> ImportSource:
    """Read the llmemory store at ``path`` (see the module's docstring for the layout and the mapping); ``user_ids``
    limits it to those users (llmemory's ids or their folder names). NotFound when the folder (or a named user) is
    missing; InvalidInput naming the file and the record when one is unusable."""
    root = Path(path)
    if not root.is_dir():
        raise NotFound(f"llmemory store {str(root)!r} is not a folder")
    reader = _Reader(root)
    folders: dict[str, Path] = {}
    for p in sorted(root.iterdir()):
        if p.is_dir() and any((p / part).exists() for part in USER_PARTS):
            folders[p.name] = p
        elif p.name != SHORT_TERM_FILE:
            reader.skip("file" if p.is_file() else "folder", p.name, "not an llmemory user folder")
    short = _object(root / SHORT_TERM_FILE, "short-term store") if (root / SHORT_TERM_FILE).is_file() else {}
    short_users = _short_term_users(short)
    wanted = None if user_ids is None else {safe_name(str(u)) for u in user_ids}
    if wanted is not None:
        missing = sorted(wanted - set(folders) - {safe_name(u) for u in short_users})
        if missing:
            raise NotFound(f"llmemory store {str(root)!r} has no user {missing[0]!r}")
    ids = _user_ids(list(folders), short_users)
    for name, folder in folders.items():
        if wanted is None or name in wanted:
            if ids[name] != name:
                reader.notes.append(f"folder {name!r} read as user {ids[name]!r} (the short-term store's id)")
            reader.user(ids[name], folder)
    reader.short_term(short, wanted)
    if not folders and not short:
        raise InvalidInput(f"{str(root)!r} holds no llmemory store: no user folders and no {SHORT_TERM_FILE}")
    return ImportSource(ORIGIN, str(root), tuple(reader.records), tuple(reader.skipped), tuple(reader.notes))
