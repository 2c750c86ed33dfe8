"""Reflection over recent episodes into durable insights (llmemory §7.4).

With an LLM: the model reads the last N episodes and returns ``[{content, confidence}]``. Offline (the documented
non-LLM strategy): outcome statistics and recurring actions, labelled ``reflection_offline``. Either way insights are
semantic items in category ``insights`` whose provenance points to every source episode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .. import validation
from ..ids import check_id
from ..providers.llm import LLM
from ..providers.llm_output import json_array, unit_number
from ..records import Episode, Item
from .episodic import EpisodicMemory
from .semantic import SemanticMemory, same_text_key

DEFAULT_IMPORTANCE = 0.6
PROMPT = (
    "You are reflecting on an AI agent's recent experiences. Distil durable, higher-order insights: lessons, "
    "recurring patterns, stable preferences. Generalise; do not restate single events.\n\n{episodes}\n\n"
    'Return only a JSON array of objects {{"content": str, "confidence": number 0-1}}, or [] if nothing '
    "durable follows."
)


def render_episodes(episodes: Sequence[Episode]) -> str:
    return "\n\n".join(
        f"Episode {n} (outcome: {e.outcome or 'unknown'}):\n{e.searchable_text}" for n, e in enumerate(episodes, 1)
    )


def offline_insights(episodes: Sequence[Episode]) -> list[tuple[str, float]]:
    """Outcome statistics and recurring actions, without an LLM."""
    if not episodes:
        return []
    outcomes = Counter((e.outcome or "unknown") for e in episodes)
    parts = ", ".join(f"{k}: {v}" for k, v in outcomes.most_common())
    insights = [(f"Across the last {len(episodes)} episodes the outcomes were {parts}.", 0.5)]
    by_outcome: dict[str, Counter[str]] = {}
    for e in episodes:
        for s in e.steps:
            if s.action.strip():
                by_outcome.setdefault(e.outcome or "unknown", Counter())[s.action.strip().lower()] += 1
    for outcome, actions in sorted(by_outcome.items()):
        recurring = [a for a, c in actions.most_common(3) if c >= 2]
        if recurring:
            insights.append((f"Recurring actions in {outcome} episodes: " + "; ".join(recurring) + ".", 0.4))
    return insights


def parse_insights(text: str) -> list[tuple[str, float | None]] | None:
    values = json_array(text)
    if values is None:
        return None
    out: list[tuple[str, float | None]] = []
    for v in values:
        if isinstance(v, dict) and isinstance(v.get("content"), str):
            v = {**v, "content": v["content"].replace("\x00", "")}  # a NUL would make the write refuse
        if isinstance(v, str):
            v = v.replace("\x00", "")
        if isinstance(v, str) and v.strip():
            out.append((v.strip(), None))
        elif isinstance(v, dict) and isinstance(v.get("content"), str) and v["content"].strip():
            out.append((v["content"].strip(), unit_number(v.get("confidence"))))
    return out


class Reflector:
    def __init__(self, episodic: EpisodicMemory, semantic: SemanticMemory, llm: LLM) -> None:
        self.episodic = episodic
        self.semantic = semantic
        self.llm = llm

    def reflect(self, user_id: str, window: int = 10, category: str = "insights") -> tuple[list[Item], str]:
        """Store insights from the last ``window`` episodes; returns them and the strategy that made them."""
        check_id(user_id, "user id")
        validation.check_int(window, "window", "window")  # -1 is refused, not clamped to 1
        episodes = self.episodic.recent(user_id, window)
        if not episodes:
            return [], "none (no episodes)"
        strategy = "reflection_offline"
        found: list[tuple[str, float | None]] = []
        if self.llm.available:
            result = self.llm.complete(PROMPT.format(episodes=render_episodes(episodes)), "reflect", user_id)
            parsed = parse_insights(result.text) if result.ok else None
            if parsed is not None:
                found, strategy = parsed, "reflection"
            else:
                strategy = f"reflection_offline (LLM failed: {result.error or 'malformed output'})"
        if strategy.startswith("reflection_offline"):
            found = list(offline_insights(episodes))
        sources = [{"type": "episode", "id": e.id} for e in episodes]
        method = "reflection" if strategy == "reflection" else "reflection_offline"
        found = [(content[: self.semantic.b.settings.max_text_chars], conf) for content, conf in found]
        # Idempotent: an insight already stored in the category (by an earlier reflection over the same episodes,
        # or twice in one answer) is returned, not stored again, or retrieval would find both copies.
        stored = self.semantic.with_contents(user_id, category, [content for content, _ in found])
        new: dict[str, tuple[str, float | None]] = {}
        for content, conf in found:
            key = same_text_key(content)
            if key not in stored:
                new.setdefault(key, (content, conf))
        items = {
            key: self.semantic.prepare(
                user_id,
                content,
                category,
                DEFAULT_IMPORTANCE if conf is None else conf,
                source="reflection",
                provenance={"sources": sources, "method": method, "confidence": conf},
                method=method,
            )
            for key, (content, conf) in new.items()
        }
        added = dict(zip(items, self.semantic.add(list(items.values())), strict=True))
        out = [stored.get(same_text_key(c)) or added[same_text_key(c)] for c, _ in found]
        return list({i.id: i for i in out}.values()), strategy
