"""Writing raw text into semantic memory with an LLM (llmemory §3.3), or offline when there is none.

With an LLM: (1) one call extracts facts as a JSON list of ``{content, importance}``; (2) one call per fact classifies
it into a snake_case category; (3) one call per touched category evolves its markdown summary. Everything is
collected first and written in one step (items, vectors and summaries), so a failure never leaves half a result.

Malformed output follows the reference: not JSON -> no facts; a bare string is a fact; a missing or out-of-range
importance -> 0.7; an empty or unusable category -> ``general``; a failed summary call keeps the old summary.
If the extraction call itself fails (timeouts, 5xx, 429 after the retries), the documented offline strategy runs
instead: the whole text becomes one item in ``general`` (or the given category).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ..ids import check_id, check_text, check_unit
from ..providers.llm import LLM
from ..providers.llm_output import json_array, unit_number
from ..records import Item
from .semantic import CATEGORY_PATTERN, SemanticMemory, check_category

DEFAULT_IMPORTANCE = 0.7

EXTRACT_PROMPT = (
    "Extract the discrete facts worth remembering about the user from the text below: preferences, behaviours, "
    "decisions, corrections and important details. One fact per entry, self-contained.\n"
    "Importance scale: 0.8-0.95 preferences, corrections and decisions; 0.5-0.8 factual context; 0.3-0.5 "
    "ephemeral details.\n\nText:\n{text}\n\n"
    'Return only a JSON array of objects {{"content": str, "importance": number 0-1}}, or [] if there is '
    "nothing worth remembering."
)
CLASSIFY_PROMPT = (
    "Classify this fact into a single category name in lowercase snake_case (for example preferences, work_life, "
    "health, travel, general). Existing categories: {existing}.\n\nFact: {fact}\n\nReply with the category name only."
)
SUMMARY_PROMPT = (
    "You are a memory synchronisation specialist. Update the user's profile for the category '{category}'.\n\n"
    "Existing profile:\n{existing}\n\nNew items:\n{items}\n\n"
    "Overwrite old facts that the new items contradict, append new facts, keep the rest. "
    "Return only the updated profile in markdown."
)


@dataclass(frozen=True)
class MemorizeResult:
    """What one ``memorize`` call did: the items written, which strategy ran, and why (when it fell back)."""

    items: tuple[Item, ...]
    strategy: str  # fact_extraction | memorize_offline
    categories: tuple[str, ...] = ()  # categories that received items
    summaries: dict[str, str] = field(default_factory=dict)  # category -> new summary (only the ones evolved)
    llm_calls: int = 0
    dropped: int = 0  # extracted entries dropped as unusable (blank, wrong shape)
    notes: tuple[str, ...] = ()  # fallbacks and defaults applied, for the dashboard


def parse_facts(text: str) -> tuple[list[tuple[str, float]], int] | None:
    """Facts and the number of dropped entries, or None when the output is not a JSON array."""
    values = json_array(text)
    if values is None:
        return None
    facts, dropped = [], 0
    for v in values:
        if isinstance(v, str):
            v = {"content": v}
        content = v.get("content") if isinstance(v, dict) else None
        if isinstance(content, str):
            content = content.replace("\x00", "")  # a NUL would make the whole write refuse
        if not isinstance(content, str) or not content.strip():
            dropped += 1
            continue
        imp = unit_number(v.get("importance")) if v.get("importance") is not None else None
        facts.append((content.strip(), DEFAULT_IMPORTANCE if imp is None else imp))
    return facts, dropped


def normalise_category(text: str) -> str:
    """The model's answer as a snake_case category; anything unusable becomes ``general``."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    line = line.strip().strip("`'\"*.:").strip().lower()
    line = re.sub(r"\s+", "_", line)
    line = re.sub(r"[^a-z0-9_]", "", line).strip("_")[:64]
    return line if CATEGORY_PATTERN.fullmatch(line) else "general"


