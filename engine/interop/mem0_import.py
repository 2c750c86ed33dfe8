"""Reading a mem0 store (mem0 OSS, the ``mem0ai`` package) into an ``ImportSource``, through mem0's own API.

The store is opened the way the agent opens it, ``mem0.Memory.from_config(config)``, and read with ``get_all`` (per
user, agent and run) and ``history(memory_id)``; nothing reads mem0's files behind its back (only whether the local
Qdrant folder and history database the configuration names exist is checked first). The mapping:

- **user**: a mem0 memory is scoped by any of ``user_id``, ``agent_id`` and ``run_id``. It goes to the memlens user
  named by its mem0 ``user_id``; a memory without a user to ``agent:<agent_id>``; one with neither to
  ``run:<run_id>``. A name the memlens id rule refuses has the characters it refuses replaced by ``_`` and
  ``-`` plus 8 hex digits of its hash appended, so two mem0 ids never land on one memlens user (a note says so).
- **each memory is a semantic item** with mem0's text and ``created_at``; its category is the memory's
  ``metadata["category"]`` when that is a memlens category name (snake_case), else ``general``. A memory past its
  ``expiration_date`` (mem0 hides it from search) is imported archived, as of that date (or of its creation, when
  mem0 made it already expired).
- **provenance**: ``origin = {system: "mem0", id: <mem0 id>, user_id, agent_id, run_id, actor_id, role, hash,
  updated_at, expiration_date, metadata, history}``, where ``history`` holds mem0's history events of the memory
  (ADD/UPDATE/DELETE with the old and new text, times, actor and role), oldest first. Provenance is capped at 64 kB:
  when a long history does not fit, its oldest events are left out and ``history_omitted`` counts them.
- **ids**: ``mem0_item_<hash of the mem0 id>`` (``import_id``), so importing the store again writes nothing.
- **Left out**: memories deleted in mem0 (its store no longer has them), mem0's message log (kept for its LLM
  extraction; mem0 has no API to list it) and its vectors (memlens embeds the text with its own model).

Reading never calls mem0's LLM, embedder or reranker (``get_all`` and ``history`` need none of them): the ``llm`` and
``embedder`` sections of the configuration are replaced by OpenAI clients pointed at a closed local port and
``reranker`` is dropped, so a store opens without credentials and without loading (or downloading) the agent's
embedding model. mem0's telemetry is off (``MEM0_TELEMETRY=False`` is among engine/process_env.py's defaults, set
before mem0 is imported; a value the user set, or a mem0 imported earlier in the process, keeps theirs). Importing
mem0 writes ``~/.mem0/config.json`` (``$MEM0_DIR``), mem0's own doing. Without spaCy and fastembed installed (they
are not memlens dependencies) mem0 neither loads nor downloads their models.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, NotFound
from ..ids import ID_PATTERN
from ..memory.semantic import CATEGORY_PATTERN, MAX_PROVENANCE_CHARS
from ..process_env import prepare_process_environment
from .import_source import ImportSkip, ImportSource, import_id, origin_provenance, read_json_file

ORIGIN = "mem0"
DEFAULT_CATEGORY = "general"
AGENT_PREFIX = "agent:"  # the memlens user of a mem0 memory scoped to an agent and no user
RUN_PREFIX = "run:"  # ... and of one scoped to a run only
MAX_MEMORIES = 1_000_000  # read at most this many (mem0's list needs a limit); more raises rather than cuts
# mem0 never reaches this: reading must not call an LLM (and must not need the agent's credentials to open the store)
_INERT_CLIENT = {"api_key": "memlens-reads-only", "openai_base_url": "http://127.0.0.1:9"}
_SCOPES = ("user_id", "agent_id", "run_id")
_DETAIL_KEYS = ("user_id", "agent_id", "run_id", "actor_id", "role", "hash", "updated_at", "expiration_date")
_HISTORY_KEYS = ("event", "old_memory", "new_memory", "created_at", "updated_at", "actor_id", "role", "is_deleted")
_PROVENANCE_BUDGET = MAX_PROVENANCE_CHARS - 4_000  # room for the rest of the provenance around ``origin``


def read_mem0(
    config: Mapping[str, Any] | str | Path | Any,
    *,
    user_ids: Sequence[str] | None = None,
    agent_ids: Sequence[str] | None = None,
    run_ids: Sequence[str] | None = None,
    max_memories: int = MAX_MEMORIES,
) -> ImportSource:
    """Read a mem0 store through mem0's API and map it to memlens records (the mapping: this module's docstring).

    ``config`` is what ``mem0.Memory.from_config`` takes (a mapping, or the path of a JSON file holding it), or a
    ``mem0.Memory`` the caller has open (a local Qdrant store admits one client at a time). ``user_ids``,
    ``agent_ids`` and ``run_ids`` limit the import to those mem0 scopes (a memory is read when it belongs to any of
    them); with none given, every memory is read. Raises InvalidInput when ``mem0ai`` is not installed, the
    configuration is refused or the store cannot be opened, NotFound when the configuration file, or the local
    Qdrant folder, collection or history database it names, is missing (mem0 would make an empty one)."""
    scopes = {
        "user_id": _check_scope_ids(user_ids, "user_ids"),
        "agent_id": _check_scope_ids(agent_ids, "agent_ids"),
        "run_id": _check_scope_ids(run_ids, "run_ids"),
    }
    if isinstance(max_memories, bool) or not isinstance(max_memories, int) or max_memories < 1:
        raise InvalidInput("max_memories must be a positive whole number")
    if hasattr(config, "get_all") and hasattr(config, "history"):
        return _Reader(config, "an open mem0 Memory", max_memories).read(scopes)
    location, settings = _load_config(config)
    memory = _open(settings)
    try:
        return _Reader(memory, location, max_memories).read(scopes)
    finally:
        _close(memory, own_client=_given_client(settings) is None)


def _close(memory: Any, *, own_client: bool) -> None:
    """Close what ``read_mem0`` opened: mem0's history database and (unless the configuration handed mem0 a client
    of the caller's) its vector store's client: a local Qdrant folder stays locked until its client is closed."""
    memory.close()
    client = getattr(getattr(memory, "vector_store", None), "client", None)
    close = getattr(client, "close", None)
    if own_client and callable(close):
        close()


def _given_client(settings: Mapping[str, Any]) -> Any:
    """The vector store client the configuration hands mem0 (an API caller's own), else None."""
    vector_store = settings.get("vector_store")
    vs_config = vector_store.get("config") if isinstance(vector_store, Mapping) else None
    return vs_config.get("client") if isinstance(vs_config, Mapping) else None


def _check_scope_ids(values: Sequence[str] | None, what: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str) or not all(isinstance(v, str) and v.strip() and v == v.strip() for v in values):
        raise InvalidInput(f"{what} must be a list of non-blank mem0 ids without surrounding spaces")
    return tuple(values)


def _load_config(config: Mapping[str, Any] | str | Path) -> tuple[str, dict[str, Any]]:
    """(where the configuration came from, the configuration to open the store with: no LLM, embedder or
    reranker that could connect anywhere)."""
    if isinstance(config, (str, Path)):
        data = read_json_file(Path(config), "the mem0 configuration")
        location = str(config)
    else:
        data, location = config, "a mem0 configuration"
    if not isinstance(data, Mapping):
        raise InvalidInput("the mem0 configuration must be a JSON object (what mem0.Memory.from_config takes)")
    settings = {k: v for k, v in data.items() if k != "reranker"}
    settings["llm"] = {"provider": "openai", "config": dict(_INERT_CLIENT)}
    settings["embedder"] = {"provider": "openai", "config": dict(_INERT_CLIENT)}
    vector_store = settings.get("vector_store")
    path = vector_store.get("config", {}).get("path") if isinstance(vector_store, Mapping) else None
    if isinstance(path, str):
        location = f"{location} (vector store {path})"
    _check_local_store(settings)
    return location, settings


def _check_local_store(settings: Mapping[str, Any]) -> None:
    """A local store the configuration names must exist: mem0 would create an empty one (a mistyped path or
    collection would import nothing and leave an empty store behind). Checked for local Qdrant (mem0's default
    store) and the history database; other stores are mem0's to check."""
    history = settings.get("history_db_path")
    if isinstance(history, str) and not Path(history).expanduser().is_file():
        raise NotFound(f"mem0's history database {history!r} (history_db_path) does not exist")
    vector_store = settings.get("vector_store")
    if not isinstance(vector_store, Mapping) or vector_store.get("provider", "qdrant") != "qdrant":
        return
    vs_config = vector_store.get("config") or {}
    path = vs_config.get("path") if isinstance(vs_config, Mapping) else None
    if not isinstance(path, str) or any(vs_config.get(k) for k in ("client", "host", "url")):
        return
    collections = Path(path).expanduser() / "collection"
    if not collections.is_dir():
        raise NotFound(f"no local Qdrant store of mem0 at {path!r} (vector_store.config.path)")
    name = vs_config.get("collection_name", "mem0")
    if not (collections / str(name)).is_dir():
        found = sorted(p.name for p in collections.iterdir() if p.is_dir())
        raise NotFound(f"the Qdrant store at {path!r} has no collection {str(name)[:100]!r}; it has {found}")


def _open(settings: dict[str, Any]) -> Any:
    prepare_process_environment()  # MEM0_TELEMETRY=False before mem0 reads it, at its import
    try:
        from mem0 import Memory
    except ImportError as exc:
        raise InvalidInput(f"importing from mem0 needs the mem0ai package: pip install mem0ai==2.2.1 ({exc})") from None
    try:
        return Memory.from_config(settings)
    except Exception as exc:  # pydantic's ValidationError, a vector store's own errors (a locked local Qdrant) ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInput(f"mem0 could not open the store from this configuration: {first[:500]}") from None


def memlens_user(memory: Mapping[str, Any]) -> str | None:
    """The memlens user of a mem0 memory (as its mem0 scope names it), or None when it has no scope."""
    for key, prefix in (("user_id", ""), ("agent_id", AGENT_PREFIX), ("run_id", RUN_PREFIX)):
        value = memory.get(key)
        if value not in (None, ""):
            return f"{prefix}{value}"
    return None


def _valid_user(name: str) -> str:
    """``name`` as a memlens user id: itself when the id rule accepts it, else the characters the rule refuses
    replaced by ``_``, cut, and ``-`` plus 8 hex digits of the name's hash appended (distinct names stay distinct)."""
    if ID_PATTERN.fullmatch(name):
        return name
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", re.sub(r"[^A-Za-z0-9._:@+-]", "_", name))[:118]
    return f"{cleaned or 'mem0'}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _expiry(value: Any, created_at: Any) -> str | None:
    """The archive time of a memory past its mem0 ``expiration_date`` (midnight UTC of that day, or its creation when
    that came later: mem0 lets a memory be added already expired), else None."""
    try:
        day = date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None
    if day is None or day >= datetime.now(UTC).date():
        return None
    expired = datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        created = datetime.fromisoformat(str(created_at)) if created_at else None
    except ValueError:
        created = None  # the ingest names the record for its created_at
    if created is not None and created.tzinfo is not None and created > expired:
        return created.isoformat()
    return expired.isoformat()


def _fit(details: dict[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
    """``details`` with as much of ``history`` (newest kept) as fits the provenance budget."""
    kept = list(history)
    while True:
        out = {**details, "history": kept}
        if len(kept) < len(history):
            out["history_omitted"] = len(history) - len(kept)
        if len(json.dumps(out, ensure_ascii=False)) <= _PROVENANCE_BUDGET:
            return out
        if not kept:
            out.pop("metadata", None)
            out["metadata_omitted"] = True
            return out
        kept = kept[1:]


class _Reader:
    def __init__(self, memory: Any, location: str, max_memories: int) -> None:
        self.memory = memory
        self.location = location
        self.max_memories = max_memories
        self.skipped: list[ImportSkip] = []
        self.notes: list[str] = []
        self.renamed: dict[str, str] = {}

    def read(self, scopes: Mapping[str, tuple[str, ...] | None]) -> ImportSource:
        wanted = [(key, value) for key, values in scopes.items() for value in values or ()]
        if not any(v is not None for v in scopes.values()):
            wanted = self._all_scopes()
        found: dict[str, Mapping[str, Any]] = {}
        for key, value in wanted:
            for memory in self._get_all({key: value}):
                found.setdefault(str(memory.get("id")), memory)
        records = [r for r in (self._record(m) for m in found.values()) if r is not None]
        records.sort(key=lambda r: (r["user_id"], r.get("created_at") or "", r["provenance"]["origin"]["id"]))
        for name, user in sorted(self.renamed.items()):
            self.notes.append(f"mem0 scope {name!r} is not a memlens user id: imported as user {user!r}")
        return ImportSource(ORIGIN, self.location, tuple(records), tuple(self.skipped), tuple(self.notes))

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:  # mem0 refuses a scope id (blank, with whitespace) with a ValueError
            raise InvalidInput(f"mem0 refused {what}: {exc}") from None

    def _all_scopes(self) -> list[tuple[str, str]]:
        """Every scope of the store. mem0 keeps no list of its users: its vector store's ``list`` (part of mem0's
        vector store interface, whatever the store) gives every memory's scope, one scope per memory: its user,
        else its agent, else its run."""
        listed = self._call(
            "listing its memories", self.memory.vector_store.list, filters=None, top_k=self.max_memories + 1
        )
        rows = listed[0] if isinstance(listed, (list, tuple)) and listed and isinstance(listed[0], list) else listed
        rows = list(rows or [])
        if len(rows) > self.max_memories:
            raise InvalidInput(f"the mem0 store holds more than {self.max_memories:,} memories: raise max_memories")
        scopes: set[tuple[str, str]] = set()
        for row in rows:
            payload = getattr(row, "payload", None) or {}
            key = next((k for k in _SCOPES if payload.get(k) not in (None, "")), None)
            if payload.get("type") == "user_identity" or "data" not in payload:
                self.skipped.append(ImportSkip("record", str(getattr(row, "id", "?")), "not a memory (mem0's own)"))
            elif key is None:
                self.skipped.append(ImportSkip("memory", str(getattr(row, "id", "?")), "no user, agent or run"))
            else:
                scopes.add((key, str(payload[key])))
        return sorted(scopes)

    def _get_all(self, filters: dict[str, str]) -> Iterable[Mapping[str, Any]]:
        result = self._call(
            f"the scope {filters}", self.memory.get_all, filters=filters, top_k=self.max_memories, show_expired=True
        )
        memories = result.get("results", []) if isinstance(result, Mapping) else result
        return [m for m in memories or [] if isinstance(m, Mapping)]

    def _record(self, memory: Mapping[str, Any]) -> dict[str, Any] | None:
        mem_id = str(memory.get("id") or "")
        text = memory.get("memory")
        scope = memlens_user(memory)
        if not mem_id:
            return None
        if not isinstance(text, str) or not text.strip():
            self.skipped.append(ImportSkip("memory", mem_id, "empty text"))
            return None
        if scope is None:
            self.skipped.append(ImportSkip("memory", mem_id, "no user, agent or run"))
            return None
        user = _valid_user(scope)
        if not user:
            self.skipped.append(ImportSkip("memory", mem_id, f"scope {scope[:60]!r} cannot be a memlens user id"))
            return None
        if user != scope:
            self.renamed[scope] = user
        metadata = memory.get("metadata")
        details: dict[str, Any] = {k: memory[k] for k in _DETAIL_KEYS if memory.get(k) not in (None, "")}
        if isinstance(metadata, Mapping) and metadata:
            details["metadata"] = dict(metadata)
        events = self._call(f"the history of memory {mem_id!r}", self.memory.history, mem_id) or []
        history = [{k: e[k] for k in _HISTORY_KEYS if e.get(k) is not None} for e in events if isinstance(e, Mapping)]
        category = metadata.get("category") if isinstance(metadata, Mapping) else None
        created_at = memory.get("created_at")
        record: dict[str, Any] = {
            "kind": "item",
            "user_id": user,
            "id": import_id(ORIGIN, "item", mem_id),
            "category": category
            if isinstance(category, str) and CATEGORY_PATTERN.fullmatch(category)
            else DEFAULT_CATEGORY,
            "content": text,
            "source": f"import:{ORIGIN}",
            "provenance": origin_provenance(
                ORIGIN,
                mem_id,
                created_at=str(created_at) if created_at else None,
                details=_fit(details, history),
            ),
        }
        if created_at:
            record["created_at"] = str(created_at)
        archived = _expiry(memory.get("expiration_date"), created_at)
        if archived is not None:
            record["archived_at"] = archived
        return record
