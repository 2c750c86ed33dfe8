"""Replay's own steps: a stored trace's candidates back as scoring inputs, the settings it replays under, and the
replayed ranking beside the old one. The re-ranking itself is the live pipeline's (Retriever.replay), which is why a
replay with the trace's own settings gives exactly its result."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..config import Settings
from ..errors import InvalidInput
from ..retrieval.hop_run import HopRun
from ..retrieval.stages import hop_lexical_weight, score_hop
from ..vocab import FoundBy, Reason
from .key_links import KEY_FOUND_BY
from .records import CandidateInput, CandidateTrace, HopEntity, HopTrace, RankedMemory, RetrievalTrace, Tombstone
from .time_records import TimeWindow


def tombstones(
    trace: RetrievalTrace, forgotten: Mapping[str, Mapping[str, Any] | Tombstone] | None
) -> dict[str, Tombstone]:
    """Memory id -> tombstone for every memory of the trace known to be forgotten: marked in the trace, or in
    ``forgotten`` (the store's current state)."""
    gone: dict[str, Tombstone] = {c.id: c.forgotten for h in trace.hops for c in h.candidates if c.forgotten}
    gone.update(trace.forgotten)
    gone.update({i: Tombstone.from_dict(t) for i, t in (forgotten or {}).items()})
    return gone


def replay_settings(base: Settings, trace: RetrievalTrace, overrides: Mapping[str, Any] | None) -> Settings:
    """The trace's own retrieval settings, with ``overrides`` (retrieval settings only) on top."""
    own = trace.settings.retrieval_values()
    settings = base.with_overrides({**own, **dict(overrides or {})})
    bad = [k for k in (overrides or {}) if k not in Settings.retrieval_keys()]
    if bad:
        raise InvalidInput(f"{bad[0]} is not a retrieval setting")
    return settings


# Replay against the current graph: (the stored hop, the replayed hop before it) -> the entity stage's seeds now,
# and a function giving a recorded candidate its current links (None: the graph no longer makes it a candidate).
Relink = Callable[
    [HopTrace, HopRun | None], tuple[tuple[HopEntity, ...], Callable[[CandidateInput], CandidateInput | None]]
]


def replay_runs(
    trace: RetrievalTrace,
    settings: Settings,
    now: datetime,
    gone: Mapping[str, Tombstone],
    relink: Relink | None = None,
    window: TimeWindow | None = None,
    speaker: str | None = None,
    personal: str | None = None,
) -> list[HopRun]:
    """The trace's hops (up to ``settings.hops``) scored again from their recorded candidates, in search order,
    without the forgotten ones; with ``relink``, each hop's entity links as the current graph gives them.
    ``window``, ``speaker`` and ``personal`` are the question's date window, speaker cue and first- or second-person
    word under the replay's settings."""
    runs: list[HopRun] = []
    for hop in trace.hops[: settings.hops]:
        ordered = sorted(hop.candidates, key=lambda c: c.search_order)
        # Without the entity stage, what it alone brought in was never a candidate (and the rest lose its part).
        entity_on = bool(settings.entity_strategy)
        keys_on = settings.memory_keys != "off"  # likewise what only the key search found (key_links.py)
        inputs = tuple(
            candidate_input(c)
            for c in ordered
            if c.id not in gone
            and (entity_on or c.found_by != FoundBy.ENTITY)
            and (keys_on or c.found_by != KEY_FOUND_BY)
        )
        entities = hop.entities
        if relink is not None and entity_on:
            entities, again = relink(hop, runs[-1] if runs else None)
            inputs = tuple(i for i in (again(i) for i in inputs) if i is not None)
        scored = score_hop(
            inputs,
            hop.query,
            hop.relevance_text,
            settings,
            now,
            hop.hop,
            window=window,
            speaker=speaker,
            personal=personal,
        )
        runs.append(
            HopRun(
                hop=hop.hop,
                query=hop.query,
                proposed_by=hop.proposed_by,
                proposal=hop.proposal,
                relevance_text=hop.relevance_text,
                inputs=inputs,
                scored=tuple(scored),
                similarity=hop.similarity,
                entities=entities,
                fusion=hop_lexical_weight(inputs, settings, hop.relevance_text, hop.hop) if inputs else None,
                text_query=hop.text_query,  # the search is not run again: what it was given stays
                vector_query=hop.vector_query,  # and so do the cosines to the vector it searched with
            )
        )
    return runs


def candidate_input(c: CandidateTrace) -> CandidateInput:
    """What search found for a traced candidate, as scoring takes it."""
    return CandidateInput(
        id=c.id,
        kind=c.kind,
        text=c.text,
        created_at=c.created_at,
        importance=c.stored_importance,
        evergreen=c.evergreen,
        success_count=c.success_count,
        failure_count=c.failure_count,
        feedback_net=int(c.scores.feedback_net or 0),
        # every traced candidate has one (search found it by it, or scored it against the query)
        vector_similarity=c.scores.vector_similarity if c.scores.vector_similarity is not None else 0.0,
        fts_score=c.scores.fts_score,
        found_by=c.found_by,
        llm_relevance=c.scores.llm_relevance,
        preceding_text=c.preceding_text,
        entity=c.entity,
        key=c.key,
    )


def replay_ranking(
    old: RetrievalTrace, new: RetrievalTrace, gone: Mapping[str, Tombstone], hops: int
) -> tuple[RankedMemory, ...]:
    """The replayed ranking, each memory with its old rank and whether it entered or left the context; then the
    memories of the old ranking that the replay did not rank (forgotten, filtered, or of a hop not replayed)."""
    before = {o.id: o for o in old.ranking}
    ranking = []
    for r in new.ranking:
        o = before.get(r.id)
        was_in = bool(o and o.in_context)
        ranking.append(
            dataclasses.replace(
                r,
                old_rank=o.rank if o else None,
                rank_change=(o.rank - r.rank) if o and o.rank is not None and r.rank is not None else None,
                old_in_context=was_in,
                context_change=_context_change(was_in, r.in_context),
            )
        )
    new_ids = {r.id for r in new.ranking}
    ranking += [_unranked(o, gone, hops) for o in old.ranking if o.id not in new_ids]
    return tuple(ranking)


def _unranked(o: RankedMemory, gone: Mapping[str, Tombstone], hops: int) -> RankedMemory:
    reason = Reason.FORGOTTEN if o.id in gone else Reason.HOP_NOT_REPLAYED if o.hop > hops else Reason.FILTERED
    return RankedMemory(
        id=o.id,
        kind=o.kind,
        hop=o.hop,
        final=None,
        rank=None,
        in_context=False,
        reason=reason,
        tokens=o.tokens,
        old_rank=o.rank,
        rank_change=None,
        old_in_context=o.in_context,
        context_change=_context_change(o.in_context, False),
        forgotten=gone[o.id] if o.id in gone else None,
    )


def _context_change(before: bool, after: bool) -> str:
    return {(False, True): "entered", (True, False): "left", (True, True): "stayed"}.get((before, after), "out")
