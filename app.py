"""memlens dashboard: a thin frame. Pages live in pages/, one screen per file, and call the engine's public API."""

from __future__ import annotations

import streamlit as st

from engine import MemlensError, prepare_process_environment
from ui.auth import signed_in
from ui.error_display import error_text
from ui.forget_watch import drop_if_forgotten
from ui.nav import page_file
from ui.resources import ensure_demo, get_engine
from ui.sidebar import pick_session, pick_user
from ui.text import md_escape

prepare_process_environment()  # before the engine loads LanceDB and the model

# An emoji, not a ":material/...:" name: Streamlit fetches a material favicon from fonts.gstatic.com (its bundled
# font only draws icons inside the page), so offline the tab had no icon. The page icons below are drawn locally.
st.set_page_config(page_title="memlens", page_icon="🔎", layout="wide")

PAGES = [
    st.Page(page_file("overview"), title="Overview", icon=":material/dashboard:", default=True),
    st.Page(page_file("sessions"), title="Sessions", icon=":material/forum:"),
    st.Page(page_file("working_memory"), title="Working memory", icon=":material/psychology:"),
    st.Page(page_file("skills"), title="Skills", icon=":material/construction:"),
    st.Page(page_file("retrieval"), title="Retrieval trace", icon=":material/manage_search:"),
    st.Page(page_file("traces"), title="Traces", icon=":material/table_rows:"),
    st.Page(page_file("feedback"), title="Feedback labelling", icon=":material/label:"),
    st.Page(page_file("episodes"), title="Episodes", icon=":material/timeline:"),
    st.Page(page_file("memories"), title="Memories & forgetting", icon=":material/inventory_2:"),
    st.Page(page_file("store"), title="Store insights", icon=":material/query_stats:"),
    st.Page(page_file("maintenance"), title="Maintenance", icon=":material/autorenew:"),
    st.Page(page_file("graph"), title="Graph", icon=":material/hub:"),
    st.Page(page_file("evaluations"), title="Evaluations", icon=":material/fact_check:"),
]

try:
    # The navigation before the engine: it draws the sidebar's page titles at once, so a first start that loads the
    # demo (tens of seconds) shows "Overview", "Sessions"... meanwhile, not Streamlit's file-name list of pages/.
    # The sign-in gate comes first of all; a visitor it stops gets no page titles either (a hidden navigation).
    allowed = signed_in()  # the gate (ui/auth.py): nothing of the store is read or shown before it says yes
    # expanded: past ten pages Streamlit folds the rest under "View 3 more", hiding Maintenance, Graph, Evaluations
    page = st.navigation(PAGES, position="sidebar" if allowed else "hidden", expanded=True)
    if not allowed:
        st.stop()
    engine = get_engine()
    ensure_demo(engine)
    drop_if_forgotten(engine)  # before any page shows cached memory text (ui/forget_watch.py)
    user = pick_user(engine)
    pick_session(engine, user)
    # a team store has no folder: its location with the password masked
    st.sidebar.caption(f"Store: {md_escape(engine.path if engine.path is not None else engine.location.display)}")
    if engine.read_only:
        st.sidebar.caption("Read-only: browsing only, every editing control is hidden.")
    page.run()
except MemlensError as exc:
    # Backstop for errors a page did not expect (the store locked by another process for too long, a store
    # that cannot be read): a readable message instead of a traceback. Pages handle their own action errors.
    st.error(f"The memory store could not be used: {md_escape(error_text(exc))}", icon=":material/error:")
