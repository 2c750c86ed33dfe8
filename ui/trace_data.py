"""Plain-data views of a retrieval trace for the trace and feedback pages: table rows, the score breakdown, why a
memory was lost, what-if comparisons. No streamlit and no plotly here, so all of it is testable on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from engine import (
    SCORE_KEYS,
    CandidateScores,
    HopTrace,
    MemoryState,
    RankedMemory,
    RetrievalTrace,
    Settings,
    Tombstone,
    WhyNot,
    asks_rather_than_tells,
    drop_rule,
    loss_label,
    personal_word,
    spoken_by_assistant,
)
from engine import feedback_factor as engine_feedback_factor
from engine import why_not as engine_why_not

from .text import one_line, when


def shorten(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (for labels and table cells; full text is shown elsewhere)."""
    return one_line(text, limit)


# -- tables -----------------------------------------------------------------------------------------------------
def candidate_rows(hop: HopTrace, text_chars: int = 200) -> list[dict[str, Any]]:
    """One row per candidate of a hop, in the hop's order (kept by final score, then the dropped ones)."""
    rows = []
    for c in hop.candidates:
        row: dict[str, Any] = {
            "id": c.id,
            "kind": c.kind,
            "found_by": c.found_by,
            "relevance": c.verdicts.relevance,
            "rule": c.verdicts.rule,
            "outcome": loss_label(c.context_reason),
            "in_context": c.in_context,
            "tokens": c.tokens,
        }
        # The table's columns are the records' fields, in pipeline order: every score, then the rank after each stage.
        row.update(c.scores.to_dict())
        row.update({f"rank_{stage}": rank for stage, rank in c.ranks.to_dict().items()})
        row["text"] = forgotten_label(c.forgotten) if c.forgotten and not c.text else shorten(c.text, text_chars)
        row["preceded_by"] = shorten(c.preceding_text, text_chars) if c.preceding_text else ""
        row["forgotten"] = forgotten_label(c.forgotten) if c.forgotten else ""
        # The entity stage's paths to the memory ("Caroline -[lives_in]- Sweden (distance 1)"), when it linked it.
        row["entity_path"] = c.entity.describe() if c.entity is not None else ""
        # Which of the memory's extra keys the key search matched (its kind, text and score), when one did.
        row["key_match"] = shorten(c.key.describe(), text_chars) if c.key is not None else ""
        rows.append(row)
    return rows


def forgotten_label(tombstone: Tombstone | None) -> str:
    """A forgotten memory's tombstone in a trace, for a table cell: how, when, by whom and why (the forget log's
    entry). A hard-forgotten memory's text is gone from the trace; this is what stands in its place."""
    if not tombstone:
        return ""
    what = "[forgotten: text deleted]" if tombstone.hard else "[forgotten: archived]"
    who = tombstone.actor or "?"
    why = tombstone.reason or ""
    return one_line(f"{what} {tombstone.mode} forget {when(tombstone.at)} by {who}" + (f": {why}" if why else ""), 200)


def forgotten_rows(trace: RetrievalTrace) -> list[dict[str, Any]]:
    """One row per memory of the trace forgotten since it was stored: its tombstone."""
    return [
        {
            "id": i,
            "mode": t.mode,
            "forgotten at (UTC)": when(t.at),
            "by": t.actor,
            "reason": t.reason,
            "forget log entry": t.forget_log_id,
        }
        for i, t in sorted(trace.forgotten.items())
    ]


def used_score_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Score columns that have a value somewhere (MMR and LLM columns are empty unless those stages ran)."""
    return [k for k in SCORE_KEYS if any(r.get(k) is not None for r in rows)]


def ranking_rows(trace: RetrievalTrace) -> list[dict[str, Any]]:
    """The merged final order of the trace with each memory's outcome."""
    texts = candidate_texts(trace)
    for item_id, tomb in trace.forgotten.items():
        if not texts.get(item_id):
            texts[item_id] = forgotten_label(tomb)
    return [
        {
            "rank": r.rank,
            "id": r.id,
            "kind": r.kind,
            "hop": r.hop,
            "final": r.final,
            "in_context": r.in_context,
            "outcome": loss_label(r.reason),
            "tokens": r.tokens,
            "text": shorten(texts.get(r.id, ""), 120),
        }
        for r in trace.ranking
    ]


