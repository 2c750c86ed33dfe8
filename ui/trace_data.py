"""Plain-data views of a retrieval trace for the trace and feedback pages: table rows, the score breakdown, why a
memory was lost, what-if comparisons. No streamlit and no plotly here, so all of it is testable on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from engine import CandidateTrace, HopTrace, RetrievalTrace

from .text import one_line

# The columns of the candidates table, in pipeline order (scores keep the names the trace gives them).
SCORE_COLUMNS = ("vector_similarity", "fts_score", "bm25_raw", "bm25_preceding", "bm25_norm", "hybrid", "age_days",
                 "decay", "importance", "importance_factor", "temporal", "feedback_net", "feedback_factor",
                 "hop_factor", "final", "mmr_relevance", "mmr_max_similarity", "mmr_value", "llm_relevance")
RANK_STAGES = ("hybrid", "filter", "temporal", "feedback", "final", "mmr")
STAGE_NAMES = {"filtered": "relevance filter", "merged": "multi-hop merge", "budget": "token budget",
               "budget_stop": "token budget (stop mode)", "cap": "context item cap", "context": "in context"}


def shorten(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (for labels and table cells; full text is shown elsewhere)."""
    return one_line(text, limit)


# -- tables -----------------------------------------------------------------------------------------------------
def candidate_rows(hop: HopTrace, text_chars: int = 200) -> list[dict[str, Any]]:
    """One row per candidate of a hop, in the hop's order (kept by final score, then the dropped ones)."""
    rows = []
    for c in hop.candidates:
        row: dict[str, Any] = {"id": c.id, "kind": c.kind, "found_by": c.found_by,
                               "relevance": c.verdicts.get("relevance", ""), "rule": c.verdicts.get("rule", ""),
                               "outcome": STAGE_NAMES.get(c.context_reason, c.context_reason),
                               "in_context": c.in_context, "tokens": c.tokens}
        for key in SCORE_COLUMNS:
            row[key] = c.scores.get(key)
        for stage in RANK_STAGES:
            row[f"rank_{stage}"] = c.ranks.get(stage)
        row["text"] = shorten(c.text, text_chars)
        row["preceded_by"] = shorten(c.preceding_text, text_chars) if c.preceding_text else ""
        rows.append(row)
    return rows


def used_score_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Score columns that have a value somewhere (MMR and LLM columns are empty unless those stages ran)."""
    return [k for k in SCORE_COLUMNS if any(r.get(k) is not None for r in rows)]


def ranking_rows(trace: RetrievalTrace) -> list[dict[str, Any]]:
    """The merged final order of the trace with each memory's outcome."""
    texts = candidate_texts(trace)
    return [{"rank": r["rank"], "id": r["id"], "kind": r["kind"], "hop": r["hop"], "final": r["final"],
             "in_context": r["in_context"], "outcome": STAGE_NAMES.get(r["reason"], r["reason"]),
             "tokens": r.get("tokens"), "text": shorten(texts.get(r["id"], ""), 120)} for r in trace.ranking]


def has_preceding_texts(trace: RetrievalTrace) -> bool:
    """Whether any candidate of the trace has a preceding text (only then do its settings change anything)."""
    return any(c.preceding_text for hop in trace.hops for c in hop.candidates)


def candidate_texts(trace: RetrievalTrace) -> dict[str, str]:
    """Text snapshot per candidate id (the first hop that saw it)."""
    out: dict[str, str] = {}
    for hop in trace.hops:
        for c in hop.candidates:
            out.setdefault(c.id, c.text)
    return out


def _used_before(trace: RetrievalTrace, rank: int) -> int:
    return sum(r.get("tokens") or 0 for r in trace.ranking if r["in_context"] and r["rank"] < rank)


