"""The Retrieval trace page's Compare tab: the open trace (A) beside another stored trace of the user (B), picked
by default as the same question asked another time; metrics, differing settings, per-memory rows and the rank shift."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from engine import MemlensError, MemoryEngine, RetrievalTrace

from .error_display import error_text
from .layout import metric_row
from .text import md_escape
from .trace_compare import TraceComparison, compare_traces, rank_shift_rows
from .trace_data import shorten, trace_label
from .trace_figures import rank_shift_figure
from .trace_view import cached_trace, table
from .url_state import incoming, write

# The per-memory table's columns, A beside B.
ROW_COLUMNS = [
    "id",
    "text",
    "context",
    "rank_a",
    "rank_b",
    "change",
    "final_a",
    "final_b",
    "hybrid_a",
    "hybrid_b",
    "similarity_a",
    "similarity_b",
    "outcome_a",
    "outcome_b",
    "hop_a",
    "hop_b",
    "kind",
]


def _pick_b(trace: RetrievalTrace, summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The traces B can be (a linked one first), with the picker's state set to the one to show."""
    others = [i for i in summaries if i != trace.trace_id]
    linked_b = incoming("trace_b")
    if linked_b and linked_b != trace.trace_id and linked_b not in others:
        others.insert(0, linked_b)  # an older trace, outside the 50 newest listed
    if linked_b in others:
        st.session_state["trace_b_pick"] = linked_b
    elif st.session_state.get("trace_b_for") != trace.trace_id:
        st.session_state.pop("trace_b_pick", None)  # a new A: B defaults again, to this question's other trace
    st.session_state["trace_b_for"] = trace.trace_id
    if st.session_state.get("trace_b_pick") not in others and others:
        same = [i for i in others if summaries.get(i, {}).get("question") == trace.question]
        st.session_state["trace_b_pick"] = (same or others)[0]  # the same question asked another time, if any
    return others


def _show_comparison(comparison: TraceComparison) -> None:
    cmp_summary = comparison.summary
    row = metric_row()
    row.metric("Rank changes", len(comparison.moved), width="content")
    row.metric("Entered the context", len(comparison.entered), width="content")
    row.metric("Left the context", len(comparison.left), width="content")
    a_tok, b_tok = cmp_summary["context tokens"]
    row.metric("Context tokens (B)", b_tok, delta=b_tok - a_tok, width="content")
    if cmp_summary["question"][0] != cmp_summary["question"][1]:
        st.caption("The two traces answer different questions:")
        st.text(f"A: {shorten(cmp_summary['question'][0], 300)}\nB: {shorten(cmp_summary['question'][1], 300)}")
    table(
        [{"": name, "A": a, "B": b} for name, (a, b) in cmp_summary.items() if name != "question"],
        key="trace_cmp_summary",
    )
    if comparison.settings:
        st.caption("Settings that differ")
        table(list(comparison.settings), key="trace_cmp_settings")
    else:
        st.caption("Both traces ran with the same settings.")
    st.text("Entered: " + (", ".join(comparison.entered) or "—") + "\nLeft: " + (", ".join(comparison.left) or "—"))
    table(list(comparison.rows), key="trace_cmp_rows", pinned=("id", "text"), columns=ROW_COLUMNS)
    fig = rank_shift_figure(rank_shift_rows(comparison))
    fig.update_layout(title="Rank in A (before) and in B (after): green entered the context, red left it")
    st.plotly_chart(fig, key="trace_cmp_fig")


def compare_tab(
    engine: MemoryEngine, trace: RetrievalTrace, summaries: Mapping[str, Mapping[str, Any]], is_open: bool | None
) -> None:
    """``summaries``: the user's newest stored traces by id; ``is_open`` False skips the work of a closed tab."""
    st.caption(
        "This trace (A) beside any other stored trace of the user (B): the same question before and after a "
        "label, two presets, two hop settings. Per memory its rank and scores in each, and what entered or "
        "left the context."
    )
    others = _pick_b(trace, summaries)
    if not others:
        st.info(
            "This user has no other stored trace to compare with: ask another question (or the same one with "
            "other settings) first."
        )
        write("trace_b", None)
        return
    b_id = st.selectbox(
        "Compare with (B)",
        others,
        key="trace_b_pick",
        format_func=lambda i: trace_label(summaries[i]) if i in summaries else i,
    )
    write("trace_b", b_id)
    other = None
    try:
        other = cached_trace(engine, b_id, "trace_cache")
    except MemlensError as exc:
        st.error(f"Cannot open trace {md_escape(b_id[:80])}: {md_escape(error_text(exc))}")
    if other is not None and other.user_id != trace.user_id:
        st.error(f"Trace {md_escape(b_id)} belongs to another user.")
        other = None
    if other is not None and is_open is not False:
        _show_comparison(compare_traces(trace, other))
