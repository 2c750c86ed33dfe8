"""Memories & forgetting: browse and search semantic items by category with their provenance, add one, forget
(soft or hard) after previewing exactly what is affected and giving a reason, and read the forget log."""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine import Item, MemoryEngine, NotFound
from ui.components import (
    can_edit,
    fetch_page,
    flash,
    forget_form,
    kept_choice,
    need_user,
    pager,
    reset_page_on_change,
    show_flash,
)
from ui.error_display import engine_errors
from ui.memory_sources import show_message_sources, show_origin
from ui.resources import get_engine
from ui.text import counted, md_escape, one_line, when
from ui.url_state import incoming, url_tabs, write

ALL = "all categories"
FORGET_KINDS = {"semantic": "semantic items", "episodic": "episodes", "procedural": "skills"}
FORGET_KIND_ONE = {"semantic": "semantic item", "episodic": "episode", "procedural": "skill"}
PREVIEW_LIMIT = 50


def browse_filters(engine: MemoryEngine, user: str) -> tuple[str | None, str | None, bool, int, dict]:
    categories = {c.name: c for c in engine.items.categories(user)}
    options = [ALL, *categories]
    # two rows of two: four columns cut "Forgotten too" and "Per page" to a letter at 820 px
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    c3, c4 = st.columns([3, 2], vertical_alignment="bottom")
    category = kept_choice(
        c1.selectbox,
        "Category",
        options,
        key="memories_category",
        default=ALL,
        persist_state="session",
        format_func=lambda n: n if n == ALL else f"{n} ({categories[n].item_count})",
    )
    query = c2.text_input(
        "Search text", key="memories_query", persist_state="session", placeholder="words in the memory"
    )
    archived = c3.toggle(
        "Forgotten too",
        key="memories_archived",
        persist_state="session",
        help="Soft-forgotten (archived) items stay fetchable by id but are never retrieved.",
    )
    size = c4.selectbox("Per page", (10, 25, 50, 100), index=1, key="memories_page_size", persist_state="session")
    return (None if category == ALL else category), (query.strip() or None), archived, size, categories


def provenance_sources(item: Item) -> str:
    return ", ".join(f"{s.get('type')}:{s.get('id')}" for s in item.provenance.get("sources", [])) or "—"


def item_table(items: tuple[Item, ...]) -> None:
    st.dataframe(
        [
            {
                "id": i.id,
                # beside the id, not after the long content: a forgotten row said so only off-screen
                "status": f"forgotten {when(i.archived_at)}" if i.archived_at else "active",
                "category": i.category,
                "content": i.content,
                "importance": round(i.importance, 2),
                "evergreen": i.evergreen,
                "created": when(i.created_at),
                "source": i.source,
                "provenance": f"{i.provenance.get('method', '')} ← {provenance_sources(i)}",
            }
            for i in items
        ],
        hide_index=True,
        key="memories_table",
        column_config={"content": st.column_config.TextColumn(width="large")},
    )


def item_detail(item: Item) -> None:
    with st.container(border=True):
        status = f" · forgotten (archived) {when(item.archived_at)}" if item.archived_at else ""
        st.caption(
            f"{md_escape(item.id)} · category {md_escape(item.category)} · importance {item.importance:.2f}"
            f"{' · evergreen' if item.evergreen else ''} · created {when(item.created_at)} · source "
            f"{md_escape(item.source or '—')}{status}"
        )
        st.text(item.content)
        if item.preceding_text:
            st.caption(
                "Preceding text (what came right before it; its vector embeds this too, full-text search does not)"
            )
            st.text(item.preceding_text)
        show_origin(item.provenance)  # an imported memory: its source system and id (engine.imports)
        show_message_sources(item.user_id, item.provenance)  # each a link to the Sessions page at that message
        st.caption("Provenance")
        st.json(item.provenance, expanded=True)