def has_preceding_texts(trace: RetrievalTrace) -> bool:
    """Whether any candidate of the trace has a preceding text (only then do its settings change anything)."""
    return any(c.preceding_text for hop in trace.hops for c in hop.candidates)


def has_assistant_turns(trace: RetrievalTrace) -> bool:
    """Whether any candidate is a stored assistant turn (only then does assistant_turn_penalty change anything)."""
    return any(spoken_by_assistant(c.text) for hop in trace.hops for c in hop.candidates)


def speaker_caption(trace: RetrievalTrace) -> str | None:
    """What the speaker stage did, in words (None: it did nothing)."""
    r = trace.settings.retrieval
    cands = [c for hop in trace.hops for c in hop.candidates]
    asking = {
        c.id
        for c in cands
        if c.scores.hybrid_speaker_part is not None
        and r.question_turn_penalty > 0
        and asks_rather_than_tells(c.text, int(r.question_turn_max_words))
    }
    parts = []
    if trace.speaker is not None:
        lowered = {c.id for c in cands if c.scores.hybrid_speaker_part is not None and spoken_by_assistant(c.text)}
        if not lowered:  # a store without conversation turns: say so rather than "0 candidates"
            parts.append(
                f"Speaker stage: the question asks about the user ({trace.speaker}); no candidate was an assistant "
                "turn, so none was lowered"
            )
        else:
            parts.append(
                f"Speaker stage: the question asks about the user ({trace.speaker}), so each assistant turn's hybrid "
                f"score was lowered by assistant_turn_penalty {r.assistant_turn_penalty:g} ({len(lowered)} "
                "candidate(s), column hybrid_speaker_part)"
            )
    if asking:
        parts.append(
            f"{'Each' if parts else 'Speaker stage: each'} turn that asks (ends with a question mark) lost "
            f"question_turn_penalty {r.question_turn_penalty:g} ({len(asking)} candidate(s), column "
            "hybrid_speaker_part)"
        )
    return ". ".join(parts) or None


def brevity_caption(trace: RetrievalTrace) -> str | None:
    """What the brevity stage did, in words (None: it lowered no candidate, and no turn was left alone for the
    question's person)."""
    r = trace.settings.retrieval
    personal = personal_word(trace.question) if r.brevity_weight > 0 else None
    if personal is not None and has_preceding_texts(trace):
        return (
            f'Brevity stage: off for this question (it speaks in the first or second person: "{personal}"), where '
            "a short turn can be the whole answer"
        )
    short = {c.id for hop in trace.hops for c in hop.candidates if (c.scores.brevity_factor or 1.0) < 1.0}
    if personal is not None or not short:
        return None
    return (
        f"Brevity stage: {len(short)} short turn(s) of a conversation kept (words / {r.brevity_full_words}) ** "
        f"{r.brevity_weight:g} of their score (columns brevity_words, brevity_factor)"
    )


def candidate_texts(trace: RetrievalTrace) -> dict[str, str]:
    """Text snapshot per candidate id (the first hop that saw it)."""
    out: dict[str, str] = {}
    for hop in trace.hops:
        for c in hop.candidates:
            out.setdefault(c.id, c.text)
    return out


def dropped_rows(trace: RetrievalTrace, hop: HopTrace) -> list[dict[str, Any]]:
    """Candidates of this hop that did not reach the context, with the stage and the rule that stopped them."""
    winner_hop = {r.id: r.hop for r in trace.ranking}
    rows = []
    for c in hop.candidates:
        if c.in_context:
            continue
        rows.append(
            {
                "id": c.id,
                "kind": c.kind,
                "stage": loss_label(c.context_reason),
                "rule": drop_rule(trace, c, winner_hop),
                "hybrid": c.scores.hybrid,
                "final": c.scores.final,
                "text": forgotten_label(c.forgotten) if c.forgotten and not c.text else shorten(c.text, 160),
            }
        )
    return rows


def budget_share(trace: RetrievalTrace) -> float:
    """Context tokens over the budget, clipped to 0..1 for a progress bar."""
    budget = float(trace.settings.retrieval.budget_tokens)
    return 0.0 if budget <= 0 else max(0.0, min(1.0, trace.context_tokens / budget))


