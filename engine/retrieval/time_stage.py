"""[memlens] The time stage of a hop: how each candidate's date stands to the question's date window
(engine/retrieval/time_window.py reads the window; the trace records it once, ``RetrievalTrace.time_window``).

Per candidate: ``time_days_outside`` (0 when its day, ``created_at`` in UTC, falls inside the window; else the days
before its first day or after its last), ``time_score = 0.5 ** (days_outside / time_half_life_days)`` (1 inside,
halving every half-life outside) and ``time_factor``, which multiplies the temporal stage's score:

- ``time_window = boost``: ``time_factor = 1 + time_weight * time_score``, so a memory inside the window scores up
  to ``1 + time_weight`` times what it would, one a half-life away half that extra, a far one nothing extra;
- ``time_window = filter``: ``time_factor = 1``, and a candidate the relevance filter kept is dropped when its
  ``time_score`` is below 0.5 (more than one half-life outside the window), unless no candidate is within a
  half-life of it (then the window says nothing about what the store holds, and all are kept);
- ``off``, or a question that names no time: no time columns (None) and a factor of 1: nothing changes.

A memory is dated by when it was stored, which is when it was told: a conversation tells of an event on the day
or after it, which is why the half-life, not the window alone, decides how far outside still counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..config import Settings
from ..trace.records import CandidateInput, RetrievalTrace
from ..trace.time_records import TimeWindow, days_outside, window_note
from ..vocab import Relevance
from .scores import Verdict
from .time_window import offline_window

__all__ = ["TimeScores", "replay_window", "time_scores", "time_verdicts", "with_time_factor"]


@dataclass(frozen=True)
class TimeScores:
    """The time stage's columns, in the candidates' order (None: no window, or the stage is off)."""

    days_outside: tuple[int | None, ...]
    score: tuple[float | None, ...]
    factor: tuple[float | None, ...]


def time_scores(inputs: Sequence[CandidateInput], window: TimeWindow | None, settings: Settings) -> TimeScores:
    """Each candidate's days outside the window, its time score and its factor (see the module docstring)."""
    mode = settings.time_window
    if window is None or mode == "off":
        nothing = (None,) * len(inputs)
        return TimeScores(nothing, nothing, nothing)
    half_life = float(settings.time_half_life_days)
    weight = float(settings.time_weight) if mode == "boost" else 0.0
    outside = tuple(days_outside(window, i.created_at) for i in inputs)
    scores = tuple(0.5 ** (d / half_life) for d in outside)
    return TimeScores(outside, scores, tuple(1.0 + weight * s for s in scores))


def with_time_factor(temporal: Sequence[float], times: TimeScores) -> tuple[float, ...]:
    """The temporal stage's scores times each candidate's time factor (unchanged where it has none)."""
    return tuple(t if f is None else t * f for t, f in zip(temporal, times.factor))


def time_verdicts(
    verdicts: Sequence[Verdict],
    inputs: Sequence[CandidateInput],
    times: TimeScores,
    window: TimeWindow | None,
    settings: Settings,
) -> list[Verdict]:
    """Under ``time_window = filter``, the relevance filter's verdicts with the candidates more than one half-life
    outside the window dropped (the rule says where the memory's date lies); otherwise the verdicts as they are."""
    if window is None or settings.time_window != "filter":
        return list(verdicts)
    if not any(score is not None and score >= 0.5 for score in times.score):
        # Nothing found lies near the window (a store dated otherwise, e.g. all imported on one day): dropping
        # every candidate would answer nothing, so the filter stands aside.
        return list(verdicts)
    out = []
    for v, inp, score in zip(verdicts, inputs, times.score):
        if v.kept and score is not None and score < 0.5:
            rule = (
                f"{window_note(window, inp.created_at)}: more than time_half_life_days={settings.time_half_life_days}"
            )
            out.append(Verdict(Relevance.DROPPED, rule))
        else:
            out.append(v)
    return out


def replay_window(trace: RetrievalTrace, settings: Settings, now: datetime) -> TimeWindow | None:
    """The window a replay scores with: the one the trace recorded. A trace whose time stage was off recorded none:
    replayed with the stage on, it gets the offline rules' window for its question and clock (replay calls no
    LLM); replayed with it off, none."""
    if settings.time_window == "off":
        return None
    if trace.settings.retrieval.time_window != "off":
        return trace.time_window
    return offline_window(trace.question, now)