def dropped_rows(trace: RetrievalTrace, hop: HopTrace) -> list[dict[str, Any]]:
    """Candidates of this hop that did not reach the context, with the stage and the rule that stopped them."""
    winner_hop = {r["id"]: r["hop"] for r in trace.ranking}
    budget = int(trace.settings.get("budget_tokens") or 0)
    rows = []
    for c in hop.candidates:
        if c.in_context:
            continue
        rows.append({"id": c.id, "kind": c.kind, "stage": STAGE_NAMES.get(c.context_reason, c.context_reason),
                     "rule": _drop_rule(trace, c, winner_hop, budget), "hybrid": c.scores.get("hybrid"),
                     "final": c.scores.get("final"), "text": shorten(c.text, 160)})
    return rows


def _drop_rule(trace: RetrievalTrace, c: CandidateTrace, winner_hop: Mapping[str, int], budget: int) -> str:
    reason = c.context_reason
    if reason == "filtered":
        return c.verdicts.get("rule", "dropped by the relevance filter")
    if reason == "merged":
        other = winner_hop.get(c.id)
        return f"the copy found at hop {other} scored higher" if other else "another copy scored higher"
    rank = c.ranks.get("final")
    if reason == "budget":
        used = _used_before(trace, rank) if rank else None
        left = f"; {budget - used} of {budget} tokens were left" if used is not None else ""
        return f"needs {c.tokens} tokens{left}"
    if reason == "budget_stop":
        return "assembly_mode=stop: an earlier memory did not fit, so assembly ended there"
    if reason == "cap":
        return f"context_max_items={trace.settings.get('context_max_items')} reached"
    return reason


def budget_share(trace: RetrievalTrace) -> float:
    """Context tokens over the budget, clipped to 0..1 for a progress bar."""
    budget = float(trace.settings.get("budget_tokens") or 0)
    return 0.0 if budget <= 0 else max(0.0, min(1.0, trace.context_tokens / budget))


def trace_label(summary: Mapping[str, Any]) -> str:
    """How a stored trace is listed: when, hops, the question (one line) and its id.

    The id keeps labels unique: Streamlit maps a selectbox choice back through its label, so two traces of the same
    question in the same minute must not look alike."""
    when = summary.get("created_at")
    when_text = when.strftime("%Y-%m-%d %H:%M") if isinstance(when, (datetime, date)) else str(when or "")[:16]
    hops = summary.get("hops")
    return (f"{when_text} · {hops} hop{'s' if hops != 1 else ''} · {shorten(summary.get('question', ''), 80)} · "
            f"{summary.get('trace_id', '')}")


# -- the score breakdown ----------------------------------------------------------------------------------------
def score_parts(scores: Mapping[str, Any], settings: Mapping[str, Any]) -> list[tuple[str, float]]:
    """How a final score was built, as parts that add up to it.

    The hybrid score is split into its vector part ``(1-w)*similarity`` and its BM25 part ``w*bm25_norm``; decay,
    importance, feedback and the later-hop discount are multiplicative, so each is shown as the signed change it
    made to the running score.
    """
    hybrid = float(scores.get("hybrid") or 0.0)
    if settings.get("hybrid_enabled", True):
        w = float(settings.get("bm25_weight", 0.3))
        bm25_part = w * float(scores.get("bm25_norm") or 0.0)
        vector_part = hybrid - bm25_part  # == (1-w)*similarity, taken from the stored hybrid so the sum is exact
    else:
        bm25_part, vector_part = 0.0, hybrid

    def stored(name: str, missing: float) -> float:
        value = scores.get(name)
        return missing if value is None else float(value)

    decayed = hybrid * stored("decay", 1.0)
    temporal = stored("temporal", decayed)
    final = stored("final", temporal)
    # From the stored factor, not final / hop_factor: a hop_weight of 0 would otherwise book the hop's discount
    # as feedback.
    feedback = scores.get("feedback_factor")
    after_feedback = temporal * float(feedback if feedback is not None else 1.0)
    return [("vector", vector_part), ("bm25", bm25_part), ("decay", decayed - hybrid),
            ("importance", temporal - decayed), ("feedback", after_feedback - temporal),
            ("hop", final - after_feedback)]


