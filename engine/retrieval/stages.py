"""The scoring stages of one hop as pure functions, one per stage: lexical (BM25), fusion, relevance filter,
temporal decay and importance, feedback and the later-hop discount. :func:`score_hop` runs them in order.

Each stage reads the candidates (:class:`CandidateInput`) and the earlier stages' results, and returns its own frozen
record of per-candidate columns, in the candidates' order; :func:`score_hop` then orders and ranks the candidates
and gives each its :class:`Scored` record. Live retrieval and replay both run these on the same inputs, which is why
replaying a trace with its own settings gives exactly its result. Formulas and defaults follow llmemory 0.2.x
(reference §6). Merge, MMR and assembly, which work across hops, are in assembly.py.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from ..clock import parse_time
from ..config import Settings
from ..memory.procedural import wilson_interval
from ..trace.hop_records import FusionWeight
from ..trace.records import CandidateInput
from ..trace.time_records import TimeWindow
from ..vocab import Relevance
from .brevity import BrevityScores, brevity_stage
from .key_search import key_cosines, key_lexical, keys_on
from .lexical_weight import lexical_weight
from .scores import CandidateScores, StageRanks, Verdict
from .session_stage import SessionScores, session_stage
from .speaker_stage import speaker_parts
from .text import bm25_scores
from .time_stage import TimeScores, time_scores, time_verdicts, with_time_factor

_WORD_CHARS = re.compile(r"[^\W_]+")


@dataclass(frozen=True, eq=False)
class Scored:
    """A candidate after the stages of one hop: its input, scores, verdict and ranks (compared by identity: the
    same memory found at two hops is two candidates)."""

    inp: CandidateInput
    hop: int
    scores: CandidateScores
    verdicts: Verdict = Verdict()
    ranks: StageRanks = StageRanks()

    @property
    def kept(self) -> bool:
        return self.verdicts.kept

    @property
    def reason(self) -> str:
        """What the hop's stages decided: "" (kept, for the merge and assembly to place), or "filtered"."""
        return "" if self.kept else "filtered"

    @property
    def final(self) -> float:
        final = self.scores.final if self.scores.final is not None else self.scores.hybrid
        return float(final or 0.0)


@dataclass(frozen=True)
class LexicalScores:
    """BM25 of each candidate's text (over the candidate set, or the index's) and of its preceding text."""

    raw: tuple[float, ...]
    preceding: tuple[float | None, ...]  # None: the candidate has no preceding text
    weight: tuple[float | None, ...]  # the preceding text's weight for this candidate
    combined: tuple[float, ...]  # raw + weight * preceding: what the fusion ranks and standardises
    norm: tuple[float, ...]  # combined over the set's maximum


@dataclass(frozen=True)
class FusionScores:
    """The hybrid score and its vector and BM25 parts (they add up to it); ranks under rrf, z-scores under zscore."""

    hybrid: tuple[float, ...]
    vector_part: tuple[float, ...]
    bm25_part: tuple[float, ...]
    rank_vector: tuple[int | None, ...]
    rank_bm25: tuple[int | None, ...]
    z_vector: tuple[float | None, ...]
    z_bm25: tuple[float | None, ...]
    # the entity stage's 0..1 score and its part of the hybrid (None: not linked, or the stage is off)
    entity_score: tuple[float | None, ...] = ()
    entity_part: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class TemporalScores:
    age_days: tuple[int, ...]
    decay: tuple[float, ...]
    importance: tuple[float | None, ...]
    importance_factor: tuple[float, ...]
    temporal: tuple[float, ...]  # hybrid * decay * importance_factor (score_hop then applies time and brevity)


@dataclass(frozen=True)
class FeedbackScores:
    net: tuple[int, ...]
    factor: tuple[float, ...]
    hop_factor: float  # the later-hop discount, one factor for the whole hop
    final: tuple[float, ...]  # temporal * factor * hop_factor


