"""The sidebar user/session picker shared by every page (state under the ``app_`` prefix)."""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine


def pick_user(engine: MemoryEngine) -> str | None:
    users = engine.users()
    if not users:
        st.sidebar.info("The store is empty. Load the demo with `python -m engine demo` or let an agent write.")
        return None
    current = st.session_state.get("app_user")
    index = users.index(current) if current in users else 0
    user = st.sidebar.selectbox("User", users, index=index, key="app_user_select")
    st.session_state["app_user"] = user
    return user


def pick_session(engine: MemoryEngine, user: str | None) -> str | None:
    if not user:
        return None
    page = engine.list_sessions(user, limit=200)
    ids = [s.session_id for s in page.rows]
    if not ids:
        st.sidebar.caption("No sessions for this user yet.")
        return None
    current = st.session_state.get("app_session")
    index = ids.index(current) if current in ids else 0
    session = st.sidebar.selectbox("Session", ids, index=index, key="app_session_select",
                                   help=f"{page.total} session(s), newest first")
    st.session_state["app_session"] = session
    return session
