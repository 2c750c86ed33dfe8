"""Feedback labelling: work through a queue of recalled memories by keyboard (built from a filter: traces in a date
range or an evaluation run's misses, unlabelled only), mark a trace's memories useful or harmful (one click, optional
note), see how labellers agree, export the labels or make them an expectation set, read each memory's label ledger,
and see what the labels change in the next retrieval of the same question. Every label records its labeller (the
name asked once, ui/labeller.py) and toggles per (labeller, trace, memory).
"""

from __future__ import annotations

import streamlit as st

from engine import MemlensError, MemoryEngine, NotFound
from ui.components import can_edit, need_user
from ui.error_display import engine_errors, error_text
from ui.label_agreement import agreement_tab
from ui.label_queue import queue_tab
from ui.labeller import ask_labeller, labeller
from ui.layout import button_row
from ui.memory_sources import show_item_message_sources
from ui.nav import page_file
from ui.resources import get_engine
from ui.text import md_escape, when
from ui.trace_data import (
    candidate_texts,
    feedback_factor,
    labelling_rows,
    rank_comparison,
    shorten,
    trace_label,
)
from ui.trace_table_data import usual_traces
from ui.trace_view import cached_trace, table
from ui.url_state import incoming, trace_params, trace_url, url_tabs, write

engine = get_engine()
st.title("Feedback labelling")
st.caption(
    "Label what the agent recalled. Each label is an event pointing at the trace and hop it came from, one per "
    "labeller, trace and memory; the net count (useful +1, harmful −1) scales the memory's score in the next "
    "retrievals."
)
user = need_user("the Feedback labelling page")
if user is None:
    st.stop()
who = None if engine.read_only else ask_labeller()


def do_label(eng: MemoryEngine, user_id: str, item_id: str, label: str, trace_id: str | None, hop: int | None) -> None:
    """Button callback: runs before the page, so every section below already shows the new event. The button
    toggles: the label this labeller already gave the memory on this trace comes off."""
    try:
        event = eng.feedback.toggle(
            user_id,
            item_id,
            label,
            trace_id=trace_id,
            hop=hop,
            note=st.session_state.get("fb_note", ""),
            labeller=labeller(),
        )
    except MemlensError as exc:
        st.session_state["fb_flash"] = ("error", f"Could not label {item_id}: {error_text(exc)}")
        return
    st.session_state["fb_flash"] = (
        ("ok", f"Took the {label} label off {item_id} (trace {trace_id}).")
        if event is None
        else ("ok", f"Labelled {item_id} {label} (event {event.id}, trace {trace_id}, hop {hop}).")
    )
    st.session_state["fb_ledger_item"] = item_id
    st.session_state["fb_note"] = ""


def label_buttons(row: dict, trace_id: str, key: str, link: bool = False, mine: str = "") -> None:
    """One row to label: the memory text (as text), where it came from, and the two one-click buttons (``link``:
    and a link opening its trace on the Retrieval trace page; ``mine``: this labeller's label of it, shown as the
    pressed button)."""
    # The buttons in a row of their own under the text: in narrow columns beside it they shrank to nothing at 820 px.
    with st.container():
        st.text(f"#{row['rank']}  {shorten(row['text'], 260)}")
        st.caption(
            f"{md_escape(row['id'])} · {row['kind']} · hop {row['hop']} · "
            f"{'in context' if row['in_context'] else 'not in context'} · net now {row.get('net', 0):+d}"
            + (f" · your label: **{mine}**" if mine else "")
        )
        if row["kind"] == "semantic" and user:  # the messages it came from, as links (only items keep message sources)
            show_item_message_sources(engine, user, row["id"])
        if link:
            st.page_link(
                page_file("retrieval"),
                label=f"Open trace {trace_id}",
                icon=":material/manage_search:",
                query_params=trace_params(trace_id, user, "hops", row["id"]),
            )
    if engine.read_only:  # the one caption above the tabs says why
        return
    args = (engine, user, row["id"])
    buttons = button_row()
    buttons.button(
        "Useful",
        icon=":material/thumb_up:",
        key=f"fb_u_{key}_{row['id']}",
        on_click=do_label,
        args=(*args, "useful", trace_id, row["hop"]),
        type="primary" if mine == "useful" else "secondary",
    )
    buttons.button(
        "Harmful",
        icon=":material/thumb_down:",
        key=f"fb_h_{key}_{row['id']}",
        on_click=do_label,
        args=(*args, "harmful", trace_id, row["hop"]),
        type="primary" if mine == "harmful" else "secondary",
    )


