"""Entities and relations drawn from memories as they are written (llmemory §3.7), and on demand for a store that
predates the graph.

``Settings.graph_extraction`` chooses the extractor: ``llm`` (the configured LLM with llmemory's prompt semantics),
``offline`` (the rules of graph_offline.py), ``auto`` (llm when an LLM is configured, else offline) or ``off``.

The LLM path (``LLMExtractor``): the text is cut to 2500 characters (``"\\n[...]"`` marks a cut); the prompt asks for
people, places, organisations and concepts with a type and a name, and subject-predicate-object relations in
snake_case, with "User" as the subject when the user speaks of themself or their family. It asks first for OpenAI
structured output (``{entities:[{type,name}], relations:[{subject,predicate,object}]}``); when the server refuses
that or its answer does not parse, a plain call follows and the first balanced ``{...}`` of the answer is read. Both
lists empty for a text longer than 50 characters: one more plain call. Types are lower-cased ("concept" when
missing), predicates normalised (``normalise_predicate``). Token usage goes to the ledger under the operation
``graph_extraction``.

[memlens] A failed LLM extraction (the LLM unavailable or erroring, an answer that is not the JSON asked for) does
not leave the memory without entities: the offline extractor runs instead, so its relations say ``method
"offline"`` and the extraction's notes keep the LLM's error. An LLM that answers validly with nothing found is
believed (no fallback).

Writing (``GraphExtraction``): extraction runs BEFORE the transaction that stores the memories (LLM calls never hold
the writer lock); the graph rows are then written inside that same transaction (``write``), so an item write that
fails leaves no graph rows. Each relation's sources are the item (``FactSource("semantic", id)``) and the messages
its provenance names (``{"type": "message", "id": "<session>#<seq>"}``); its time is the item's ``created_at``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..config import normalise_predicate
from ..providers.llm import LLM, LLMResult
from ..records import Extraction, FactSource, GraphWrite, Item, SourcedExtraction, Triple
from ..store.sql.database import Connection
from .base import Backends
from .graph_offline import OfflineExtractor
from .graph_write import GraphWriter, clean_name, clean_type, name_key

MAX_TEXT_CHARS = 2500
RETRY_MIN_CHARS = 50
OPERATION = "graph_extraction"
BATCH = 256
MAX_ENTITIES = 200  # per text: a runaway answer must not turn one memory into thousands of rows
MAX_RELATIONS = 200

PROMPT = """You extract a knowledge graph from a conversation between a user and an assistant.

Infer the entities (people, places, companies and other organisations, concepts), each with a type and a name, and
the relations between them as subject-predicate-object triples, even when a fact is stated informally or in passing.
When the user talks about themself or their family, use "User" as the subject (e.g. User has_son Jake).
Predicates are short snake_case verbs or roles, such as has_son, works_at, lives_in, likes, prefers, spouse,
current_job.

Return JSON only, in this shape:
{{"entities": [{{"type": "person", "name": "..."}}],
 "relations": [{{"subject": "...", "predicate": "...", "object": "..."}}]}}
Return empty lists when there is nothing to extract.

Conversation:
{text}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "name": {"type": "string"}},
                "required": ["type", "name"],
                "additionalProperties": False,
            },
        },
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "predicate": {"type": "string"},
                    "object": {"type": "string"},
                },
                "required": ["subject", "predicate", "object"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["entities", "relations"],
    "additionalProperties": False,
}

Progress = Callable[[int, int], None]  # (items done, items to do)


def truncate(text: str) -> str:
    """llmemory's cut: at most 2500 characters, ``"\\n[...]"`` added when anything was cut."""
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "\n[...]"


