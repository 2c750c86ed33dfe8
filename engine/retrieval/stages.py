"""The scoring stages of one hop, multi-hop merge, MMR and context assembly, as pure functions.

Live retrieval and replay both run these on :class:`CandidateInput` records, which is why replaying a trace with its
own settings gives exactly its result. Formulas and defaults follow llmemory 0.2.x (reference §6).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..clock import parse_time
from ..memory.procedural import wilson_interval
from .text import bm25_scores, jaccard
from .trace import CandidateInput

Similarity = Callable[[str, str], float]


@dataclass
class Scored:
    """A candidate moving through the stages of one hop (mutable while scoring, frozen into the trace after)."""

    inp: CandidateInput
    hop: int
    scores: dict
    verdicts: dict
    ranks: dict
    kept: bool = True
    in_context: bool = False
    reason: str = ""
    tokens: int = 0

    @property
    def final(self) -> float:
        return self.scores["final"] if self.scores.get("final") is not None else self.scores["hybrid"]


def _get(settings: Any, key: str) -> Any:
    return settings[key] if isinstance(settings, Mapping) else getattr(settings, key)


def _rank(items: Sequence[Scored], stage: str) -> None:
    for n, s in enumerate(items, 1):
        s.ranks[stage] = n


def _order(items: Sequence[Scored], key: str) -> list[Scored]:
    # Stable: equal scores keep search order, so a replay can never shuffle ties.
    return sorted(items, key=lambda s: -s.scores[key])


def score_hop(inputs: Sequence[CandidateInput], query: str, relevance_text: str, settings: Any, now: datetime,
              hop: int = 1) -> list[Scored]:
    """Hybrid score, relevance filter, temporal and importance, feedback, later-hop discount. Returns kept
    candidates first, ordered by final score, then the dropped ones (ordered by hybrid score)."""
    items = [Scored(inp, hop, {"vector_similarity": inp.vector_similarity, "fts_score": inp.fts_score,
                               "llm_relevance": inp.llm_relevance}, {}, {}) for inp in inputs]
    if not items:
        return []
    # 1. BM25 over the candidate set, then the hybrid blend.
    if _get(settings, "bm25_source") == "index":
        raw = [s.inp.fts_score or 0.0 for s in items]
    else:
        raw = bm25_scores(query, [s.inp.text for s in items])
    # A reply ("Me, on Saturday.") rarely repeats the words of the question it answers; the message it answers
    # (its preceding text) does, so those words count too, at their own weight.
    pw = float(_get(settings, "preceding_bm25_weight"))
    before = [s.inp.preceding_text for s in items]
    preceding = bm25_scores(query, before) if any(before) else [0.0] * len(items)
    combined = [r + pw * p for r, p in zip(raw, preceding)]
    top = max(combined) if combined and max(combined) > 0 else 1.0
    w = float(_get(settings, "bm25_weight"))
    hybrid_on = bool(_get(settings, "hybrid_enabled"))
    for s, r, p, c in zip(items, raw, preceding, combined):
        s.scores["bm25_raw"] = r
        s.scores["bm25_preceding"] = p if s.inp.preceding_text else None  # None: it has no preceding text
        s.scores["bm25_norm"] = c / top
        s.scores["hybrid"] = (w * s.scores["bm25_norm"] + (1 - w) * s.inp.vector_similarity) if hybrid_on \
            else s.inp.vector_similarity
    items = _order(items, "hybrid")
    _rank(items, "hybrid")
    # 2. Relevance filter.
    relevance_filter(items, relevance_text, settings)
    kept = [s for s in items if s.kept]
    _rank(kept, "filter")
    # 3. Temporal decay and importance.
    half_life = float(_get(settings, "half_life_days"))
    lam = math.log(2) / half_life
    weight = max(float(_get(settings, "importance_weight")), 0.0)
    skill_mode = _get(settings, "skill_importance")
    for s in items:
        age = math.floor((now - parse_time(s.inp.created_at)).total_seconds() / 86400)
        decay = 1.0 if s.inp.evergreen else math.exp(-lam * age)
        importance = candidate_importance(s.inp, skill_mode)
        factor = 1.0 if importance is None else min(max(importance, 0.0), 1.0) ** weight
        s.scores.update(age_days=age, decay=decay, importance=importance, importance_factor=factor,
                        temporal=s.scores["hybrid"] * decay * factor)
    kept = _order(kept, "temporal")
    _rank(kept, "temporal")
    # 4. Feedback, and the later-hop discount: a reasoner-proposed query is a guess, so its candidates must
    # outscore the question's own by that margin to displace them in the max-merge (one factor per hop, so the
    # order inside the hop is unchanged).
    wf = float(_get(settings, "feedback_weight"))
    cap = int(_get(settings, "feedback_cap"))
    hop_factor = float(_get(settings, "hop_weight")) ** (hop - 1)
    for s in items:
        net = s.inp.feedback_net
        factor = 1.0 + wf * max(-cap, min(cap, net)) / cap if (wf > 0 and net) else 1.0
        s.scores.update(feedback_net=net, feedback_factor=factor, hop_factor=hop_factor,
                        final=s.scores["temporal"] * factor * hop_factor)
    kept = _order(kept, "final")
    _rank(kept, "feedback")
    dropped = [s for s in items if not s.kept]
    for s in dropped:
        s.reason = "filtered"
    return kept + dropped


def candidate_importance(inp: CandidateInput, skill_mode: str) -> float | None:
    """Stored importance for items and episodes; for skills the success rate (parity) or its Wilson lower bound."""
    if inp.kind != "procedural":
        return inp.importance
    trials = inp.success_count + inp.failure_count
    if skill_mode == "wilson":
        return wilson_interval(inp.success_count, trials)[0] if trials else 0.5
    return inp.success_count / trials if trials else 0.5


def relevance_filter(items: Sequence[Scored], relevance_text: str, settings: Any) -> None:
    """llmemory's heuristic (keep all when few; else score >= 0.5 or a shared word longer than 3 characters in the
    memory's text or, [memlens], its preceding text), or the [memlens] LLM judge's stored 0..1 verdicts, or nothing."""
    mode = _get(settings, "relevance_filter")
    n = len(items)
    if mode == "off":
        for s in items:
            s.verdicts.update(relevance="kept", rule="filter_off")
        return
    if mode == "llm" and all(s.inp.llm_relevance is not None for s in items):
        threshold = float(_get(settings, "relevance_judge_threshold"))
        for s in items:
            ok = (s.inp.llm_relevance or 0.0) >= threshold  # not None: checked above
            s.kept = ok
            s.verdicts.update(relevance="kept" if ok else "dropped",
                              rule=f"llm_judge {s.inp.llm_relevance:.2f} {'>=' if ok else '<'} {threshold}")
        return
    if n <= int(_get(settings, "relevance_keep_all_max")):
        for s in items:
            keep_all_max = _get(settings, "relevance_keep_all_max")
            s.verdicts.update(relevance="kept", rule=f"few_candidates ({n} <= {keep_all_max})")
        return
    min_score = float(_get(settings, "relevance_min_score"))
    min_chars = int(_get(settings, "relevance_min_word_chars"))
    words = [w for w in relevance_text.lower().split() if len(w) >= min_chars]
    for s in items:
        if s.scores["hybrid"] >= min_score:
            s.verdicts.update(relevance="kept", rule=f"score {s.scores['hybrid']:.3f} >= {min_score}")
            continue
        text = s.inp.text.lower()
        hit, where = next((w for w in words if w in text), None), ""
        if hit is None and s.inp.preceding_text:
            # [memlens] An item's preceding text is part of what its vector matched, so the word check reads it too:
            # a reply ("Me, every Monday.") shares its words with the question it answered, not the one asked now.
            before = s.inp.preceding_text.lower()
            hit, where = next((w for w in words if w in before), None), " (in its preceding text)"
        if hit is not None:
            s.verdicts.update(relevance="kept", rule=f"word_overlap {hit!r}{where}")
        else:
            s.kept = False
            s.verdicts.update(relevance="dropped",
                              rule=f"score {s.scores['hybrid']:.3f} < {min_score} and no shared word")
    if mode == "llm":
        for s in items:
            s.verdicts["note"] = "llm judge unavailable: heuristic used"


def mmr(items: list[Scored], lam: float, similarity: Similarity, stage: str = "mmr") -> list[Scored]:
    """Greedy MMR over all items (reorders, never drops): argmax lam*rel - (1-lam)*max_sim (llmemory §6.6)."""
    remaining = list(items)
    chosen: list[Scored] = []
    while remaining:
        best, best_val, best_sim = None, -math.inf, 0.0
        for s in remaining:
            max_sim = max((similarity(s.inp.id, c.inp.id) for c in chosen), default=0.0)
            value = lam * s.final - (1 - lam) * max_sim
            if value > best_val:
                best, best_val, best_sim = s, value, max_sim
        assert best is not None
        best.scores.update(mmr_relevance=best.final, mmr_max_similarity=best_sim, mmr_value=best_val)
        chosen.append(best)
        remaining.remove(best)
    _rank(chosen, stage)
    return chosen


def similarity_function(items: Sequence[Scored], mode: str, cosine: Similarity | None) -> Similarity:
    """Jaccard of token sets (parity) or the recorded embedding cosine between candidates (see similarity.py)."""
    texts = {s.inp.id: s.inp.text for s in items}
    if mode == "embedding" and cosine is not None:
        return cosine

    def jac(a: str, b: str) -> float:
        return jaccard(texts[a], texts[b])
    return jac


def merge(hops: Sequence[list[Scored]]) -> list[Scored]:
    """Union of the hops' kept candidates by id, keeping the higher final score; the other copies are 'merged'."""
    best: dict[str, Scored] = {}
    for hop_items in hops:
        for s in hop_items:
            if not s.kept:
                continue
            key = s.inp.id or s.inp.text
            current = best.get(key)
            if current is None or s.final > current.final:
                if current is not None:
                    current.reason = "merged"
                best[key] = s
            else:
                s.reason = "merged"
    return sorted(best.values(), key=lambda s: (-s.final, s.hop))


