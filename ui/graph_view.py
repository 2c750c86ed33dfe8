"""Streamlit pieces of the Graph page: the network, an entity's relations, a fact's timeline, forgetting and the
graph part of the forget log. pages/graph.py picks the user, entity, depth, predicates and "as of" and calls these.

Stored names and predicates reach markdown only through ``md_escape``; tables and ``st.text`` show them as data.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import streamlit as st

from engine import Entity, MemoryEngine, Neighbourhood, Relation

from .components import can_edit, fetch_page, flash, forget_form, pager, reset_page_on_change
from .error_display import engine_errors
from .graph_data import period, relation_rows, supersession_chain, timeline_rows, validity
from .graph_figure import network_figure, selected_point
from .memory_sources import show_links, source_link, source_links
from .text import counted, md_escape, one_line, when
from .url_state import open_tab

TAB_KEY = "graph_tab"
TABS = ["Relations", "Timeline", "Forget", "Forget log"]
MAX_RELATIONS = 300  # the network's cap: past it the page says the picture is cut (and how to narrow it)
GRAPH_KIND = "graph"  # the forget log's memory_type for entities and relations
MAX_VERSION_DETAILS = 25  # a non-exclusive fact can have hundreds of values: details (and links) for the newest


def move_to(entity_id: str) -> None:
    """Make ``entity_id`` the page's entity on the next run (from a callback: its selectbox is not drawn yet)."""
    st.session_state["graph_entity"] = entity_id
    st.session_state["graph_entity_moved"] = True


def open_timeline(subject_id: str, predicate: str) -> None:
    """Show the timeline of ``subject_id predicate ...`` on the next run (moving to the subject if needed)."""
    if st.session_state.get("graph_entity") != subject_id:
        move_to(subject_id)
    st.session_state["graph_predicate"] = predicate
    open_tab(TAB_KEY, "Timeline")


def _chart_selected(key: str, engine: MemoryEngine, user: str) -> None:
    """on_select of the network: a node clicked moves the page to that entity, an edge's middle opens its fact's
    timeline."""
    picked = selected_point(st.session_state.get(key))
    if picked is None:
        return
    kind, ident = picked
    if kind == "entity":
        move_to(ident)
    else:
        try:
            rel = engine.graph.relation(user, ident)
        except (KeyError, ValueError):  # forgotten meanwhile
            return
        open_timeline(rel.subject_id, rel.predicate)


def network(engine: MemoryEngine, user: str, hood: Neighbourhood, entity: Entity, as_of: datetime | None) -> None:
    """The neighbourhood as an interactive network, what it shows in words, and a picker to move to a neighbour."""
    when_text = f"valid at the end of {as_of.date().isoformat()}" if as_of else "valid now"
    if not hood.relations:
        st.info(
            f"{md_escape(entity.name)} has no relations {when_text} within this depth and these predicates. Try "
            "another date, a greater depth or no predicate filter; its whole history is in the Timeline tab."
        )
        return
    key = f"graph_net_{entity.id}"
    st.plotly_chart(
        network_figure(hood),
        key=key,
        on_select=lambda: _chart_selected(key, engine, user),
        selection_mode="points",
        config={"displaylogo": False, "scrollZoom": True},
    )
    cut = (
        f" Cut at the first {MAX_RELATIONS} relations (newest first): narrow it by predicate or depth."
        if hood.truncated
        else ""
    )
    st.caption(
        f"{counted(len(hood.entities), 'entity', 'entities')} and {counted(len(hood.relations), 'relation')} "
        f"{when_text}. Click an entity to move to it, the diamond on a relation to open its fact's timeline; hover "
        f"for validity and sources.{cut}"
    )
    others = [e for e in hood.entities if e.id != entity.id]
    if others:
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        target = c1.selectbox(
            "Move to a neighbour",
            [e.id for e in others],
            format_func=lambda i: _entity_option(hood, i),
            key=f"graph_move_{entity.id}",
        )
        c2.button("Move", key="graph_move_go", on_click=move_to, args=(target,), icon=":material/hub:")


def _entity_option(hood: Neighbourhood, entity_id: str) -> str:
    e = next(x for x in hood.entities if x.id == entity_id)
    return f"{one_line(e.name, 60)} ({e.type}) · {hood.distance.get(entity_id, 0)} hop(s)"