def feedback_factor(net: int, settings: Mapping[str, Any]) -> float:
    """The pipeline's feedback factor 1 + w_f*clamp(net, -cap, cap)/cap for a net count under given settings."""
    wf = float(settings.get("feedback_weight", 0.5))
    cap = int(settings.get("feedback_cap", 5)) or 1
    return 1.0 + wf * max(-cap, min(cap, net)) / cap if (wf > 0 and net) else 1.0


# -- why not? ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhyNot:
    status: str  # context | budget | budget_stop | cap | filtered | never
    headline: str
    rows: tuple[dict, ...]  # one per hop: what happened to the memory there


def why_not(trace: RetrievalTrace, item_id: str) -> WhyNot:
    """Where a memory was lost in a trace: at which hop and stage, by which rule, or that search never found it."""
    rows = []
    top_k = trace.settings.get("top_k")
    ranked = next((r for r in trace.ranking if r["id"] == item_id), None)
    winner_hop = {r["id"]: r["hop"] for r in trace.ranking}
    budget = int(trace.settings.get("budget_tokens") or 0)
    for hop in trace.hops:
        c = next((c for c in hop.candidates if c.id == item_id), None)
        if c is None:
            rows.append({"hop": hop.hop, "query": shorten(hop.query, 80), "stage": "search",
                         "what happened": f"not among the top {top_k} vector or full-text results"})
            continue
        rank_h = c.ranks.get("hybrid")
        if c.verdicts.get("relevance") == "dropped":
            what = f"found by {c.found_by} (hybrid rank {rank_h}), dropped: {c.verdicts.get('rule', '')}"
            stage = "relevance filter"
        elif c.context_reason == "merged":
            what = f"kept (final {c.scores.get('final', 0):.4f}) but {_drop_rule(trace, c, winner_hop, budget)}"
            stage = "multi-hop merge"
        else:
            stage = STAGE_NAMES.get(c.context_reason, c.context_reason)
            detail = "" if c.in_context else f": {_drop_rule(trace, c, winner_hop, budget)}"
            what = f"found by {c.found_by}, final rank {c.ranks.get('final')}{detail}"
        rows.append({"hop": hop.hop, "query": shorten(hop.query, 80), "stage": stage, "what happened": what})
    if ranked is not None:
        if ranked["in_context"]:
            status, headline = "context", f"In the context at rank {ranked['rank']} (from hop {ranked['hop']})."
        else:
            status = ranked["reason"]
            c = next(c for h in trace.hops if h.hop == ranked["hop"] for c in h.candidates if c.id == item_id)
            headline = (f"Lost at the {STAGE_NAMES.get(status, status)} (final rank {ranked['rank']}, hop "
                        f"{ranked['hop']}): {_drop_rule(trace, c, winner_hop, budget)}.")
    elif any(r["stage"] != "search" for r in rows):
        first = next(r for r in rows if r["stage"] == "relevance filter")
        status = "filtered"
        headline = f"Filtered out by the relevance filter at hop {first['hop']}: {first['what happened']}."
    else:
        status = "never"
        headline = (f"Never a candidate: no hop's search (top {top_k} per source, vector and full text) "
                    "returned it.")
    return WhyNot(status, headline, tuple(rows))


