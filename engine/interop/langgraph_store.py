"""A LangGraph ``BaseStore`` over memlens: a LangGraph agent's long-term memory kept, searched and explained by
memlens (``pip install langgraph``; LangGraph's own ``langgraph.store.base`` types).

    from engine import MemoryEngine
    from engine.interop.langgraph_store import MemlensStore

    store = MemlensStore(MemoryEngine.open("data/store"), fields=["text"])
    graph = builder.compile(store=store)   # nodes reach it as ``runtime.store`` (or a ``store`` argument)

How items map (namespaces to users and categories, keys to ids, what is embedded): engine/interop/langgraph_keys.py.
What each operation does in memlens:

- ``put`` writes a semantic item (source ``langgraph``) whose provenance ``origin`` holds the namespace, the key
  and the value exactly as given, so ``get`` returns it equal. A put of a key that exists writes a **new version**
  (a new item) and then forgets the previous one (``forget_mode``, actor ``langgraph``, in the forget log), so a
  trace that recalled the old version still shows it, marked as replaced; a put of the same value and index again
  writes nothing. ``Item.created_at`` is the key's first version's time, ``updated_at`` this version's.
- ``delete`` (a put of ``None``) forgets every live version through memlens forgetting, with its audit log.
- ``search`` with a ``query`` runs memlens's traced retrieval over the namespace's user's semantic memories (the
  trace is stored with origin ``langgraph``, so the Traces page shows what a LangGraph agent recalled) and returns
  the memories the pipeline put into the context that lie under the namespace prefix and pass ``filter``, in
  context order, each with its final score: the relevance filter and the token budget apply, as they do to any
  memlens agent, so a search can return fewer than ``limit`` items although more exist. Items put with
  ``index=False`` (or whose index paths selected no text) follow, unscored, as LangGraph's InMemoryStore adds them;
  then ``offset`` and ``limit``. The returned items also carry ``trace_id`` and ``memory_id`` (for
  ``engine.feedback``). Without a query (or with a blank one) it lists the live items under the prefix that pass
  ``filter``, newest first.
- ``list_namespaces`` follows LangGraph's prefix/suffix conditions (``*`` wildcards), ``max_depth``, sorted.

A batch is checked and its writes prepared (validated, ids chosen, texts built) before anything runs: a bad op
refuses the whole batch with ``InvalidInput`` and nothing is written, not even a search's trace. Then its reads run
on the store as it was, then its puts and deletes (the last op per key wins) in one write: one embedding pass and
one transaction for every new version, then the forgets of the versions they replace and of the deleted keys (one
per user). A process stopped between the two leaves the old version live but hidden (the newest version of a key
is the one read), and the key's next put or delete retires it. Batches of one store run one at a time (LangGraph
runs a graph's nodes in threads). TTLs are not supported (``supports_ttl`` False: LangGraph refuses a ``ttl``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInput
from ..ids import check_id, new_id
from ..trace.trace_index import recording_origin
from ..vocab import ForgetMode, Kind, TraceOrigin
from . import langgraph_keys as keys
from .langgraph_keys import StoredVersion

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as exc:  # the optional peer package
    raise ImportError(
        "memlens's LangGraph store needs the langgraph package: pip install langgraph==1.2.22 "
        "(requirements-dev.txt pins it)"
    ) from exc

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..records import Item as MemlensItem

_COLUMNS = "id, provenance, created_at"
_LIVE = "FROM items WHERE source = ? AND archived_at IS NULL"
# The forget log's reasons for the two ways a LangGraph agent retires a version.
REPLACED_REASON = "replaced by a LangGraph put of the same key"
DELETED_REASON = "LangGraph delete"
SEARCHED_KINDS = (Kind.SEMANTIC.value,)  # what a LangGraph search retrieves over: the store's items are semantic


class MemlensSearchItem(SearchItem):
    """A LangGraph ``SearchItem`` that also names the memlens memory and, for a search with a query, the trace that
    recalled it (so an agent can label it: ``engine.feedback.report(user, useful=[item.memory_id], trace_id=...)``)."""

    __slots__ = ("memory_id", "trace_id")

    def __init__(self, stored: StoredVersion, score: float | None, trace_id: str | None) -> None:
        super().__init__(
            namespace=stored.namespace,
            key=stored.key,
            value=stored.value,
            created_at=stored.created_at,
            updated_at=stored.updated_at,
            score=score,
        )
        self.memory_id = stored.memory_id
        self.trace_id = trace_id


@dataclass(frozen=True)
class _WritePlan:
    """A batch's writes, prepared before anything runs: the new versions and the memories to forget, per user."""

    new: list[MemlensItem] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)


class MemlensStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memlens engine. ``fields``: the JSON paths embedded when a put gives no
    ``index`` (LangGraph's default ``["$"]``, the whole value). ``forget_mode``: how a delete or a replaced version is
    forgotten (``soft``: archived, kept for the audit; ``hard``: erased). ``retrieval``: overrides of retrieval
    settings for every search with a query (e.g. ``{"budget_tokens": 4000}``), ``hops`` and ``preset`` likewise;
    they are checked here, so a bad one refuses the store, not its first search."""

    supports_ttl = False
    __slots__ = ("engine", "fields", "forget_mode", "retrieval", "hops", "preset", "_lock")

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        fields: Sequence[str] = ("$",),
        forget_mode: str = "soft",
        retrieval: Mapping[str, Any] | None = None,
        hops: int | None = None,
        preset: str | None = None,
    ) -> None:
        paths = keys.check_index(list(fields) if isinstance(fields, (list, tuple)) else fields)
        if not isinstance(paths, list) or not paths:
            raise InvalidInput("fields must name at least one JSON path (LangGraph's default is ['$'])")
        if forget_mode not in tuple(ForgetMode):
            raise InvalidInput(f"unknown forget_mode {str(forget_mode)[:20]!r}; use soft or hard")
        if hops is not None and (not isinstance(hops, int) or isinstance(hops, bool)):
            raise InvalidInput("hops must be an integer or None")
        engine.retrieval.pipeline.settings_for(retrieval, hops, None, preset)  # refuses unknown or bad settings
        self.engine = engine
        self.fields = paths
        self.forget_mode = forget_mode
        self.retrieval = dict(retrieval or {})
        self.hops = hops
        self.preset = preset
        self._lock = threading.Lock()

    # -- LangGraph's two abstract methods ------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` (GetOp, SearchOp, ListNamespacesOp, PutOp); one result per op, in order."""
        ops = list(ops)
        with self._lock:
            checked = [self._checked(op) for op in ops]
            writes = {(op.namespace, op.key): op for op in checked if isinstance(op, PutOp)}  # the last one wins
            plan = self._plan(writes)
            results = [self._read(op) for op in checked]
            self._apply(plan)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (memlens's calls block: DuckDB, LanceDB, the model)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- checks ---------------------------------------------------------------------------------------------------
    def _checked(self, op: object) -> Op:
        """``op`` with its namespace, key, value, index, query and filter checked (and made plain JSON and tuples)."""
        if isinstance(op, GetOp):
            return op._replace(namespace=keys.check_namespace(op.namespace), key=keys.check_key(op.key))
        if isinstance(op, SearchOp):
            prefix = keys.check_namespace(op.namespace_prefix, prefix=True)
            query = keys.check_query(op.query, self.engine.settings.max_text_chars)
            _check_page(op.limit, op.offset)
            if query is not None and not prefix:
                raise InvalidInput(
                    "a search with a query runs memlens's traced retrieval for one user: give a namespace "
                    "prefix whose first label is the user id"
                )
            return op._replace(namespace_prefix=prefix, query=query, filter=keys.check_filter(op.filter))
        if isinstance(op, ListNamespacesOp):
            for condition in op.match_conditions or ():
                if condition.match_type not in ("prefix", "suffix"):
                    raise InvalidInput(f"unknown namespace match type {str(condition.match_type)[:20]!r}")
                if not isinstance(condition.path, (tuple, list)) or len(condition.path) > keys.MAX_LABELS:
                    raise InvalidInput(f"a namespace match path must be a tuple of at most {keys.MAX_LABELS} labels")
                for label in condition.path:
                    keys.check_label(label)
            depth = op.max_depth
            if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
                raise InvalidInput("max_depth must be a positive integer or None")
            _check_page(op.limit, op.offset)
            return op
        if isinstance(op, PutOp):
            namespace, key = keys.check_namespace(op.namespace), keys.check_key(op.key)
            if op.ttl is not None:
                raise InvalidInput("memlens's LangGraph store does not support TTLs (ttl must be None)")
            if op.value is None:
                return op._replace(namespace=namespace, key=key)
            value, index = keys.check_value(op.value), keys.check_index(op.index)
            return op._replace(namespace=namespace, key=key, value=value, index=index)
        raise InvalidInput(f"unknown LangGraph store operation {type(op).__name__}")

    # -- reads ----------------------------------------------------------------------------------------------------
    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self._current(op.namespace, op.key)
            return _item(found) if found is not None else None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        return None  # a put or a delete

    def _rows(self, sql: str, params: list[Any]) -> list[StoredVersion]:
        with self.engine.items.b.db.read() as conn:
            rows = conn.execute(sql, params).fetchall()
        found = (keys.stored_version(memory_id, prov, created) for memory_id, prov, created in rows)
        return [s for s in found if s is not None]

    def _versions(self, namespace: tuple[str, ...], key: str) -> list[StoredVersion]:
        """The live versions of a key, newest first (one, unless a put stopped between its write and its forget)."""
        prefix = keys.key_prefix(namespace, key)
        found = self._rows(
            f"SELECT {_COLUMNS} {_LIVE} AND user_id = ? AND starts_with(id, ?) ORDER BY created_at DESC, id DESC",
            [keys.SYSTEM, keys.user_of(namespace), prefix],
        )
        return [s for s in found if s.namespace == namespace and s.key == key]

    def _current(self, namespace: tuple[str, ...], key: str) -> StoredVersion | None:
        versions = self._versions(namespace, key)
        return versions[0] if versions else None

    def _live(self, user_id: str | None) -> list[StoredVersion]:
        """Every live LangGraph item (of one user, when given), newest first, one per key."""
        sql, params = f"SELECT {_COLUMNS} {_LIVE}", [keys.SYSTEM]
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        return keys.newest_per_key(self._rows(sql + " ORDER BY created_at DESC, id DESC", params))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)

        def wanted(s: StoredVersion) -> bool:
            return s.namespace[: len(prefix)] == prefix and keys.matches_filter(s.value, op.filter)

        end = op.offset + op.limit
        if op.query is None:
            listed = [s for s in self._live(keys.user_of(prefix) if prefix else None) if wanted(s)]
            return [MemlensSearchItem(s, None, None) for s in listed[op.offset : end]]
        user_id = keys.user_of(prefix)
        with recording_origin(TraceOrigin.LANGGRAPH):
            trace = self.engine.retrieval.pipeline.retrieve(
                user_id,
                op.query,
                hops=self.hops,
                overrides=self.retrieval,
                preset=self.preset,
                sources=SEARCHED_KINDS,
            )
        in_context = [r for r in trace.ranking if r.in_context]
        by_id = {
            s.memory_id: s
            for s in self._rows(
                f"SELECT {_COLUMNS} {_LIVE} AND user_id = ? AND id IN (SELECT unnest(?))",
                [keys.SYSTEM, user_id, [r.id for r in in_context]],
            )
        }
        hits: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for ranked in in_context:
            s = by_id.get(ranked.id)
            if s is None or not s.indexed or (s.namespace, s.key) in seen or not wanted(s):
                continue
            seen.add((s.namespace, s.key))
            hits.append(MemlensSearchItem(s, ranked.final, trace.trace_id))
        if len(hits) < end:  # the items no query can find, unscored, after the recalled ones
            hits.extend(MemlensSearchItem(s, None, None) for s in self._live(user_id) if not s.indexed and wanted(s))
        return hits[op.offset : end]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        # A prefix condition whose first label is no wildcard names the user: read only that user's items.
        user_id = next(
            (c.path[0] for c in conditions if c.match_type == "prefix" and c.path and c.path[0] != "*"), None
        )
        namespaces = {s.namespace for s in self._live(user_id)}
        kept = [ns for ns in namespaces if all(keys.namespace_matches(ns, c.path, c.match_type) for c in conditions)]
        if op.max_depth is not None:
            kept = [ns[: op.max_depth] for ns in kept]
        return sorted(set(kept))[op.offset : op.offset + op.limit]

    # -- writes ---------------------------------------------------------------------------------------------------
    def _plan(self, writes: Mapping[tuple[tuple[str, ...], str], PutOp]) -> _WritePlan:
        """What the batch's puts and deletes will write, every new version validated; nothing is written here."""
        plan = _WritePlan()
        for (namespace, key), op in writes.items():
            versions = self._versions(namespace, key)
            user_id = keys.user_of(namespace)
            if op.value is None:
                if versions:
                    plan.deleted.setdefault(user_id, []).extend(v.memory_id for v in versions)
                continue
            value = dict(op.value)
            if len(versions) == 1 and versions[0].value == value and versions[0].index == op.index:
                continue  # the same value again: nothing to write
            first = versions[-1].created_at if versions else None
            plan.new.append(self._prepare(namespace, key, value, op.index, first))
            if versions:
                plan.replaced.setdefault(user_id, []).extend(v.memory_id for v in versions)
        return plan

    def _apply(self, plan: _WritePlan) -> None:
        if plan.new:
            self.engine.items.add(plan.new)  # one embedding pass, one transaction, all or nothing
        for forgets, reason in ((plan.replaced, REPLACED_REASON), (plan.deleted, DELETED_REASON)):
            for user_id, ids in forgets.items():
                self.engine.forgetting.forget(
                    user_id, Kind.SEMANTIC.value, ids, reason, mode=self.forget_mode, actor=keys.SYSTEM
                )

    def _prepare(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: list[str] | Literal[False] | None,
        first_created_at: datetime | None,
    ) -> MemlensItem:
        paths = self.fields if index is None else index
        texts = keys.index_texts(value, paths, get_text_at_path) if isinstance(paths, list) else []
        content = "\n".join(texts) if texts else keys.value_json(value)
        limit = self.engine.settings.max_text_chars
        if len(content) > limit:
            raise InvalidInput(
                f"the text a put of key {key[:40]!r} would embed is {len(content):,} characters; memlens's "
                f"max_text_chars is {limit:,}: index fewer or shorter fields"
            )
        item_id = keys.key_prefix(namespace, key) + new_id("v").removeprefix("v_")[:12]
        origin: dict[str, Any] = {
            "system": keys.SYSTEM,
            "id": key,
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "index": index,
            "indexed": bool(texts),
        }
        if first_created_at is not None:
            origin["first_created_at"] = first_created_at.isoformat()
        return self.engine.items.prepare(
            keys.user_of(namespace),
            content,
            keys.category_of(namespace),
            provenance={"method": "langgraph:put", "origin": origin},
            source=keys.SYSTEM,
            id=check_id(item_id, "item id"),
            method="langgraph:put",
        )


def _item(stored: StoredVersion) -> Item:
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


def _check_page(limit: object, offset: object) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= 100_000:
            raise InvalidInput(f"{name} must be an integer from 0 to 100000, got {str(number)[:20]!r}")
