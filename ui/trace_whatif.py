"""The Retrieval trace page's What-if tab: re-rank the open trace's candidates under other settings (no new search)
and show what moved, entered or left the context, before and after side by side."""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine, RetrievalTrace

from .error_display import engine_errors
from .layout import metric_row
from .trace_data import candidate_texts, changed_overrides, whatif_summary, whatif_tables
from .trace_figures import rank_shift_figure
from .trace_view import table, whatif_controls

# The last replay: (trace id, the changed settings, the replayed trace), shown again on reruns of the same trace.
RESULT_KEY = "trace_wi_result"


def whatif_tab(engine: MemoryEngine, trace: RetrievalTrace) -> None:
    st.caption(
        "Re-rank this trace's candidates under other settings. Nothing is searched or embedded again; "
        "the sliders start at the settings the trace ran with."
    )
    with st.form("trace_whatif_form"):
        values = whatif_controls(trace)
        replay = st.form_submit_button("Replay with these settings", type="primary")
    if replay:
        changes = changed_overrides(trace.settings.retrieval, values)
        with engine_errors("Replay failed"):
            st.session_state[RESULT_KEY] = (
                trace.trace_id,
                changes,
                engine.retrieval.replay(trace.trace_id, changes),
            )
    result = st.session_state.get(RESULT_KEY)
    if not result or result[0] != trace.trace_id:
        return
    _, changes, replayed = result
    summary = whatif_summary(replayed)
    # the exact names, as the sliders above are labelled
    st.text(
        "Changed settings: " + (", ".join(f"{k}={v}" for k, v in changes.items()) or "none (the original settings)")
    )
    row = metric_row()  # as wide as each label: four equal columns cut them at 820 px
    row.metric("Rank changes", len(summary["moved"]), width="content")
    row.metric("Entered the context", len(summary["entered"]), width="content")
    row.metric("Left the context", len(summary["left"]), width="content")
    tokens = replayed.context_tokens
    row.metric("Context tokens", f"{tokens}", delta=tokens - trace.context_tokens, width="content")
    before, after = whatif_tables(replayed, candidate_texts(trace))
    left, right = st.columns(2)
    with left:
        st.caption("Before (the stored trace)")
        table(before, key="trace_wi_before")
    with right:
        st.caption("After the replay")
        table(after, key="trace_wi_after")
    if summary["entered"] or summary["left"]:
        st.text("Entered: " + (", ".join(summary["entered"]) or "—") + "\nLeft: " + (", ".join(summary["left"]) or "—"))
    st.plotly_chart(rank_shift_figure(replayed.ranking), key="trace_wi_fig")
