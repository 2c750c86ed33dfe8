"""Retrieval trace: ask a question or open a stored trace, and see why each memory was (not) recalled.

Per hop: the query and who proposed it, every candidate with every score, how each final score was built, what was
dropped and why. Then the assembled context, a what-if replay (no re-search) and "why not?" for any memory.
The retrieval runs only when asked: the open trace's id lives in ``trace_current_id`` and is fetched once.
"""

from __future__ import annotations

import streamlit as st

from engine import MemlensError
from ui.components import need_user
from ui.feedback import engine_errors, error_text
from ui.resources import get_engine
from ui.text import md_escape
from ui.trace_data import (
    candidate_texts,
    changed_overrides,
    shorten,
    trace_label,
    whatif_summary,
    whatif_tables,
    why_not,
)
from ui.trace_figures import rank_shift_figure
from ui.trace_view import (
    cached_trace,
    context_section,
    hop_section,
    reset_whatif_state,
    table,
    trace_header,
    whatif_controls,
)

engine = get_engine()
st.title("Retrieval trace")
st.caption("Why did the agent recall this, and not that? Ask a question or open a stored trace.")
user = need_user("the Retrieval trace page")
if user is None:
    st.stop()


def open_trace(trace_id: str | None) -> None:
    if st.session_state.get("trace_current_id") != trace_id:
        reset_whatif_state()
        st.session_state.pop("trace_wn_item", None)
    st.session_state["trace_current_id"] = trace_id


# -- ask or open -----------------------------------------------------------------------------------------------
ask_col, open_col = st.columns([3, 2])
with ask_col, st.form("trace_ask_form"):
    question = st.text_area("Question", key="trace_question", height=80,
                            placeholder="e.g. Which timezone does the engineer who owns the refund job work in?")
    c1, c2, c3, c4 = st.columns(4)
    hops = c1.number_input("Hops", 1, 5, int(engine.settings.hops), key="trace_hops",
                           help="More than 1: a reasoner proposes the next query from what was found.")
    budget = c2.number_input("Token budget", 1, 200_000, int(engine.settings.budget_tokens), 100,
                             key="trace_budget")
    judges = ["heuristic", "llm", "off"]
    relevance = c3.selectbox("Relevance judge", judges, index=judges.index(engine.settings.relevance_filter),
                             key="trace_relevance",
                             help="llm needs a configured LLM; without one the heuristic runs and the trace says so.")
    session_opts = [None] + ([st.session_state["app_session"]] if st.session_state.get("app_session") else [])
    session = c4.selectbox("Session", session_opts, format_func=lambda s: "(none)" if s is None else s,
                           key="trace_session")
    t1, t2, t3 = st.columns(3)
    hybrid = t1.toggle("Hybrid BM25", engine.settings.hybrid_enabled, key="trace_hybrid")
    use_mmr = t2.toggle("MMR diversity", engine.settings.mmr_enabled, key="trace_mmr")
    use_feedback = t3.toggle("Feedback factor", engine.settings.feedback_weight > 0, key="trace_feedback")
    asked = st.form_submit_button("Retrieve", type="primary")
if asked:
    if not question.strip():
        st.warning("Type a question first.")
    else:
        overrides = {"hybrid_enabled": hybrid, "mmr_enabled": use_mmr, "relevance_filter": relevance,
                     "feedback_weight": engine.settings.feedback_weight if use_feedback else 0.0}
        with engine_errors("Retrieval failed"), st.spinner("Retrieving..."):
            new = engine.retrieve(user, question, session_id=session, hops=int(hops), budget=int(budget),
                                  overrides=overrides)
            st.session_state.setdefault("trace_cache", {})[new.trace_id] = new
            open_trace(new.trace_id)

summaries: dict[str, dict] = {}
with open_col:
    with engine_errors("Could not list traces"):
        recent = engine.list_traces(user, limit=50)
        summaries = {r["trace_id"]: r for r in recent.rows}
        if summaries:
            if st.session_state.get("trace_current_id") in summaries:
                st.session_state["trace_pick"] = st.session_state["trace_current_id"]  # the picker shows what is open
            st.selectbox(f"Stored traces of {md_escape(user)} ({recent.total}, newest first)", list(summaries),
                         format_func=lambda i: trace_label(summaries[i]), key="trace_pick",
                         on_change=lambda: open_trace(st.session_state["trace_pick"]))
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
    st.info(f"The open trace belongs to user {md_escape(trace.user_id)}; pick it in the sidebar to work on it.")
    st.session_state.pop("trace_current_id", None)
    trace = None
