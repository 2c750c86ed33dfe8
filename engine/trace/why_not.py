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

from .records import CandidateTrace, RetrievalTrace

STAGE_NAMES = {
    "filtered": "relevance filter",
    "merged": "multi-hop merge",
    "budget": "token budget",
    "budget_stop": "token budget (stop mode)",
    "cap": "context item cap",
    "context": "in context",
    "never": "never a candidate",
    "archived": "archived (soft-forgotten)",
    "forgotten": "forgotten (hard)",
    "missing": "not in the store",
}
# Statuses that say the memory could not have been found, whatever the retrieval settings.
GONE = ("archived", "forgotten", "missing")


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class MemoryState:
    """What the store says about a memory id now (independent of any trace)."""

    id: str
    status: str  # active | archived | forgotten | missing
    kind: str | None = None
    detail: str = ""  # e.g. "hard-forgotten on 2026-11-02 by ui, reason: duplicate"


@dataclass(frozen=True)
class WhyNot:
    status: str  # see the module docstring
    headline: str
    rows: tuple[dict, ...]  # one per hop: hop, query, stage, rule, what happened
    item_id: str = ""
    stage: str = ""  # STAGE_NAMES[status]
    rule: str = ""  # the rule of the stage that lost it ("" when in the context)
    rank: int | None = None  # final merged rank when ranked
    hop: int | None = None  # the hop whose copy was ranked (or that filtered it first)
    forgotten: dict | None = None  # the tombstone (mode, at, actor, reason) of a memory forgotten since the trace


def forgotten_detail(tombstone: Mapping[str, Any]) -> str:
    """A tombstone as a person reads it: "hard-forgotten on 2026-11-02 10:15 by ui, reason: duplicate" (the
    minute, not the stored ISO time with its microseconds)."""
    mode = "hard-forgotten" if tombstone.get("mode") == "hard" else "archived"
    at = str(tombstone.get("at") or "")[:16].replace("T", " ")
    actor = tombstone.get("actor") or "someone unrecorded"
    reason = tombstone.get("reason") or "none given"
    return f"{mode} on {at} by {actor}, reason: {reason}" if at else f"{mode}, reason: {reason}"


def trace_tombstone(trace: RetrievalTrace, item_id: str) -> dict | None:
    """The tombstone a forget left in the stored trace for ``item_id`` (None if the trace has none)."""
    marked = (trace.forgotten or {}).get(item_id)
    if marked:
        return dict(marked)
    return next((dict(c.forgotten) for h in trace.hops for c in h.candidates if c.id == item_id and c.forgotten), None)


def _tombstone(trace: RetrievalTrace, item_id: str, state: MemoryState | None) -> tuple[dict, str] | None:
    """The memory's tombstone and its sentence: the store's word (``state``) first, as it is current; else the
    trace's own mark (a trace read from JSON, or no state given)."""
    if state is not None and state.status == "active":  # stored again since (an import): the trace's mark is old
        return None
    marked = trace_tombstone(trace, item_id)
    if state is not None and state.status in ("archived", "forgotten"):
        mode = "hard" if state.status == "forgotten" else "soft"
        tomb = marked if marked and marked.get("mode") == mode else {"mode": mode}
        return tomb, state.detail or forgotten_detail(tomb)
    if marked:
        return marked, forgotten_detail(marked)
    return None


def drop_rule(trace: RetrievalTrace, c: CandidateTrace, winner_hop: Mapping[str, int] | None = None) -> str:
    """The rule that kept a candidate out of the context, as a sentence fragment."""
    reason = c.context_reason
    if reason == "filtered":
        return c.verdicts.rule or "dropped by the relevance filter"
    if reason == "merged":
        winners = winner_hop if winner_hop is not None else {r.id: r.hop for r in trace.ranking}
        other = winners.get(c.id)
        return f"the copy found at hop {other} scored higher" if other else "another copy scored higher"
    rank = c.ranks.final
    if reason == "budget":
        budget = int(trace.settings.get("budget_tokens") or 0)
        used = _used_before(trace, rank) if rank else None
        left = f"; {budget - used} of {budget} tokens were left" if used is not None else ""
        return f"needs {c.tokens} tokens{left}"
    if reason == "budget_stop":
        return "assembly_mode=stop: an earlier memory did not fit, so assembly ended there"
    if reason == "cap":
        return f"context_max_items={trace.settings.get('context_max_items')} reached"
    return reason


def _used_before(trace: RetrievalTrace, rank: int) -> int:
    return sum(r.tokens for r in trace.ranking if r.in_context and r.rank is not None and r.rank < rank)


