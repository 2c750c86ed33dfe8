"""Who is labelling: the name asked once per browser session and recorded on every label the dashboard writes
(the Feedback page's queue, its trace tab and the Retrieval trace page's label buttons). Until a person gives one,
the dashboard's labels are recorded as ``dashboard``, as the API's are ``api`` and the command line's ``cli``."""

from __future__ import annotations

import streamlit as st

from .text import md_escape

KEY = "labeller"  # session state: the name given
DEFAULT = "dashboard"
MAX_CHARS = 80  # the engine's limit (engine/memory/label_queue.py)


def named() -> str | None:
    """The name this session gave, or None."""
    name = st.session_state.get(KEY)
    return name if isinstance(name, str) and name else None


def labeller() -> str:
    """The name to record on a label: the one given, else ``dashboard``."""
    return named() or DEFAULT


def _take_name() -> None:
    name = str(st.session_state.get("fb_labeller_name") or "").strip()
    if not name:
        st.session_state["fb_labeller_problem"] = "Type a name first."
    elif len(name) > MAX_CHARS:
        st.session_state["fb_labeller_problem"] = f"A name has at most {MAX_CHARS} characters."
    else:
        st.session_state[KEY] = name


def _forget_name() -> None:
    st.session_state.pop(KEY, None)
    st.session_state["fb_labeller_name"] = ""


def ask_labeller() -> str | None:
    """The name box (until a name is given) or who is labelling with a button to change it; returns the name."""
    name = named()
    if name:
        row = st.container(horizontal=True, gap="small", vertical_alignment="center")
        row.markdown(f"Labelling as **{md_escape(name)}** (recorded on every label you give).")
        row.button("Change labeller", key="fb_labeller_change", on_click=_forget_name, icon=":material/badge:")
        return name
    st.text_input(
        "Your name as labeller (asked once; recorded on every label you give)",
        key="fb_labeller_name",
        max_chars=MAX_CHARS,
        placeholder="e.g. ana",
    )
    st.button("Start labelling", key="fb_labeller_go", on_click=_take_name, type="primary")
    problem = st.session_state.pop("fb_labeller_problem", None)
    if problem:
        st.warning(problem)
    return None
