"""The scoring stages of one hop, multi-hop merge, MMR and context assembly, as pure functions.

Live retrieval and replay both run these on :class:`CandidateInput` records, which is why replaying a trace with its
own settings gives exactly its result. Formulas and defaults follow llmemory 0.2.x (reference §6).
"""

from __future__ import annotations

import math
import re
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


def score_hop(
    inputs: Sequence[CandidateInput], query: str, relevance_text: str, settings: Any, now: datetime, hop: int = 1
) -> list[Scored]:
    """Hybrid score, relevance filter, temporal and importance, feedback, later-hop discount. Returns kept
    candidates first, ordered by final score, then the dropped ones (ordered by hybrid score)."""
    items = [
        Scored(
            inp,
            hop,
            {
                "vector_similarity": inp.vector_similarity,
                "fts_score": inp.fts_score,
                "llm_relevance": inp.llm_relevance,
            },
            {},
            {},
        )
        for inp in inputs
    ]
    if not items:
        return []
    # 1. BM25 (over the candidate set, or the index's), the preceding text's words, then the fusion with the cosine.
    if _get(settings, "bm25_source") == "index":
        raw = [s.inp.fts_score or 0.0 for s in items]
    else:
        raw = bm25_scores(query, [s.inp.text for s in items])
    # A reply ("Me, on Saturday.") rarely repeats the words of the question it answers; the message it answers
    # (its preceding text) does, so those words count too, at their own weight.
    # A long text stands on its own: its preceding text counts fully up to preceding_full_words words of its own
    # and proportionally less above (an assistant's long answer is not found by the user's question before it).
    pw = float(_get(settings, "preceding_bm25_weight"))
    full = int(_get(settings, "preceding_full_words"))
    before = [s.inp.preceding_text for s in items]
    preceding = bm25_scores(query, before) if any(before) else [0.0] * len(items)
    weights = [pw * min(1.0, full / max(len(_WORD_CHARS.findall(s.inp.text)), 1)) if full else pw for s in items]
    combined = [r + v * p for r, v, p in zip(raw, weights, preceding)]
    top = max(combined) if combined and max(combined) > 0 else 1.0
    for s, r, p, c, v in zip(items, raw, preceding, combined, weights):
        s.scores["bm25_raw"] = r
        s.scores["bm25_preceding"] = p if s.inp.preceding_text else None  # None: it has no preceding text
        s.scores["preceding_weight"] = v if s.inp.preceding_text else None
        s.scores["bm25_norm"] = c / top
    fuse(items, combined, settings)
    items = _order(items, "hybrid")
    _rank(items, "hybrid")
    # 2. Relevance filter.
    relevance_filter(items, relevance_text, settings)
    kept = [s for s in items if s.kept]
    _rank(kept, "filter")
    # 3. Temporal decay and importance.
    half_life = float(_get(settings, "half_life_days"))
    lam = math.log(2) / half_life
    floor = float(_get(settings, "decay_floor"))
    # A memory stamped after `now` (clock skew, an imported future date) is as fresh as one from today, never fresher.
    clamp = bool(_get(settings, "clamp_future_age"))
    weight = max(float(_get(settings, "importance_weight")), 0.0)
    skill_mode = _get(settings, "skill_importance")
    for s in items:
        age = math.floor((now - parse_time(s.inp.created_at)).total_seconds() / 86400)
        if clamp:
            age = max(age, 0)
        decay = 1.0 if s.inp.evergreen else floor + (1.0 - floor) * math.exp(-lam * age)
        importance = candidate_importance(s.inp, skill_mode)
        factor = 1.0 if importance is None else min(max(importance, 0.0), 1.0) ** weight
        s.scores.update(
            age_days=age,
            decay=decay,
            importance=importance,
            importance_factor=factor,
            temporal=s.scores["hybrid"] * decay * factor,
        )
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
        s.scores.update(
            feedback_net=net,
            feedback_factor=factor,
            hop_factor=hop_factor,
            final=s.scores["temporal"] * factor * hop_factor,
        )
    kept = _order(kept, "final")
    _rank(kept, "feedback")
    dropped = [s for s in items if not s.kept]
    for s in dropped:
        s.reason = "filtered"
    return kept + dropped


def fuse(items: Sequence[Scored], lexical: Sequence[float], settings: Any) -> None:
    """The hybrid score from the cosine and the lexical score (BM25 plus the preceding text's share).

    ``weighted`` (llmemory): ``w*bm25_norm + (1-w)*cosine``. ``zscore`` ([memlens]): see :func:`_fuse_zscores`.
    ``rrf`` ([memlens]): reciprocal rank fusion over the
    candidates, ``(1-w)*(k+1)/(k+rank_vector) + w*(k+1)/(k+rank_bm25)`` (1 for a candidate first on both; a
    candidate without any of the query's words has no BM25 rank and gets no BM25 part). Ranks rather than scores,
    because a cosine of 0.45 and a BM25 of 12 are on scales that vary per query; ties share the better rank.
    Both parts are recorded (``hybrid_vector_part``, ``hybrid_bm25_part``) so the breakdown adds up exactly.
    """
    w = float(_get(settings, "bm25_weight"))
    if not bool(_get(settings, "hybrid_enabled")):
        for s in items:
            s.scores.update(
                hybrid=s.inp.vector_similarity, hybrid_vector_part=s.inp.vector_similarity, hybrid_bm25_part=0.0
            )
        return
    if _get(settings, "fusion") == "weighted":
        for s in items:
            vector_part = (1 - w) * s.inp.vector_similarity
            bm25_part = w * s.scores["bm25_norm"]
            s.scores.update(hybrid=bm25_part + vector_part, hybrid_vector_part=vector_part, hybrid_bm25_part=bm25_part)
        return
    if _get(settings, "fusion") == "zscore":
        _fuse_zscores(items, lexical, w)
        return
    k = float(_get(settings, "rrf_k"))
    vector_rank = _shared_ranks([s.inp.vector_similarity for s in items])
    lexical_rank = _shared_ranks(lexical)
    for s, vr, lr, lex in zip(items, vector_rank, lexical_rank, lexical):
        vector_part = (1 - w) * (k + 1) / (k + vr)
        bm25_part = w * (k + 1) / (k + lr) if lex > 0 else 0.0
        s.scores.update(
            hybrid=vector_part + bm25_part,
            hybrid_vector_part=vector_part,
            hybrid_bm25_part=bm25_part,
            rank_vector=vr,
            rank_bm25=lr if lex > 0 else None,
        )


