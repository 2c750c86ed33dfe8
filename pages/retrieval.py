"""Retrieval trace: ask a question or open a stored trace, and see why each memory was (not) recalled.

Per hop: the query and who proposed it, every candidate with every score, how each final score was built, what was
dropped and why; label any candidate or context memory useful/harmful right there. Then the assembled context, a
what-if replay (no re-search), "why not?" for any memory, a comparison with any other trace, where the time went (a
span tree: ui/span_tree.py) and the trace as a map of the embedding space (ui/trace_map.py).
The retrieval runs only when asked: the open trace's id lives in ``trace_current_id`` (and ``?trace=`` in the URL,
with ``tab``, ``memory`` and ``trace_b``: see ui/url_state.py) and is fetched once. The question form and the
What-if, Why not? and Compare tabs are drawn by ui/trace_ask.py, trace_whatif.py, trace_why_not.py and
trace_compare_tab.py.
"""

from __future__ import annotations

import streamlit as st

from engine import MemlensError, recording_origin
from ui.components import can_edit, need_user
from ui.error_display import engine_errors, error_text
from ui.pin_expectation import pin_expectation
from ui.resources import get_engine
from ui.sidebar import open_session
from ui.span_tree import span_tree
from ui.text import counted, md_escape
from ui.trace_ask import question_form
from ui.trace_compare_tab import compare_tab
from ui.trace_data import candidate_texts, shorten, trace_label
from ui.trace_figures import timing_figure
from ui.trace_labels import label_controls, show_label_flash, trace_labels
from ui.trace_map import map_tab
from ui.trace_table import filter_expander
from ui.trace_timing import timing_rows, timing_spans
from ui.trace_view import cached_trace, context_section, hop_section, reset_whatif_state, table, trace_header
from ui.trace_whatif import whatif_tab
from ui.trace_why_not import why_not_tab
from ui.url_state import incoming, url_tabs, write

engine = get_engine()
st.title("Retrieval trace")
st.caption("Why did the agent recall this, and not that? Ask a question or open a stored trace.")
user = need_user("the Retrieval trace page")
if user is None:
    st.stop()


def open_trace(trace_id: str | None) -> None:
    if st.session_state.get("trace_current_id") != trace_id:
        reset_whatif_state()
        # Pickers of the previous trace start over: a memory it shared with the new one stayed selected in
        # "Memory to label" (with the table row picked for it) after a new question.
        for key in ("trace_wn_item", "trace_label_item", "trace_label_item_table", "trace_label_item_linked"):
            st.session_state.pop(key, None)
    st.session_state["trace_current_id"] = trace_id


linked_trace = incoming("trace")  # ?trace=<id> (or the older ?trace_id=) from a shared link or a reload
if linked_trace:
    open_trace(linked_trace)

# -- ask or open -----------------------------------------------------------------------------------------------
ask_col, open_col = st.columns([3, 2])
filters_box = st.container()  # below both, full width: the open column is ~200 px at 820 px
asked = None
with ask_col:
    # a retrieval stores its trace: a read-only store refuses it, so the form is not offered there
    if can_edit(engine, "asking a new question (a retrieval stores its trace)"):
        asked = question_form(engine, user)
if asked is not None:
    if not asked.text.strip():
        st.warning("Type a question first.")
    else:
        with engine_errors("Retrieval failed"), st.spinner("Retrieving..."), recording_origin("dashboard"):
            new = engine.retrieval.retrieve(
                user,
                asked.text,
                session_id=asked.session,
                hops=asked.hops,
                budget=asked.budget,
                overrides=asked.overrides,
                preset=asked.preset,
            )
            st.session_state.setdefault("trace_cache", {})[new.trace_id] = new
            open_trace(new.trace_id)

summaries: dict[str, dict] = {}
with filters_box:
    choices = filter_expander(engine, "trace_find", user)  # the Traces page's filters; evaluation runs left out
with open_col:
    with engine_errors("Could not list traces"):
        recent = engine.traces.list_traces(user, limit=50, filters=choices.to_filter())
        summaries = {r["trace_id"]: r for r in recent.rows}
        if summaries:
            if st.session_state.get("trace_current_id") in summaries:
                st.session_state["trace_pick"] = st.session_state["trace_current_id"]  # the picker shows what is open
            st.selectbox(
                f"Stored traces of {md_escape(user)} ({recent.total:,}, newest first)",
                list(summaries),
                format_func=lambda i: trace_label(summaries[i]),
                key="trace_pick",
                on_change=lambda: open_trace(st.session_state["trace_pick"]),
            )
        elif choices.narrows():
            st.info("No stored trace of this user matches the filters.")
        elif runs_only := engine.traces.list_traces(user, limit=1).total:  # every origin: the runs' traces only
            st.info(
                f"{md_escape(user)} has {counted(runs_only, 'evaluation run trace')} and no other: evaluation runs "
                'are left out here unless asked (pick "evaluation run" under Origin in "Filter the stored traces").'
            )
        else:
            st.info(f"No stored traces for {md_escape(user)} yet: ask a question to create one.")
        typed = st.text_input("…or open a trace by id", key="trace_open_id", placeholder="tr_…")
        if typed.strip() and st.button("Open by id", key="trace_open_typed"):
            open_trace(typed.strip())
            st.rerun()  # so the picker above shows it too

