"""Small Streamlit pieces the pages share: pagination done in the database, "nothing here yet" notes, confirmations."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from engine import MemoryEngine, Page
from ui.sidebar import current_session, current_user
from ui.text import md_escape

PAGE_SIZES = (10, 25, 50, 100)


def reset_page_on_change(key: str, *filters: object) -> None:
    """Go back to page 1 of ``key`` when the filters differ from the previous run's."""
    signature = repr(filters)
    if st.session_state.get(f"{key}_filters") != signature:
        st.session_state[f"{key}_filters"] = signature
        st.session_state[key] = 1


def fetch_page(key: str, page_size: int, fetch: Callable[[int, int], Page]) -> Page:
    """Fetch the page stored under ``key`` (1-based); if rows vanished meanwhile, fall back to the last page."""
    number = max(1, int(st.session_state.get(key) or 1))
    page = fetch(page_size, (number - 1) * page_size)
    if not page.rows and page.total and number > 1:
        number = max(1, math.ceil(page.total / page_size))
        st.session_state[key] = number
        page = fetch(page_size, (number - 1) * page_size)
    return page


def pager(key: str, page: Page, what: str = "rows") -> None:
    """The page-number input and a 'rows a-b of n' caption for a :class:`engine.Page`."""
    pages = max(1, math.ceil(page.total / page.limit))
    if int(st.session_state.get(key) or 1) > pages:
        st.session_state[key] = pages
    if page.total == 0:
        return
    left, right = st.columns([1, 3], vertical_alignment="bottom")
    left.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, step=1, key=key, persist_state="session")
    first = page.offset + 1 if page.rows else 0
    right.caption(f"{what} {first:,}–{page.offset + len(page.rows):,} of {page.total:,}")


def need_user(what: str = "this page") -> str | None:
    """The current user, or an explanation of what to do when the store has none."""
    user = current_user()
    if not user:
        st.info(
            f"No memory to show on {what} yet: the store is empty. Load the demo dataset from the Overview "
            "page (or run `python -m engine demo`), or let an agent write memory through the Python API or "
            "the MCP server. Then pick a user in the sidebar."
        )
    return user


def need_session(user: str, what: str = "this page") -> str | None:
    session = current_session()
    if not session:
        st.info(
            f"User {md_escape(user)} has no sessions yet, so there is nothing for {what}. An agent creates a "
            f"session "
            "by recording its first message (engine.sessions.add_message or the memory_add_message MCP tool)."
        )
    return session


def flash(prefix: str, message: str, kind: str = "success") -> None:
    """Keep a message to show after the rerun that follows an edit (``kind``: success, warning, error, info)."""
    st.session_state[f"{prefix}_flash"] = (kind, message)


def show_flash(prefix: str) -> None:
    """Show (once) the message an edit left before rerunning. Messages are ours, with stored text escaped."""
    kind, message = st.session_state.pop(f"{prefix}_flash", (None, None))
    if kind:
        getattr(st, kind)(message)


def confirmed(form_key: str, sure_key: str, sure_label: str, button_label: str) -> bool:
    """A form with an "I understand" box and a primary button; True once the button is pressed with the box ticked.
    Pressed without it, the page says nothing was deleted."""
    with st.form(form_key):
        sure = st.checkbox(sure_label, key=sure_key)
        go = st.form_submit_button(button_label, type="primary")
    if go and not sure:
        st.error("Tick the confirmation box first; nothing was deleted.")
    return bool(go and sure)


def kept_choice(
    widget: Callable[..., Any], label: str, options: Sequence[Any], *, key: str, default: Any, **kwargs: Any
) -> Any:
    """A choice widget (``st.selectbox``, ``st.pills``) whose pick survives its option labels changing.

    With counts in the labels ("lab (3)" becoming "lab (2)" after a forget) Streamlit sees a new widget; inside a
    tab the browser has not drawn it yet, so the next run arrives without its value and the pick fell back to the
    first option. The last pick is kept beside the widget's own state and put back before the widget is drawn.
    """
    kept = f"{key}__kept"
    value = st.session_state.get(key)
    if value not in options:
        value = st.session_state.get(kept)
    if value not in options:
        value = default
    st.session_state[key] = value
    chosen = widget(label, options, key=key, **kwargs)
    st.session_state[kept] = chosen
    return chosen


def can_edit(engine: MemoryEngine, what: str) -> bool:
    """False on a read-only store, with a short caption in place of the control: a read-only dashboard shows no
    button or form that writes (the engine would refuse it anyway, after the person had filled it in)."""
    if not engine.read_only:
        return True
    st.caption(f"Read-only store: {what} is not available here.")
    return False


def forget_form(prefix: str, soft: str, hard: str, checked: str, button: str) -> tuple[str, str] | None:
    """The form every page forgets with: soft or hard (each explained), a reason for the forget log and a tick that
    the preview was checked. Returns (mode, reason) once submitted with both; otherwise None (an error says what is
    missing, and nothing is forgotten). Widget keys are ``<prefix>_forget_mode``/``_reason``/``_sure``."""
    with st.form(f"{prefix}_forget_form"):
        mode = st.radio(
            "Mode",
            ["soft", "hard"],
            horizontal=True,
            key=f"{prefix}_forget_mode",
            format_func=lambda m: soft if m == "soft" else hard,
        )
        reason = st.text_input("Reason (required, kept in the forget log)", key=f"{prefix}_forget_reason")
        sure = st.checkbox(checked, key=f"{prefix}_forget_sure")
        submit = st.form_submit_button(button, type="primary")
    if not submit:
        return None
    if not reason.strip():
        st.error("Give a reason: it is recorded in the forget log. Nothing was forgotten.")
        return None
    if not sure:
        st.error(f"Tick '{checked}' first. Nothing was forgotten.")
        return None
    return str(mode), reason.strip()