def trace_label(summary: Mapping[str, Any]) -> str:
    """How a stored trace is listed: when, hops, the question (one line) and its id.

    The id keeps labels unique: Streamlit maps a selectbox choice back through its label, so two traces of the same
    question in the same minute must not look alike."""
    when_text = when(summary.get("created_at"))
    hops = summary.get("hops")
    return (
        f"{when_text} · {hops} hop{'s' if hops != 1 else ''} · {shorten(summary.get('question', ''), 80)} · "
        f"{summary.get('trace_id', '')}"
    )


# -- the score breakdown ----------------------------------------------------------------------------------------
def score_parts(scores: CandidateScores | Mapping[str, Any], settings: Settings) -> list[tuple[str, float]]:
    """How a final score was built, as parts that add up to it.

    The hybrid score is split into its vector part and its BM25 part (as the fusion recorded them; for older traces
    ``(1-w)*similarity`` and ``w*bm25_norm`` under the trace's retrieval ``settings``); decay, importance, feedback
    and the later-hop discount are multiplicative, so each is shown as the signed change it made to the running
    score. A score the trace lacks (an older trace, or a stage that did not run) changes nothing.
    """
    s = CandidateScores.from_dict(scores)
    hybrid = float(s.hybrid or 0.0)
    if s.hybrid_bm25_part is not None:  # recorded by the fusion stage (any fusion) since it has existed
        bm25_part = float(s.hybrid_bm25_part)
        vector_part = hybrid - bm25_part
    elif settings.hybrid_enabled:
        w = float(settings.bm25_weight)
        bm25_part = w * float(s.bm25_norm or 0.0)
        vector_part = hybrid - bm25_part  # == (1-w)*similarity, taken from the stored hybrid so the sum is exact
    else:
        bm25_part, vector_part = 0.0, hybrid
    decayed = hybrid * _or(s.decay, 1.0)
    temporal = _or(s.temporal, decayed)
    final = _or(s.final, temporal)
    # From the stored factor, not final / hop_factor: a hop_weight of 0 would otherwise book the hop's discount
    # as feedback.
    after_feedback = temporal * _or(s.feedback_factor, 1.0)
    return [
        ("vector", vector_part),
        ("bm25", bm25_part),
        ("decay", decayed - hybrid),
        ("importance", temporal - decayed),
        ("feedback", after_feedback - temporal),
        ("hop", final - after_feedback),
    ]


def _or(value: float | None, missing: float) -> float:
    return missing if value is None else float(value)


def feedback_factor(net: int, settings: Settings | Mapping[str, Any]) -> float:
    """The pipeline's feedback factor (:func:`engine.feedback_factor`, the one formula) for a net count under a
    store's or a trace's settings; a setting an older trace lacks has its default."""
    if isinstance(settings, Mapping):
        weight = settings.get("feedback_weight", _DEFAULTS.feedback_weight)
        cap = settings.get("feedback_cap", _DEFAULTS.feedback_cap)
    else:
        weight, cap = settings.feedback_weight, settings.feedback_cap
    return engine_feedback_factor(net, float(weight), int(cap))


_DEFAULTS = Settings()


# -- why not? ---------------------------------------------------------------------------------------------------
def why_not(trace: RetrievalTrace, item_id: str, state: MemoryState | None = None) -> WhyNot:
    """Where a memory was lost in a trace (the engine's analysis, :func:`engine.why_not`)."""
    return engine_why_not(trace, item_id, state)


# -- what-if ----------------------------------------------------------------------------------------------------
def changed_overrides(trace_settings: Settings, values: Mapping[str, Any]) -> dict[str, Any]:
    """Only the settings the user actually changed (from the trace's retrieval settings, ``trace.settings.retrieval``),
    so an untouched what-if replays the original exactly."""
    out = {}
    for key, value in values.items():
        old = getattr(trace_settings, key)
        if isinstance(value, float) and isinstance(old, (int, float)) and not isinstance(old, bool):
            if abs(float(old) - value) <= 1e-9 * max(1.0, abs(value)):
                continue
        elif value == old:
            continue
        out[key] = value
    return out