# -- the hop ------------------------------------------------------------------------------------------------------
def score_hop(
    inputs: Sequence[CandidateInput],
    query: str,
    relevance_text: str,
    settings: Settings,
    now: datetime,
    hop: int = 1,
    timings: dict[str, float] | None = None,
    window: TimeWindow | None = None,
    speaker: str | None = None,
    personal: str | None = None,
) -> list[Scored]:
    """Hybrid score (with the entity, session and speaker stages' parts), relevance filter, temporal and importance
    (times the time stage's and the brevity stage's factors), feedback, later-hop discount. Returns kept candidates
    first, ordered by final score, then the dropped ones (ordered by hybrid score). The session stage's milliseconds
    go into ``timings`` (as ``sessions``) when given.
    ``speaker`` is the cue that the question asks about the user (speaker_stage.py; None: the stage adds nothing);
    ``personal`` the question's first- or second-person word (brevity.py; set: the brevity stage stays off)."""
    if not inputs:
        return []
    lexical = lexical_scores(inputs, query, settings)
    fusion = with_entity_part(inputs, fuse(inputs, lexical, settings, relevance_text, hop), settings)
    start = time.perf_counter()
    sessions = session_stage(
        inputs,
        fusion.hybrid,
        float(settings.session_weight),
        int(settings.session_top_n),
        float(settings.session_window_minutes),
    )
    if sessions.sessions:
        fusion = dataclasses.replace(fusion, hybrid=tuple(h + (p or 0.0) for h, p in zip(fusion.hybrid, sessions.part)))
        if timings is not None:
            timings["sessions"] = round((time.perf_counter() - start) * 1000, 3)
    spoken = speaker_parts(
        inputs,
        speaker,
        float(settings.assistant_turn_penalty),
        float(settings.question_turn_penalty),
        int(settings.question_turn_max_words),
    )
    if any(p is not None for p in spoken):
        fusion = dataclasses.replace(fusion, hybrid=tuple(h + (p or 0.0) for h, p in zip(fusion.hybrid, spoken)))
    times = time_scores(inputs, window, settings)  # the question's date window (time_stage.py)
    verdicts = time_verdicts(
        relevance_filter(inputs, lexical, fusion, relevance_text, settings), inputs, times, window, settings
    )
    temporal = temporal_scores(inputs, fusion, settings, now)
    brevity = brevity_stage(inputs, float(settings.brevity_weight), int(settings.brevity_full_words), personal)
    temporal = dataclasses.replace(temporal, temporal=brevity.apply(with_time_factor(temporal.temporal, times)))
    feedback = feedback_scores(inputs, temporal, settings, hop)
    ranks, order = hop_ranks(fusion, verdicts, temporal, feedback)
    scores = [
        candidate_scores(inp, i, lexical, fusion, sessions, spoken, temporal, feedback, times, brevity)
        for i, inp in enumerate(inputs)
    ]
    return [Scored(inputs[i], hop, scores[i], verdicts[i], ranks[i]) for i in order]


def hop_ranks(
    fusion: FusionScores, verdicts: Sequence[Verdict], temporal: TemporalScores, feedback: FeedbackScores
) -> tuple[list[StageRanks], list[int]]:
    """Each candidate's rank after each stage, and the hop's order: kept ones by final score, then the dropped
    ones by hybrid score. Sorting is stable: equal scores keep search order, so a replay can never shuffle ties."""
    by_hybrid = _order(range(len(verdicts)), fusion.hybrid)
    kept = [i for i in by_hybrid if verdicts[i].kept]
    by_temporal = _order(kept, temporal.temporal)
    by_final = _order(by_temporal, feedback.final)
    hybrid, filtered, temporal_rank, final = (_positions(o) for o in (by_hybrid, kept, by_temporal, by_final))
    ranks = [
        StageRanks(hybrid=hybrid[i], filter=filtered.get(i), temporal=temporal_rank.get(i), feedback=final.get(i))
        for i in range(len(verdicts))
    ]
    return ranks, by_final + [i for i in by_hybrid if not verdicts[i].kept]