if trace is None:
    st.stop()
assert trace is not None  # st.stop() ends the run; this tells the type checker so
if st.session_state.get("trace_current_id") != trace.trace_id:
    open_trace(trace.trace_id)

# -- the trace ---------------------------------------------------------------------------------------------------
st.divider()
trace_header(trace)
open_id = trace.trace_id
st.download_button("Export trace JSON", data=lambda: engine.export_trace(open_id),
                   file_name=f"{trace.trace_id}.json", mime="application/json", on_click="ignore",
                   key="trace_export")
tab_hops, tab_context, tab_whatif, tab_whynot = st.tabs(["Hops", "Context", "What-if", "Why not?"])

with tab_hops:
    top_n = st.slider("Candidates in the score breakdown", 1, 15, 5, key="trace_top_n")
    for n in range(len(trace.hops)):
        hop_section(trace, n, top_n)
    if not trace.hops:
        st.info(f"No hop ran (stop reason: {trace.stop_reason}).")

with tab_context:
    context_section(trace)

with tab_whatif:
    st.caption("Re-rank this trace's candidates under other settings. Nothing is searched or embedded again; "
               "the sliders start at the settings the trace ran with.")
    with st.form("trace_whatif_form"):
        values = whatif_controls(trace)
        replay = st.form_submit_button("Replay with these settings", type="primary")
    if replay:
        changes = changed_overrides(trace.settings, values)
        with engine_errors("Replay failed"):
            st.session_state["trace_wi_result"] = (trace.trace_id, changes, engine.replay(trace.trace_id, changes))
    result = st.session_state.get("trace_wi_result")
    if result and result[0] == trace.trace_id:
        _, changes, replayed = result
        summary = whatif_summary(replayed)
        st.text("Changed settings: " + (", ".join(f"{k}={v}" for k, v in changes.items()) or
                                        "none (the original settings)"))
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Rank changes", len(summary["moved"]))
        m2.metric("Entered the context", len(summary["entered"]))
        m3.metric("Left the context", len(summary["left"]))
        m4.metric("Context tokens", f"{replayed.context_tokens}", delta=replayed.context_tokens - trace.context_tokens)
        texts = candidate_texts(trace)
        before, after = whatif_tables(replayed, texts)
        left, right = st.columns(2)
        with left:
            st.caption("Before (the stored trace)")
            table(before, key="trace_wi_before")
        with right:
            st.caption("After the replay")
            table(after, key="trace_wi_after")
        if summary["entered"] or summary["left"]:
            st.text("Entered: " + (", ".join(summary["entered"]) or "—") + "\nLeft: " + (", ".join(summary["left"])
                                                                                       or "—"))
        st.plotly_chart(rank_shift_figure(replayed.ranking), key="trace_wi_fig")

with tab_whynot:
    st.caption("Pick any memory of this user and see where this trace lost it, or that search never found it.")
    query = st.text_input("Find a memory (search text or part of an id)", key="trace_wn_query")
    options: dict[str, str] = {}
    if query.strip():
        cached = st.session_state.get("trace_wn_hits")
        if not cached or cached[0] != (user, query):
            with engine_errors("Search failed"):
                hits = engine.search(user, query, limit=10)
                st.session_state["trace_wn_hits"] = ((user, query), [(h.id, h.kind, h.text) for h in hits])
        for hit_id, kind, text in st.session_state.get("trace_wn_hits", (None, []))[1]:
            options[hit_id] = f"{hit_id} · {kind} · {shorten(text, 90)}"
        for cid, text in candidate_texts(trace).items():
            if query.strip().lower() in cid.lower():
                options.setdefault(cid, f"{cid} · {shorten(text, 90)}")
    if options:
        item = st.selectbox("Memory", list(options), format_func=lambda i: options[i], key="trace_wn_item")
        verdict = why_not(trace, item)
        show = {"context": st.success, "never": st.info}.get(verdict.status, st.warning)  # st.error: engine errors
        show(md_escape(verdict.headline))
        table(list(verdict.rows), key="trace_wn_rows")
    elif query.strip():
        st.info("No memory matches that search.")