def browse(engine: MemoryEngine, user: str) -> tuple[Item, ...]:
    category, query, archived, size, categories = browse_filters(engine, user)
    if category and categories[category].summary:
        with st.expander(f"Summary of category {md_escape(category)}"):
            # Summaries are markdown written by an agent or LLM: shown as source, never rendered
            st.code(categories[category].summary, language="markdown", wrap_lines=True)
    reset_page_on_change("memories_page", user, category, query, archived, size)
    page = fetch_page(
        "memories_page",
        size,
        lambda limit, offset: engine.items.list_items(user, category, query, archived, limit, offset),
    )
    pager("memories_page", page, "memories")
    if not page.rows:
        st.info(
            "No memory matches these filters."
            if (category or query)
            else f"User {md_escape(user)} has no semantic memories yet. Add one in the 'Add a memory' tab, or let "
            "an agent call `remember` / `memorize` (or the `memory_save` MCP tool)."
        )
        return ()
    item_table(page.rows)
    by_id = {i.id: i for i in page.rows}
    linked = incoming("memory")  # ?memory=<id>: a link to one memory, wherever it is in the list
    if linked and linked not in by_id:
        try:
            by_id = {linked: engine.items.get(user, linked), **by_id}
        except (KeyError, ValueError):  # NotFound / InvalidInput: not a semantic item of this user
            linked = None
    if linked:
        st.session_state["memories_item"] = linked
    if st.session_state.get("memories_item") not in by_id:
        st.session_state["memories_item"] = page.rows[0].id
    chosen = st.selectbox(
        "Details of", list(by_id), key="memories_item", format_func=lambda i: f"{i} · {one_line(by_id[i].content, 70)}"
    )
    write("memory", chosen)
    item_detail(by_id[chosen])
    return page.rows


NEW_ITEM_KEYS = ("memories_new_content", "memories_new_preceding")


def add_item(engine: MemoryEngine, user: str) -> None:
    if not can_edit(engine, "adding a memory"):
        return
    if st.session_state.pop("memories_add_done", False):
        # Saved: an empty form, so a second click cannot store the same memory twice. (Not clear_on_submit: a
        # rejected memory keeps its text for fixing.)
        for key in NEW_ITEM_KEYS:
            st.session_state[key] = ""  # set, not deleted: the browser keeps a deleted widget's text
    with st.form("memories_add_form"):
        content = st.text_area(
            "Memory text",
            key="memories_new_content",
            height=120,
            placeholder="A fact, preference or lesson the agent should remember",
        )
        c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
        category = c1.text_input(
            "Category", value="general", key="memories_new_category", help="snake_case: lowercase letters, digits and _"
        )
        importance = c2.slider("Importance", 0.0, 1.0, 0.7, 0.05, key="memories_new_importance")
        evergreen = c3.checkbox("Evergreen", key="memories_new_evergreen", help="Never decays with age")
        preceding = st.text_input(
            "Preceding text (optional)",
            key="memories_new_preceding",
            help="What came right before it where it was said, e.g. the question it answers. "
            "Stored with it and embedded into its vector, so the memory is found by that "
            "question too.",
        )
        submit = st.form_submit_button("Add memory", type="primary")
    if submit:
        with engine_errors("Memory not added"):
            item = engine.items.remember(
                user, content, category.strip(), importance, evergreen, source="ui", preceding_text=preceding or None
            )
            flash("memories", f"Added {md_escape(item.id)} to {md_escape(item.category)}.")
            st.session_state["memories_add_done"] = True
            st.rerun()


def resolve(engine: MemoryEngine, user: str, kind: str, ids: list[str]) -> list[dict[str, Any]]:
    """What forgetting ``ids`` would touch: each id with its text and current state."""
    out = []
    for memory_id in ids[:PREVIEW_LIMIT]:
        try:
            if kind == "semantic":
                m = engine.items.get(user, memory_id)
                text, archived = m.content, m.archived_at
            elif kind == "episodic":
                e = engine.episodes.get(user, memory_id)
                text, archived = e.summary, e.archived_at
            else:
                s = engine.skills.get(user, memory_id)
                text, archived = f"{s.name} v{s.version}: {s.description or s.body}", s.archived_at
            state = "already forgotten (soft)" if archived else "active"
        except NotFound:
            text, state = "", "not found"
        out.append({"id": memory_id, "text": text, "state": state})
    return out


