"""Records of a retrieval in progress, kept apart from the pipeline's logic: how long each stage took
(:class:`StageTimer`, :class:`StageTimings`), what one hop ran on and produced (:class:`HopRun`), and how a finished
run becomes the trace's records (:func:`hop_trace`, :func:`ranking_entry`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..trace.records import (
    CandidateInput,
    CandidateTrace,
    FusionWeight,
    HopCounts,
    HopEntity,
    HopSimilarity,
    HopTrace,
    ProposalDetails,
    RankedMemory,
    Timings,
)
from ..vocab import Kind, Reason
from .assembly import Placement
from .stages import Scored

# What a candidate that reached no placement became: a kept copy that lost the merge, or one the filter dropped.
MERGED = Placement(Reason.MERGED, 0)
FILTERED = Placement(Reason.FILTERED, 0)


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


# Milliseconds per stage in the order they ran: the trace's own record of timings.
StageTimings = Timings


class StageTimer:
    """Times the stages of a run without the stages knowing: ``with timer.stage("search"): ...``. A stage that
    raises is not recorded (the run fails, and so does its trace)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self._ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self._ms[name] = elapsed_ms(start)

    def since_start(self, name: str) -> None:
        """Record the time from the timer's creation to now under ``name`` (e.g. the whole pipeline)."""
        self._ms[name] = elapsed_ms(self.start)

    def record(self, name: str, ms: float) -> None:
        """Record a stage timed elsewhere (inside a pure function that cannot hold the timer)."""
        self._ms[name] = ms

    def timings(self) -> StageTimings:
        return StageTimings(tuple(self._ms.items()))


@dataclass(frozen=True)
class HopRun:
    """One hop: the query it ran (and how it was made), its candidates in search order, their scored records (kept
    ones by final score, then the dropped ones), the cosines between them, and the hop's stage timings."""

    hop: int
    query: str
    proposed_by: str
    proposal: ProposalDetails
    relevance_text: str
    inputs: tuple[CandidateInput, ...]
    scored: tuple[Scored, ...]
    similarity: HopSimilarity = field(default_factory=HopSimilarity)
    timings: StageTimings = StageTimings()
    entities: tuple[HopEntity, ...] = ()  # what the entity stage started from
    fusion: FusionWeight | None = None  # the BM25 weight its fusion used (lexical_weight.py)
    text_query: str | None = None  # what full-text search was given, when not the query (text.text_search_query)
    vector_query: str | None = None  # the query without its participants' names, blended in (participants.py)


def placement_key(s: Scored) -> tuple[int, str]:
    """A ranked copy's identity across records: its hop and its memory (by text when it has no id)."""
    return s.hop, s.inp.id or s.inp.text


def hop_trace(run: HopRun, ranked: Mapping[tuple[int, str], tuple[Scored, Placement]]) -> HopTrace:
    """The trace of a hop. ``ranked`` holds the final record and placement of every ranked copy (by
    :func:`placement_key`); any other candidate was merged away (kept) or filtered."""
    order = {inp.id: k for k, inp in enumerate(run.inputs)}
    candidates = []
    for s in run.scored:
        final, placement = ranked.get(placement_key(s), (s, MERGED if s.kept else FILTERED))
        candidates.append(
            CandidateTrace(
                id=s.inp.id,
                kind=Kind(s.inp.kind),
                text=s.inp.text,
                found_by=s.inp.found_by,
                created_at=s.inp.created_at,
                evergreen=s.inp.evergreen,
                stored_importance=s.inp.importance,
                success_count=s.inp.success_count,
                failure_count=s.inp.failure_count,
                search_order=order[s.inp.id],
                scores=final.scores,
                verdicts=final.verdicts,
                ranks=final.ranks,
                in_context=placement.in_context,
                context_reason=Reason(placement.reason),
                tokens=placement.tokens,
                preceding_text=s.inp.preceding_text,
                entity=s.inp.entity,
                key=s.inp.key,
            )
        )
    kept = sum(1 for s in run.scored if s.kept)
    return HopTrace(
        hop=run.hop,
        query=run.query,
        proposed_by=run.proposed_by,
        relevance_text=run.relevance_text,
        proposal=run.proposal,
        candidates=tuple(candidates),
        counts=HopCounts(found=len(run.scored), kept=kept, dropped=len(run.scored) - kept),
        timings_ms=run.timings,
        similarity=run.similarity,
        entities=run.entities,
        fusion=run.fusion,
        text_query=run.text_query,
        vector_query=run.vector_query,
    )


def ranking_entry(s: Scored, placement: Placement) -> RankedMemory:
    """One memory of the trace's final merged order."""
    return RankedMemory(
        id=s.inp.id,
        kind=Kind(s.inp.kind),
        hop=s.hop,
        final=s.final,
        rank=s.ranks.final,
        in_context=placement.in_context,
        reason=Reason(placement.reason),
        tokens=placement.tokens,
    )