def engine_summary(eng: MemoryEngine, user_id: str, trace_id: str) -> dict:
    """A trace outside the recent list (opened by a link) as a picker row."""
    t = cached_trace(eng, trace_id, "fb_trace_cache")
    if t.user_id != user_id:
        raise NotFound(f"trace {trace_id} belongs to another user")
    return {
        "trace_id": t.trace_id,
        "created_at": t.created_at,
        "hops": len(t.hops),
        "question": t.question,
        "context_ids": list(t.context_ids),
    }


def memory_texts(eng: MemoryEngine, user_id: str, ids: list[str]) -> dict[str, str]:
    """Texts of the memories this tab names, one engine call per distinct set (kept for the browser session)."""
    key = (user_id, tuple(sorted(set(ids))))
    cached = st.session_state.get("fb_texts")
    if not cached or cached[0] != key:
        texts = eng.feedback.memory_texts(user_id, list(key[1])) if key[1] else {}
        st.session_state["fb_texts"] = cached = (key, texts)
    return cached[1]


flash = st.session_state.pop("fb_flash", None)
if flash:
    (st.success if flash[0] == "ok" else st.error)(md_escape(flash[1]))
if can_edit(engine, "labelling"):
    st.text_input("Note for the next label (optional)", key="fb_note", max_chars=2000)

recent = None
with engine_errors("Could not list traces"):
    recent = engine.traces.list_traces(user, limit=20, filters=usual_traces().to_filter())  # no evaluation runs
summaries = {r["trace_id"]: r for r in recent.rows} if recent else {}
trace = None
if summaries:
    ids = list(summaries)
    linked = incoming("trace")  # ?trace=... from a link or a reload
    if linked and linked not in ids:
        try:
            summaries = {linked: engine_summary(engine, user, linked), **summaries}
            ids = list(summaries)
        except MemlensError:
            linked = None
    current = linked or st.session_state.get("fb_trace") or st.session_state.get("trace_current_id")
    if current in ids:
        st.session_state["fb_trace"] = current
    picked = st.selectbox("Trace to label", ids, format_func=lambda i: trace_label(summaries[i]), key="fb_trace")
    write("trace", picked)
    with engine_errors("Could not open the trace"):
        trace = cached_trace(engine, picked, "fb_trace_cache")
# One look-up of the net counts for everything this screen shows (each engine call opens the store once).
shown_ids = sorted(
    {i for r in summaries.values() for i in r["context_ids"]} | {r.id for r in (trace.ranking if trace else ())}
)
nets = engine.feedback.net(user, shown_ids) if shown_ids else {}

tab_queue, tab_trace, tab_agreement, tab_ledger, tab_effect = url_tabs(
    ["Queue", "Label a trace", "Agreement and export", "Label ledger", "Effect on retrieval"], key="fb_tab"
)
with tab_queue:
    if tab_queue.open:  # built only when looked at (a filter over every trace), and its keys only live here
        if engine.read_only:
            st.info("Read-only store: labelling is not available here.")
        else:
            queue_tab(engine, user, who)

with tab_agreement:
    if tab_agreement.open:
        agreement_tab(engine, user)

with tab_trace:
    if trace is None:
        st.info(
            f"No traces for {md_escape(user)} yet. Ask a question on the Retrieval trace page, then label "
            f"what it recalled "
            "here. (Memories can still be looked up in the ledger tab.)"
        )
    else:
        c1, c2 = st.columns([1, 3])
        only_context = c1.toggle("Only memories in the context", True, key="fb_only_context", wrap=True)
        limit = c2.slider("How many", 1, 50, 10, key="fb_limit")
        rows = labelling_rows(trace, limit, only_context)
        mine = {
            e.item_id: e.label
            for e in engine.feedback.events(
                user, trace_id=trace.trace_id, labeller=labeller(), current_only=True, limit=10_000
            )
        }
        st.caption(f"Question: {md_escape(shorten(trace.question, 200))}")
        st.page_link(
            page_file("retrieval"),
            label=f"Open trace {trace.trace_id} on the Retrieval trace page",
            icon=":material/manage_search:",
            query_params=trace_params(trace.trace_id, user),
        )
        for row in rows:
            label_buttons(
                {**row, "net": nets.get(row["id"], 0)},
                trace.trace_id,
                f"t_{trace.trace_id}",
                mine=mine.get(row["id"], ""),
            )
        if not rows:
            st.info("Nothing to label with this filter: the trace put no memory in the context.")

