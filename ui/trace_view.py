"""Streamlit pieces that draw a retrieval trace: header, hops, context, what-if and why-not results.

Stored memory text only ever reaches the screen through st.dataframe, st.text or st.code (never markdown); the few
markdown strings built here escape everything that came from the store or the user with ``md_escape``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd
import streamlit as st

from engine import MemoryEngine, Relevance, RetrievalTrace, Settings, personal_word

from .layout import metric_row
from .text import md_escape, when
from .trace_data import (
    SCORE_KEYS,
    brevity_caption,
    budget_share,
    candidate_rows,
    dropped_rows,
    forgotten_rows,
    has_assistant_turns,
    has_preceding_texts,
    ranking_rows,
    speaker_caption,
    used_score_columns,
)
from .trace_figures import score_waterfall
from .trace_wording import proposal_lines, proposer_words, strategy_words
from .wording import fusion_caption, rule_words, stop_reason_words

_FLOAT = st.column_config.NumberColumn(format="%.4f")
_TEXT = st.column_config.TextColumn(width="large")
_INT_COLUMNS = {
    "tokens",
    "age_days",
    "feedback_net",
    "hop",
    "net_then",
    "net_now",
    "delta",
    "time_days_outside",
    "brevity_words",
}
_FLOAT_COLUMNS = (set(SCORE_KEYS) - _INT_COLUMNS) | {"final_before", "final_after", "factor_then", "factor_now"}


def cached_trace(engine: MemoryEngine, trace_id: str, key: str) -> RetrievalTrace:
    """Fetch a stored trace once per browser session. A trace changes only when a forget rewrites it (hard: the
    memory's text becomes its tombstone); the app frame empties this cache then (ui/forget_watch.py)."""
    cache: dict[str, RetrievalTrace] = st.session_state.setdefault(key, {})
    if trace_id not in cache:
        if len(cache) >= 20:
            cache.pop(next(iter(cache)))
        cache[trace_id] = engine.traces.get(trace_id)
    return cache[trace_id]


# Column keys stay the records' field names (exports and tests read them); the header a person reads says it in words.
_LABELS = {
    "rank_final": "final rank",
    "rank_hybrid": "rank after fusion",
    "rank_filter": "rank after filter",
    "rank_temporal": "rank after decay",
    "rank_feedback": "rank after feedback",
    "rank_mmr": "rank after MMR",
    "rank_a": "rank in A",
    "rank_b": "rank in B",
    "rank_before": "rank before",
    "rank_after": "rank after",
}


def column_label(key: str) -> str | None:
    """The header shown for a rank column (``rank_final`` -> ``final rank``), or None to show the key itself."""
    return _LABELS.get(key)


def number_config(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Column formats: 4 decimals for scores, whole numbers for ranks and counts, wide text."""
    config: dict[str, Any] = {"text": _TEXT}
    keys = dict.fromkeys(k for r in rows[:1] for k in r)
    for key in keys:
        if key.startswith("rank") or key in _INT_COLUMNS:
            config[key] = st.column_config.NumberColumn(column_label(key), format="%d")
        elif key in _FLOAT_COLUMNS or any(isinstance(r.get(key), float) for r in rows[:50]):
            config[key] = _FLOAT
    return config


def table(
    rows: Sequence[Mapping[str, Any]],
    key: str,
    columns: Sequence[str] | None = None,
    height: int | Literal["auto", "stretch", "content"] = "auto",
    pinned: Sequence[str] = (),
    selectable: bool = False,
) -> str | None:
    """A read-only table of plain rows (text cells stay text, missing values are blank cells). ``pinned`` columns
    stay on the left while the rest scrolls; ``selectable``: one row can be selected, and its ``id`` is returned."""
    frame = pd.DataFrame(list(rows))
    if columns is not None and len(frame):
        frame = frame[[c for c in columns if c in frame.columns]]
    config = number_config(rows)
    for name in pinned:
        if name == "text":
            config[name] = st.column_config.TextColumn(width="medium", pinned=True)
        elif name in frame.columns:
            config[name] = st.column_config.TextColumn(pinned=True)
    if not selectable:
        st.dataframe(frame, hide_index=True, column_config=config, key=key, height=height, placeholder="")
        return None
    event = st.dataframe(
        frame,
        hide_index=True,
        column_config=config,
        key=key,
        height=height,
        placeholder="",
        on_select="rerun",
        selection_mode="single-row",
    )
    picked = list(event.selection.rows) if event is not None else []
    if picked and "id" in frame.columns and picked[0] < len(frame):
        return str(frame["id"].iloc[picked[0]])
    return None


QUESTION_CHARS = 600  # a longer question is cut in the header (the whole of it is one click away)


def trace_header(trace: RetrievalTrace) -> None:
    st.subheader("Question")
    if len(trace.question) <= QUESTION_CHARS:
        st.text(trace.question)
    else:
        # A 20,000-character question would otherwise fill thousands of pixels above everything else.
        st.text(trace.question[:QUESTION_CHARS] + " …")
        with st.expander(f"The whole question ({len(trace.question):,} characters)"):
            st.code(trace.question, language=None, wrap_lines=True, height=300)
    row = metric_row()
    row.metric("Hops run", len(trace.hops), width="content")
    why = md_escape(f"stop reason: {trace.stop_reason}")
    row.metric("Stopped by", stop_reason_words(trace.stop_reason), width="content", help=why)
    row.metric("In context", len(trace.context_ids), width="content")
    row.metric("Context tokens", f"{trace.context_tokens} / {trace.settings.retrieval.budget_tokens}", width="content")
    total = trace.timings_ms.total
    row.metric("Pipeline time", f"{total:.0f} ms" if isinstance(total, (int, float)) else "—", width="content")
    if trace.forgotten:
        st.warning(
            f"{len(trace.forgotten)} memor{'y' if len(trace.forgotten) == 1 else 'ies'} of this trace "
            "was forgotten since it was stored (hard: its text is deleted from the trace too)."
        )
        table(forgotten_rows(trace), key="trace_forgotten")
    if trace.time_window is not None:  # the date window the question named (engine/retrieval/time_stage.py)
        w = trace.time_window
        how = f"{w.parser}: {w.rule}" if w.rule else w.parser
        st.caption(
            f"Time window **{w.label}** read from {md_escape(repr(w.phrase))} ({md_escape(how)}); memories "
            f"dated inside it {'score higher' if trace.settings.retrieval.time_window == 'boost' else 'are kept'}."
        )
    speaker = speaker_caption(trace)
    if speaker is not None:  # engine/retrieval/speaker_stage.py
        st.caption(md_escape(speaker))
    brevity = brevity_caption(trace)
    if brevity is not None:  # engine/retrieval/brevity.py
        st.caption(md_escape(brevity))
    st.caption(
        f"Trace {md_escape(trace.trace_id)} · user {md_escape(trace.user_id)} · session "
        f"{md_escape(trace.session_id or '—')} · {when(trace.created_at)} UTC · "
        f"preset {md_escape(trace.settings.preset or 'default')} · "
        + md_escape(strategy_words(trace.strategies.to_dict()))
    )


def hop_section(trace: RetrievalTrace, hop_index: int, top_n: int, labels: Any = None) -> str | None:
    """One hop: the query and its origin, every candidate with every score, the score waterfall, the dropped ones.
    With ``labels`` (``ui.trace_labels.TraceLabels``) each row shows its label and net, and a row can be selected
    (to label it): the selected memory's id is returned."""
    hop = trace.hops[hop_index]
    st.subheader(f"Hop {hop.hop}")
    left, right = st.columns([3, 2])
    with left:
        st.caption("Query")
        st.code(hop.query, language=None, wrap_lines=True)
        st.caption(
            f"Proposed by **{md_escape(proposer_words(hop.proposed_by))}** · relevance judged against "
            f"{'the question' if hop.relevance_text == trace.question else 'this query'} · found "
            f"{hop.counts.found}, kept {hop.counts.kept}, dropped {hop.counts.dropped}"
        )
        if hop.entities:  # the entity stage's starting points: how each was found, how rare it is
            named = ", ".join(
                f"{md_escape(e.name)} ({e.origin}, {e.mentions} memories{'' if e.followed else ', not followed'})"
                for e in hop.entities
            )
            st.caption(f"Entities followed: {named}")
        if hop.text_query is not None:  # text_search_words=content (engine/retrieval/text.py)
            st.caption(
                f"Full-text search was given {md_escape(repr(hop.text_query))}: the query without its question and "
                "function words"
            )
        if hop.vector_query is not None:  # the participant stage (engine/retrieval/participants.py)
            st.caption(
                f"Vector search was given the query blended with {md_escape(repr(hop.vector_query))}: the query "
                "without the names of the conversation's participants (participant_weight); the cosines are to that "
                "blend"
            )
        if hop.fusion is not None:  # the BM25 weight this hop's fusion used (engine/retrieval/lexical_weight.py)
            st.caption(f"Fusion: {md_escape(hop.fusion.describe())}")
        ranked_sessions = [r for r in (c.scores.session_rank for c in hop.candidates) if r is not None]
        if ranked_sessions:  # the session stage ran: its columns are session_score, session_rank, hybrid_session_part
            st.caption(
                f"Session stage: the candidates fell into sessions ranked 1 to {max(ranked_sessions)}; each "
                "member's hybrid gained session_weight × its session's score (hybrid_session_part)"
            )
    with right:
        st.caption("How the query was made")
        # In words, not the stored JSON: {"strategy": "as_is", "why": "<= 100 chars"} is the engine's, not a person's
        lines = proposal_lines(hop.proposal.to_dict())
        st.markdown("  \n".join(f"**{md_escape(k)}**: {md_escape(v)}" for k, v in lines) or "—")
    rows = candidate_rows(hop)
    if not rows:
        st.info("Search found no candidates for this query.")
        return None
    rows = [{**r, "rule": rule_words(r["rule"])} for r in rows]  # the filter's rule in words, with its numbers
    if labels is not None:
        rows = [{**r, "label": labels.current(r["id"]), "net": labels.net(r["id"])} for r in rows]
    # Dense: who and what on the left (pinned), then the verdict (final score, the deciding rule, the outcome),
    # then every score in pipeline order and the rank after each stage (only the stages that ran).
    ranks = [
        f"rank_{s}"
        for s in ("hybrid", "filter", "temporal", "feedback", "mmr")
        if any(r.get(f"rank_{s}") is not None for r in rows)
    ]
    columns = [
        "id",
        "text",
        "final",
        "rule",
        "outcome",
        "rank_final",
        "label",
        "net",
        "kind",
        "found_by",
        *(["entity_path"] if any(r.get("entity_path") for r in rows) else []),
        "relevance",
        *[c for c in used_score_columns(rows) if c != "final"],
        *ranks,
        "tokens",
    ] + (["forgotten"] if any(r.get("forgotten") for r in rows) else [])
    note = ""
    if any(r["preceded_by"] for r in rows):
        columns.append("preceded_by")
        note = (
            "; preceded_by is what came right before a memory where it was said: its vector embeds it too, so "
            "it counts in vector_similarity, and the query's words in it give bm25_preceding, which counts in "
            "bm25_norm at preceding_bm25_weight"
        )
    pick = "; select a row to label it" if labels is not None else ""
    st.caption(f"{len(rows)} candidates (kept ones by final score, then the dropped ones){note}{pick}")
    selected = table(
        rows, key=f"trace_cands_{hop.hop}", columns=columns, pinned=("id", "text"), selectable=labels is not None
    )
    kept = [c for c in hop.candidates if c.verdicts.relevance != Relevance.DROPPED]
    if kept:
        st.plotly_chart(
            score_waterfall(
                kept,
                trace.settings.retrieval,
                top_n,
                title=f"Hop {hop.hop}: how the top {min(top_n, len(kept))} final scores were built",
            ),
            key=f"trace_fig_{hop.hop}",
        )
        # the fusion this trace ran with, not one for all
        st.caption(md_escape(fusion_caption(trace.settings.retrieval)))
    dropped = [{**r, "rule": rule_words(r["rule"])} for r in dropped_rows(trace, hop)]
    with st.expander(f"Dropped at hop {hop.hop}: {len(dropped)} candidate(s) not in the context", expanded=False):
        if dropped:
            table(dropped, key=f"trace_dropped_{hop.hop}", pinned=("id",))
        else:
            st.caption("Every candidate of this hop reached the context.")
    return selected


def context_section(trace: RetrievalTrace) -> None:
    """The assembled context exactly as the agent gets it, and how much of the budget it uses."""
    st.subheader("Assembled context")
    budget = trace.settings.retrieval.budget_tokens
    st.progress(
        budget_share(trace),
        text=f"{trace.context_tokens} of {budget} tokens "
        f"({len(trace.context_ids)} memories, mode {trace.settings.retrieval.assembly_mode})",
    )
    if trace.context:
        st.code(trace.context, language=None, wrap_lines=True)
    else:
        st.info("The context is empty: nothing was kept, or nothing fitted the budget.")
    with st.expander("Final merged ranking", expanded=False):
        table(ranking_rows(trace), key="trace_ranking")


def whatif_controls(trace: RetrievalTrace) -> dict[str, Any]:
    """Sliders for the replayable settings, starting at the trace's own values. Call inside a form."""
    specs = {d["name"]: d for d in Settings.describe()}
    s = trace.settings.retrieval.retrieval_dict()  # a setting an older trace lacks has its default there
    values: dict[str, Any] = {}

    # Each control is named after its setting, starts at the trace's value and keeps its widget key trace_wi_<name>.
    def slider(name: str, lo: float, hi: float, step: float, value: float | None = None) -> None:
        start = float(s[name]) if value is None else value
        values[name] = st.slider(name, lo, hi, start, step, help=specs[name]["help"], key=f"trace_wi_{name}")

    def toggle(name: str, label: str | None = None) -> None:
        values[name] = st.toggle(label or name, bool(s[name]), help=specs[name]["help"], key=f"trace_wi_{name}")

    def radio(name: str) -> None:
        choices = list(specs[name]["choices"])
        values[name] = st.radio(
            name,
            choices,
            index=choices.index(s[name]),
            horizontal=True,
            help=specs[name]["help"],
            key=f"trace_wi_{name}",
        )

    c1, c2, c3 = st.columns(3)
    with c1:
        slider("bm25_weight", 0.0, 1.0, 0.05)
        toggle("adaptive_bm25")
        toggle("adaptive_bm25_events")
        hl = float(s["half_life_days"])
        slider("half_life_days", min(1.0, hl), max(365.0, hl), 1.0)
        slider("relevance_min_score", 0.0, 1.0, 0.05)
    with c2:
        slider("feedback_weight", 0.0, 1.0, 0.05)
        slider("importance_weight", 0.0, max(3.0, float(s["importance_weight"])), 0.1)
        budget = int(s["budget_tokens"])
        slider("budget_tokens", min(50, budget), max(8000, 2 * budget), 50, value=budget)
    with c3:
        toggle("mmr_enabled", "MMR")
        slider("mmr_lambda", 0.0, 1.0, 0.05)
        radio("assembly_mode")
        if len(trace.hops) > 1:  # the later-hop discount only matters when there is a later hop
            slider("hop_weight", 0.0, 1.0, 0.05)
        if has_preceding_texts(trace):
            slider("preceding_bm25_weight", 0.0, max(2.0, float(s["preceding_bm25_weight"])), 0.05)
            if personal_word(trace.question) is None:  # the brevity stage runs for questions about others only
                slider("brevity_weight", 0.0, max(1.0, float(s["brevity_weight"])), 0.05)
        if has_assistant_turns(trace):
            slider("assistant_turn_penalty", 0.0, 1.0, 0.05)
    c4, c5, c6 = st.columns(3)
    with c4:
        radio("fusion")
    with c5:
        slider("decay_floor", 0.0, 1.0, 0.05)
    with c6:
        protect = int(s["relevance_protect_top"])
        slider("relevance_protect_top", 0, max(20, protect), 1, value=protect)
    return values


def reset_whatif_state() -> None:
    """Forget the what-if sliders and result (a different trace was opened: they must start from its settings)."""
    for key in [k for k in st.session_state if str(k).startswith("trace_wi_")]:
        del st.session_state[key]