def _hop_rows(trace: RetrievalTrace, item_id: str, winner_hop: Mapping[str, int]) -> list[dict[str, Any]]:
    top_k = trace.settings.get("top_k")
    rows = []
    for hop in trace.hops:
        c = next((c for c in hop.candidates if c.id == item_id), None)
        row = {"hop": hop.hop, "query": _shorten(hop.query, 80)}
        if c is None:
            rows.append(
                {
                    **row,
                    "stage": "search",
                    "rule": f"top_k={top_k} per source",
                    "what happened": f"not among the top {top_k} vector or full-text results",
                }
            )
            continue
        rank_h = c.ranks.hybrid
        if c.verdicts.relevance == "dropped":
            rule = c.verdicts.rule
            what = f"found by {c.found_by} (hybrid rank {rank_h}), dropped: {rule}"
            stage = "relevance filter"
        elif c.context_reason == "merged":
            rule = drop_rule(trace, c, winner_hop)
            what = f"kept (final {c.scores.final or 0:.4f}) but {rule}"
            stage = "multi-hop merge"
        else:
            stage = STAGE_NAMES.get(c.context_reason, c.context_reason)
            rule = "" if c.in_context else drop_rule(trace, c, winner_hop)
            detail = f": {rule}" if rule else ""
            what = f"found by {c.found_by}, final rank {c.ranks.final}{detail}"
        rows.append({**row, "stage": stage, "rule": rule, "what happened": what})
    return rows


def why_not(trace: RetrievalTrace, item_id: str, state: MemoryState | None = None) -> WhyNot:
    """Where ``item_id`` was lost in ``trace``: at which hop and stage, by which rule, or that search never found it
    (and, given the store's ``state`` of the memory, whether it was forgotten or never stored)."""
    winner_hop = {r.id: r.hop for r in trace.ranking}
    rows = _hop_rows(trace, item_id, winner_hop)
    ranked = next((r for r in trace.ranking if r.id == item_id), None)
    top_k = trace.settings.get("top_k")
    rule, rank, hop = "", None, None
    if ranked is not None:
        rank, hop = ranked.rank, ranked.hop
        if ranked.in_context:
            status, headline = "context", f"In the context at rank {ranked.rank} (from hop {ranked.hop})."
        else:
            status = ranked.reason
            c = next(c for h in trace.hops if h.hop == ranked.hop for c in h.candidates if c.id == item_id)
            rule = drop_rule(trace, c, winner_hop)
            headline = (
                f"Lost at the {STAGE_NAMES.get(status, status)} (final rank {ranked.rank}, hop {ranked.hop}): {rule}."
            )
    elif any(r["stage"] != "search" for r in rows):
        first = next(r for r in rows if r["stage"] == "relevance filter")
        status, rule, hop = "filtered", first["rule"], first["hop"]
        headline = f"Filtered out by the relevance filter at hop {first['hop']}: {first['what happened']}."
    elif state is not None and state.status in GONE:
        status, rule = state.status, state.detail
        what = {
            "archived": "It is archived (soft-forgotten), so search cannot return it",
            "forgotten": "It was deleted (hard-forgotten)",
            "missing": "No memory with this id is in the store (nor in the forget log)",
        }[state.status]
        headline = f"Never a candidate: {what}" + (f": {state.detail}." if state.detail else ".")
        rows = [{**r, "rule": STAGE_NAMES[status]} for r in rows]
    else:
        status, rule = "never", f"top_k={top_k} per source"
        headline = f"Never a candidate: no hop's search (top {top_k} per source, vector and full text) returned it."
    gone = _tombstone(trace, item_id, state) if status != "missing" else None
    if gone is not None and status in GONE:  # never a candidate, and forgotten: the tombstone goes with it
        return WhyNot(status, headline, tuple(rows), item_id, STAGE_NAMES[status], rule, rank, hop, gone[0])
    if gone is not None:
        # Forgotten since the trace ran: saying only "in the context" would hide that the memory is gone.
        tomb, rule = gone
        status = "forgotten" if tomb.get("mode") == "hard" else "archived"
        headline = f"Forgotten since this trace ran: {rule}. In this trace: {headline[:1].lower()}{headline[1:]}"
        return WhyNot(status, headline, tuple(rows), item_id, STAGE_NAMES[status], rule, rank, hop, tomb)
    return WhyNot(status, headline, tuple(rows), item_id, STAGE_NAMES.get(status, status), rule, rank, hop)
