"""Retrieval trace: ask a question or open a stored trace, and see why each memory was (not) recalled.

Per hop: the query and who proposed it, every candidate with every score, how each final score was built, what was
dropped and why; label any candidate or context memory useful/harmful right there. Then the assembled context, a
what-if replay (no re-search), "why not?" for any memory, a comparison with any other trace, and where the time went.
The retrieval runs only when asked: the open trace's id lives in ``trace_current_id`` (and ``?trace=`` in the URL,
with ``tab``, ``memory`` and ``trace_b``: see ui/url_state.py) and is fetched once.
"""

from __future__ import annotations

import streamlit as st

from engine import HOPS_RANGE, InvalidInput, LossStatus, MemlensError, MemoryState, MemoryStatus
from ui.components import can_edit, need_user
from ui.error_display import engine_errors, error_text
from ui.layout import metric_row
from ui.pin_expectation import pin_expectation
from ui.resources import get_engine
from ui.sidebar import open_session
from ui.text import md_escape
from ui.trace_compare import compare_traces, rank_shift_rows
from ui.trace_data import (
    candidate_texts,
    changed_overrides,
    shorten,
    trace_label,
    whatif_summary,
    whatif_tables,
)
from ui.trace_figures import rank_shift_figure, timing_figure
from ui.trace_labels import label_controls, show_label_flash, trace_labels
from ui.trace_timing import timing_rows, timing_spans
from ui.trace_view import (
    cached_trace,
    context_section,
    hop_section,
    reset_whatif_state,
    table,
    trace_header,
    whatif_controls,
)
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
asked = False
with ask_col:
    # a retrieval stores its trace: a read-only store refuses it, so the form is not offered there
    if can_edit(engine, "asking a new question (a retrieval stores its trace)"):
        with st.form("trace_ask_form"):
            question = st.text_area(
                "Question",
                key="trace_question",
                height=80,
                placeholder="e.g. Which timezone does the engineer who owns the refund job work in?",
            )
            # Two by two, so "Relevance judge" and "Token budget" keep their labels in a narrow window.
            c1, c2 = st.columns(2)
            c3, c4 = st.columns(2)
            hops = c1.number_input(
                "Hops",
                *HOPS_RANGE,
                int(engine.settings.hops),
                key="trace_hops",
                help="More than 1: a reasoner proposes the next query from what was found.",
            )
            budget = c2.number_input(
                "Token budget", 1, 200_000, int(engine.settings.budget_tokens), 100, key="trace_budget"
            )
            judges = ["heuristic", "llm", "off"]
            relevance = c3.selectbox(
                "Relevance judge",
                judges,
                index=judges.index(engine.settings.relevance_filter),
                key="trace_relevance",
                help="llm needs a configured LLM; without one the heuristic runs and the trace says so.",
            )
            session_opts = [None] + ([st.session_state["app_session"]] if st.session_state.get("app_session") else [])
            session = c4.selectbox(
                "Session", session_opts, format_func=lambda s: "(none)" if s is None else s, key="trace_session"
            )
            toggles = st.container(horizontal=True, gap="medium")  # each as wide as its label, wrapping when narrow
            hybrid = toggles.toggle("Hybrid BM25", engine.settings.hybrid_enabled, key="trace_hybrid")
            use_mmr = toggles.toggle("MMR diversity", engine.settings.mmr_enabled, key="trace_mmr")
            use_feedback = toggles.toggle("Feedback factor", engine.settings.feedback_weight > 0, key="trace_feedback")
            asked = st.form_submit_button("Retrieve", type="primary")
if asked:
    if not question.strip():
        st.warning("Type a question first.")
    else:
        overrides = {
            "hybrid_enabled": hybrid,
            "mmr_enabled": use_mmr,
            "relevance_filter": relevance,
            "feedback_weight": engine.settings.feedback_weight if use_feedback else 0.0,
        }
        with engine_errors("Retrieval failed"), st.spinner("Retrieving..."):
            new = engine.retrieval.retrieve(
                user, question, session_id=session, hops=int(hops), budget=int(budget), overrides=overrides
            )
            st.session_state.setdefault("trace_cache", {})[new.trace_id] = new
            open_trace(new.trace_id)