def candidate_scores(
    inp: CandidateInput,
    i: int,
    lexical: LexicalScores,
    fusion: FusionScores,
    sessions: SessionScores,
    spoken: Sequence[float | None],
    temporal: TemporalScores,
    feedback: FeedbackScores,
    times: TimeScores,
    brevity: BrevityScores,
) -> CandidateScores:
    """Candidate ``i``'s record of every stage's scores.

    In the record's field order, by position: this runs for every candidate of every hop, and a frozen record of
    35 fields takes about twice as long from keywords (tests/engine/trace/test_trace_records.py checks the order)."""
    return CandidateScores(
        inp.vector_similarity,  # vector_similarity
        inp.fts_score,  # fts_score
        lexical.raw[i],  # bm25_raw
        lexical.preceding[i],  # bm25_preceding
        lexical.weight[i],  # preceding_weight
        lexical.norm[i],  # bm25_norm
        fusion.rank_vector[i],  # rank_vector
        fusion.rank_bm25[i],  # rank_bm25
        fusion.z_vector[i],  # z_vector
        fusion.z_bm25[i],  # z_bm25
        fusion.vector_part[i],  # hybrid_vector_part
        fusion.bm25_part[i],  # hybrid_bm25_part
        fusion.entity_score[i],  # entity_score
        fusion.entity_part[i],  # hybrid_entity_part
        sessions.score[i],  # session_score
        sessions.rank[i],  # session_rank
        sessions.part[i],  # hybrid_session_part
        spoken[i],  # hybrid_speaker_part
        fusion.hybrid[i],  # hybrid
        temporal.age_days[i],  # age_days
        temporal.decay[i],  # decay
        temporal.importance[i],  # importance
        temporal.importance_factor[i],  # importance_factor
        times.days_outside[i],  # time_days_outside
        times.score[i],  # time_score
        times.factor[i],  # time_factor
        brevity.words[i],  # brevity_words
        brevity.factor[i],  # brevity_factor
        temporal.temporal[i],  # temporal
        feedback.net[i],  # feedback_net
        feedback.factor[i],  # feedback_factor
        feedback.hop_factor,  # hop_factor
        feedback.final[i],  # final
        None,  # mmr_relevance (MMR runs after the merge)
        None,  # mmr_max_similarity
        None,  # mmr_value
        inp.llm_relevance,  # llm_relevance
    )


def _order(indices: Sequence[int], values: Sequence[float]) -> list[int]:
    return sorted(indices, key=lambda i: -values[i])


def _positions(order: Sequence[int]) -> dict[int, int]:
    return {i: n for n, i in enumerate(order, 1)}


# -- 1. lexical -----------------------------------------------------------------------------------------------------
def lexical_scores(inputs: Sequence[CandidateInput], query: str, settings: Settings) -> LexicalScores:
    """BM25 (over the candidate set, or the index's) plus the preceding text's words at their own weight.

    A reply ("Me, on Saturday.") rarely repeats the words of the question it answers; the message it answers (its
    preceding text) does, so those words count too. A long text stands on its own: its preceding text counts fully
    up to preceding_full_words words of its own and proportionally less above (an assistant's long answer is not
    found by the user's question before it)."""
    if settings.bm25_source == "index":
        raw = [i.fts_score or 0.0 for i in inputs]
    else:
        raw = bm25_scores(query, [i.text for i in inputs])
    if keys_on(settings):  # [memlens] a matched key's words count as more words of its memory (key_search.py)
        raw = [r + k for r, k in zip(raw, key_lexical(inputs, settings))]
    pw = float(settings.preceding_bm25_weight)
    full = int(settings.preceding_full_words)
    before = [i.preceding_text for i in inputs]
    preceding = bm25_scores(query, before) if any(before) else [0.0] * len(inputs)
    # Only a text with a preceding text needs its words counted (the others' preceding score is 0): counting costs
    # ~8 us a candidate, ~1.7 ms a hop at 100k items.
    weights = [
        pw * min(1.0, full / max(len(_WORD_CHARS.findall(i.text)), 1)) if full and i.preceding_text else pw
        for i in inputs
    ]
    combined = [r + v * p for r, v, p in zip(raw, weights, preceding)]
    has = [bool(i.preceding_text) for i in inputs]
    return LexicalScores(
        raw=tuple(raw),
        preceding=tuple(p if h else None for p, h in zip(preceding, has)),
        weight=tuple(v if h else None for v, h in zip(weights, has)),
        combined=tuple(combined),
        norm=normalised(combined),
    )


# -- 2. fusion ------------------------------------------------------------------------------------------------------
def fuse(
    inputs: Sequence[CandidateInput], lexical: LexicalScores, settings: Settings, question: str = "", hop: int = 1
) -> FusionScores:
    """The hybrid score from the cosine and the lexical score (BM25 plus the preceding text's share).

    ``weighted`` (llmemory): ``w*bm25_norm + (1-w)*cosine``. ``zscore`` ([memlens]): see :func:`_fuse_zscores`.
    ``rrf`` ([memlens]): see :func:`_fuse_rrf`. Without ``hybrid_enabled``: the cosine alone. Both parts are
    recorded (``hybrid_vector_part``, ``hybrid_bm25_part``) so the breakdown adds up exactly.
    """
    cosines = key_cosines(inputs, settings, hop)  # [memlens] its own, or its best key's when better (key_search.py)
    nothing = (None,) * len(inputs)
    if not settings.hybrid_enabled:
        return FusionScores(tuple(cosines), tuple(cosines), (0.0,) * len(inputs), nothing, nothing, nothing, nothing)
    w = lexical_weight(cosines, settings, question).weight  # [memlens] less when the cosines have a clear head
    if settings.fusion == "weighted":
        vector, bm25, hybrid = weighted_fusion(cosines, lexical.norm, w)
        return FusionScores(hybrid, vector, bm25, nothing, nothing, nothing, nothing)
    if settings.fusion == "zscore":
        return _fuse_zscores(cosines, lexical.combined, w)
    return _fuse_rrf(cosines, lexical.combined, w, float(settings.rrf_k))


