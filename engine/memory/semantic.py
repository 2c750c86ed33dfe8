"""Semantic long-term memory: items (facts) in categories with evolving summaries (llmemory §3)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import validation
from ..clock import optional_time, utcnow
from ..errors import InvalidInput, NotFound
from ..ids import check_id, check_text, check_unit, new_id
from ..records import Category, Extraction, Item, Page, SourcedExtraction
from ..store.sql.database import Connection, Row, one_row
from .base import Backends, dumps, insert_rows, like_pattern, loads, page_args
from .memory_keys import MemoryKeys

if TYPE_CHECKING:
    from ..providers.llm import LLM
    from .episodic import EpisodicMemory
    from .memorize import MemorizeResult

CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_PROVENANCE_CHARS = 64_000
ITEM_COLUMNS = (
    "id, user_id, category, content, importance, evergreen, provenance, source, created_at, updated_at, "
    "archived_at, preceding_text"
)


ITEM_TYPES = (
    ("id", "str"),
    ("user_id", "str"),
    ("category", "str"),
    ("content", "str"),
    ("importance", "float"),
    ("evergreen", "bool"),
    ("provenance", "str"),
    ("source", "str"),
    ("created_at", "ts"),
    ("updated_at", "ts"),
    ("archived_at", "ts"),
    ("preceding_text", "str"),
)


def check_category(name: object) -> str:
    if not isinstance(name, str) or not CATEGORY_PATTERN.fullmatch(name):
        raise InvalidInput(f"invalid category {str(name)[:40]!r}: use snake_case (lowercase letters, digits, _)")
    return name


def normalise_provenance(value: Any, method: str, confidence: float | None, at: datetime) -> dict[str, Any]:
    """llmemory's provenance shape {sources: [{type, id}], method, confidence, created_at} (§7.3)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise InvalidInput("provenance must be an object")
    validation.check_json_value(value, "provenance", max_chars=MAX_PROVENANCE_CHARS)
    sources = []
    for s in value.get("sources") or []:
        if isinstance(s, Mapping):
            if s.get("id") in (None, ""):
                continue
            sources.append({"type": str(s.get("type") or "unknown"), "id": str(s["id"])})
        else:
            sources.append({"type": "unknown", "id": str(s)})
    conf = value.get("confidence", confidence)
    conf = {"high": 0.9, "medium": 0.6, "low": 0.3}.get(conf, conf) if isinstance(conf, str) else conf
    if isinstance(conf, (int, float)) and not isinstance(conf, bool) and conf == conf:
        conf = min(max(float(conf), 0.0), 1.0)
    else:
        conf = None
    origin = value.get("origin")  # an imported memory's source system and id (engine/interop/import_source.py)
    return {
        "sources": sources,
        "method": str(value.get("method") or method),
        "confidence": conf,
        "created_at": str(value.get("created_at") or at.isoformat()),
        **({"origin": dict(origin)} if isinstance(origin, Mapping) else {}),
    }


def same_text_key(text: str) -> str:
    """What makes two memory texts the same one: equal up to case and surrounding whitespace."""
    return text.strip().lower()


def _item(row: Row) -> Item:
    return Item(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        loads(row[6]) or {},
        row[7] or "",
        row[8],
        row[9],
        row[10],
        row[11] or "",
    )


