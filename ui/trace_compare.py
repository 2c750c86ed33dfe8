"""Two retrieval traces side by side, as plain data: per memory its rank and scores in each, what entered or left
the context, and which settings differ. Any two traces of a user compare (the same question before and after a
label, two presets, two hop settings). No streamlit here, so it is testable on its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import CandidateTrace, RetrievalTrace, loss_label

from .trace_data import shorten

# Settings a trace records that are not knobs (they describe the run, not how it ranked).
NOT_SETTINGS = {"now"}
NO_RANK = 10**9


@dataclass(frozen=True)
class TraceComparison:
    rows: tuple[dict[str, Any], ...]  # one per memory either trace saw, best rank first
    entered: tuple[str, ...]  # in B's context, not in A's
    left: tuple[str, ...]  # in A's context, not in B's
    moved: tuple[str, ...]  # ranked in both, at different ranks
    settings: tuple[dict[str, Any], ...]  # the settings that differ: setting, a, b
    summary: dict[str, tuple[Any, Any]]  # question, hops, candidates, in context, context tokens: (a, b)


def _candidates(trace: RetrievalTrace) -> dict[str, CandidateTrace]:
    """Each memory's candidate record: the copy the final ranking kept (its hop), else the first hop's."""
    winner = {r.id: r.hop for r in trace.ranking}
    out: dict[str, CandidateTrace] = {}
    for hop in trace.hops:
        for c in hop.candidates:
            if c.id not in out or winner.get(c.id) == hop.hop:
                out[c.id] = c
    return out


def _arrow(rank_a: int | None, rank_b: int | None) -> str:
    if rank_a is None and rank_b is None:
        return ""
    if rank_a is None:
        return "new in B"
    if rank_b is None:
        return "not ranked in B"
    if rank_a == rank_b:
        return "="
    return f"↑{rank_a - rank_b}" if rank_b < rank_a else f"↓{rank_b - rank_a}"


def compare_traces(a: RetrievalTrace, b: RetrievalTrace, text_chars: int = 120) -> TraceComparison:
    """Trace ``a`` against trace ``b`` (B is the "after": arrows say how a memory moved from A to B)."""
    ranked_a = {r.id: r for r in a.ranking}
    ranked_b = {r.id: r for r in b.ranking}
    cands_a, cands_b = _candidates(a), _candidates(b)
    ctx_a, ctx_b = set(a.context_ids), set(b.context_ids)
    rows: list[dict[str, Any]] = []
    for memory_id in dict.fromkeys([*cands_a, *cands_b]):
        ra, rb = ranked_a.get(memory_id), ranked_b.get(memory_id)
        ca, cb = cands_a.get(memory_id), cands_b.get(memory_id)
        in_a, in_b = memory_id in ctx_a, memory_id in ctx_b
        context = "entered" if in_b and not in_a else "left" if in_a and not in_b else "in both" if in_a else ""
        some = ca or cb
        rows.append(
            {
                "id": memory_id,
                "text": shorten(some.text if some else "", text_chars),
                "context": context,
                "rank_a": ra.rank if ra else None,
                "rank_b": rb.rank if rb else None,
                "change": _arrow(ra.rank if ra else None, rb.rank if rb else None),
                "final_a": ca.scores.final if ca else None,
                "final_b": cb.scores.final if cb else None,
                "hybrid_a": ca.scores.hybrid if ca else None,
                "hybrid_b": cb.scores.hybrid if cb else None,
                "similarity_a": ca.scores.vector_similarity if ca else None,
                "similarity_b": cb.scores.vector_similarity if cb else None,
                "outcome_a": loss_label(ca.context_reason) if ca else "not found",
                "outcome_b": loss_label(cb.context_reason) if cb else "not found",
                "hop_a": ra.hop if ra else (_first_hop(a, memory_id)),
                "hop_b": rb.hop if rb else (_first_hop(b, memory_id)),
                "kind": some.kind if some else "",
            }
        )
    rows.sort(key=lambda r: (min(r["rank_a"] or NO_RANK, r["rank_b"] or NO_RANK), r["id"]))
    moved = tuple(r["id"] for r in rows if r["rank_a"] and r["rank_b"] and r["rank_a"] != r["rank_b"])
    return TraceComparison(
        rows=tuple(rows),
        entered=tuple(i for i in b.context_ids if i not in ctx_a),
        left=tuple(i for i in a.context_ids if i not in ctx_b),
        moved=moved,
        settings=tuple(setting_differences(a.settings.to_dict(), b.settings.to_dict())),
        summary={
            "question": (a.question, b.question),
            "hops": (len(a.hops), len(b.hops)),
            "candidates": (len(cands_a), len(cands_b)),
            "in context": (len(a.context_ids), len(b.context_ids)),
            "context tokens": (a.context_tokens, b.context_tokens),
        },
    )


def _first_hop(trace: RetrievalTrace, memory_id: str) -> int | None:
    return next((h.hop for h in trace.hops for c in h.candidates if c.id == memory_id), None)


def setting_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings whose values differ between two traces (a setting only one trace recorded counts too)."""
    out = []
    for key in sorted(set(a) | set(b)):
        if key in NOT_SETTINGS:
            continue
        va, vb = a.get(key), b.get(key)
        if va != vb:
            out.append({"setting": key, "a": "" if va is None else str(va), "b": "" if vb is None else str(vb)})
    return out


@dataclass(frozen=True)
class ComparedRank:
    """A memory's move from trace A to trace B in the shape of a replay's ranking entry (ui.trace_figures.RankShift),
    for the slope chart."""

    id: str
    old_rank: int | None  # in A
    rank: int | None  # in B
    context_change: str  # entered | left | stayed | out


def rank_shift_rows(comparison: TraceComparison) -> list[ComparedRank]:
    """The comparison's ranked memories as rank shifts (old_rank, rank, context_change), for the slope chart."""
    change = {"entered": "entered", "left": "left", "in both": "stayed"}
    return [
        ComparedRank(r["id"], r["rank_a"], r["rank_b"], change.get(r["context"], "out"))
        for r in comparison.rows
        if r["rank_a"] is not None or r["rank_b"] is not None
    ]
