"""The sidebar user/session picker shared by every page.

``st.session_state["app_user"]`` and ``["app_session"]`` are the source of truth; the selectboxes mirror them. A page
may switch the current user/session by setting those two keys and calling ``st.rerun()`` (see :func:`open_session`).
"""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine

from . import url_state

SIDEBAR_SESSIONS = 200  # the newest sessions listed in the picker; the Sessions page reaches every other one


def current_user() -> str | None:
    return st.session_state.get("app_user")


def current_session() -> str | None:
    return st.session_state.get("app_session")


def open_session(user_id: str, session_id: str | None) -> None:
    """Make ``user_id``/``session_id`` the current ones for every page (takes effect on the next run)."""
    st.session_state["app_user"] = user_id
    st.session_state["app_session"] = session_id


def _user_changed() -> None:
    st.session_state["app_user"] = st.session_state.get("app_user_select")
    st.session_state["app_session"] = None  # the newest session of the new user is picked below


def _session_changed() -> None:
    st.session_state["app_session"] = st.session_state.get("app_session_select")


def pick_user(engine: MemoryEngine) -> str | None:
    """The user selectbox; returns the current user (``None`` on an empty store)."""
    users = engine.sessions.users()
    if not users:
        st.session_state["app_user"] = None
        st.session_state["app_session"] = None
        st.sidebar.info(
            "The store is empty. Load the demo from the Overview page (or `python -m engine demo`), "
            "or let an agent write memory through the Python API or MCP."
        )
        return None
    current = st.session_state.get("app_user")
    linked = url_state.incoming("user")  # a shared link or a reload names the user
    if linked in users and linked != current:
        current = linked
        st.session_state["app_session"] = None  # the link's session (or the newest) is picked below
    if current not in users:
        current = users[0]
    st.session_state["app_user"] = current
    url_state.write("user", current)
    st.session_state["app_user_select"] = current
    st.sidebar.selectbox(
        "User", users, key="app_user_select", on_change=_user_changed, help=f"{len(users)} user(s) in this store"
    )
    return current


def pick_session(engine: MemoryEngine, user: str | None) -> str | None:
    """The session selectbox for ``user`` (newest first); returns the current session or ``None``."""
    if not user:
        return None
    page = engine.sessions.list_sessions(user, limit=SIDEBAR_SESSIONS)
    ids = [s.session_id for s in page.rows]
    current = st.session_state.get("app_session")
    linked = url_state.incoming("session")
    if linked:
        current = linked
    if current and current not in ids:
        # A session opened from the Sessions page may be older than the newest ones listed here.
        try:
            engine.sessions.get_session(user, current)
            ids.append(current)
        except (KeyError, ValueError):  # NotFound: deleted meanwhile; InvalidInput: a mangled id in a link
            current = None
    # A link to a session that is gone opens the newest one instead; a page that was asked for one of its messages
    # must say so rather than show that seq of another session.
    if linked and current is None:
        st.session_state["app_session_missing"] = linked
    elif linked:
        st.session_state.pop("app_session_missing", None)
    if not ids:
        st.session_state["app_session"] = None
        url_state.write("session", None)
        st.sidebar.caption("No sessions for this user yet.")
        return None
    if current not in ids:
        current = ids[0]
    st.session_state["app_session"] = current
    url_state.write("session", current)
    st.session_state["app_session_select"] = current
    shown = f"the newest {SIDEBAR_SESSIONS} of " if page.total > SIDEBAR_SESSIONS else ""
    st.sidebar.selectbox(
        "Session",
        ids,
        key="app_session_select",
        on_change=_session_changed,
        help=f"{shown}{page.total} session(s), newest first; the Sessions page lists them all",
    )
    return current
