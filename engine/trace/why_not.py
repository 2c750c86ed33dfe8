"""Why was a memory not recalled by a trace? The loss analysis shared by the trace page and evaluations.

A pure reading of a stored trace, plus (optionally) what the store knows about the memory now: a memory that no hop
saw may have been forgotten (archived, or deleted with a forget-log entry) or may never have been in the store.
For each hop it names the stage that handled the memory and the rule that decided; the verdict's ``status`` is the
stage where the memory was finally lost (or ``context``).

Statuses: ``context`` (in the context), ``budget`` / ``budget_stop`` / ``cap`` (ranked but not assembled),
``filtered`` (dropped by the relevance filter at every hop that found it), ``never`` (no hop's search returned it),
``archived`` (soft-forgotten), ``forgotten`` (hard-forgotten), ``missing`` (not in the store at all).

A memory forgotten after the trace ran (the trace still shows it in the context, or lost at some stage) is
``archived`` / ``forgotten`` too: what matters now is that it is gone, with when, by whom and why (its tombstone);
the headline then also says what the trace did with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..retrieval.session_stage import session_keys
from ..retrieval.speaker_stage import asks_rather_than_tells, spoken_by_assistant
from ..vocab import (
    GONE,
    HOP_STAGE_LABELS,
    LOSS_LABELS,
    ForgetMode,
    HopStage,
    LossStatus,
    MemoryStatus,
    Reason,
    Relevance,
    loss_label,
)
from .records import CandidateTrace, HopTrace, RetrievalTrace, Tombstone
from .time_records import time_words

# The display words of every status (vocab.LOSS_LABELS, the one mapping), under the name pages have used.
STAGE_NAMES = LOSS_LABELS
__all__ = ["GONE", "STAGE_NAMES", "MemoryState", "WhyNot", "drop_rule", "forgotten_detail", "why_not"]


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class MemoryState:
    """What the store says about a memory id now (independent of any trace)."""

    id: str
    status: MemoryStatus
    kind: str | None = None
    detail: str = ""  # e.g. "hard-forgotten on 2026-11-02 by ui, reason: duplicate"


@dataclass(frozen=True)
class WhyNot:
    status: LossStatus  # see the module docstring
    headline: str
    rows: tuple[dict[str, Any], ...]  # one per hop: hop, query, stage (its display label), rule, what happened
    item_id: str = ""
    stage: str = ""  # the status's display label (vocab.LOSS_LABELS)
    rule: str = ""  # the rule of the stage that lost it ("" when in the context)
    rank: int | None = None  # final merged rank when ranked
    hop: int | None = None  # the hop whose copy was ranked (or that filtered it first)
    forgotten: Tombstone | None = None  # of a memory forgotten since the trace ran


def forgotten_detail(tombstone: Tombstone | Mapping[str, Any]) -> str:
    """A tombstone as a person reads it: "hard-forgotten on 2026-11-02 10:15 by ui, reason: duplicate" (the
    minute, not the stored ISO time with its microseconds)."""
    tomb = Tombstone.from_dict(tombstone)
    mode = "hard-forgotten" if tomb.hard else "archived"
    at = str(tomb.at or "")[:16].replace("T", " ")
    actor = tomb.actor or "someone unrecorded"
    reason = tomb.reason or "none given"
    return f"{mode} on {at} by {actor}, reason: {reason}" if at else f"{mode}, reason: {reason}"


def trace_tombstone(trace: RetrievalTrace, item_id: str) -> Tombstone | None:
    """The tombstone a forget left in the stored trace for ``item_id`` (None if the trace has none)."""
    marked = trace.forgotten.get(item_id)
    if marked:
        return marked
    return next((c.forgotten for h in trace.hops for c in h.candidates if c.id == item_id and c.forgotten), None)


def _tombstone(trace: RetrievalTrace, item_id: str, state: MemoryState | None) -> tuple[Tombstone, str] | None:
    """The memory's tombstone and its sentence: the store's word (``state``) first, as it is current; else the
    trace's own mark (a trace read from JSON, or no state given)."""
    if state is not None and state.status == MemoryStatus.ACTIVE:  # stored again since (an import): the mark is old
        return None
    marked = trace_tombstone(trace, item_id)
    if state is not None and state.status in (MemoryStatus.ARCHIVED, MemoryStatus.FORGOTTEN):
        mode = ForgetMode.HARD if state.status == MemoryStatus.FORGOTTEN else ForgetMode.SOFT
        tomb = marked if marked and marked.mode == mode else Tombstone(mode)
        return tomb, state.detail or forgotten_detail(tomb)
    if marked:
        return marked, forgotten_detail(marked)
    return None