# -- what-if ----------------------------------------------------------------------------------------------------
def changed_overrides(trace_settings: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Only the settings the user actually changed, so an untouched what-if replays the original exactly."""
    out = {}
    for key, value in values.items():
        old = trace_settings.get(key)
        if isinstance(value, float) and isinstance(old, (int, float)) and not isinstance(old, bool):
            if abs(float(old) - value) <= 1e-9 * max(1.0, abs(value)):
                continue
        elif value == old:
            continue
        out[key] = value
    return out


def whatif_tables(replayed: RetrievalTrace, texts: Mapping[str, str]) -> tuple[list[dict], list[dict]]:
    """Side-by-side tables of a replay: the old order (rank, context) and the new one (rank, change, context)."""
    before = sorted((r for r in replayed.ranking if r.get("old_rank") is not None), key=lambda r: r["old_rank"])
    after = sorted((r for r in replayed.ranking if r.get("rank") is not None), key=lambda r: r["rank"])
    old_rows = [{"rank": r["old_rank"], "id": r["id"], "in_context": r["old_in_context"],
                 "text": shorten(texts.get(r["id"], ""), 80)} for r in before]
    new_rows = [{"rank": r["rank"], "id": r["id"], "change": _arrow(r.get("rank_change")),
                 "context": r["context_change"], "final": r["final"],
                 "text": shorten(texts.get(r["id"], ""), 80)} for r in after]
    new_rows += [{"rank": None, "id": r["id"], "change": "filtered", "context": r["context_change"], "final": None,
                  "text": shorten(texts.get(r["id"], ""), 80)} for r in replayed.ranking if r.get("rank") is None]
    return old_rows, new_rows


def _arrow(change: int | None) -> str:
    if change is None:
        return "new"
    if change == 0:
        return "="
    return f"↑{change}" if change > 0 else f"↓{-change}"


def whatif_summary(replayed: RetrievalTrace) -> dict[str, list[str]]:
    """Ids that moved, entered or left the context in a replay."""
    return {"moved": [r["id"] for r in replayed.ranking if r.get("rank_change")],
            "entered": [r["id"] for r in replayed.ranking if r.get("context_change") == "entered"],
            "left": [r["id"] for r in replayed.ranking if r.get("context_change") == "left"]}


# -- feedback ---------------------------------------------------------------------------------------------------
def labelling_rows(trace: RetrievalTrace, limit: int, only_context: bool) -> list[dict[str, Any]]:
    """The candidates a person labels from a trace: the merged order (each with the hop its copy came from)."""
    texts = candidate_texts(trace)
    rows = [r for r in trace.ranking if r["in_context"] or not only_context]
    return [{"id": r["id"], "kind": r["kind"], "hop": r["hop"], "rank": r["rank"], "in_context": r["in_context"],
             "text": texts.get(r["id"], "")} for r in rows[:limit]]


def unlabelled_queue(summaries: Iterable[Mapping[str, Any]], labelled: Iterable[str],
                     fetch: Callable[[str], RetrievalTrace], limit: int = 15) -> list[dict]:
    """Memories that reached a recent trace's context and have no feedback event yet (newest trace first).

    ``summaries`` are :meth:`MemoryEngine.list_traces` rows (they carry ``context_ids``), so only the traces that
    actually supply a shown row are fetched (with ``fetch``), for its hop and text.
    """
    done = set(labelled)
    picked: list[tuple[str, str]] = []
    for summary in summaries:
        for item_id in summary.get("context_ids") or ():
            if item_id not in done:
                done.add(item_id)
                picked.append((summary["trace_id"], item_id))
        if len(picked) >= limit:
            break
    out = []
    for trace_id, item_id in picked[:limit]:
        trace = fetch(trace_id)
        r = next(r for r in trace.ranking if r["id"] == item_id)
        out.append({"id": item_id, "kind": r["kind"], "trace_id": trace_id, "hop": r["hop"], "rank": r["rank"],
                    "question": shorten(trace.question, 80), "text": candidate_texts(trace).get(item_id, "")})
    return out


def rank_comparison(before: RetrievalTrace, after: RetrievalTrace, ids: Sequence[str] | None = None) -> list[dict]:
    """Ranks of the same memories in two traces of one question (e.g. the stored one and a fresh retrieval)."""
    old = {r["id"]: r for r in before.ranking}
    new = {r["id"]: r for r in after.ranking}
    keys = list(ids) if ids is not None else list(dict.fromkeys([*old, *new]))
    rows = []
    for key in keys:
        o, n = old.get(key), new.get(key)
        rows.append({"id": key, "rank_before": o["rank"] if o else None, "rank_after": n["rank"] if n else None,
                     "change": _arrow((o["rank"] - n["rank"]) if o and n else None) if n else "gone",
                     "final_before": o["final"] if o else None, "final_after": n["final"] if n else None,
                     "in_context_before": bool(o and o["in_context"]), "in_context_after": bool(n and n["in_context"])})
    return rows
