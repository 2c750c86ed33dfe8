"""The Retrieval trace page's "Why not?" tab: find any memory of the user (search words or an exact id) and show
where the open trace lost it, that the search never found it, or that it was forgotten."""

from __future__ import annotations

import streamlit as st

from engine import InvalidInput, LossStatus, MemoryEngine, MemoryState, MemoryStatus, RetrievalTrace

from .error_display import engine_errors
from .memory_sources import show_item_message_sources
from .text import md_escape
from .trace_data import candidate_texts, shorten
from .trace_view import table
from .url_state import incoming, write


def _memory_options(
    engine: MemoryEngine, user: str, trace: RetrievalTrace, query: str
) -> tuple[dict[str, str], str | None]:
    """The memories a search offers (id -> label), and the id typed exactly, if it names one."""
    options: dict[str, str] = {}
    exact: str | None = None
    if not query.strip():
        return options, exact
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
    return options, exact


def why_not_tab(engine: MemoryEngine, user: str, trace: RetrievalTrace) -> None:
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
    options, exact = _memory_options(engine, user, trace, query)
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
            show_item_message_sources(engine, user, item)  # the messages it came from, as links
            table(list(verdict.rows), key="trace_wn_rows")
    elif query.strip():
        st.info("No memory matches that search.")