def drop_rule(trace: RetrievalTrace, c: CandidateTrace, winner_hop: Mapping[str, int] | None = None) -> str:
    """The rule that kept a candidate out of the context, as a sentence fragment."""
    reason = c.context_reason
    if reason == Reason.FILTERED:
        return c.verdicts.rule or "dropped by the relevance filter"
    if reason == Reason.MERGED:
        winners = winner_hop if winner_hop is not None else {r.id: r.hop for r in trace.ranking}
        other = winners.get(c.id)
        return f"the copy found at hop {other} scored higher" if other else "another copy scored higher"
    rank = c.ranks.final
    if reason == Reason.BUDGET:
        budget = trace.settings.retrieval.budget_tokens
        used = _used_before(trace, rank) if rank else None
        left = f"; {budget - used} of {budget} tokens were left" if used is not None else ""
        return f"needs {c.tokens} tokens{left}"
    if reason == Reason.BUDGET_STOP:
        return "assembly_mode=stop: an earlier memory did not fit, so assembly ended there"
    if reason == Reason.CAP:
        return f"context_max_items={trace.settings.retrieval.context_max_items} reached"
    return reason


def _used_before(trace: RetrievalTrace, rank: int) -> int:
    return sum(r.tokens for r in trace.ranking if r.in_context and r.rank is not None and r.rank < rank)


def _participants_words(hop: HopTrace) -> str:
    """The participant stage's part in a hop (retrieval/participants.py): the vector it searched with."""
    if hop.vector_query is None:
        return ""
    without = _shorten(hop.vector_query, 80)
    return f"; vector search and cosines used the query blended with {without!r} (its participants' names left out)"


def _hop_rows(
    trace: RetrievalTrace, item_id: str, winner_hop: Mapping[str, int]
) -> list[tuple[HopStage, dict[str, Any]]]:
    """Per hop, the stage that handled the memory (what the verdict decides by) and its row (what pages show)."""
    top_k = trace.settings.retrieval.top_k
    rows: list[tuple[HopStage, dict[str, Any]]] = []
    for hop in trace.hops:
        c = next((c for c in hop.candidates if c.id == item_id), None)
        row = {"hop": hop.hop, "query": _shorten(hop.query, 80)}
        if c is None:
            rows.append(
                (
                    HopStage.SEARCH,
                    {
                        **row,
                        "stage": HOP_STAGE_LABELS[HopStage.SEARCH],
                        "rule": f"top_k={top_k} per source",
                        "what happened": f"not among the top {top_k} vector or full-text results"
                        + _participants_words(hop)
                        + _entities_followed(hop),
                    },
                )
            )
            continue
        rank_h = c.ranks.hybrid
        found = f"{c.found_by} (via {c.entity.describe()})" if c.entity is not None else c.found_by
        found += _session_words(trace, hop, c)
        found += _speaker_words(trace, c)
        found += _brevity_words(trace, c)
        found += _participants_words(hop)
        found += f"; this hop's {hop.fusion.describe()}" if hop.fusion is not None and hop.fusion.lowered else ""
        found += f" (matched keys: {_shorten(c.key.describe(), 160)})" if c.key is not None else ""
        found += time_words(trace.time_window, trace.settings.retrieval.time_window, c.created_at, c.scores.time_factor)
        if c.verdicts.relevance == Relevance.DROPPED:
            stage, rule = HopStage.FILTER, c.verdicts.rule
            what = f"found by {found} (hybrid rank {rank_h}), dropped: {rule}"
            label = HOP_STAGE_LABELS[stage]
        elif c.context_reason == Reason.MERGED:
            stage, rule = HopStage.MERGE, drop_rule(trace, c, winner_hop)
            what = f"kept (final {c.scores.final or 0:.4f}) but {rule}"
            label = HOP_STAGE_LABELS[stage]
        else:
            stage, label = HopStage.ASSEMBLY, loss_label(c.context_reason)
            rule = "" if c.in_context else drop_rule(trace, c, winner_hop)
            detail = f": {rule}" if rule else ""
            what = f"found by {found}, final rank {c.ranks.final}{detail}"
        rows.append((stage, {**row, "stage": label, "rule": rule, "what happened": what}))
    return rows


def _session_words(trace: RetrievalTrace, hop: HopTrace, c: CandidateTrace) -> str:
    """What the session stage made of a candidate: "; its session ranked 3 of 12 (score 0.62, +0.124)" ("" when
    the stage was off)."""
    rank = c.scores.session_rank
    if rank is None:
        return ""
    sessions = len(set(session_keys(hop.candidates, trace.settings.retrieval.session_window_minutes)))
    score, part = c.scores.session_score or 0.0, c.scores.hybrid_session_part or 0.0
    return f"; its session ranked {rank} of {sessions} (score {score:.2f}, +{part:.3f})"


