"""Working memory: the session's typed and custom slots, edited as JSON with validation, with a restorable history."""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

import streamlit as st

from engine import TYPED_SLOTS, MemoryEngine, SlotEdit, to_plain
from ui.components import can_edit, flash, need_session, need_user, show_flash
from ui.error_display import engine_errors
from ui.resources import get_engine
from ui.text import compact_json, md_escape, pretty_json, when

HISTORY_ROWS = 50


def edited(message: str) -> None:
    """After a write: show ``message`` on the next run, inspect the newest edit, and rerun."""
    flash("wm", message)
    st.session_state["wm_show_latest"] = True
    st.rerun()


def slot_table(slots: dict[str, Any]) -> None:
    st.dataframe(
        [
            {
                "slot": name,
                "kind": "typed" if name in TYPED_SLOTS else "custom",
                "value": "—" if value is None else compact_json(value, 200),
            }
            for name, value in slots.items()
        ],
        hide_index=True,
        key="wm_slots_table",
    )


def edit_slot(engine: MemoryEngine, user: str, session: str, slots: dict[str, Any]) -> str:
    """Pick a slot, see its value, and save a new one typed as JSON (invalid JSON saves nothing)."""
    names = list(slots)
    if st.session_state.get("wm_slot") not in names:
        st.session_state["wm_slot"] = names[0]
    slot = st.selectbox(
        "Slot",
        names,
        key="wm_slot",
        persist_state="session",
        format_func=lambda n: n if n in TYPED_SLOTS else f"{n} (custom)",
    )
    current = pretty_json(slots[slot])
    st.caption("Current value" if slots[slot] is not None else "Current value: not set")
    st.code(current, language="json", wrap_lines=True)
    if not can_edit(engine, "editing a slot"):
        return slot
    # The key follows the stored value: after a save, a restore or another process's write the box shows the new
    # value, while after a rejected save it keeps what the person typed so they can fix it.
    digest = hashlib.sha1(f"{user}\x00{session}\x00{slot}\x00{current}".encode()).hexdigest()[:12]
    with st.form("wm_edit_form"):
        text = st.text_area(
            f"New value of {slot} as JSON",
            value=current,
            height=180,
            key=f"wm_value_{digest}",
            help='Any JSON value: "text", 42, [1, 2], {"key": "value"}; null clears the slot.',
        )
        save = st.form_submit_button("Save", type="primary")
    if save:
        with engine_errors("Not saved"):
            engine.working.set_json(user, session, slot, text, source="ui")
            edited(f"Saved {slot}.")
    return slot


def add_slot(engine: MemoryEngine, user: str, session: str, slots: dict[str, Any]) -> None:
    if not can_edit(engine, "adding a slot"):
        return
    if st.session_state.pop("wm_add_done", False):
        # Added: an empty form for the next slot. Set, not deleted: the browser keeps a deleted widget's text. (Not
        # clear_on_submit: a rejected slot keeps its name and value for fixing.)
        st.session_state["wm_new_name"] = ""
        st.session_state["wm_new_value"] = ""
    with st.form("wm_add_form", clear_on_submit=False):
        name = st.text_input(
            "Custom slot name",
            key="wm_new_name",
            placeholder="e.g. budget_eur",
            help="lowercase letters, digits and _, starting with a letter (at most 64)",
        )
        text = st.text_area("Value as JSON", key="wm_new_value", placeholder='{"limit": 1200}', height=100)
        add = st.form_submit_button("Add slot")
    if not add:
        return
    name = name.strip()
    if name in slots and slots[name] is not None:
        st.error(f"Slot {md_escape(name)} already exists: edit it above.")
        return
    if not text.strip() or text.strip() == "null":
        st.error("Give the new slot a JSON value (null would leave it empty).")
        return
    with engine_errors("Slot not added"):
        engine.working.set_json(user, session, name, text, source="ui")
        st.session_state["wm_add_done"] = True
        edited(f"Added custom slot {md_escape(name)}.")


def remove_slot(engine: MemoryEngine, user: str, session: str, slots: dict[str, Any]) -> None:
    custom = [n for n, v in slots.items() if n not in TYPED_SLOTS and v is not None]
    if not custom:
        st.caption("No custom slots in this session.")
        return
    if not can_edit(engine, "removing a slot"):
        return
    with st.form("wm_remove_form"):
        name = st.selectbox("Custom slot to remove", custom, key="wm_remove_name")
        sure = st.checkbox("Remove it (its value stays in the history and can be restored)", key="wm_remove_sure")
        remove = st.form_submit_button("Remove slot")
    if remove:
        if not sure:
            st.error("Tick the box to confirm; nothing was removed.")
            return
        with engine_errors("Slot not removed"):
            engine.working.update(user, session, {name: None}, source="ui")
            edited(f"Removed custom slot {md_escape(name)}.")


def diff_text(edit: SlotEdit) -> str:
    before = pretty_json(edit.old_value).splitlines() if edit.old_value is not None else []
    after = pretty_json(edit.new_value).splitlines() if edit.new_value is not None else []
    lines = difflib.unified_diff(
        before,
        after,
        fromfile="before (absent)" if edit.old_value is None else "before",
        tofile="after (removed)" if edit.new_value is None else "after",
        lineterm="",
    )
    return "\n".join(lines) or "(no textual difference)"