def _strip_fence(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = re.sub(r"^```[a-zA-Z]*\n?", "", text)
        text = re.sub(r"\n?```$", "", text)
    return text.strip()


class Memorizer:
    def __init__(self, semantic: SemanticMemory, llm: LLM) -> None:
        self.semantic = semantic
        self.llm = llm

    def memorize(
        self, user_id: str, text: str, category: str | None = None, importance: float | None = None
    ) -> MemorizeResult:
        """Extract, classify and summarise with the LLM when available; otherwise store the text as one item."""
        check_id(user_id, "user id")
        check_text(text, "text", self.semantic.b.settings.max_text_chars)
        if category is not None:
            check_category(category)
        check_unit(importance, "importance", DEFAULT_IMPORTANCE)  # refuse NaN or out of range before any call
        if not self.llm.available:
            return self._offline(user_id, text, category, importance, ())
        extracted = self.llm.complete(EXTRACT_PROMPT.format(text=text), "memorize_extract", user_id)
        if not extracted.ok:
            return self._offline(
                user_id, text, category, importance, (f"LLM failed: {extracted.error}; stored the text as one item",), 1
            )
        parsed = parse_facts(extracted.text)
        if parsed is None:
            return MemorizeResult(
                (), "fact_extraction", llm_calls=1, notes=("malformed extraction output (not a JSON array): no facts",)
            )
        facts, dropped = parsed
        notes: list[str] = []
        calls = 1
        if not facts:
            return MemorizeResult(
                (), "fact_extraction", llm_calls=calls, dropped=dropped, notes=("the model found no facts",)
            )
        existing = {c.name: c.summary for c in self.semantic.categories(user_id)}
        classified: list[tuple[str, float, str]] = []
        for content, imp in facts:
            if category is not None:
                cat = category
            else:
                result = self.llm.complete(
                    CLASSIFY_PROMPT.format(existing=", ".join(sorted(existing)) or "none", fact=content),
                    "memorize_classify",
                    user_id,
                )
                calls += 1
                cat = normalise_category(result.text) if result.ok else "general"
                if not result.ok:
                    notes.append(f"classification failed ({result.error}); used general")
            classified.append((content, imp if importance is None else importance, cat))
        summaries: dict[str, str] = {}
        touched = list(dict.fromkeys(c for _, _, c in classified))
        for cat in touched:
            bullets = "\n".join(f"- {c}" for c, _, k in classified if k == cat)
            result = self.llm.complete(
                SUMMARY_PROMPT.format(
                    category=cat, existing=existing.get(cat) or "No existing profile.", items=bullets
                ),
                "memorize_summary",
                user_id,
            )
            calls += 1
            summary = _strip_fence(result.text.replace("\x00", "")) if result.ok else ""
            if summary:
                summaries[cat] = summary
            else:
                notes.append(f"summary of {cat} not updated ({result.error or 'empty answer'})")
        items = self._prepare(user_id, text, classified)
        written = self._write(items, user_id, summaries)
        return MemorizeResult(
            tuple(written), "fact_extraction", tuple(touched), summaries, calls, dropped, tuple(notes)
        )

    def _prepare(self, user_id: str, text: str, classified: list[tuple[str, float, str]]) -> list[Item]:
        limit = self.semantic.b.settings.max_text_chars
        source_id = "text-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return [
            self.semantic.prepare(
                user_id,
                content[:limit],
                cat,
                imp,
                source="memorize",
                provenance={
                    "sources": [{"type": "text", "id": source_id}],
                    "method": "fact_extraction",
                    "confidence": imp,
                },
                method="fact_extraction",
            )
            for content, imp, cat in classified
        ]

    def _write(self, items: list[Item], user_id: str, summaries: dict[str, str]) -> list[Item]:
        """Vectors, item rows and category summaries in one all-or-nothing step."""
        sem = self.semantic
        graph = sem.graph_extraction.for_items(items)  # before the transaction (LLM calls)

        def rows(conn: Any) -> list[Item]:
            out = sem.insert(conn, items, graph)
            for cat, summary in summaries.items():
                sem.set_category_summary(user_id, cat, summary, conn=conn)
            return out

        return sem.b.write_indexed(
            sem.kind, [i.id for i in items], [i.user_id for i in items], [i.content for i in items], rows
        )

    def _offline(
        self,
        user_id: str,
        text: str,
        category: str | None,
        importance: float | None,
        notes: tuple[str, ...],
        calls: int = 0,
    ) -> MemorizeResult:
        items = self.semantic.memorize_offline(user_id, text, category, importance)
        return MemorizeResult(tuple(items), "memorize_offline", tuple({i.category for i in items}), {}, calls, 0, notes)
