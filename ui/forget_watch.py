"""Memory text a browser session keeps, dropped as soon as anything is forgotten.

Pages keep what they read in session state so a click does not fetch it again: stored traces (the Retrieval trace
and Feedback pages), memory texts, search hits, a replay, a fresh retrieval. A forget changes what all of these
should show: a hard forget rewrites the stored traces (the memory's text becomes its tombstone) and deletes the
memory, a soft one adds it to every trace's forgotten list. Kept as they were, they would show forgotten text for
the rest of the session. The app frame calls :func:`drop_if_forgotten` on every run, before a page runs: one small
query for the store's newest forget-log entry (any user, any process: an agent's forget over MCP counts as much as
one made on the Memories page), and when it is not the one this session saw last, every cache below is emptied.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine import MemoryEngine

# Session-state keys whose values hold memory text read from the store (a new cache of memory text belongs here).
TEXT_CACHES = (
    "trace_cache",  # Retrieval trace: stored traces by id
    "fb_trace_cache",  # Feedback labelling: stored traces by id
    "fb_texts",  # Feedback labelling: memory texts of the queue and ledger
    "fb_fresh",  # Feedback labelling: a fresh retrieval of a trace's question
    "trace_wi_result",  # Retrieval trace: a what-if replay
    "trace_wn_hits",  # Retrieval trace: "Why not?" search hits
    "episodes_reflection",  # Episodes: the insights a reflection just stored
    "skills_mined",  # Skills: proposals mined from episodes
    "wm_reason_result",  # Working memory: the answer of the last Reason run
    "overview_prune_plan",  # Overview: the questions of the traces a deletion would remove
)
STAMP_KEY = "app_forget_stamp"


def forget_stamp(engine: MemoryEngine) -> tuple[Any, ...] | None:
    """What identifies the store's newest forget (``None``: nothing was ever forgotten)."""
    newest = engine.forgetting.log(None, limit=1)
    return (newest[0].id, newest[0].user_id, newest[0].at.isoformat()) if newest else None


def drop_text_caches() -> None:
    """Empty every cache of memory text in this browser session (also after the dashboard deletes traces)."""
    for key in TEXT_CACHES:
        st.session_state.pop(key, None)


def drop_if_forgotten(engine: MemoryEngine) -> None:
    """Empty this session's caches of memory text when something was forgotten since its last run."""
    stamp = forget_stamp(engine)
    if STAMP_KEY in st.session_state and st.session_state[STAMP_KEY] != stamp:
        drop_text_caches()
    st.session_state[STAMP_KEY] = stamp


def current_stamp() -> tuple[Any, ...] | None:
    """The newest forget this session has seen: a key for caches shared across sessions (``st.cache_data``)."""
    stamp = st.session_state.get(STAMP_KEY)
    return tuple(stamp) if stamp is not None else None
