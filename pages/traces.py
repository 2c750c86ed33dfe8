"""Traces: every stored retrieval trace in one table, filtered (user, words of the question, origin, labelled or
not, preset, hops, days, latency), sorted and paged in the database; a row opens on the Retrieval trace page.
Evaluation runs' traces are left out unless picked as an origin. The filters live in the URL (ui/trace_table.py)."""

from __future__ import annotations

import streamlit as st

from ui.components import fetch_page, pager, reset_page_on_change
from ui.error_display import engine_errors
from ui.nav import page_file
from ui.resources import get_engine
from ui.trace_table import choices_caption, filters_in_url, sort_controls, trace_filters
from ui.trace_table_data import table_rows
from ui.url_state import trace_params, trace_url

PAGE_SIZE = 25

engine = get_engine()
st.title("Traces")
st.caption(
    "Every retrieval the store traced: by agents (API, MCP, CLI), by LangGraph agents through memlens's store, on "
    "this dashboard, by evaluation runs, or imported. Filter, sort, then open one."
)
choices = trace_filters(engine, "traces", in_url=True)
sort, descending = sort_controls("traces")
filters_in_url("traces", choices, sort, descending)
reset_page_on_change("traces_page", choices, sort, descending)
page = None
with engine_errors("Could not list the traces"):
    page = fetch_page(
        "traces_page",
        PAGE_SIZE,
        lambda limit, offset: engine.traces.list_traces(
            limit=limit, offset=offset, filters=choices.to_filter(), sort=sort, descending=descending
        ),
    )
if page is None:
    st.stop()
st.caption(choices_caption(choices))
if not page.total:
    if engine.traces.list_traces(limit=1).total:
        st.info("No stored trace matches these filters.")
    else:
        st.info(
            "No retrievals traced yet. Ask a question on the Retrieval trace page, or let an agent call "
            "`retrieve` / the `memory_retrieve` MCP tool."
        )
        st.page_link(page_file("retrieval"), label="Open the Retrieval trace page", icon=":material/manage_search:")
    st.stop()
event = st.dataframe(
    table_rows(page.rows, link=lambda t: trace_url(t["trace_id"], t["user_id"])),
    hide_index=True,
    key="traces_table",
    on_select="rerun",
    selection_mode="single-row",
    column_config={"open": st.column_config.LinkColumn("open", display_text="open", pinned=True)},
)
pager("traces_page", page, "traces")
picked = list(event.selection.rows) if event is not None else []
if picked and picked[0] < len(page.rows):
    t = page.rows[picked[0]]
    st.page_link(
        page_file("retrieval"),
        label=f"Open trace {t['trace_id']} on the Retrieval trace page",
        icon=":material/open_in_new:",
        query_params=trace_params(t["trace_id"], t["user_id"]),
    )
