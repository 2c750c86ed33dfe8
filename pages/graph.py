"""Graph: the entities and relations drawn from a user's memories. Pick an entity (most mentioned first, or search by
name), see its neighbourhood as an interactive network filtered by predicate and depth "as of" a date, follow a fact
through its versions (what superseded what, each version's source messages linked to the Sessions page), read the
entity's relations, and forget an entity or relations with the reason kept in the forget log.

Deep links: ``?user=&entity=<id or name>&predicate=&as_of=YYYY-MM-DD&depth=1..3`` (and ``tab``). The network is capped
at ``MAX_RELATIONS`` relations (the page says when it is cut), so it stays quick on a large store.
"""

from __future__ import annotations

from datetime import date

import streamlit as st

from engine import Entity, MemoryEngine
from ui.components import need_user, show_flash
from ui.error_display import engine_errors
from ui.graph_data import as_of_moment, parse_day, predicates_of
from ui.graph_view import (
    MAX_RELATIONS,
    TAB_KEY,
    TABS,
    entity_header,
    forget_log_tab,
    forget_tab,
    mentions_section,
    network,
    relations_tab,
    timeline_tab,
)
from ui.resources import get_engine
from ui.text import md_escape, one_line
from ui.url_state import incoming, open_tab, url_tabs, write

ENTITY_CHOICES = 100  # entities offered in the picker (most mentioned first); the search box reaches the others
DEPTHS = (1, 2, 3)
HISTORY_LIMIT = 500  # an entity's relations read for its predicates and the forget form (every version)


def linked_entity(engine: MemoryEngine, user: str, value: str) -> Entity | None:
    """The entity a link names: by id, else by name (or alias)."""
    try:
        return engine.graph.entity(user, value)
    except (KeyError, ValueError):  # NotFound, or not an id at all (InvalidInput): try it as a name
        pass
    try:
        return engine.graph.resolve(user, value)
    except ValueError:  # InvalidInput: neither an id nor a name
        return None


def pick_entity(engine: MemoryEngine, user: str) -> Entity | None:
    """The search box and the entity picker (most mentioned first); a link's ``entity`` wins once."""
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    query = c1.text_input("Find an entity", key="graph_query", placeholder="a name or part of one")
    page = engine.graph.list_entities(user, query.strip() or None, limit=ENTITY_CHOICES)
    options = {e.id: e for e in page.rows}
    linked = incoming("entity")
    if linked:
        found = linked_entity(engine, user, linked)
        if found is None:
            st.warning(f"The link names no entity of {md_escape(user)}: {md_escape(one_line(linked, 60))}.")
        else:
            st.session_state["graph_entity"] = found.id
    current = st.session_state.get("graph_entity")
    if current and current not in options:
        try:  # moved to by a click or a link, or beyond the first choices: offered on top
            options = {current: engine.graph.entity(user, current), **options}
        except (KeyError, ValueError):  # forgotten (hard) meanwhile, or another user's
            current = None
    if not options:
        st.info("No entity matches that search.")
        return None
    if current not in options:
        st.session_state["graph_entity"] = next(iter(options))
    more = f" (the first {ENTITY_CHOICES} of {page.total:,}; search for others)" if page.total > ENTITY_CHOICES else ""
    chosen = c2.selectbox(
        f"Entity, most mentioned first{more}",
        list(options),
        key="graph_entity",
        format_func=lambda i: f"{one_line(options[i].name, 60)} ({options[i].type})",
    )
    write("entity", chosen)
    return options[chosen]


def view_controls() -> tuple[int, date | None]:
    """Depth and the "as of" date, from the URL on a link, kept in the URL."""
    depth_link = incoming("depth")
    if depth_link in {str(d) for d in DEPTHS}:
        st.session_state["graph_depth"] = int(depth_link or 1)
    as_of_link = incoming("as_of")
    if as_of_link:
        st.session_state["graph_as_of"] = parse_day(as_of_link)
    # Defaults through the state, not value=: a widget given both a value and a state set by a link warns on screen.
    st.session_state.setdefault("graph_depth", 1)
    st.session_state.setdefault("graph_as_of", None)
    c1, c2 = st.columns([2, 2], vertical_alignment="bottom")
    depth = c1.select_slider("Depth (hops from the entity)", DEPTHS, key="graph_depth")
    day = c2.date_input(
        "As of (empty: now)",
        key="graph_as_of",
        help="Only the relations valid at the end of that day (UTC): a newer value of an exclusive predicate was "
        "not yet said, an older one not yet superseded.",
    )
    day = day if isinstance(day, date) else None  # one date (no range) or none
    write("depth", str(depth))
    write("as_of", day.isoformat() if day else None)
    return int(depth), day


def main() -> None:
    engine = get_engine()
    st.title("Graph")
    st.caption(
        "Entities and the relations between them, drawn from memories as they are written; each fact valid from when "
        "it was said until a newer value replaced it."
    )
    show_flash("graph")
    user = need_user("the Graph page")
    if not user:
        return
    with engine_errors("Could not read the graph"):
        if engine.graph.stats(user)["entities"] == 0:
            st.info(
                f"User {md_escape(user)} has no graph yet. Entities and relations are drawn from memories when they "
                f"are written with graph extraction on (setting graph_extraction, now "
                f"{md_escape(engine.settings.graph_extraction)}: auto uses the LLM when one is configured, else the "
                f"offline extractor). For memories stored before, run `memlens graph extract --user {md_escape(user)}`"
                ", or add a fact with `engine.graph.add_fact`."
            )
            forget_log_tab(engine, user)
            return
        entity = pick_entity(engine, user)
        if entity is None:
            return
        depth, day = view_controls()
        as_of = as_of_moment(day)
        everything = engine.graph.neighbourhood(user, [entity.id], depth, as_of=as_of, max_relations=MAX_RELATIONS)
        kept = st.session_state.get("graph_predicates") or []
        choices = sorted({r.predicate for r in everything.relations} | set(kept))
        st.session_state["graph_predicates"] = [p for p in kept if p in choices]
        wanted = st.multiselect(
            "Only these predicates (none: every predicate)", choices, key="graph_predicates", placeholder="every one"
        )
        hood = (
            engine.graph.neighbourhood(
                user, [entity.id], depth, predicates=wanted, as_of=as_of, max_relations=MAX_RELATIONS
            )
            if wanted
            else everything
        )
        st.subheader(md_escape(entity.name), anchor=False)
        entity_header(entity)
        mentions_section(engine, user, entity)
        network(engine, user, hood, entity, as_of)

        versions = engine.graph.relations(user, entity.id, include_history=True, limit=HISTORY_LIMIT).rows
        predicates = predicates_of(versions, entity.id)
        linked_predicate = incoming("predicate")
        if linked_predicate:
            st.session_state["graph_predicate"] = linked_predicate
            if incoming("tab") is None:
                open_tab(TAB_KEY, "Timeline")  # a link to a fact opens its timeline
        rel_tab, time_tab, forget, log = url_tabs(TABS, key=TAB_KEY)
        with rel_tab:
            relations_tab(engine, user, entity, as_of)
        with time_tab:
            shown = timeline_tab(engine, user, entity, predicates)
            write("predicate", shown)
        with forget:
            forget_tab(engine, user, entity, versions)
        with log:
            forget_log_tab(engine, user)


main()
