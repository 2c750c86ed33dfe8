"""The trace filters every trace list shares (the Traces page, the Retrieval trace page's picker and its Compare tab,
the Overview's recent traces) and the table of traces. Evaluation runs' traces are left out unless asked.

On the Traces page the filters live in the URL too (``q``, ``origin``, ``labelled``, ``preset``, ``hops``, ``since``,
``until``, ``min_ms``, ``max_ms``, ``of`` for the user, ``sort``, ``order``), so a filtered table can be shared."""

from __future__ import annotations

from datetime import date
from typing import Any

import streamlit as st

from engine import HOPS_RANGE, PRESETS, TRACE_SORTS, MemoryEngine

from .layout import button_row
from .preset_choice import preset_names
from .trace_table_data import (
    LABELLED_CHOICES,
    ORIGINS,
    SORT_WORDS,
    USUAL_ORIGINS,
    TraceChoices,
    origin_words,
)
from .url_state import incoming, read, write

ALL_USERS = "all users"
ANY = "any"
_DEFAULTS: dict[str, Any] = {
    "text": "",
    "origins": list(USUAL_ORIGINS),
    "labelled": ANY,
    "preset": ANY,
    "hops": ANY,
    "since": None,
    "until": None,
    "min_ms": None,
    "max_ms": None,
}
URL_NAMES = ("q", "origin", "labelled", "preset", "hops", "since", "until", "min_ms", "max_ms", "of", "sort", "order")


def _adopt_url(key: str) -> None:
    """Values a link or a reload brought in become the controls' state (once per new value)."""
    values = {name: incoming(name) for name in URL_NAMES}
    if values["q"] is not None:
        st.session_state[f"{key}_text"] = values["q"]
    if values["origin"] is not None:
        st.session_state[f"{key}_origins"] = [o for o in values["origin"].split(",") if o in ORIGINS]
    if values["labelled"] in LABELLED_CHOICES:
        st.session_state[f"{key}_labelled"] = values["labelled"]
    if values["preset"] in PRESETS:
        st.session_state[f"{key}_preset"] = values["preset"]
    if values["hops"] is not None and values["hops"].isdigit():
        st.session_state[f"{key}_hops"] = values["hops"]
    for name in ("since", "until"):
        if (day := values[name]) is not None:
            try:
                st.session_state[f"{key}_{name}"] = date.fromisoformat(day)
            except ValueError:
                pass  # not a day: the link's other filters still apply
    for name in ("min_ms", "max_ms"):
        if (ms := values[name]) is not None:
            try:
                st.session_state[f"{key}_{name}"] = max(0.0, float(ms))
            except ValueError:
                pass
    if values["of"] is not None:
        st.session_state[f"{key}_user"] = values["of"]
    if values["sort"] in TRACE_SORTS:
        st.session_state[f"{key}_sort"] = values["sort"]
    if values["order"] in ("asc", "desc"):
        st.session_state[f"{key}_desc"] = values["order"] == "desc"


def _write_url(choices: TraceChoices, sort: str, descending: bool) -> None:
    write("q", choices.text.strip() or None)
    write("origin", None if set(choices.origins) == set(USUAL_ORIGINS) else ",".join(choices.origins) or "none")
    write("labelled", None if choices.labelled == ANY else choices.labelled)
    write("preset", choices.preset)
    write("hops", None if choices.hops is None else str(choices.hops))
    write("since", choices.since.isoformat() if choices.since else None)
    write("until", choices.until.isoformat() if choices.until else None)
    write("min_ms", None if choices.min_ms is None else f"{choices.min_ms:g}")
    write("max_ms", None if choices.max_ms is None else f"{choices.max_ms:g}")
    write("of", choices.user)
    write("sort", None if sort == "created_at" else sort)
    write("order", None if descending else "asc")