def hop_lexical_weight(
    inputs: Sequence[CandidateInput], settings: Settings, question: str = "", hop: int = 1
) -> FusionWeight | None:
    """The BM25 weight a hop's fusion uses, with its reason (lexical_weight.py); None when the hybrid or
    adaptive_bm25 is off (the weight is then bm25_weight, as in every trace before it). The pipeline and replay
    record it in the hop's trace from the same inputs, so the record is the weight used."""
    if not settings.hybrid_enabled or not settings.adaptive_bm25:
        return None
    return lexical_weight(key_cosines(inputs, settings, hop), settings, question)


def with_entity_part(inputs: Sequence[CandidateInput], fusion: FusionScores, settings: Settings) -> FusionScores:
    """[memlens] The entity stage's part of the hybrid: ``entity_weight * entity score`` added to the fused score of
    each candidate it linked (engine/retrieval/entity_strategy.py), so the filter, decay and feedback that follow
    see it like the other parts. Added rather than multiplied: a memory that shares a rare entity with the question
    but few words with it (the second hop's evidence) must be able to climb, whatever its fused score."""
    on = bool(settings.entity_strategy)
    w = float(settings.entity_weight)
    scores = tuple(i.entity.score if on and i.entity is not None else None for i in inputs)
    parts = tuple(None if s is None else w * s for s in scores)
    if all(p is None for p in parts):
        return dataclasses.replace(fusion, entity_score=scores, entity_part=parts)
    hybrid = tuple(h + (p or 0.0) for h, p in zip(fusion.hybrid, parts))
    return dataclasses.replace(fusion, hybrid=hybrid, entity_score=scores, entity_part=parts)