def relation_details(engine: MemoryEngine, user: str, rel: Relation) -> None:
    """One relation: the fact, its validity, who made it, and its sources as links (messages to the Sessions page)."""
    with st.container(border=True):
        st.text(rel.sentence)
        superseded = f" · superseded by {md_escape(rel.superseded_by)}" if rel.superseded_by else ""
        forgotten = f" · forgotten {when(rel.archived_at)}" if rel.archived_at else ""
        st.caption(
            f"{md_escape(rel.id)} · {validity(rel)} · {md_escape(period(rel))}{superseded}{forgotten} · method "
            f"{md_escape(rel.method)} · confidence {'—' if rel.confidence is None else f'{rel.confidence:.2f}'}"
        )
        links = source_links(user, rel.sources)
        show_links(links, f"Drawn from {counted(len(rel.sources), 'source')}:")
        others = [s for s in rel.sources if source_link(user, s) is None]
        if others:
            st.caption("Other sources (no page to open): " + md_escape(", ".join(f"{s.type} {s.id}" for s in others)))
        if not rel.sources:
            st.caption("No source recorded (added by hand or by a tool).")


def relations_tab(engine: MemoryEngine, user: str, entity: Entity, as_of: datetime | None) -> None:
    """The entity's relations (as subject or object) valid at ``as_of``, or every version, paginated in SQL."""
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    history = c1.toggle("Every version (superseded too)", key="graph_rel_history", persist_state="session")
    archived = c2.toggle("Forgotten too", key="graph_rel_archived", persist_state="session")
    size = c3.selectbox("Per page", (10, 25, 50, 100), index=1, key="graph_rel_size", persist_state="session")
    reset_page_on_change("graph_rel_page", user, entity.id, as_of, history, archived, size)
    page = fetch_page(
        "graph_rel_page",
        size,
        lambda limit, offset: engine.graph.relations(
            user, entity.id, as_of=as_of, include_history=history, include_archived=archived, limit=limit, offset=offset
        ),
    )
    pager("graph_rel_page", page, "relations")
    if not page.rows:
        st.info(f"No relation of {md_escape(entity.name)} matches (valid {'then' if as_of else 'now'}).")
        return
    st.dataframe(
        relation_rows(page.rows, entity.id),
        hide_index=True,
        key="graph_rel_table",
        column_config={"fact": st.column_config.TextColumn(width="large")},
    )
    by_id = {r.id: r for r in page.rows}
    if st.session_state.get("graph_rel_item") not in by_id:
        st.session_state["graph_rel_item"] = page.rows[0].id
    chosen = st.selectbox(
        "Details of", list(by_id), key="graph_rel_item", format_func=lambda i: one_line(by_id[i].sentence, 90)
    )
    rel = by_id[chosen]
    relation_details(engine, user, rel)
    st.button(
        "Open this fact's timeline",
        key="graph_rel_timeline",
        on_click=open_timeline,
        args=(rel.subject_id, rel.predicate),
        icon=":material/timeline:",
    )


def timeline_tab(engine: MemoryEngine, user: str, entity: Entity, predicates: Sequence[str]) -> str | None:
    """Every version of ``entity predicate ...`` with its validity, what superseded what and each version's sources.
    Returns the predicate shown (for the URL)."""
    if not predicates:
        st.info(f"{md_escape(entity.name)} is the subject of no relation, so there is no fact to follow over time.")
        return None
    if st.session_state.get("graph_predicate") not in predicates:
        st.session_state["graph_predicate"] = predicates[0]
    predicate: str = st.selectbox(
        f"Fact of {md_escape(entity.name)}", list(predicates), key="graph_predicate", help="The subject's predicates"
    )
    versions = engine.graph.timeline(user, entity.id, predicate)
    exclusive = predicate in engine.settings.exclusive_predicates
    st.caption(
        f"{counted(len(versions), 'version')} of “{md_escape(entity.name)} {md_escape(predicate)} …”, oldest first. "
        + (
            "An exclusive predicate: a new value closes the old one's validity and links it."
            if exclusive
            else "Not an exclusive predicate: its values hold side by side (settings: graph_exclusive_predicates)."
        )
    )
    chain = supersession_chain(versions)
    if chain:
        st.markdown(
            "**What replaced what:** "
            + " · ".join(f"{md_escape(old)} → {md_escape(new)} ({md_escape(at)})" for old, new, at in chain)
        )
    st.dataframe(timeline_rows(versions), hide_index=True, key="graph_timeline_table")
    first = max(0, len(versions) - MAX_VERSION_DETAILS)
    if first:
        st.caption(f"The sources of the newest {MAX_VERSION_DETAILS} versions (the table above has every one):")
    for n, rel in enumerate(versions[first:], start=first + 1):
        with st.container(key=f"graph_version_{n}"):
            st.markdown(f"**v{n}** · {validity(rel)}")
            relation_details(engine, user, rel)
    return predicate


