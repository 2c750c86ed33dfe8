"""[memlens] How much BM25 counts in one hop's fusion (``adaptive_bm25``): the set ``bm25_weight``, or less when
the hop's cosine ranking has a clear head.

Shared words and shared meaning disagree most where the store holds near-misses: Wikipedia paragraphs that name the
same people and places as the question (MuSiQue and HotpotQA draw their distractors by word overlap). There the
embedding usually puts the right paragraph well above the rest, and BM25 pulls the near-misses up: with the set
weight the default ranked below plain vector search on every paragraph set. Short conversational turns are the
opposite: their cosines are flat (a dozen turns about the same evening all look alike to the model) and the words
decide. How far the best cosine stands above the ``adaptive_bm25_rank``-th tells the two apart per hop, before any
label is seen: ``r = cosine[rank] / cosine[1]``; at or below ``adaptive_bm25_clear_ratio`` BM25 counts 0, at or above
``adaptive_bm25_flat_ratio`` it counts ``bm25_weight``, linearly between. The hop's record
(:class:`~engine.trace.hop_records.FusionWeight`) is in its trace, so a replay and the trace page show the weight
that was used and why.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import Settings
from ..trace.hop_records import FusionWeight
from .event_comparison import compared_events

# FusionWeight.rule values
FIXED = "fixed"  # adaptive_bm25 off: bm25_weight as set
FEW = "few candidates"  # too few candidates to tell a head from a tail
NO_COSINE = "no positive cosine"  # nothing to compare with: the best cosine is 0 or below
CLEAR = "clear head"
FLAT = "flat"
BETWEEN = "between"
EVENTS = "compares events"  # adaptive_bm25_events: the question compares events in time (event_comparison.py)


def lexical_weight(cosines: Sequence[float], settings: Settings, question: str = "") -> FusionWeight:
    """The BM25 weight one hop's fusion uses, with what decided it. ``cosines`` are the hop's candidates' (their
    own or their best key's: key_search.key_cosines), in any order; ``question`` is the text the hop answers (its
    relevance text), read only by ``adaptive_bm25_events``."""
    w = float(settings.bm25_weight)
    k = int(settings.adaptive_bm25_rank)
    if not settings.adaptive_bm25:
        return FusionWeight(set_weight=w, weight=w, rule=FIXED)
    cue = compared_events(question) if settings.adaptive_bm25_events and question else None
    if cue is not None:
        return FusionWeight(set_weight=w, weight=w, rule=EVENTS, cue=cue)
    ratio = head_ratio(cosines, k)
    if ratio is None:
        rule = FEW if len(cosines) <= k else NO_COSINE
        return FusionWeight(set_weight=w, weight=w, rule=rule, rank=k)
    share = flat_share(ratio, settings)
    rule = CLEAR if share == 0.0 else FLAT if share == 1.0 else BETWEEN
    return FusionWeight(set_weight=w, weight=w * share, rule=rule, rank=k, ratio=ratio)


def head_ratio(cosines: Sequence[float], k: int) -> float | None:
    """``r = cosine[k] / cosine[1]`` over the hop's cosines; None with k or fewer, or no positive best."""
    if len(cosines) <= k:
        return None
    top = sorted(cosines, reverse=True)
    if top[0] <= 0:
        return None
    return max(0.0, top[k - 1] / top[0])


def flat_share(ratio: float, settings: Settings) -> float:
    """0 at or below adaptive_bm25_clear_ratio, 1 at or above adaptive_bm25_flat_ratio, linear between."""
    clear, flat = float(settings.adaptive_bm25_clear_ratio), float(settings.adaptive_bm25_flat_ratio)
    if ratio <= clear:
        return 0.0
    if ratio >= flat:
        return 1.0
    return (ratio - clear) / (flat - clear)


def flatness(cosines: Sequence[float], settings: Settings) -> float:
    """How flat the hop's cosine head is (``adaptive_key_weight``), by the ratio and ramp adaptive_bm25 reads: 0 for
    a clear head, 1 for a flat one; 1 with too few or no positive cosines (nothing to tell them apart)."""
    ratio = head_ratio(cosines, int(settings.adaptive_bm25_rank))
    return 1.0 if ratio is None else flat_share(ratio, settings)