def history(engine: MemoryEngine, user: str, session: str, slot: str) -> None:
    only = st.toggle(f"Only edits of {slot}", key="wm_history_only_slot", persist_state="session")
    edits = engine.working.history(user, session, slot if only else None, limit=HISTORY_ROWS)
    if not edits:
        st.caption("No edits recorded yet.")
        return
    st.dataframe(
        [
            {
                "edit": e.id,
                "when": when(e.at),
                "slot": e.slot,
                "source": e.source,
                "before": "—" if e.old_value is None else compact_json(e.old_value),
                "after": "—" if e.new_value is None else compact_json(e.new_value),
            }
            for e in edits
        ],
        hide_index=True,
        key="wm_history_table",
    )
    by_id = {e.id: e for e in edits}
    if st.session_state.pop("wm_show_latest", False) or st.session_state.get("wm_edit") not in by_id:
        st.session_state["wm_edit"] = edits[0].id
    chosen = st.selectbox(
        "Inspect an edit",
        list(by_id),
        key="wm_edit",
        format_func=lambda i: f"#{i} · {when(by_id[i].at)} · {by_id[i].slot} · {by_id[i].source}",
    )
    edit = by_id[chosen]
    st.code(diff_text(edit), language="diff", wrap_lines=True)
    if not can_edit(engine, "restoring a value"):
        return
    with st.form("wm_restore_form"):
        which = st.radio(
            "Value to put back",
            ["old", "new"],
            horizontal=True,
            key="wm_restore_which",
            format_func=lambda w: "the value before this edit" if w == "old" else "the value after this edit",
        )
        restore = st.form_submit_button("Restore this value")
    if restore:
        with engine_errors("Not restored"):
            # Its own source, so the history tells a restore from an edit typed by hand.
            engine.working.restore(user, session, edit.id, which, source="restore")
            edited(
                f"Restored {edit.slot} to its value {'before' if which == 'old' else 'after'} edit #{edit.id} "
                "(recorded as a new edit)."
            )


REASON_HELP = (
    "{{slot}} is replaced by that slot's value (text as is, other values as JSON, unset slots by "
    "nothing). The model's answer is written into the target slot with source llm."
)


def reason(engine: MemoryEngine, user: str, session: str) -> None:
    """One LLM step over this session's working memory; the last result stays on screen after the rerun."""
    if not can_edit(engine, "reasoning (it writes its answer into a slot)"):
        return
    if not engine.settings.llm_configured:
        st.caption(
            "No LLM is configured (set OPENAI_API_KEY, and OPENAI_BASE_URL for a compatible server): "
            "reasoning has no offline strategy, so it will say so and write nothing."
        )
    with st.form("wm_reason_form"):
        template = st.text_area(
            "Template",
            key="wm_reason_template",
            height=120,
            help=REASON_HELP,
            placeholder="Goals: {{goals}}\nObservations: {{observations}}\n"
            "What should the agent do next? Answer in one sentence.",
        )
        left, right = st.columns([3, 2])
        into = left.text_input(
            "Write the answer into slot",
            value="intermediate_reasoning",
            key="wm_reason_into",
            help="a typed slot or a custom slot name (created if new)",
        )
        parse = right.radio(
            "Parse the answer",
            ["none", "json"],
            horizontal=True,
            key="wm_reason_parse",
            format_func=lambda p: "as text" if p == "none" else "as JSON",
        )
        run = st.form_submit_button("Reason")
    if run:
        with engine_errors("Nothing written"):
            result = engine.working.reason(user, session, template, into.strip(), None if parse == "none" else "json")
            st.session_state["wm_reason_result"] = {"user": user, "session": session, **to_plain(result)}
            edited(f"Wrote the model's answer into {md_escape(result.slot)} (source llm).")
    shown = st.session_state.get("wm_reason_result")
    if not shown or (shown["user"], shown["session"]) != (user, session):
        return
    # Prompt and answer are stored/model text: code blocks, never markdown.
    st.caption(
        f"Last run · model {md_escape(shown['model'])} · {shown['input_tokens']} prompt tokens, "
        f"{shown['output_tokens']} answer tokens"
    )
    st.caption("Prompt sent")
    st.code(shown["prompt"], language=None, wrap_lines=True)
    st.caption("Model answer")
    st.code(shown["output"], language=None, wrap_lines=True)
    st.caption(f"Value written into {md_escape(shown['slot'])}")
    st.code(pretty_json(shown["value"]), language="json", wrap_lines=True)


def main() -> None:
    engine = get_engine()
    st.title("Working memory")
    show_flash("wm")
    user = need_user("the Working memory page")
    session = need_session(user, "working memory") if user else None
    if not (user and session):
        return
    st.caption(
        f"User {md_escape(user)} · session {md_escape(session)} (change them in the sidebar). Six typed "
        "slots plus any custom ones; every edit is recorded and can be undone."
    )
    with engine_errors("Could not read working memory"):
        slots = engine.working.get(user, session)
        slot_table(slots)
        left, right = st.columns([3, 2])
        with left:
            st.subheader("Edit a slot")
            slot = edit_slot(engine, user, session, slots)
        with right:
            st.subheader("Add a custom slot")
            add_slot(engine, user, session, slots)
            st.subheader("Remove a custom slot")
            remove_slot(engine, user, session, slots)
        st.subheader("Edit history")
        history(engine, user, session, slot)
        st.subheader("Reason with the LLM")
        reason(engine, user, session)


main()
