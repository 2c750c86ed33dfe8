"""memlens dashboard: a thin frame. Pages live in pages/, one screen per file, and call the engine's public API."""

from __future__ import annotations

import streamlit as st

from ui.resources import ensure_demo, get_engine
from ui.sidebar import pick_session, pick_user

st.set_page_config(page_title="memlens", page_icon="🔎", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon="📊", default=True),
    st.Page("pages/sessions.py", title="Sessions", icon="💬"),
    st.Page("pages/working_memory.py", title="Working memory", icon="🧠"),
    st.Page("pages/skills.py", title="Skills", icon="🛠️"),
    st.Page("pages/retrieval.py", title="Retrieval trace", icon="🔎"),
    st.Page("pages/feedback.py", title="Feedback labelling", icon="🏷️"),
    st.Page("pages/episodes.py", title="Episodes", icon="🎞️"),
    st.Page("pages/memories.py", title="Memories & forgetting", icon="🗂️"),
]

engine = get_engine()
ensure_demo(engine)
user = pick_user(engine)
pick_session(engine, user)
st.navigation(PAGES).run()
