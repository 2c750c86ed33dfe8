"""Extra keys a memory is found by, beside its own text: what it is about, and what answered it.

A memory stays what it is (its text, its vector, what the context shows); its keys are more ways to reach it, each a
row of the keys table (engine/store/vectors/keys.py) with its own text and vector, searched by vector and full text
like the memories' own tables (engine/retrieval/key_search.py):

- ``facts``: what the graph extraction drew from the memory (its triples rendered as text, "Angel of Death is a
  song", and its named entities) followed by its keyphrases (its content words in order, without the speaker prefix,
  stop words and repeats, at most ``MAX_KEYPHRASES``). The extraction is the one the write draws for the graph
  (``graph_extraction``: the offline rules, or the LLM when configured: the key's kind is then ``facts_llm``), or the
  offline rules when that is off. A vector of the gist, without "yeah, so, I said".
- ``next``: the text of the memory that answered it: a memory written with ``preceding_text`` equal to another
  memory's text (the next turn of a conversation) gives that memory a key of its own text, so a question is found by
  the words of its answer (``preceding_text`` already gives the reply the question's words). Its ``source_id`` is
  the reply: forgetting the reply deletes the key (keys.py), so a hard forget leaves no key with its words.
- ``sentence``: each sentence of a memory of two or more (at least ``MIN_SENTENCE_WORDS`` words each, the first
  ``MAX_SENTENCE_KEYS``), with the memory's speaker prefix when it has one. A turn's vector averages what it says;
  the sentence that answers a question ("I usually play CS:GO") is nearer to it on its own. A sentence that asks
  (it ends with a question mark) is no key: it tells nothing, and resembles the later questions about the same
  topic (LoCoMo dev, key_cosine_weight 0.6: recall@10 0.760 with question keys, 0.770 without).

Which kinds are written is ``memory_keys_write_kinds`` (all by default): a store for the ``deep`` preset needs only
its sentence keys, and the facts key costs an extraction and an embedding per memory.

Keys are written before the memories' rows and deleted again if the rows fail (DuckDB decides what exists: a key of
a memory that is not active there is never a candidate). ``MemoryKeys.rebuild`` builds them for a stored store
(``memlens keys``), and the benchmark importers write through the same ``SemanticMemory.add``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidInput
from ..ids import check_id
from ..records import Extraction, Item, SourcedExtraction
from ..store.vectors.keys import KeyRow
from ..store.vectors.rows import check_vectors
from .base import Backends
from .graph_offline import OfflineExtractor
from .graph_offline_rules import STOP_WORDS

__all__ = ["KEY_KINDS", "KEY_SETTINGS", "MemoryKeys", "facts_text", "key_kinds_for", "plan_keys", "sentence_texts"]

KEY_KINDS = ("facts", "facts_llm", "next", "sentence")
KEY_SETTINGS = ("all", "facts", "next", "sentences")  # what memory_keys_write_kinds (and memory_keys, but off) name
MIN_SENTENCE_WORDS = 3
MAX_SENTENCE_KEYS = 12
# A key's text is cut here: a long reply's first part says what it is about, and its vector sees no more anyway
# (all-MiniLM-L6-v2 reads 256 word pieces).
MAX_KEY_CHARS = 1000
MAX_KEYPHRASES = 60
_KIND = "semantic"
_SPEAKER = re.compile(r"^\s*[^\n\"]{1,80}? said, \"")
_QUOTED_TURN = re.compile(r"^\s*([^\n\"]{1,80}?) said, \"(.*)\"(.*)$", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_BATCH = 2000


def key_kinds_for(setting: str) -> tuple[str, ...]:
    """The key kinds the ``memory_keys`` setting searches."""
    return {
        "off": (),
        "facts": ("facts", "facts_llm"),
        "next": ("next",),
        "sentences": ("sentence",),
        "all": KEY_KINDS,
    }[setting]


def sentence_texts(content: str) -> list[str]:
    """The ``sentence`` keys of a memory (see the module): none for a memory of one sentence."""
    turn = _QUOTED_TURN.match(content)
    speaker, body = (turn.group(1), turn.group(2) + turn.group(3)) if turn else ("", content)
    parts = [" ".join(p.split()) for p in _SENTENCE_END.split(body)]
    parts = [p for p in parts if len(p.split()) >= MIN_SENTENCE_WORDS][:MAX_SENTENCE_KEYS]
    if len(parts) < 2:
        return []
    # A question tells nothing about its memory, and it is what a later question about the same thing resembles.
    parts = [p for p in parts if not p.rstrip("\"')] ").endswith("?")]
    return [(f'{speaker} said, "{p}"' if speaker else p)[:MAX_KEY_CHARS] for p in parts]


def facts_text(content: str, extraction: Extraction) -> str:
    """The ``facts`` key of a memory: its triples as text, its entities, then its keyphrases (see the module)."""
    parts: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        text = " ".join(text.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            parts.append(text)

    for t in extraction.triples:
        add(f"{t.subject} {t.predicate.replace('_', ' ')} {t.object}")
    for name, _ in extraction.entities:
        add(name)
    body = _SPEAKER.sub("", content, count=1)
    words = 0
    for w in _WORD.findall(body):
        if len(w) >= 3 and w.lower() not in STOP_WORDS and w.casefold() not in seen:
            add(w)
            words += 1
            if words >= MAX_KEYPHRASES:
                break
    return ", ".join(parts)[:MAX_KEY_CHARS]


def plan_keys(
    items: Sequence[Item],
    extractions: Mapping[str, Extraction],
    stored_before: Callable[[Sequence[tuple[str, str]]], Mapping[tuple[str, str], str]] | None = None,
    kinds: Sequence[str] = KEY_KINDS,
) -> list[KeyRow]:
    """The keys of the active ``items`` (in write order) of the key ``kinds`` asked for: a ``facts`` key of each
    from its extraction (by item id), its ``sentence`` keys, and a ``next`` key for each item another one answers.
    The answered memory is the nearest earlier item of the batch (else the nearest later) whose text is the reply's
    ``preceding_text``, else what ``stored_before`` finds for (user, text) among the stored memories."""
    return [r for r in _planned(items, extractions, stored_before, "next" in kinds) if r.key_kind in kinds]


def _planned(
    items: Sequence[Item],
    extractions: Mapping[str, Extraction],
    stored_before: Callable[[Sequence[tuple[str, str]]], Mapping[tuple[str, str], str]] | None,
    with_next: bool,
) -> list[KeyRow]:
    rows: list[KeyRow] = []
    active = [i for i in items if i.archived_at is None]
    position: dict[tuple[str, str], list[int]] = {}  # (user, text) -> positions of the batch's items with it
    for n, item in enumerate(active):
        position.setdefault((item.user_id, item.content), []).append(n)
    unanswered: list[tuple[Item, tuple[str, str]]] = []
    for n, item in enumerate(active):
        found = extractions.get(item.id) or Extraction((), (), "offline")
        text = facts_text(item.content, found)
        if text:
            kind = "facts_llm" if found.method == "llm" and not found.notes else "facts"
            rows.append(KeyRow(item.id, item.user_id, kind, text, item.id))
        rows.extend(KeyRow(item.id, item.user_id, "sentence", t, item.id) for t in sentence_texts(item.content))
        if not with_next or not item.preceding_text:
            continue
        before = (item.user_id, item.preceding_text)
        # the nearest earlier item with that text, else (a batch in another order) the nearest later one
        at = [m for m in position.get(before, ()) if m != n]
        if at:
            m = max((m for m in at if m < n), default=min(at))
            rows.append(KeyRow(active[m].id, item.user_id, "next", item.content[:MAX_KEY_CHARS], item.id))
        else:
            unanswered.append((item, before))
    if unanswered and stored_before is not None:
        earlier = stored_before([b for _, b in unanswered])
        for item, before in unanswered:
            if before in earlier and earlier[before] != item.id:
                rows.append(KeyRow(earlier[before], item.user_id, "next", item.content[:MAX_KEY_CHARS], item.id))
    return rows


class MemoryKeys:
    """Writing and rebuilding the items' keys (``engine.items.keys``)."""

    def __init__(self, b: Backends, extract: Callable[[str, str], Extraction] | None = None) -> None:
        self.b = b
        self._offline = OfflineExtractor()
        # The graph extraction's extractor for a text and user (rebuild); the offline rules without one.
        self._extract = extract or (lambda text, user: self._offline.extract(text))

    @property
    def enabled(self) -> bool:
        return bool(self.b.settings.memory_keys_write)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The key kinds written (``memory_keys_write_kinds``)."""
        return key_kinds_for(self.b.settings.memory_keys_write_kinds)

    def extractions(
        self, items: Sequence[Item], graph: Mapping[str, Sequence[SourcedExtraction]] | None
    ) -> dict[str, Extraction]:
        """Each item's extraction: the graph's (drawn for the same write), else the offline rules'."""
        out: dict[str, Extraction] = {}
        for batch in (graph or {}).values():
            for sourced in batch:
                if sourced.memory is not None and sourced.memory[0] == _KIND:
                    out[sourced.memory[1]] = sourced.extraction
        for item in items:
            if item.id not in out and item.archived_at is None:
                out[item.id] = self._offline.extract(item.content)
        return out

    def write(
        self,
        items: Sequence[Item],
        graph: Mapping[str, Sequence[SourcedExtraction]] | None = None,
        replace: bool = False,
    ) -> list[KeyRow]:
        """Plan, embed and write the keys of ``items`` (before their rows: see the module); with ``replace``, their
        old keys go first (an ingest upserts its vectors: a file imported again after a crash)."""
        if not self.enabled:
            return []
        kinds = self.kinds
        found = self.extractions(items, graph) if "facts" in kinds else {}
        rows = plan_keys(items, found, self._stored_before, kinds)
        if not rows:
            return rows
        # Noted like every two-store write: a full or read-only disk is then named (StoreFull, StoreReadOnly), and
        # a crash part-way is repaired at the next open.
        with self.b.intent(_KIND, sorted({r.memory_id for r in rows})):
            if replace:
                self.b.index.delete_keys(_KIND, [i.id for i in items], sources=False)
            self._add(rows)
        return rows

    def undo(self, items: Sequence[Item]) -> None:
        """Delete the keys a failed write of ``items`` added (theirs, and those drawn from their texts). What cannot
        be deleted (the disk that failed the write) stays: a key of a memory DuckDB lacks is never a candidate, and
        `memlens keys` builds them again; the write's own error is the one to see."""
        try:
            self.b.index.delete_keys(_KIND, [i.id for i in items])
        except Exception:
            pass

    def rebuild(
        self,
        user_id: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        kinds: str | None = None,
    ) -> dict[str, Any]:
        """Build the keys of every active item (of one user) again from DuckDB: the old keys are deleted first.
        Each user's items are planned in their write order (created_at, then id), so every reply finds the memory
        it answered among them. ``kinds`` (all, facts, next, sentences) defaults to ``memory_keys_write_kinds``."""
        self.b.db.refuse_if_read_only()
        if user_id is not None:
            check_id(user_id, "user id")
        if kinds is not None and kinds not in KEY_SETTINGS:
            raise InvalidInput(f"unknown key kinds {kinds[:30]!r}; use one of {', '.join(KEY_SETTINGS)}")
        wanted = self.kinds if kinds is None else key_kinds_for(kinds)
        where, params = (
            ("archived_at IS NULL", []) if user_id is None else ("archived_at IS NULL AND user_id = ?", [user_id])
        )
        with self.b.db.read() as conn:
            users = [
                r[0]
                for r in conn.execute(f"SELECT DISTINCT user_id FROM items WHERE {where} ORDER BY 1", params).fetchall()
            ]
        self.b.index.clear_keys(_KIND, user_id)
        from .semantic import ITEM_COLUMNS, _item

        counts: dict[str, int] = {"users": 0, "items": 0, "keys": 0}
        with self.b.index.deferred_upkeep():  # one upkeep of the keys table at the end (vectors/maintenance.py)
            for n, user in enumerate(users, 1):
                with self.b.db.read() as conn:
                    items = [
                        _item(r)
                        for r in conn.execute(
                            f"SELECT {ITEM_COLUMNS} FROM items WHERE user_id = ? AND archived_at IS NULL "
                            "ORDER BY created_at, id",
                            [user],
                        ).fetchall()
                    ]
                # the extraction (the LLM's, when configured) only feeds the facts key
                found = {i.id: self._extract(i.content, user) for i in items} if "facts" in wanted else {}
                rows = plan_keys(items, found, kinds=wanted)
                self._add(rows)
                counts["users"] += 1
                counts["items"] += len(items)
                counts["keys"] += len(rows)
                if progress is not None:
                    progress("users", n, len(users))
        return counts

    def _add(self, rows: Sequence[KeyRow]) -> None:
        for start in range(0, len(rows), _BATCH):
            chunk = rows[start : start + _BATCH]
            texts = [r.text for r in chunk]
            distinct = list(dict.fromkeys(texts))
            at = {t: n for n, t in enumerate(distinct)}
            # checked before rows are picked out of it by position (a broken embedder: nothing is written)
            vectors = check_vectors(self.b.embedder.embed(distinct), self.b.index.dim, len(distinct))
            self.b.index.add_keys(_KIND, chunk, vectors[[at[t] for t in texts]])

    def _stored_before(self, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The latest stored active item of each (user, text): the memory a new reply answers."""
        out: dict[tuple[str, str], str] = {}
        by_user: dict[str, list[str]] = {}
        for user, text in wanted:
            by_user.setdefault(user, []).append(text)
        with self.b.db.read() as conn:
            for user, texts in by_user.items():
                rows = conn.execute(
                    "SELECT id, content FROM items WHERE user_id = ? AND archived_at IS NULL "
                    "AND content IN (SELECT unnest(?)) ORDER BY created_at, id",
                    [user, sorted(set(texts))],
                ).fetchall()
                for item_id, content in rows:
                    out[(user, content)] = item_id
        return out
