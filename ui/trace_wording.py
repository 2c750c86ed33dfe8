"""How a retrieval ran, said in words for the trace page (plain): who proposed each hop's query and how it was
made, and the trace's strategies; not the engine's names (``offline:bridge_entities``) or its stored JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .trace_data import shorten

PROPOSER_WORDS: dict[str, str] = {
    "question": "the question as asked",
    "offline:keywords": "the question's keywords (offline)",
    "llm:query": "the LLM, from the question",
    "offline:bridge_entities": "the offline bridge: names in the results so far",
    "llm:reasoner": "the LLM reasoner, from the results so far",
}
STRATEGY_KEYS: dict[str, str] = {
    "query_generation": "first query",
    "reasoner": "next queries",
    "relevance": "relevance filter",
    "vector_search": "vector search",
    "full_text_search": "full-text search",
    "key_search": "vector search of the keys",
}
PROPOSAL_WORDS: dict[str, str] = {
    "strategy": "how",
    "why": "why",
    "fallback": "fell back because",
    "raw": "the LLM's reply",
    "names": "names taken",
    "from_text": "taken from",
    "question_overlap": "words shared with the question",
    "also_from": "also in",
    "key_terms": "key terms added",
    "terms": "the query's terms",
    "redacted": "redacted",
}
_PROPOSAL_VALUES = {"as_is": "the question as it is", "llm": "written by the LLM", "offline": "offline keywords"}


def proposer_words(name: str | None) -> str:
    """Who proposed a hop's query, in words (a custom reasoner's own name as it is)."""
    return PROPOSER_WORDS.get(str(name), str(name))


def strategy_words(strategies: Mapping[str, Any]) -> str:
    """A trace's strategies as ``first query: the question as asked; vector search: ...`` (no internal keys)."""
    parts = []
    for key, value in strategies.items():
        name = STRATEGY_KEYS.get(key) or key.replace("_", " ").replace("hop", "hop ")
        for known, words in STRATEGY_KEYS.items():  # e.g. vector_search_hop2 -> vector search (hop 2)
            if key.startswith(known + "_hop"):
                name = f"{words} (hop {key.removeprefix(known + '_hop')})"
        parts.append(f"{name}: {proposer_words(value) if key in ('query_generation', 'reasoner') else value}")
    return "; ".join(parts)


def _said(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(shorten(str(v), 80) for v in value) or "—"
    if isinstance(value, float):
        return f"{value:g}"
    text = _PROPOSAL_VALUES.get(str(value), str(value))
    return shorten(text.replace("<=", "at most").replace(">=", "at least").replace("chars", "characters"), 200)


def proposal_lines(details: Mapping[str, Any]) -> list[tuple[str, str]]:
    """How a hop's query was made as (what, value) pairs in words, in the order the proposer wrote them."""
    return [(PROPOSAL_WORDS.get(k, k.replace("_", " ")), _said(v)) for k, v in details.items()]