def whatif_tables(replayed: RetrievalTrace, texts: Mapping[str, str]) -> tuple[list[dict], list[dict]]:
    """Side-by-side tables of a replay: the old order (rank, context) and the new one (rank, change, context)."""
    before = sorted((r for r in replayed.ranking if r.old_rank is not None), key=lambda r: r.old_rank or 0)
    after = sorted((r for r in replayed.ranking if r.rank is not None), key=lambda r: r.rank or 0)
    old_rows = [
        {
            "rank": r.old_rank,
            "id": r.id,
            "in_context": r.old_in_context,
            "text": shorten(texts.get(r.id, ""), 80),
        }
        for r in before
    ]
    new_rows = [
        {
            "rank": r.rank,
            "id": r.id,
            "change": _arrow(r.rank_change),
            "context": r.context_change,
            "final": r.final,
            "text": shorten(texts.get(r.id, ""), 80),
        }
        for r in after
    ]
    new_rows += [
        {
            "rank": None,
            "id": r.id,
            "change": "filtered",
            "context": r.context_change,
            "final": None,
            "text": shorten(texts.get(r.id, ""), 80),
        }
        for r in replayed.ranking
        if r.rank is None
    ]
    return old_rows, new_rows


def _arrow(change: int | None) -> str:
    if change is None:
        return "new"
    if change == 0:
        return "="
    return f"↑{change}" if change > 0 else f"↓{-change}"


def whatif_summary(replayed: RetrievalTrace) -> dict[str, list[str]]:
    """Ids that moved, entered or left the context in a replay."""
    return {
        "moved": [r.id for r in replayed.ranking if r.rank_change],
        "entered": [r.id for r in replayed.ranking if r.context_change == "entered"],
        "left": [r.id for r in replayed.ranking if r.context_change == "left"],
    }


# -- feedback ---------------------------------------------------------------------------------------------------
def labelling_rows(trace: RetrievalTrace, limit: int, only_context: bool) -> list[dict[str, Any]]:
    """The candidates a person labels from a trace: the merged order (each with the hop its copy came from)."""
    texts = candidate_texts(trace)
    rows = [r for r in trace.ranking if r.in_context or not only_context]
    return [
        {
            "id": r.id,
            "kind": r.kind,
            "hop": r.hop,
            "rank": r.rank,
            "in_context": r.in_context,
            "text": texts.get(r.id, ""),
        }
        for r in rows[:limit]
    ]


def unlabelled_queue(
    summaries: Iterable[Mapping[str, Any]],
    labelled: Iterable[str],
    fetch: Callable[[str], RetrievalTrace],
    limit: int = 15,
) -> list[dict]:
    """Memories that reached a recent trace's context and have no feedback event yet (newest trace first).

    ``summaries`` are ``engine.traces.list_traces`` rows (they carry ``context_ids``), so only the traces that
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
        r = next(r for r in trace.ranking if r.id == item_id)
        out.append(
            {
                "id": item_id,
                "kind": r.kind,
                "trace_id": trace_id,
                "hop": r.hop,
                "rank": r.rank,
                "question": shorten(trace.question, 80),
                "text": candidate_texts(trace).get(item_id, ""),
            }
        )
    return out


def rank_comparison(before: RetrievalTrace, after: RetrievalTrace, ids: Sequence[str] | None = None) -> list[dict]:
    """Ranks of the same memories in two traces of one question (e.g. the stored one and a fresh retrieval)."""
    old = {r.id: r for r in before.ranking}
    new = {r.id: r for r in after.ranking}
    keys = list(ids) if ids is not None else list(dict.fromkeys([*old, *new]))
    rows = []
    for key in keys:
        o, n = old.get(key), new.get(key)
        rows.append(
            {
                "id": key,
                "rank_before": o.rank if o else None,
                "rank_after": n.rank if n else None,
                "change": _arrow(_rank_difference(o, n)) if n else "gone",
                "final_before": o.final if o else None,
                "final_after": n.final if n else None,
                "in_context_before": bool(o and o.in_context),
                "in_context_after": bool(n and n.in_context),
            }
        )
    return rows


def _rank_difference(before: RankedMemory | None, after: RankedMemory | None) -> int | None:
    """How far a memory moved up between two rankings (None unless both ranked it)."""
    if before is None or after is None or before.rank is None or after.rank is None:
        return None
    return before.rank - after.rank