def forget_targets(kind: str, items: tuple[Item, ...]) -> list[str]:
    if kind == "semantic" and items:
        by_id = {i.id: i for i in items}
        picked = st.multiselect(
            "Items from the list on the Browse tab",
            list(by_id),
            key="memories_forget_ids",
            format_func=lambda i: f"{i} · {one_line(by_id[i].content, 60)}",
        )
    else:
        picked = []
    more = st.text_input(
        f"{'Other ' if picked or kind == 'semantic' else ''}{FORGET_KINDS[kind]} by id (comma-separated)",
        key="memories_forget_more",
    )
    extra = [p.strip() for p in more.replace("\n", ",").split(",") if p.strip()]
    return list(dict.fromkeys(picked + extra))


def forget(engine: MemoryEngine, user: str, items: tuple[Item, ...]) -> None:
    if not can_edit(engine, "forgetting"):
        return
    if st.session_state.pop("memories_forget_done", False):
        # Forgotten: an empty form. Set, not deleted: a deleted key resets only the server's copy, and the browser
        # kept showing (and sent back) the old ids.
        cleared = {"memories_forget_ids": [], "memories_forget_more": "", "memories_forget_reason": ""}
        st.session_state.update({**cleared, "memories_forget_sure": False})
    kind: str = st.selectbox(
        "What to forget", list(FORGET_KINDS), format_func=lambda k: FORGET_KINDS[k], key="memories_forget_kind"
    )
    ids = forget_targets(kind, items)
    if not ids:
        st.caption("Pick what to forget to see a preview.")
        return
    with engine_errors("Cannot preview"):
        preview = resolve(engine, user, kind, ids)
        st.markdown(f"**Preview: {len(ids)} {FORGET_KINDS[kind]} selected**")
        for row in preview:
            with st.container(border=True):
                st.caption(f"{md_escape(row['id'])} · {row['state']}")
                if row["text"]:
                    st.text(row["text"])
        if len(ids) > PREVIEW_LIMIT:
            st.caption(f"… and {len(ids) - PREVIEW_LIMIT} more.")
    chosen = forget_form(
        "memories",
        "soft: archive (kept, fetchable by id, never retrieved)",
        "hard: delete everywhere (cannot be undone)",
        "I have checked the preview above",
        f"Forget {len(ids)} {FORGET_KINDS[kind]}",
    )
    if chosen is None:
        return
    mode, reason = chosen
    with engine_errors("Nothing was forgotten"):
        result = engine.forgetting.forget(user, kind, ids, reason, mode, actor="ui")
        unknown = f" Unknown ids (ignored): {md_escape(', '.join(result.unknown))}." if result.unknown else ""
        flash(
            "memories",
            f"Forgot {counted(result.count, FORGET_KIND_ONE[kind], FORGET_KINDS[kind])} ({mode}): "
            f"{md_escape(', '.join(result.forgotten)) or 'none were active'}.{unknown}",
        )
        st.session_state["memories_forget_done"] = True
        st.rerun()


def forget_log(engine: MemoryEngine, user: str) -> None:
    entries = engine.forgetting.log(user, limit=500)
    if not entries:
        st.caption("Nothing has been forgotten for this user.")
        return
    st.dataframe(
        [
            {
                "when": when(e.at),
                "kind": e.memory_type,
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
        key="memories_log_table",
    )
    st.caption(f"{counted(len(entries), 'entry', 'entries')}, newest first (at most 500 shown).")


def main() -> None:
    engine = get_engine()
    st.title("Memories & forgetting")
    show_flash("memories")
    user = need_user("the Memories page")
    if not user:
        return
    with engine_errors("Could not read memories"):
        browse_tab, add_tab, forget_tab, log_tab = url_tabs(
            ["Browse", "Add a memory", "Forget", "Forget log"], key="memories_tab"
        )
        with browse_tab:
            items = browse(engine, user)
        with add_tab:
            add_item(engine, user)
        with forget_tab:
            forget(engine, user, items)
        with log_tab:
            forget_log(engine, user)


main()
