"""After the hops: merge their candidates, reorder by MMR, and assemble the context within the token budget.

Pure functions over :class:`Scored` records (which they never change: MMR and the final rank give new records, and
the assembly's decisions are a record of their own, :class:`Assembly`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..vocab import Reason
from .scores import StageRanks
from .stages import Scored
from .text import jaccard

Similarity = Callable[[str, str], float]


@dataclass(frozen=True)
class Placement:
    """What the assembly did with one ranked memory."""

    reason: str  # vocab.Reason: context | budget | budget_stop | cap
    tokens: int

    @property
    def in_context(self) -> bool:
        return self.reason == Reason.CONTEXT


@dataclass(frozen=True)
class Assembly:
    context: str  # what the agent gets
    chosen: tuple[Scored, ...]  # the memories in it, in order
    tokens_used: int
    placements: tuple[Placement, ...]  # one per ranked memory, in the ranking's order


def merge(hops: Sequence[Sequence[Scored]]) -> list[Scored]:
    """Union of the hops' kept candidates by id (or text, without an id), keeping the copy with the higher final
    score (the earlier hop's on a tie); ordered by final score, then hop. The other copies are "merged"."""
    best: dict[str, Scored] = {}
    for hop_items in hops:
        for s in hop_items:
            if not s.kept:
                continue
            key = s.inp.id or s.inp.text
            current = best.get(key)
            if current is None or s.final > current.final:
                best[key] = s
    return sorted(best.values(), key=lambda s: (-s.final, s.hop))


def mmr(items: Sequence[Scored], lam: float, similarity: Similarity) -> list[Scored]:
    """Greedy MMR over all items (reorders, never drops): argmax lam*rel - (1-lam)*max_sim (llmemory §6.6). Each
    comes back with its MMR scores and its ``mmr`` rank."""
    remaining = list(items)
    chosen: list[tuple[Scored, float, float]] = []
    while remaining:
        best, best_val, best_sim = remaining[0], -math.inf, 0.0
        for s in remaining:
            max_sim = max((similarity(s.inp.id, c.inp.id) for c, _, _ in chosen), default=0.0)
            value = lam * s.final - (1 - lam) * max_sim
            if value > best_val:
                best, best_val, best_sim = s, value, max_sim
        chosen.append((best, best_sim, best_val))
        remaining = [s for s in remaining if s is not best]
    return [
        dataclasses.replace(
            s,
            scores=dataclasses.replace(s.scores, mmr_relevance=s.final, mmr_max_similarity=sim, mmr_value=value),
            ranks=dataclasses.replace(s.ranks, mmr=n),
        )
        for n, (s, sim, value) in enumerate(chosen, 1)
    ]


def with_final_ranks(ranked: Sequence[Scored]) -> list[Scored]:
    """The ranking's records with their final (merged) rank (built directly: dataclasses.replace costs more)."""
    out = []
    for n, s in enumerate(ranked, 1):
        r = s.ranks
        ranks = StageRanks(r.hybrid, r.filter, r.temporal, r.feedback, n, r.mmr)
        out.append(Scored(s.inp, s.hop, s.scores, s.verdicts, ranks))
    return out


def similarity_function(items: Sequence[Scored], mode: str, cosine: Similarity | None) -> Similarity:
    """Jaccard of token sets (parity) or the recorded embedding cosine between candidates (see similarity.py)."""
    texts = {s.inp.id: s.inp.text for s in items}
    if mode == "embedding" and cosine is not None:
        return cosine

    def jac(a: str, b: str) -> float:
        return jaccard(texts[a], texts[b])

    return jac


def token_cost(text: str) -> int:
    """ceil(characters / 4), llmemory's assembler estimate."""
    return math.ceil(len(text) / 4)


def assemble(ranked: Sequence[Scored], budget: int, mode: str, max_items: int = 0) -> Assembly:
    """Walk the ranking and fill the budget. ``stop`` (parity) ends at the first memory that does not fit; ``skip``
    ([memlens] default) passes over it and keeps going; ``max_items`` (when > 0) caps the number of memories."""
    used = 0
    chosen: list[Scored] = []
    placements: list[Placement] = []
    stopped = False
    for s in ranked:
        tokens = token_cost(s.inp.text)
        if stopped:
            reason = Reason.BUDGET_STOP
        elif max_items and len(chosen) >= max_items:
            reason = Reason.CAP
        elif used + tokens > budget:
            reason = Reason.BUDGET
            stopped = mode == "stop"
        else:
            reason = Reason.CONTEXT
            used += tokens
            chosen.append(s)
        placements.append(Placement(reason, tokens))
    return Assembly(render_context(chosen), tuple(chosen), used, tuple(placements))


def render_context(chosen: Sequence[Scored]) -> str:
    """The assembled memories in the context format (:func:`context_block`)."""
    return context_block([(s.inp.created_at, s.final, s.inp.text) for s in chosen])


def context_block(memories: Sequence[tuple[object, float, str]]) -> str:
    """llmemory's block format for ``(created_at, confidence, text)`` in context order; [memlens] an empty context is
    an empty string, not an empty header block. The one definition: hard-forget redaction rebuilds a stored trace's
    context with it, so the two can never disagree on a character."""
    if not memories:
        return ""
    parts = ["=== RELEVANT MEMORIES ===", ""]
    for created_at, confidence, text in memories:
        parts += [f"[{created_at}] (confidence: {confidence:.2f})", text, ""]
    parts.append("=== END MEMORIES ===")
    return "\n".join(parts)