def weighted_fusion(
    cosines: Sequence[float], norms: Sequence[float], w: float
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """llmemory's blend ``(1-w)*cosine + w*bm25_norm``: (vector parts, BM25 parts, hybrid scores). The weighted
    fusion and plain search (engine/retrieval/search.py) both score with it."""
    vector = tuple((1 - w) * v for v in cosines)
    bm25 = tuple(w * n for n in norms)
    return vector, bm25, tuple(b + v for b, v in zip(bm25, vector))


def normalised(values: Sequence[float]) -> tuple[float, ...]:
    """Each value over the largest (BM25 over the best candidate's); unchanged when none is above 0."""
    top = max(values) if values and max(values) > 0 else 1.0
    return tuple(v / top for v in values)


def _fuse_rrf(cosines: Sequence[float], lexical: Sequence[float], w: float, k: float) -> FusionScores:
    """Reciprocal rank fusion over the candidates, ``(1-w)*(k+1)/(k+rank_vector) + w*(k+1)/(k+rank_bm25)`` (1 for
    a candidate first on both; a candidate without any of the query's words has no BM25 rank and gets no BM25 part).
    Ranks rather than scores, because a cosine of 0.45 and a BM25 of 12 are on scales that vary per query; ties
    share the better rank."""
    vector_rank = _shared_ranks(cosines)
    lexical_rank = _shared_ranks(lexical)
    vector = [(1 - w) * (k + 1) / (k + vr) for vr in vector_rank]
    bm25 = [w * (k + 1) / (k + lr) if lex > 0 else 0.0 for lr, lex in zip(lexical_rank, lexical)]
    nothing = (None,) * len(cosines)
    return FusionScores(
        hybrid=tuple(v + b for v, b in zip(vector, bm25)),
        vector_part=tuple(vector),
        bm25_part=tuple(bm25),
        rank_vector=tuple(vector_rank),
        rank_bm25=tuple(lr if lex > 0 else None for lr, lex in zip(lexical_rank, lexical)),
        z_vector=nothing,
        z_bm25=nothing,
    )


def _fuse_zscores(cosines: Sequence[float], lexical: Sequence[float], w: float) -> FusionScores:
    """``sigmoid(w*z_bm25 + (1-w)*z_vector)``, each score standardised over this query's candidates.

    A cosine of 0.45 is excellent for one query and poor for another, and BM25 has no fixed scale at all: their
    z-scores say how far a candidate stands out on each. The logistic keeps the hybrid in 0..1 (0.5: an average
    candidate on both), so decay, importance and feedback still multiply a positive score. The vector part is what
    the hybrid would be with an average BM25 (``sigmoid((1-w)*z_vector)``), the BM25 part the rest.
    """
    z_vec = _zscores(cosines)
    z_lex = _zscores(lexical)
    hybrid = [_sigmoid(w * zl + (1 - w) * zv) for zv, zl in zip(z_vec, z_lex)]
    vector = [_sigmoid((1 - w) * zv) for zv in z_vec]
    nothing = (None,) * len(cosines)
    return FusionScores(
        hybrid=tuple(hybrid),
        vector_part=tuple(vector),
        bm25_part=tuple(h - v for h, v in zip(hybrid, vector)),
        rank_vector=nothing,
        rank_bm25=nothing,
        z_vector=tuple(z_vec),
        z_bm25=tuple(z_lex),
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


# -- 3. relevance filter --------------------------------------------------------------------------------------------
def relevance_filter(
    inputs: Sequence[CandidateInput],
    lexical: LexicalScores,
    fusion: FusionScores,
    relevance_text: str,
    settings: Settings,
) -> list[Verdict]:
    """llmemory's heuristic (keep all when few; else score >= 0.5 or a shared word longer than 3 characters in the
    memory's text or, [memlens], its preceding text), or the [memlens] LLM judge's stored 0..1 verdicts, or nothing.
    One verdict per candidate, in the candidates' order."""
    mode = settings.relevance_filter
    n = len(inputs)
    if mode == "off":
        return [Verdict(Relevance.KEPT, "filter_off")] * n
    if mode == "llm" and all(i.llm_relevance is not None for i in inputs):
        return _judge_verdicts(inputs, float(settings.relevance_judge_threshold))
    keep_all_max = int(settings.relevance_keep_all_max)
    if n <= keep_all_max:
        return [Verdict(Relevance.KEPT, f"few_candidates ({n} <= {settings.relevance_keep_all_max})")] * n
    verdicts = _heuristic_verdicts(inputs, lexical, fusion, relevance_text, settings)
    if mode == "llm":
        return [Verdict(v.relevance, v.rule, "llm judge unavailable: heuristic used") for v in verdicts]
    return verdicts


def _judge_verdicts(inputs: Sequence[CandidateInput], threshold: float) -> list[Verdict]:
    out = []
    for i in inputs:
        ok = (i.llm_relevance or 0.0) >= threshold  # not None: checked by the caller
        out.append(
            Verdict(
                Relevance.KEPT if ok else Relevance.DROPPED,
                f"llm_judge {i.llm_relevance:.2f} {'>=' if ok else '<'} {threshold}",
            )
        )
    return out


def _heuristic_verdicts(
    inputs: Sequence[CandidateInput],
    lexical: LexicalScores,
    fusion: FusionScores,
    relevance_text: str,
    settings: Settings,
) -> list[Verdict]:
    min_score = float(settings.relevance_min_score)
    words = _filter_words(relevance_text, int(settings.relevance_min_word_chars), settings.relevance_words == "raw")
    protect = int(settings.relevance_protect_top)
    n = len(inputs)
    vector_rank = _shared_ranks([i.vector_similarity for i in inputs]) if protect else [0] * n
    lexical_rank = _shared_ranks(lexical.norm) if protect else [0] * n
    out = []
    for i, hybrid, norm, vr, lr in zip(inputs, fusion.hybrid, lexical.norm, vector_rank, lexical_rank):
        if hybrid >= min_score:
            out.append(Verdict(Relevance.KEPT, f"score {hybrid:.3f} >= {min_score}"))
        # [memlens] A search's own top results are never second-guessed by a word heuristic: a turn ranked 2nd by
        # full-text search (or by its vector) is what that search thinks answers the question.
        elif protect and (vr <= protect or (lr <= protect and norm > 0)):
            which, rank = ("vector", vr) if vr <= protect else ("full-text", lr)
            out.append(Verdict(Relevance.KEPT, f"top_{protect} of {which} search (rank {rank})"))
        else:
            out.append(_word_verdict(words, i, f"score {hybrid:.3f} < {min_score} and no shared word"))
    return out


def _word_verdict(words: Sequence[str], inp: CandidateInput, dropped_rule: str) -> Verdict:
    hit, where = _shared_word(words, inp.text), ""
    if hit is None and inp.preceding_text:
        # [memlens] An item's preceding text is part of what its vector matched, so the word check reads it too:
        # a reply ("Me, every Monday.") shares its words with the question it answered, not the one asked now.
        hit, where = _shared_word(words, inp.preceding_text), " (in its preceding text)"
    if hit is not None:
        return Verdict(Relevance.KEPT, f"word_overlap {hit!r}{where}")
    return Verdict(Relevance.DROPPED, dropped_rule)


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


# -- 4. temporal decay and importance -------------------------------------------------------------------------------
def temporal_scores(
    inputs: Sequence[CandidateInput], fusion: FusionScores, settings: Settings, now: datetime
) -> TemporalScores:
    """``hybrid * decay * importance_factor``: decay ``floor + (1-floor)*exp(-ln2/half_life * age_days)`` (1 for
    evergreen memories), importance clamped to 0..1 to the power ``importance_weight`` (1 without importance)."""
    lam = math.log(2) / float(settings.half_life_days)
    floor = float(settings.decay_floor)
    # A memory stamped after `now` (clock skew, an imported future date) is as fresh as one from today, never fresher.
    clamp = bool(settings.clamp_future_age)
    weight = max(float(settings.importance_weight), 0.0)
    ages, decays, importances, factors = [], [], [], []
    for i in inputs:
        age = math.floor((now - _created(i.created_at)).total_seconds() / 86400)
        if clamp:
            age = max(age, 0)
        importance = candidate_importance(i, settings.skill_importance)
        ages.append(age)
        decays.append(1.0 if i.evergreen else floor + (1.0 - floor) * math.exp(-lam * age))
        importances.append(importance)
        factors.append(1.0 if importance is None else min(max(importance, 0.0), 1.0) ** weight)
    temporal = tuple(h * d * f for h, d, f in zip(fusion.hybrid, decays, factors))
    return TemporalScores(tuple(ages), tuple(decays), tuple(importances), tuple(factors), temporal)


@lru_cache(maxsize=65_536)
def _created(value: str) -> datetime:
    """A candidate's ``created_at``, parsed once per process: the same memories come back in every hop and question
    (parsing and checking an ISO time costs ~4 us, ~0.9 ms a hop at 100k items)."""
    return parse_time(value)


def candidate_importance(inp: CandidateInput, skill_mode: str) -> float | None:
    """Stored importance for items and episodes; for skills the success rate (parity) or its Wilson lower bound."""
    if inp.kind != "procedural":
        return inp.importance
    trials = inp.success_count + inp.failure_count
    if skill_mode == "wilson":
        return wilson_interval(inp.success_count, trials)[0] if trials else 0.5
    return inp.success_count / trials if trials else 0.5


# -- 5. feedback and the later-hop discount -------------------------------------------------------------------------
def feedback_scores(
    inputs: Sequence[CandidateInput], temporal: TemporalScores, settings: Settings, hop: int
) -> FeedbackScores:
    """``temporal * (1 + w_f*clamp(net, -cap, cap)/cap) * hop_weight**(hop-1)``.

    The later-hop discount: a reasoner-proposed query is a guess, so its candidates must outscore the question's own
    by that margin to displace them in the max-merge (one factor per hop, so the order inside the hop is unchanged).
    """
    wf = float(settings.feedback_weight)
    cap = int(settings.feedback_cap)
    hop_factor = float(settings.hop_weight) ** (hop - 1)
    nets = [i.feedback_net for i in inputs]
    factors = [feedback_factor(net, wf, cap) for net in nets]
    final = tuple(t * f * hop_factor for t, f in zip(temporal.temporal, factors))
    return FeedbackScores(tuple(nets), tuple(factors), hop_factor, final)


def feedback_factor(net: int, weight: float, cap: int) -> float:
    """``1 + w_f*clamp(net, -cap, cap)/cap`` (1 without feedback or with w_f = 0). The one definition: the
    pipeline's feedback stage and the dashboard's feedback views both use it."""
    return 1.0 + weight * max(-cap, min(cap, net)) / cap if (weight > 0 and net) else 1.0