def trace_filters(engine: MemoryEngine, key: str, user: str | None = None, in_url: bool = False) -> TraceChoices:
    """The filter controls; ``user`` fixes the user (a picker of one user's traces), else a user can be picked.
    ``in_url`` keeps them in the URL (the Traces page)."""
    # Defaults through the session state only (a widget given a default as well warns when a link set it).
    for name, value in _DEFAULTS.items():
        st.session_state.setdefault(f"{key}_{name}", value)
    if in_url:
        _adopt_url(key)
    # Rows of two at most: at 820 px (a ~500 px page, or the trace page's narrow column) four cut labels short.
    row = st.columns(2, vertical_alignment="bottom") if user is None else [st.container()]
    text = row[0].text_input(
        "Question contains", key=f"{key}_text", persist_state="session", placeholder="any words of the question"
    )
    picked_user = user
    if user is None:
        users = [ALL_USERS, *engine.traces.users()]
        current = st.session_state.get(f"{key}_user")
        if current is not None and current not in users:
            users.append(current)  # a user named by a link who has no trace (yet)
        picked = row[1].selectbox("Whose traces", users, key=f"{key}_user", persist_state="session")
        picked_user = None if picked in (None, ALL_USERS) else str(picked)
    # A row of its own: beside another widget at 820 px the three segments overflow their column.
    labelled = st.segmented_control(
        "Labels", LABELLED_CHOICES, key=f"{key}_labelled", persist_state="session", required=True
    )
    origins = st.multiselect(
        "Origin (evaluation runs are left out unless picked)",
        ORIGINS,
        key=f"{key}_origins",
        persist_state="session",
        format_func=origin_words,
    )
    more = st.columns(2)
    preset = more[0].selectbox("Preset", [ANY, *preset_names()], key=f"{key}_preset", persist_state="session")
    high = HOPS_RANGE[1]
    hops = more[1].selectbox(
        "Hops", [ANY, *(str(n) for n in range(HOPS_RANGE[0], high + 1))], key=f"{key}_hops", persist_state="session"
    )
    days = st.columns(2)
    since = days[0].date_input("From day", key=f"{key}_since", persist_state="session")
    until = days[1].date_input("To day", key=f"{key}_until", persist_state="session")
    slow = st.columns(2)
    min_ms = slow[0].number_input(
        "Latency at least (ms)", min_value=0.0, step=100.0, key=f"{key}_min_ms", persist_state="session"
    )
    max_ms = slow[1].number_input(
        "Latency at most (ms)", min_value=0.0, step=100.0, key=f"{key}_max_ms", persist_state="session"
    )
    return TraceChoices(
        user=picked_user,
        text=text or "",
        origins=tuple(o for o in ORIGINS if o in origins),  # in one order: the choices compare equal
        labelled=str(labelled or ANY),
        preset=None if preset == ANY else str(preset),
        hops=None if hops == ANY else int(str(hops)),
        since=since if isinstance(since, date) else None,
        until=until if isinstance(until, date) else None,
        min_ms=None if min_ms is None else float(min_ms),
        max_ms=None if max_ms is None else float(max_ms),
    )


def sort_controls(key: str) -> tuple[str, bool]:
    """The sort key and whether it runs highest (newest) first."""
    with button_row():
        sort = st.selectbox(
            "Sort by",
            TRACE_SORTS,
            key=f"{key}_sort",
            persist_state="session",
            format_func=lambda s: SORT_WORDS.get(s, s),
            width=180,
        )
        st.session_state.setdefault(f"{key}_desc", True)
        descending = st.toggle("Highest / newest first", key=f"{key}_desc", persist_state="session")
    return str(sort), bool(descending)


def filters_in_url(key: str, choices: TraceChoices, sort: str, descending: bool) -> None:
    _write_url(choices, sort, descending)


def choices_caption(choices: TraceChoices) -> str:
    said = choices.summary()
    return f"Filtered: {said}." if said else "Every origin, every user."


def url_has_filters() -> bool:
    return any(read(name) is not None for name in URL_NAMES)


def filter_expander(engine: MemoryEngine, key: str, user: str) -> TraceChoices:
    """The shared filters folded away under a picker of one user's traces (open while any narrows)."""
    narrowed = st.session_state.get(f"{key}_narrowed", False)
    with st.expander("Filter the stored traces", expanded=bool(narrowed)):
        choices = trace_filters(engine, key, user=user)
    st.session_state[f"{key}_narrowed"] = choices.narrows()
    return choices


def list_kwargs(choices: TraceChoices) -> dict[str, Any]:
    return {"filters": choices.to_filter()}
