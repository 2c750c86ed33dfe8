"""Score calibration of a run: for each scoring signal, its values on the expected ("gold") memories and on the
other candidates, and a sweep of the heuristic relevance filter's threshold (``relevance_min_score``) showing, at
each value, the context recall and the context's size. The sweep replays the run's stored traces under each
threshold (re-ranking only: no search, no embedding, no LLM), so it answers "what if the threshold had been t" for
exactly the candidates the run saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..trace.records import RetrievalTrace
from .metrics import case_scores
from .records import CaseResult

# The signals worth calibrating, in pipeline order (CandidateScores fields); one a run never scored is left out.
SIGNALS = ("vector_similarity", "bm25_norm", "entity_score", "hybrid", "temporal", "final", "llm_relevance")
SWEEP_THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SWEEP_SETTING = "relevance_min_score"
MAX_CASES = 100  # traces read for the signals: the first this many traced cases of the run
MAX_SWEEP_CASES = 30  # replays per threshold (a replay of a 2-hop demo trace takes ~60 ms on one core)


@dataclass(frozen=True)
class SignalValues:
    signal: str
    gold: tuple[float, ...]  # the signal on each expected memory a hop found (its first hop's copy)
    other: tuple[float, ...]  # on every other candidate of the same traces


@dataclass(frozen=True)
class SweepPoint:
    threshold: float
    context_recall: float  # mean over the cases of the share of expected memories in the context
    recall_at_10: float  # mean recall@10 of the replayed ranking
    context_memories: float  # mean memories in the context
    context_tokens: float  # mean tokens of the context


@dataclass(frozen=True)
class Calibration:
    run_id: str
    signals: tuple[SignalValues, ...]
    sweep: tuple[SweepPoint, ...]
    run_threshold: float | None  # the run's own relevance_min_score
    run_filter: str | None  # the run's relevance filter (the sweep uses the heuristic one)
    cases: int  # traced cases the signals were read from (at most MAX_CASES)
    swept_cases: int  # of them, the cases the sweep replayed (at most MAX_SWEEP_CASES; 0: no sweep asked)
    run_cases: int  # the run's cases


def signal_values(traced: Sequence[tuple[CaseResult, RetrievalTrace]]) -> tuple[SignalValues, ...]:
    gold: dict[str, list[float]] = {s: [] for s in SIGNALS}
    other: dict[str, list[float]] = {s: [] for s in SIGNALS}
    for result, trace in traced:
        expected = set(result.expected)
        seen: set[str] = set()
        for hop in trace.hops:
            for c in hop.candidates:
                if c.id in seen:  # a memory found again by a later hop: its first copy counts
                    continue
                seen.add(c.id)
                for signal in SIGNALS:
                    value = getattr(c.scores, signal, None)
                    if isinstance(value, (int, float)):
                        (gold if c.id in expected else other)[signal].append(float(value))
    return tuple(SignalValues(s, tuple(gold[s]), tuple(other[s])) for s in SIGNALS if gold[s] or other[s])


def sweep(
    traced: Sequence[tuple[CaseResult, RetrievalTrace]],
    replay: Callable[[RetrievalTrace, Mapping[str, Any]], RetrievalTrace],
    thresholds: Iterable[float] = SWEEP_THRESHOLDS,
) -> tuple[SweepPoint, ...]:
    """Each threshold's context recall and context size over ``traced``, by replaying each trace with the
    heuristic filter at that threshold."""
    points = []
    n = max(len(traced), 1)  # no traced case: every mean is 0
    for t in thresholds:
        recall = r10 = memories = tokens = 0.0
        for result, trace in traced:
            again = replay(trace, {"relevance_filter": "heuristic", SWEEP_SETTING: float(t)})
            ranking = [r.id for r in again.ranking if r.rank is not None]
            scores = case_scores(result.expected, ranking, again.context_ids)
            recall += scores["context_recall"] or 0.0
            r10 += scores["recall@10"] or 0.0
            memories += len(again.context_ids)
            tokens += again.context_tokens
        points.append(
            SweepPoint(float(t), recall / n, r10 / n, memories / n, tokens / n)
            if n
            else SweepPoint(float(t), 0, 0, 0, 0)
        )
    return tuple(points)


def calibrate(
    run_id: str,
    settings: Mapping[str, Any],
    traced: Sequence[tuple[CaseResult, RetrievalTrace]],
    replay: Callable[[RetrievalTrace, Mapping[str, Any]], RetrievalTrace],
    thresholds: Sequence[float] = SWEEP_THRESHOLDS,
    sweep_cases: int = MAX_SWEEP_CASES,
    run_cases: int = 0,
) -> Calibration:
    swept = traced[:sweep_cases] if thresholds else []
    threshold = settings.get(SWEEP_SETTING)
    return Calibration(
        run_id,
        signal_values(traced),
        sweep(swept, replay, thresholds) if swept else (),
        float(threshold) if isinstance(threshold, (int, float)) else None,
        settings.get("relevance_filter"),
        len(traced),
        len(swept),
        run_cases,
    )
