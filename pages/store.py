"""Store insights: questions asked of a whole store rather than one trace. Near-duplicate memories (with a merge:
keep one, forget the other), echoes of what the agent was given, memories in no recent context, questions that
found nothing, superseded facts still recalled, and the blast radius of one memory (every trace, context,
evaluation case and label it touched), from where it can be forgotten.

A page of its own rather than a tab of the Overview: the Overview opens first and must stay light, these questions
are asked of one user at a time (the sidebar's), and the blast radius is a deep link target (``?memory=<id>``)."""

from __future__ import annotations

import streamlit as st

from ui.components import need_user, show_flash
from ui.error_display import engine_errors
from ui.resources import get_engine
from ui.store_view import blast_radius, echoes, empty_queries, near_duplicates, stale_facts, unused
from ui.url_state import incoming, open_tab, url_tabs, write

TAB_KEY = "store_tab"
TABS = ["Near-duplicates", "Echoes", "Unused memories", "Empty questions", "Stale facts", "Blast radius"]


def main() -> None:
    engine = get_engine()
    st.title("Store insights")
    show_flash("store")
    user = need_user("the Store insights page")
    if not user:
        return
    linked = incoming("memory")  # ?memory=<id>: that memory's blast radius
    if linked and incoming("tab") is None:
        open_tab(TAB_KEY, "Blast radius")
    with engine_errors("Could not read the store"):
        tabs = url_tabs(TABS, key=TAB_KEY)
        # Only the open tab asks its question: each reads the store, and the page must answer at once at 100k.
        for tab, show in zip(tabs, (near_duplicates, echoes, unused, empty_queries, stale_facts), strict=False):
            if tab.open is not False:
                with tab:
                    show(engine, user)
        if tabs[-1].open is not False:
            with tabs[-1]:
                write("memory", blast_radius(engine, user, linked))


main()
