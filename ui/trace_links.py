"""Opening a trace on the Retrieval trace page from another page: at "Why not?" for one memory, or beside a second
trace. The deep-link contract: query parameters ``trace``, ``tab`` (``why-not``), ``memory`` and ``trace_b``. The
user and the open trace are also put into the session state, so the trace page shows it even before it reads the
parameters, and the sidebar switches to the trace's user."""

from __future__ import annotations

import streamlit as st

from .nav import page_file
from .sidebar import open_session


def trace_params(trace_id: str, memory: str | None = None, trace_b: str | None = None) -> dict[str, str]:
    params = {"trace": trace_id}
    if memory:
        params.update(tab="why-not", memory=memory)
    if trace_b:  # two traces are opened to be compared: on the Compare tab, not on Hops
        params.update(tab="compare", trace_b=trace_b)
    return params


def open_trace_page(user_id: str, trace_id: str, memory: str | None = None, trace_b: str | None = None) -> None:
    """Switch to the Retrieval trace page with ``trace_id`` open (and ``memory`` typed into "Why not?")."""
    if st.session_state.get("app_user") != user_id:
        open_session(user_id, None)
    st.session_state["trace_current_id"] = trace_id
    st.session_state["trace_cache"] = {}
    if memory:
        st.session_state["trace_wn_prefill"] = memory
    st.switch_page(page_file("retrieval"), query_params=trace_params(trace_id, memory, trace_b))