with tab_ledger:
    events = engine.feedback.events(user, limit=200)
    options = list(dict.fromkeys([e.item_id for e in events] + ([r.id for r in trace.ranking] if trace else [])))
    if st.session_state.get("fb_ledger_item") not in options:
        st.session_state.pop("fb_ledger_item", None)
    if not options:
        st.info("No labels yet and no trace to label from.")
    else:
        texts = memory_texts(engine, user, options)
        item = st.selectbox(
            "Memory",
            options,
            key="fb_ledger_item",
            format_func=lambda i: f"{i} · {shorten(texts.get(i, '(no longer stored)'), 80)}",
        )
        history = engine.feedback.events(user, item_id=item)
        net = sum(e.delta for e in history)
        factor = feedback_factor(net, engine.settings.retrieval_dict())
        current = [e for e in history if e.replaced_at is None]
        st.text(
            f"{item}: {len(history)} label(s), net {net:+d}, feedback factor now {factor:.2f}"
            + (f" ({len(history) - len(current)} replaced by a later one)" if len(current) < len(history) else "")
        )
        st.text(texts.get(item, "(this memory is no longer stored: hard-forgotten)"))
        for e in history:
            st.text(
                f"{when(e.created_at)} · {e.label} ({e.delta:+d}) · by {e.labeller or 'an unnamed labeller'} · "
                f"trace {e.trace_id or '—'} · hop {e.hop or '—'}"
                + (f" · note: {shorten(e.note, 200)}" if e.note else "")
                + (f" · replaced {when(e.replaced_at)}" if e.replaced_at else "")
            )
        if not history:
            st.caption("No labels on this memory yet.")
    if events:
        with st.expander(f"All recent labels of {md_escape(user)} ({len(events)}), newest first"):
            texts = memory_texts(engine, user, [e.item_id for e in events])
            st.dataframe(
                [
                    {
                        "when": when(e.created_at),
                        "item": e.item_id,
                        "text": shorten(texts.get(e.item_id, ""), 120),
                        "label": e.label,
                        "delta": e.delta,
                        "labeller": e.labeller,
                        "replaced": when(e.replaced_at) if e.replaced_at else "",
                        "trace": e.trace_id or "",
                        "open": trace_url(e.trace_id, user, "hops", e.item_id) if e.trace_id else None,
                        "hop": e.hop,
                        "note": e.note,
                    }
                    for e in events
                ],
                hide_index=True,
                key="fb_all_events",
                column_config={
                    "open": st.column_config.LinkColumn("open", display_text="open trace"),
                    "text": st.column_config.TextColumn(width="large"),
                    "hop": st.column_config.NumberColumn(format="%d"),
                },
            )

with tab_effect:
    if trace is None:
        st.info("Pick a trace in the first tab to see what its labels change.")
    else:
        st.caption(
            "Feedback at the time of the trace vs now, and the ranks of a fresh retrieval of the same question "
            "with the trace's settings and clock (so only labels and new memories can change the order)."
        )
        texts = candidate_texts(trace)
        then = {
            r.id: next(
                (
                    c.scores.feedback_net or 0
                    for h in trace.hops
                    for c in h.candidates
                    if c.id == r.id and h.hop == r.hop
                ),
                0,
            )
            for r in trace.ranking
        }
        now = nets
        changed = [
            {
                "id": i,
                "net_then": then[i],
                "net_now": now.get(i, 0),
                "factor_then": feedback_factor(then[i], trace.settings.retrieval),
                "factor_now": feedback_factor(now.get(i, 0), trace.settings.retrieval),
                "text": shorten(texts[i], 100),
            }
            for i in then
            if then[i] or now.get(i)
        ]
        if changed:
            table(changed, key="fb_factor_table")
        else:
            st.info("No memory of this trace has a label yet: label some, then compare.")
        if st.button("Retrieve this question again", key="fb_fresh_go"):
            with engine_errors("Retrieval failed"), st.spinner("Retrieving..."):
                fresh = engine.retrieval.retrieve(
                    trace.user_id,
                    trace.question,
                    trace.session_id,
                    overrides=trace.settings.retrieval_values(),  # the retrieval settings it recorded
                    now=trace.settings.now,
                    save=False,
                )
                st.session_state["fb_fresh"] = (trace.trace_id, fresh)
        fresh_state = st.session_state.get("fb_fresh")
        if fresh_state and fresh_state[0] == trace.trace_id:
            labelled_ids = [i for i in then if now.get(i)]
            rows = rank_comparison(trace, fresh_state[1])
            rows.sort(key=lambda r: (r["id"] not in labelled_ids, r["rank_after"] or 10_000))
            st.caption("Before = the stored trace, after = the fresh retrieval (labelled memories first).")
            table(rows, key="fb_rank_table")