def _fuse_zscores(items: Sequence[Scored], lexical: Sequence[float], w: float) -> None:
    """``sigmoid(w*z_bm25 + (1-w)*z_vector)``, each score standardised over this query's candidates.

    A cosine of 0.45 is excellent for one query and poor for another, and BM25 has no fixed scale at all: their
    z-scores say how far a candidate stands out on each. The logistic keeps the hybrid in 0..1 (0.5: an average
    candidate on both), so decay, importance and feedback still multiply a positive score. The vector part is what
    the hybrid would be with an average BM25 (``sigmoid((1-w)*z_vector)``), the BM25 part the rest.
    """
    z_vec = _zscores([s.inp.vector_similarity for s in items])
    z_lex = _zscores(lexical)
    for s, zv, zl in zip(items, z_vec, z_lex):
        hybrid = _sigmoid(w * zl + (1 - w) * zv)
        vector_part = _sigmoid((1 - w) * zv)
        s.scores.update(
            hybrid=hybrid, hybrid_vector_part=vector_part, hybrid_bm25_part=hybrid - vector_part, z_vector=zv, z_bm25=zl
        )


def _zscores(values: Sequence[float]) -> list[float]:
    """(x - mean) / standard deviation; all 0 when the values do not differ (one candidate, or all equal)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    return [(v - mean) / sd if sd > 1e-12 else 0.0 for v in values]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _shared_ranks(values: Sequence[float]) -> list[int]:
    """1-based rank of each value, highest first; equal values share the better rank (so replays cannot differ)."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0] * len(values)
    for pos, i in enumerate(order):
        ranks[i] = ranks[order[pos - 1]] if pos and values[order[pos - 1]] == values[i] else pos + 1
    return ranks


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
            s.verdicts.update(
                relevance="kept" if ok else "dropped",
                rule=f"llm_judge {s.inp.llm_relevance:.2f} {'>=' if ok else '<'} {threshold}",
            )
        return
    if n <= int(_get(settings, "relevance_keep_all_max")):
        for s in items:
            keep_all_max = _get(settings, "relevance_keep_all_max")
            s.verdicts.update(relevance="kept", rule=f"few_candidates ({n} <= {keep_all_max})")
        return
    min_score = float(_get(settings, "relevance_min_score"))
    min_chars = int(_get(settings, "relevance_min_word_chars"))
    raw_words = _get(settings, "relevance_words") == "raw"
    words = _filter_words(relevance_text, min_chars, raw_words)
    protect = int(_get(settings, "relevance_protect_top"))
    vector_rank = _shared_ranks([s.inp.vector_similarity for s in items]) if protect else [0] * n
    lexical_rank = _shared_ranks([s.scores["bm25_norm"] for s in items]) if protect else [0] * n
    for s, vr, lr in zip(items, vector_rank, lexical_rank):
        if s.scores["hybrid"] >= min_score:
            s.verdicts.update(relevance="kept", rule=f"score {s.scores['hybrid']:.3f} >= {min_score}")
            continue
        # [memlens] A search's own top results are never second-guessed by a word heuristic: a turn ranked 2nd by
        # full-text search (or by its vector) is what that search thinks answers the question.
        if protect and (vr <= protect or (lr <= protect and s.scores["bm25_norm"] > 0)):
            which, rank = ("vector", vr) if vr <= protect else ("full-text", lr)
            s.verdicts.update(relevance="kept", rule=f"top_{protect} of {which} search (rank {rank})")
            continue
        hit, where = _shared_word(words, s.inp.text), ""
        if hit is None and s.inp.preceding_text:
            # [memlens] An item's preceding text is part of what its vector matched, so the word check reads it too:
            # a reply ("Me, every Monday.") shares its words with the question it answered, not the one asked now.
            hit, where = _shared_word(words, s.inp.preceding_text), " (in its preceding text)"
        if hit is not None:
            s.verdicts.update(relevance="kept", rule=f"word_overlap {hit!r}{where}")
        else:
            s.kept = False
            s.verdicts.update(
                relevance="dropped", rule=f"score {s.scores['hybrid']:.3f} < {min_score} and no shared word"
            )
    if mode == "llm":
        for s in items:
            s.verdicts["note"] = "llm judge unavailable: heuristic used"


_WORD_CHARS = re.compile(r"[^\W_]+")


def _filter_words(text: str, min_chars: int, raw: bool) -> list[str]:
    """The question's words the filter looks for. ``raw`` (llmemory): whitespace-split, punctuation and all, so
    "guitar?" can never match; otherwise runs of letters and digits."""
    if raw:
        return [w for w in text.lower().split() if len(w) >= min_chars]
    return list(dict.fromkeys(w for w in _WORD_CHARS.findall(text.lower()) if len(w) >= min_chars))


def _shared_word(words: Sequence[str], text: str) -> str | None:
    """The first of the words found in ``text`` (as a substring: "guitar" is found in "guitars")."""
    lowered = text.lower()
    return next((w for w in words if w in lowered), None)


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