def token_cost(text: str) -> int:
    """ceil(characters / 4), llmemory's assembler estimate."""
    return math.ceil(len(text) / 4)


def assemble(ranked: Sequence[Scored], budget: int, mode: str, max_items: int = 0) -> tuple[str, list[Scored], int]:
    """Walk the ranking and fill the budget. ``stop`` (parity) ends at the first memory that does not fit; ``skip``
    ([memlens] default) passes over it and keeps going. Returns the context text, the chosen, and tokens used."""
    used = 0
    chosen: list[Scored] = []
    stopped = False
    for s in ranked:
        s.tokens = token_cost(s.inp.text)
        if stopped:
            s.reason = "budget_stop"
            continue
        if max_items and len(chosen) >= max_items:
            s.reason = "cap"
            continue
        if used + s.tokens > budget:
            s.reason = "budget"
            if mode == "stop":
                stopped = True
            continue
        used += s.tokens
        s.in_context = True
        s.reason = "context"
        chosen.append(s)
    return render_context(chosen), chosen, used


def render_context(chosen: Sequence[Scored]) -> str:
    """llmemory's block format; [memlens] an empty context is an empty string, not an empty header block."""
    if not chosen:
        return ""
    parts = ["=== RELEVANT MEMORIES ===", ""]
    for s in chosen:
        parts += [f"[{s.inp.created_at}] (confidence: {s.final:.2f})", s.inp.text, ""]
    parts.append("=== END MEMORIES ===")
    return "\n".join(parts)