# The open trace: the one asked or picked, else the newest of this user.
trace_id = st.session_state.get("trace_current_id") or next(iter(summaries), None)
trace = None
if trace_id:
    try:
        trace = cached_trace(engine, trace_id, "trace_cache")
    except MemlensError as exc:
        st.error(f"Cannot open trace {md_escape(trace_id[:80])}: {md_escape(error_text(exc))}")
        st.session_state.pop("trace_current_id", None)
if trace is not None and trace.user_id != user:
    if linked_trace == trace.trace_id:  # a link names the trace: show it as its user
        open_session(trace.user_id, trace.session_id)
        write("trace", trace.trace_id)
        st.rerun()
    st.info(f"The open trace belongs to user {md_escape(trace.user_id)}; pick it in the sidebar to work on it.")
    st.session_state.pop("trace_current_id", None)
    trace = None
if trace is None:
    write("trace", None)
    st.stop()
assert trace is not None  # st.stop() ends the run; this tells the type checker so
if st.session_state.get("trace_current_id") != trace.trace_id:
    open_trace(trace.trace_id)
write("trace", trace.trace_id)

# -- the trace ---------------------------------------------------------------------------------------------------
st.divider()
trace_header(trace)
open_id = trace.trace_id
st.download_button(
    "Export trace JSON",
    data=lambda: engine.traces.export(open_id),
    file_name=f"{trace.trace_id}.json",
    mime="application/json",
    on_click="ignore",
    key="trace_export",
)
pin_expectation(engine, trace)
TABS = ["Hops", "Context", "What-if", "Why not?", "Compare", "Timings", "Map"]
tab_hops, tab_context, tab_whatif, tab_whynot, tab_compare, tab_timings, tab_map = url_tabs(TABS, key="trace_tab")
texts_by_id = candidate_texts(trace)
labels = trace_labels(engine, trace, texts_by_id)
label_hop = {r.id: r.hop for r in trace.ranking}
for hop in trace.hops:  # a memory the relevance filter dropped is labelled at the first hop that found it
    for c in hop.candidates:
        label_hop.setdefault(c.id, hop.hop)


def label_panel(selected: str | None, key: str) -> None:
    """The memory picked in a table (or named by ``?memory=``) with its label, Useful / Harmful and Undo."""
    ids = list(label_hop)
    linked = incoming("memory")
    if linked in label_hop and st.session_state.get(f"{key}_linked") != linked:
        st.session_state[key] = linked  # once per link: later picks here are the person's own
        st.session_state[f"{key}_linked"] = linked
    if selected in label_hop and st.session_state.get(f"{key}_table") != selected:
        st.session_state[key] = selected  # a row newly selected in a table
    st.session_state[f"{key}_table"] = selected
    if st.session_state.get(key) not in label_hop:
        st.session_state[key] = ids[0] if ids else None
    if not ids:
        return
    with st.container(border=True):
        if tab_hops.open:
            show_label_flash()
        item = st.selectbox(
            "Memory to label", ids, key=key, format_func=lambda i: f"{i} · {shorten(texts_by_id.get(i, ''), 90)}"
        )
        assert trace is not None  # the page stopped above when no trace is open
        label_controls(engine, trace, labels, item, label_hop[item], key)
    if st.session_state.get("trace_tab") in ("Hops", "Context"):
        write("memory", item)


with tab_hops:
    top_n = st.slider("Candidates in the score breakdown", 1, 15, 5, key="trace_top_n")
    panel = st.container()
    picked = None
    for n in range(len(trace.hops)):
        picked = hop_section(trace, n, top_n, labels) or picked
    if not trace.hops:
        st.info(f"No hop ran (stop reason: {trace.stop_reason}).")
    with panel:
        label_panel(picked, "trace_label_item")

with tab_context:
    context_section(trace)
    if trace.context_ids:
        st.subheader("Label what reached the context")
        if tab_context.open:
            show_label_flash()
        for item_id in trace.context_ids:
            with st.container(border=True):
                st.text(shorten(texts_by_id.get(item_id, ""), 300))
                label_controls(engine, trace, labels, item_id, label_hop.get(item_id), "trace_ctx")

with tab_whatif:
    whatif_tab(engine, trace)

with tab_whynot:
    why_not_tab(engine, user, trace)

with tab_compare:
    compare_tab(engine, trace, summaries, tab_compare.open)

with tab_timings:
    spans = timing_spans(trace)
    if len(spans) <= 1:
        st.info("This trace recorded no stage timings.")
    elif tab_timings.open is not False:
        st.caption(
            "Each stage's duration as the trace recorded it, in the order the stages ran (hops nest their "
            "stages). Time the stages do not account for is shown as its own span."
        )
        st.plotly_chart(timing_figure(spans), key="trace_timing_fig")
        st.markdown("**Span tree** (open a span for what went in and came out)")
        span_tree(trace, spans)  # ui/span_tree.py
        with st.expander("The spans as a table"):
            table(timing_rows(spans), key="trace_timing_rows")

with tab_map:
    if tab_map.open is not False:  # embeds the queries again: only when the tab is open
        map_tab(engine, trace)  # ui/trace_map.py