def first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` of ``text`` (braces inside JSON strings do not count), or None."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            c = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def parse_answer(text: str) -> tuple[tuple[tuple[str, str], ...], tuple[Triple, ...]] | None:
    """Entities and triples from an answer, normalised; None when it holds no JSON object of the asked shape."""
    raw = first_json_object(text or "")
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    ents, rels = data.get("entities", []), data.get("relations", [])
    if not isinstance(ents, list) or not isinstance(rels, list):
        return None
    types: dict[str, tuple[str, str]] = {}
    for e in ents[:MAX_ENTITIES]:
        if isinstance(e, Mapping):
            name = clean_name(e.get("name"))
            if name and name_key(name) not in types:  # the first occurrence of a name wins (§3.7)
                types[name_key(name)] = (name, clean_type(e.get("type")))
    triples: list[Triple] = []
    for r in rels[:MAX_RELATIONS]:
        if not isinstance(r, Mapping):
            continue
        subject, obj = clean_name(r.get("subject")), clean_name(r.get("object"))
        predicate = normalise_predicate(str(r.get("predicate") or ""))
        if subject and obj and predicate:
            s_type = types.get(name_key(subject), ("", "concept"))[1]
            o_type = types.get(name_key(obj), ("", "concept"))[1]
            triples.append(Triple(subject, predicate, obj, s_type, o_type))
    return tuple(types.values()), tuple(dict.fromkeys(triples))


class LLMExtractor:
    """llmemory's EntityRelationExtractor through the engine's LLM (see the module docstring)."""

    method = "llm"

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def extract(self, text: str, user_id: str | None = None) -> Extraction:
        """Never raises: a failure gives an empty extraction whose notes say what went wrong."""
        try:
            return self._extract(str(text or ""), user_id)
        except Exception as exc:  # llmemory: any exception gives empty lists
            return Extraction((), (), self.method, (f"LLM extraction failed: {type(exc).__name__}: {exc}"[:300],))

    def _extract(self, text: str, user_id: str | None) -> Extraction:
        if not text.strip():
            return Extraction((), (), self.method)
        prompt = PROMPT.format(text=truncate(text))
        notes: list[str] = []
        parsed = None
        structured = getattr(self.llm, "complete_structured", None)
        if callable(structured):
            result: LLMResult = structured(prompt, SCHEMA, "knowledge_graph", OPERATION, user_id)
            parsed = parse_answer(result.text) if result.ok else None
            if parsed is None:
                notes.append(f"structured output unusable ({result.error or 'no JSON object'}); plain call")
        if parsed is None:
            result = self.llm.complete(prompt, OPERATION, user_id)
            if not result.ok:
                return Extraction((), (), self.method, (*notes, f"LLM unavailable: {result.error}"[:300]))
            parsed = parse_answer(result.text)
            if parsed is None:
                return Extraction((), (), self.method, (*notes, "LLM answer held no JSON object of the asked shape"))
        if not parsed[0] and not parsed[1] and len(text) > RETRY_MIN_CHARS:
            retry = self.llm.complete(prompt, OPERATION, user_id)
            again = parse_answer(retry.text) if retry.ok else None
            notes.append("both lists empty; retried once")
            if again is not None:
                parsed = again
        return Extraction(parsed[0], parsed[1], self.method, tuple(notes))


class GraphExtraction:
    """Which extractor runs (``Settings.graph_extraction``), extraction of items before their write, and the graph
    write inside it."""

    def __init__(self, b: Backends, llm: LLM) -> None:
        self.b = b
        self.llm = llm
        self.offline = OfflineExtractor()
        self.llm_extractor = LLMExtractor(llm)

    @property
    def mode(self) -> str:
        """The extractor that runs now: llm, offline or off (auto resolved)."""
        chosen = self.b.settings.graph_extraction
        if chosen == "auto":
            return "llm" if self.llm.available else "offline"
        return chosen

    def extract(self, text: str, user_id: str | None = None, mode: str | None = None) -> Extraction:
        """One text through the chosen extractor; a failed LLM extraction falls back to the offline rules."""
        mode = mode or self.mode
        if mode == "off":
            return Extraction((), (), "off")
        if mode == "offline":
            return self.offline.extract(text)
        found = self.llm_extractor.extract(text, user_id)
        failed = [n for n in found.notes if n.startswith(("LLM unavailable", "LLM answer", "LLM extraction failed"))]
        if not failed:
            return found
        rules = self.offline.extract(text)
        return Extraction(rules.entities, rules.triples, rules.method, (*found.notes, "offline extractor used instead"))

    def for_items(self, items: Sequence[Item], mode: str | None = None) -> dict[str, list[SourcedExtraction]]:
        """Extractions of the active items, per user, ready for :meth:`write` (run before the transaction)."""
        mode = mode or self.mode
        out: dict[str, list[SourcedExtraction]] = {}
        if mode == "off":
            return out
        for item in items:
            if item.archived_at is not None:
                continue
            found = self.extract(item.content, item.user_id, mode)
            if found.entities or found.triples:
                out.setdefault(item.user_id, []).append(
                    SourcedExtraction(found, item.created_at, ("semantic", item.id), item_sources(item))
                )
        return out

    def write(self, conn: Connection, batches: Mapping[str, Sequence[SourcedExtraction]]) -> list[GraphWrite]:
        """The graph rows of :meth:`for_items`' extractions, inside the caller's transaction."""
        writer = GraphWriter(self.b.settings.exclusive_predicates)
        return [writer.write(conn, user_id, batch) for user_id, batch in batches.items() if batch]

    # -- on demand ----------------------------------------------------------------------------------------------
    def extract_store(
        self, user_id: str | None = None, only_missing: bool = True, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Extract the graph of stored items (all users, or one): those that name no entity yet (``only_missing``)
        or all. Committed batch by batch, so an interrupted run resumes where it stopped; running it again changes
        nothing (mentions are replaced per memory, identical facts merged). An item whose text names nothing is
        extracted again on every run (nothing marks it done), which costs LLM calls in llm mode."""
        mode = self.mode
        totals: dict[str, Any] = {
            "mode": mode,
            "items": 0,
            "with_entities": 0,
            "entities_added": 0,
            "relations_added": 0,
            "relations_merged": 0,
            "superseded": 0,
            "mentions": 0,
            "fallbacks": 0,
        }
        if mode == "off":
            return totals
        from .semantic import ITEM_COLUMNS, _item  # here: semantic.py imports this module

        ids = self._pending(user_id, only_missing)
        for start in range(0, len(ids), BATCH):
            chunk = ids[start : start + BATCH]
            with self.b.db.read() as conn:
                rows = conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM items WHERE id IN (SELECT unnest(?)) ORDER BY created_at, id",
                    [chunk],
                ).fetchall()
            items = [_item(r) for r in rows]
            batches = self.for_items(items, mode)
            with self.b.db.write() as conn:
                writes = self.write(conn, batches)
            totals["items"] += len(items)
            totals["with_entities"] += sum(len(b) for b in batches.values())
            totals["fallbacks"] += sum(
                1 for b in batches.values() for se in b if "offline extractor used instead" in se.extraction.notes
            )
            _add_counts(totals, writes)
            if progress is not None:
                progress(min(start + BATCH, len(ids)), len(ids))
        return totals

    def _pending(self, user_id: str | None, only_missing: bool) -> list[str]:
        sql = "SELECT i.id FROM items i WHERE i.archived_at IS NULL"
        args: list[Any] = []
        if user_id is not None:
            sql += " AND i.user_id = ?"
            args.append(user_id)
        if only_missing:
            sql += (
                " AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.user_id = i.user_id AND m.kind = 'semantic'"
                " AND m.memory_id = i.id)"
            )
        with self.b.db.read() as conn:
            return [r[0] for r in conn.execute(sql + " ORDER BY i.created_at, i.id", args).fetchall()]


def item_sources(item: Item) -> tuple[FactSource, ...]:
    """The item itself, then the messages its provenance names (consolidation writes those)."""
    out = [FactSource("semantic", item.id)]
    sources = item.provenance.get("sources") if isinstance(item.provenance, Mapping) else None
    for s in sources if isinstance(sources, list) else []:
        if isinstance(s, Mapping) and s.get("type") == "message" and isinstance(s.get("id"), str):
            out.append(FactSource("message", s["id"]))
    return tuple(dict.fromkeys(out))


def _add_counts(totals: dict[str, Any], writes: Iterable[GraphWrite]) -> None:
    for w in writes:
        totals["entities_added"] += len(w.entities_added)
        totals["relations_added"] += len(w.relations_added)
        totals["relations_merged"] += len(w.relations_merged)
        totals["superseded"] += len(w.superseded)
        totals["mentions"] += w.mentions