class SemanticMemory:
    """``engine.items``: facts and their categories; written directly (remember), from raw text (memorize) or as
    insights drawn from episodes (reflect)."""

    kind = "semantic"

    def __init__(self, b: Backends, llm: LLM, episodes: EpisodicMemory) -> None:
        # memorize.py and reflection.py build on this module, so they are imported here rather than at the top.
        from .graph_extraction import GraphExtraction
        from .memorize import Memorizer
        from .reflection import Reflector

        self.b = b
        # Entities and relations of every item written, drawn before the write and stored in its transaction.
        self.graph_extraction = GraphExtraction(b, llm)
        # Extra keys each item is found by (memory_keys.py), written with it; rebuilt on demand from the same rules.
        self.keys = MemoryKeys(b, self._key_extraction)
        self._memorizer = Memorizer(self, llm)
        self._reflector = Reflector(episodes, self, llm)

    def remember(
        self,
        user_id: str,
        content: str,
        category: str = "general",
        importance: float | None = None,
        evergreen: bool = False,
        provenance: Mapping[str, Any] | None = None,
        source: str = "api",
        created_at: datetime | str | None = None,
        preceding_text: str | None = None,
    ) -> Item:
        """Store one fact directly (llmemory's remember_fact). ``preceding_text``: what came right before it where it
        was said (e.g. the previous turn); stored with it and embedded into its vector
        (``Settings.preceding_text_weight``)."""
        item = self.prepare(
            user_id,
            content,
            category,
            importance,
            evergreen,
            provenance,
            source,
            created_at,
            preceding_text=preceding_text,
        )
        return self.add([item])[0]

    def remember_many(self, records: Iterable[Mapping[str, Any]]) -> list[Item]:
        """Store many facts in one batch (one embedding pass, one transaction); each record maps prepare's
        arguments."""
        return self.add([self.prepare(**dict(r)) for r in records])

    def memorize(
        self, user_id: str, text: str, category: str | None = None, importance: float | None = None
    ) -> list[Item]:
        """Write raw text: LLM fact extraction when configured, else one item in ``general`` (or ``category``).
        Each item's provenance method says which ran; :meth:`memorize_report` also returns the strategy."""
        return list(self._memorizer.memorize(user_id, text, category, importance).items)

    def memorize_report(
        self, user_id: str, text: str, category: str | None = None, importance: float | None = None
    ) -> MemorizeResult:
        """Like :meth:`memorize`, returning the strategy that ran, touched categories, new summaries and notes."""
        return self._memorizer.memorize(user_id, text, category, importance)

    def reflect(self, user_id: str, window: int = 10) -> tuple[list[Item], str]:
        """Insights from the last ``window`` episodes, stored in ``insights``; returns them and the strategy."""
        validation.check_int(window, "window", "window")  # before the user id, as the engine always checked
        return self._reflector.reflect(user_id, window)

    def prepare(
        self,
        user_id: str,
        content: str,
        category: str = "general",
        importance: float | None = None,
        evergreen: bool = False,
        provenance: Any = None,
        source: str = "api",
        created_at: Any = None,
        id: str | None = None,
        archived_at: Any = None,
        method: str = "direct",
        preceding_text: str | None = None,
    ) -> Item:
        """Validate one item without writing it. ``preceding_text`` is what came right before it where it was said
        (the previous turn of a conversation, say): it is stored with the item and its vector embeds it too, weighted
        by ``Settings.preceding_text_weight``, so a reply is found by the question it answers."""
        check_id(user_id, "user id")
        item_id = check_id(id, "item id") if id is not None else new_id("item")
        content = check_text(content, "item content", self.b.settings.max_text_chars)
        check_category(category)
        imp = check_unit(importance, "importance", 0.7)
        if not isinstance(evergreen, bool):
            raise InvalidInput("evergreen must be true or false")
        at = optional_time(created_at, "created_at") or utcnow()
        prov = normalise_provenance(provenance, method, imp, at)
        if preceding_text is not None and not isinstance(preceding_text, str):
            raise InvalidInput("item preceding_text must be text")
        before = preceding_text if preceding_text and preceding_text.strip() else ""
        before = check_text(before, "item preceding_text", self.b.settings.max_text_chars) if before else ""
        source = validation.check_optional_text(str(source or "")[:200], "source", 200)
        return Item(
            item_id,
            user_id,
            category,
            content,
            imp,
            evergreen,
            prov,
            source,
            at,
            at,
            optional_time(archived_at, "archived_at"),
            before,
        )

    def add(self, items: Sequence[Item]) -> list[Item]:
        """Store prepared items: vectors for the active ones, rows for all, in one all-or-nothing step."""
        if not items:
            return []
        self.b.check_new_ids("items", "item", [i.id for i in items])
        graph = self.graph_extraction.for_items(items)  # LLM calls, if any, before the writer lock
        self.keys.write(items, graph)  # before the rows: a key of a memory DuckDB lacks is never a candidate
        try:
            return self.b.store_records(
                self.kind,
                items,
                self.index_text,
                lambda conn, rows: self.insert(conn, rows, graph),
                self.index_preceding,
            )
        except BaseException:
            self.keys.undo(items)
            raise

    def _key_extraction(self, text: str, user_id: str) -> Extraction:
        """The extraction a rebuilt ``facts`` key starts from: the graph extraction's, or the offline rules' when
        that is off."""
        if self.graph_extraction.mode == "off":
            return self.graph_extraction.offline.extract(text)
        return self.graph_extraction.extract(text, user_id)

    @staticmethod
    def index_text(item: Item) -> str:
        return item.content

    @staticmethod
    def index_preceding(item: Item) -> str:
        return item.preceding_text

    def insert(
        self, conn: Connection, items: Sequence[Item], graph: Mapping[str, Sequence[SourcedExtraction]] | None = None
    ) -> list[Item]:
        """Item rows and, when given, the graph drawn from them (``graph_extraction.for_items``), in ``conn``'s
        transaction: all or nothing."""
        if not items:
            return []
        insert_rows(
            conn,
            "items",
            ITEM_TYPES,
            [
                [
                    i.id,
                    i.user_id,
                    i.category,
                    i.content,
                    i.importance,
                    i.evergreen,
                    dumps(i.provenance),
                    i.source,
                    i.created_at,
                    i.updated_at,
                    i.archived_at,
                    i.preceding_text,
                ]
                for i in items
            ],
        )
        if graph:
            self.graph_extraction.write(conn, graph)
        return list(items)

    def get(self, user_id: str, item_id: str) -> Item:
        """An item by id, archived (soft-forgotten) ones included."""
        check_id(user_id, "user id")
        check_id(item_id, "item id")
        with self.b.db.read() as conn:
            row = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id=? AND id=?", [user_id, item_id]
            ).fetchone()
        if row is None:
            raise NotFound(f"no semantic item {item_id!r} for user {user_id!r}")
        return _item(row)

    def with_contents(self, user_id: str, category: str, contents: Sequence[str]) -> dict[str, Item]:
        """Items of a category whose text equals one of ``contents`` (ignoring case and surrounding space),
        forgotten (archived) ones too, by that normalised text: how reflection finds insights it stored before."""
        check_id(user_id, "user id")
        keys = sorted({same_text_key(c) for c in contents})
        if not keys:
            return {}
        with self.b.db.read() as conn:
            rows = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id=? AND category=? AND "
                "lower(trim(content)) IN (SELECT unnest(?)) ORDER BY created_at, id",
                [user_id, check_category(category), keys],
            ).fetchall()
        out: dict[str, Item] = {}
        for row in rows:
            item = _item(row)
            out.setdefault(same_text_key(item.content), item)
        return out

    def list_items(
        self,
        user_id: str,
        category: str | None = None,
        query: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[Item]:
        check_id(user_id, "user id")
        limit, offset = page_args(limit, offset)
        where, params = ["user_id = ?"], [user_id]
        if category:
            where.append("category = ?")
            params.append(check_category(category))
        validation.check_optional_text(query, "query", self.b.settings.max_text_chars)
        if query:
            where.append("content ILIKE ? ESCAPE '\\'")
            params.append(like_pattern(query))
        if not include_archived:
            where.append("archived_at IS NULL")
        cond = " AND ".join(where)
        with self.b.db.read() as conn:
            total = one_row(conn.execute(f"SELECT count(*) FROM items WHERE {cond}", params))[0]
            rows = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE {cond} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                params + [int(limit), int(offset)],
            ).fetchall()
        return Page(tuple(_item(r) for r in rows), total, int(limit), int(offset))

    def categories(self, user_id: str) -> list[Category]:
        check_id(user_id, "user id")
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT ? AS user_id, name, coalesce(c.summary, ''), coalesce(n, 0), c.updated_at FROM "
                "(SELECT category AS name, count(*) AS n FROM items WHERE user_id=? AND archived_at IS NULL "
                " GROUP BY 1) i FULL OUTER JOIN (SELECT * FROM categories WHERE user_id=?) c USING (name) "
                "ORDER BY name",
                [user_id, user_id, user_id],
            ).fetchall()
        return [Category(*r) for r in rows]

    def set_category_summary(self, user_id: str, name: str, summary: str, conn: Connection | None = None) -> None:
        check_id(user_id, "user id")
        check_category(name)
        validation.check_text(summary, "category summary", 10**9, blank_ok=True)
        sql = (
            "INSERT INTO categories VALUES (?, ?, ?, ?) ON CONFLICT (user_id, name) DO UPDATE SET "
            "summary = excluded.summary, updated_at = excluded.updated_at"
        )
        args = [user_id, name, summary[: self.b.settings.max_text_chars], utcnow()]
        if conn is not None:
            conn.execute(sql, args)
        else:
            with self.b.db.write() as c:
                c.execute(sql, args)

    def memorize_offline(
        self,
        user_id: str,
        text: str,
        category: str | None = None,
        importance: float | None = None,
        source: str = "memorize",
    ) -> list[Item]:
        """The documented non-LLM strategy: the whole text becomes one item in ``general`` (or ``category``)."""
        item = self.prepare(user_id, text, category or "general", importance, source=source, method="memorize_offline")
        return self.add([item])