summaries: dict[str, dict] = {}
with open_col:
    with engine_errors("Could not list traces"):
        recent = engine.traces.list_traces(user, limit=50)
        summaries = {r["trace_id"]: r for r in recent.rows}
        if summaries:
            if st.session_state.get("trace_current_id") in summaries:
                st.session_state["trace_pick"] = st.session_state["trace_current_id"]  # the picker shows what is open
            st.selectbox(
                f"Stored traces of {md_escape(user)} ({recent.total}, newest first)",
                list(summaries),
                format_func=lambda i: trace_label(summaries[i]),
                key="trace_pick",
                on_change=lambda: open_trace(st.session_state["trace_pick"]),
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
TABS = ["Hops", "Context", "What-if", "Why not?", "Compare", "Timings"]
tab_hops, tab_context, tab_whatif, tab_whynot, tab_compare, tab_timings = url_tabs(TABS, key="trace_tab")
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
            st.session_state["trace_wi_result"] = (
                trace.trace_id,
                changes,
                engine.retrieval.replay(trace.trace_id, changes),
            )
    result = st.session_state.get("trace_wi_result")
    if result and result[0] == trace.trace_id:
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
            st.text(
                "Entered: " + (", ".join(summary["entered"]) or "—") + "\nLeft: " + (", ".join(summary["left"]) or "—")
            )
        st.plotly_chart(rank_shift_figure(replayed.ranking), key="trace_wi_fig")

with tab_whynot:
    st.caption(
        "Pick any memory of this user (or type its exact id) and see where this trace lost it, that search "
        "never found it, or that it was forgotten."
    )
    prefill = st.session_state.pop("trace_wn_prefill", None)  # a memory id sent by another page (Evaluations)
    linked_memory = incoming("memory") if st.session_state.get("trace_tab") == "Why not?" else None
    if linked_memory and st.session_state.get("trace_wn_linked") != linked_memory:  # ?tab=why-not&memory=<id>
        prefill = prefill or linked_memory
        st.session_state["trace_wn_linked"] = linked_memory
    if prefill:
        st.session_state["trace_wn_query"] = prefill
    query = st.text_input("Find a memory (search text or an id)", key="trace_wn_query")
    options: dict[str, str] = {}
    exact: str | None = None
    if query.strip():
        wanted = query.strip()
        texts = candidate_texts(trace)
        if wanted in texts:
            exact = wanted
            options[wanted] = f"{wanted} · {shorten(texts[wanted], 90)}"
        else:  # an exact id of a stored (or forgotten) memory wins over the full-text hits for its words
            state: MemoryState | None
            try:
                state = engine.traces.memory_states(user, [wanted])[wanted]
            except InvalidInput:  # search words, not an id
                state = None
            if state is not None and state.status != MemoryStatus.MISSING:
                exact = wanted
                options[wanted] = f"{wanted} · {state.kind} · {state.status}"
        cached = st.session_state.get("trace_wn_hits")
        if not cached or cached[0] != (user, query):
            with engine_errors("Search failed"):
                hits = engine.retrieval.search(user, query, limit=10)
                st.session_state["trace_wn_hits"] = ((user, query), [(h.id, h.kind, h.text) for h in hits])
        for hit_id, kind, text in st.session_state.get("trace_wn_hits", (None, []))[1]:
            options.setdefault(hit_id, f"{hit_id} · {kind} · {shorten(text, 90)}")
        for cid, text in texts.items():
            if wanted.lower() in cid.lower():
                options.setdefault(cid, f"{cid} · {shorten(text, 90)}")
    if st.session_state.get("trace_wn_for") != (trace.trace_id, query):
        # A new search selects its exact id (or its first hit), not what the previous search had selected.
        st.session_state["trace_wn_for"] = (trace.trace_id, query)
        st.session_state.pop("trace_wn_item", None)
        if exact is not None:
            st.session_state["trace_wn_item"] = exact
    if options:
        item = st.selectbox("Memory", list(options), format_func=lambda i: options[i], key="trace_wn_item")
        if st.session_state.get("trace_tab") == "Why not?":
            write("memory", item)  # a reload or a shared link opens this memory's answer again
        with engine_errors("Why-not failed"):
            verdict = engine.traces.why_not(trace, item)
            # st.error is for engine errors; a verdict is information or a warning
            show = {LossStatus.CONTEXT: st.success, LossStatus.NEVER: st.info}.get(verdict.status, st.warning)
            show(md_escape(verdict.headline))
            table(list(verdict.rows), key="trace_wn_rows")
    elif query.strip():
        st.info("No memory matches that search.")

with tab_compare:
    st.caption(
        "This trace (A) beside any other stored trace of the user (B): the same question before and after a "
        "label, two presets, two hop settings. Per memory its rank and scores in each, and what entered or "
        "left the context."
    )
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
    if not others:
        st.info(
            "This user has no other stored trace to compare with: ask another question (or the same one with "
            "other settings) first."
        )
        write("trace_b", None)
    else:
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
        if other is not None and tab_compare.open is not False:
            comparison = compare_traces(trace, other)
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
            st.text(
                "Entered: " + (", ".join(comparison.entered) or "—") + "\nLeft: " + (", ".join(comparison.left) or "—")
            )
            table(
                list(comparison.rows),
                key="trace_cmp_rows",
                pinned=("id", "text"),
                columns=[
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
                ],
            )
            fig = rank_shift_figure(rank_shift_rows(comparison))
            fig.update_layout(title="Rank in A (before) and in B (after): green entered the context, red left it")
            st.plotly_chart(fig, key="trace_cmp_fig")

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
        table(timing_rows(spans), key="trace_timing_rows")