def _speaker_words(trace: RetrievalTrace, c: CandidateTrace) -> str:
    """What the speaker stage did to a candidate: "; an assistant turn, while the question asks about the user
    (first person "my"): hybrid -0.4", "; a turn that asks (ends with a question mark): hybrid -0.1", or both
    ("" when it left the candidate alone)."""
    part = c.scores.hybrid_speaker_part
    if part is None:
        return ""
    r = trace.settings.retrieval
    why = []
    if trace.speaker is not None and r.assistant_turn_penalty > 0 and spoken_by_assistant(c.text):
        why.append(f"an assistant turn, while the question asks about the user ({trace.speaker})")
    if r.question_turn_penalty > 0 and asks_rather_than_tells(c.text, int(r.question_turn_max_words)):
        why.append("a turn that asks (ends with a question mark)")
    return f"; {' and '.join(why) or 'the speaker stage'}: hybrid {part:+.3g}"


def _brevity_words(trace: RetrievalTrace, c: CandidateTrace) -> str:
    """What the brevity stage did to a short turn: "; a short turn (10 of 60 words): score x0.584" ("" when it
    left the candidate alone)."""
    factor = c.scores.brevity_factor
    if factor is None or factor >= 1.0:
        return ""
    full = trace.settings.retrieval.brevity_full_words
    return f"; a short turn ({c.scores.brevity_words} of {full} words): score x{factor:.3g}"


def _entities_followed(hop: HopTrace) -> str:
    """What a hop's entity stage followed, for a memory it did not link: "; the entity stage followed Caroline,
    Sweden, none of which links it" ("" when the stage named no entity or did not run)."""
    if not hop.entities:
        return ""
    names = ", ".join(e.name for e in hop.entities[:6]) + (" ..." if len(hop.entities) > 6 else "")
    return f"; the entity stage followed {names}, none of which links it"


# What "never a candidate" says of a memory the store no longer (or never) held.
_GONE_WORDS = {
    LossStatus.ARCHIVED: "It is archived (soft-forgotten), so search cannot return it",
    LossStatus.FORGOTTEN: "It was deleted (hard-forgotten)",
    LossStatus.MISSING: "No memory with this id is in the store (nor in the forget log)",
}


def why_not(trace: RetrievalTrace, item_id: str, state: MemoryState | None = None) -> WhyNot:
    """Where ``item_id`` was lost in ``trace``: at which hop and stage, by which rule, or that search never found it
    (and, given the store's ``state`` of the memory, whether it was forgotten or never stored)."""
    winner_hop = {r.id: r.hop for r in trace.ranking}
    staged = _hop_rows(trace, item_id, winner_hop)
    rows = [row for _, row in staged]
    ranked = next((r for r in trace.ranking if r.id == item_id), None)
    top_k = trace.settings.retrieval.top_k
    rule, rank, hop = "", None, None
    status: LossStatus
    if ranked is not None:
        rank, hop = ranked.rank, ranked.hop
        if ranked.in_context:
            status, headline = LossStatus.CONTEXT, f"In the context at rank {ranked.rank} (from hop {ranked.hop})."
        else:
            status = LossStatus(ranked.reason)
            c = next(c for h in trace.hops if h.hop == ranked.hop for c in h.candidates if c.id == item_id)
            rule = drop_rule(trace, c, winner_hop)
            headline = f"Lost at the {loss_label(status)} (final rank {ranked.rank}, hop {ranked.hop}): {rule}."
    elif any(stage != HopStage.SEARCH for stage, _ in staged):
        # Found, yet not ranked: every copy was dropped by the filter (a kept copy is ranked, or merged into one).
        first = next(row for stage, row in staged if stage == HopStage.FILTER)
        status, rule, hop = LossStatus.FILTERED, first["rule"], first["hop"]
        headline = f"Filtered out by the relevance filter at hop {first['hop']}: {first['what happened']}."
    elif state is not None and state.status in GONE:
        status, rule = LossStatus(state.status), state.detail
        headline = f"Never a candidate: {_GONE_WORDS[status]}" + (f": {state.detail}." if state.detail else ".")
        rows = [{**r, "rule": loss_label(status)} for r in rows]
    else:
        status, rule = LossStatus.NEVER, f"top_k={top_k} per source"
        headline = f"Never a candidate: no hop's search (top {top_k} per source, vector and full text) returned it."
    gone = _tombstone(trace, item_id, state) if status != LossStatus.MISSING else None
    if gone is not None and status in GONE:  # never a candidate, and forgotten: the tombstone goes with it
        return WhyNot(status, headline, tuple(rows), item_id, loss_label(status), rule, rank, hop, gone[0])
    if gone is not None:
        # Forgotten since the trace ran: saying only "in the context" would hide that the memory is gone.
        tomb, rule = gone
        status = LossStatus.FORGOTTEN if tomb.hard else LossStatus.ARCHIVED
        headline = f"Forgotten since this trace ran: {rule}. In this trace: {headline[:1].lower()}{headline[1:]}"
        return WhyNot(status, headline, tuple(rows), item_id, loss_label(status), rule, rank, hop, tomb)
    return WhyNot(status, headline, tuple(rows), item_id, loss_label(status), rule, rank, hop)