def forget_tab(engine: MemoryEngine, user: str, entity: Entity, versions: Sequence[Relation]) -> None:
    """Forget the entity (its relations and mentions go with it) or some of its relations, with a reason, a mode
    and a confirmation; one graph entry in the forget log."""
    if not can_edit(engine, "forgetting"):
        return
    if st.session_state.pop("graph_forget_done", False):
        st.session_state.update({"graph_forget_rels": [], "graph_forget_reason": "", "graph_forget_sure": False})
    what = st.radio(
        "What to forget",
        ["entity", "relations"],
        horizontal=True,
        key="graph_forget_what",
        format_func=lambda w: f"the entity {one_line(entity.name, 40)} and its relations"
        if w == "entity"
        else "some of its relations",
    )
    by_id = {r.id: r for r in versions}
    if what == "entity":
        ids = [entity.id]
        st.caption(
            f"Forgetting {md_escape(entity.name)} forgets its {counted(len(by_id), 'relation')} (as subject or "
            "object, every version) and the links from memories that name it. The memories themselves stay."
        )
    else:
        ids = st.multiselect(
            "Relations",
            list(by_id),
            key="graph_forget_rels",
            format_func=lambda i: f"{one_line(by_id[i].sentence, 70)} · {validity(by_id[i])} · {period(by_id[i])}",
        )
        if not ids:
            st.caption("Pick the relations to forget.")
            return
    chosen = forget_form(
        "graph",
        "soft: archive (kept, fetchable by id, never shown or followed)",
        "hard: delete (cannot be undone; names redacted from stored traces)",
        "I have checked what will be forgotten",
        f"Forget {counted(len(ids), 'graph record')}",
    )
    if chosen is None:
        return
    mode, reason = chosen
    with engine_errors("Nothing was forgotten"):
        result = engine.graph.forget(user, ids, reason, mode, actor="ui")
        unknown = f" Not found or already forgotten: {md_escape(', '.join(result.unknown))}." if result.unknown else ""
        flash("graph", f"Forgot {counted(result.count, 'graph record')} ({mode}).{unknown}")
        st.session_state["graph_forget_done"] = True
        if what == "entity" and result.count:
            st.session_state.pop("graph_entity", None)  # it is gone from the picker: start from the top entity
        st.rerun()


def forget_log_tab(engine: MemoryEngine, user: str) -> None:
    """The graph entries of the user's forget log, newest first: the audit of what was forgotten here."""
    entries = [e for e in engine.forgetting.log(user, limit=500) if e.memory_type == GRAPH_KIND]
    if not entries:
        st.caption("No entity or relation of this user has been forgotten.")
        return
    st.dataframe(
        [
            {
                "when": when(e.at),
                "mode": e.mode,
                "count": e.count,
                "ids": ", ".join(e.ids),
                "reason": e.reason,
                "actor": e.actor,
                "entry": e.id,
            }
            for e in entries
        ],
        hide_index=True,
        key="graph_log_table",
    )
    st.caption(f"{counted(len(entries), 'entry', 'entries')} (graph forgets among the newest 500 of this user).")


def mentions_section(engine: MemoryEngine, user: str, entity: Entity) -> None:
    """The memories that name the entity (what the retrieval's entity strategy follows), as links."""
    named = engine.graph.mentions(user, [entity.id]).get(entity.id, [])
    if not named:
        st.caption("No memory names it (it came from a fact added by hand or by a tool).")
        return
    links = source_links(user, [{"type": kind, "id": memory_id} for kind, memory_id in named])
    show_links(links, f"Named by {counted(len(named), 'memory', 'memories')}:")


def entity_header(entity: Entity) -> None:
    aliases = f" · also {md_escape(', '.join(entity.aliases))}" if entity.aliases else ""
    forgotten = f" · forgotten {when(entity.archived_at)}" if entity.archived_at else ""
    st.caption(
        f"{md_escape(entity.id)} · type {md_escape(entity.type)}{aliases} · first seen {when(entity.created_at)}"
        f" · updated {when(entity.updated_at)}{forgotten}"
    )
