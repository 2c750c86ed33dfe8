"""[memlens] The session stage of a hop: how strongly a memory's session matches the question raises its turns.

Evidence for a question is often spread over one conversation: the turn that names the trip and the reply that gives
its date. Alone, the reply scores poorly; beside a sibling that matches well, it is likely part of the answer. The
stage groups the hop's candidates into sessions, scores each session by its best members, and adds
``session_weight`` times the session's score to each member's hybrid score (so the filter, decay and feedback that
follow see it like the other parts of the hybrid, as they see the entity stage's part).

**A memory's session** is read from what every candidate already carries, so a replay regroups exactly as the
retrieval did: memories of one kind stamped with the same ``created_at`` instant are one session, and with
``session_window_minutes`` > 0 so are memories stamped within that many minutes of the previous one (a
conversation window: a run of memories with no gap larger than the window). The benchmark importers
(engine/evaluation/importers.py) stamp every turn of a session with the session's date; ``memorize`` and a
session's consolidation stamp the memories of one call with one instant. A window of 0 is the default because in
the LongMemEval-S dev half's haystacks 481 of 2,772 consecutive sessions start at most 30 minutes apart: a window
would merge distinct sessions there (15 sessions share another's exact instant, which no rule on time can split).

**A session's score** is the sum of the ``session_top_n`` best pre-session hybrid scores of its members in the
hop's candidate pool, divided by the best session's (so 0..1, 1 for the best session). The sum rather than the max
lets a session where several turns match outrank one with a single lucky hit: the multi-session questions' shape.
Each candidate records its session's score, its session's rank among the hop's sessions and what the stage added
(``session_score``, ``session_rank``, ``hybrid_session_part``); ranks share the better place on ties. When all the
hop's candidates fall into one session the stage adds nothing (and records a part of 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..clock import parse_time
from ..trace.records import CandidateInput


class Stamped(Protocol):
    """What the grouping reads of a memory: a candidate's input, or a stored trace's candidate."""

    @property
    def kind(self) -> str: ...
    @property
    def created_at(self) -> str: ...


@dataclass(frozen=True)
class SessionScores:
    """Per candidate (in the candidates' order): its session's 0..1 score, its session's 1-based rank among the
    hop's sessions, and what the stage added to its hybrid (all None when the stage is off)."""

    score: tuple[float | None, ...]
    rank: tuple[int | None, ...]
    part: tuple[float | None, ...]
    sessions: int = 0  # how many sessions the hop's candidates fell into


def session_keys(inputs: Sequence[Stamped], window_minutes: float) -> list[int]:
    """Each candidate's session, as a number shared by the members of one session (in the candidates' order).

    Same kind and same ``created_at`` instant; with a window, also within ``window_minutes`` of the previous memory
    of that kind in time order (a chain: the gaps, not the whole span, are bounded)."""
    stamps = [parse_time(i.created_at).timestamp() for i in inputs]
    order = sorted(range(len(inputs)), key=lambda i: (inputs[i].kind, stamps[i]))
    gap = max(float(window_minutes), 0.0) * 60.0
    keys = [0] * len(inputs)
    session = -1
    previous: int | None = None
    for i in order:
        same_kind = previous is not None and inputs[previous].kind == inputs[i].kind
        if not (same_kind and previous is not None and stamps[i] - stamps[previous] <= gap):
            session += 1
        keys[i] = session
        previous = i
    return keys


def session_stage(
    inputs: Sequence[CandidateInput], hybrid: Sequence[float], weight: float, top_n: int, window_minutes: float
) -> SessionScores:
    """The session scores of one hop's candidates from their hybrid scores (see the module's docstring); with
    ``weight`` 0 the stage is off and records nothing."""
    n = len(inputs)
    if weight <= 0 or n == 0:
        return SessionScores((None,) * n, (None,) * n, (None,) * n)
    keys = session_keys(inputs, window_minutes)
    members: dict[int, list[float]] = {}
    for k, h in zip(keys, hybrid):
        members.setdefault(k, []).append(h)
    raw = {k: sum(sorted(v, reverse=True)[: max(int(top_n), 1)]) for k, v in members.items()}
    best = max(raw.values())
    score = {k: (v / best if best > 0 else 0.0) for k, v in raw.items()}
    # One session says nothing about which turns matter: adding the same part to every candidate would only move
    # them past the relevance filter's threshold together (a store written at one instant, e.g. bench/multihop.py).
    w = weight if len(raw) > 1 else 0.0
    ordered = sorted(raw, key=lambda k: -raw[k])
    rank: dict[int, int] = {}
    for pos, k in enumerate(ordered):
        before = ordered[pos - 1] if pos else None
        rank[k] = rank[before] if before is not None and raw[before] == raw[k] else pos + 1
    return SessionScores(
        score=tuple(round(score[k], 6) for k in keys),
        rank=tuple(rank[k] for k in keys),
        part=tuple(round(w * score[k], 6) for k in keys),
        sessions=len(raw),
    )
