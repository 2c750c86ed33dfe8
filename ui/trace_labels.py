"""Labelling straight from a retrieval trace: useful / harmful on a candidate or context row, the current label in
view, and undo. Labels are engine feedback events pointing at the trace and hop, one per (labeller, trace, memory):
a button toggles its label (``engine.feedback.toggle``: clicked twice, no label; the other one replaces it); undo
deletes this labeller's current label and brings back the one it replaced (``engine.feedback.retract``). The
labeller is the session's (ui/labeller.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import streamlit as st

from engine import FeedbackEvent, MemlensError, MemoryEngine, RetrievalTrace

from .error_display import error_text
from .labeller import labeller
from .layout import button_row
from .memory_sources import show_item_message_sources
from .text import md_escape

FLASH = "trace_label_flash"


@dataclass(frozen=True)
class TraceLabels:
    """This labeller's current labels from this trace (one per memory) and every shown memory's net over all
    labels."""

    from_trace: dict[str, tuple[FeedbackEvent, ...]]
    nets: dict[str, int]

    def current(self, item_id: str) -> str:
        """The label a person sees on a row: their current label for it from this trace, else blank."""
        events = self.from_trace.get(item_id)
        return events[0].label if events else ""

    def net(self, item_id: str) -> int:
        return self.nets.get(item_id, 0)


def trace_labels(engine: MemoryEngine, trace: RetrievalTrace, ids: Iterable[str]) -> TraceLabels:
    """Two engine calls: the trace's own events, and the nets of the memories on screen."""
    by_item: dict[str, list[FeedbackEvent]] = {}
    events = engine.feedback.events(
        trace.user_id, trace_id=trace.trace_id, limit=10_000, labeller=labeller(), current_only=True
    )
    for event in events:
        by_item.setdefault(event.item_id, []).append(event)  # newest first, as the engine lists them
    ids = sorted(set(ids))
    nets = engine.feedback.net(trace.user_id, ids) if ids else {}
    return TraceLabels({k: tuple(v) for k, v in by_item.items()}, nets)


def _label(engine: MemoryEngine, trace: RetrievalTrace, item_id: str, label: str, hop: int | None) -> None:
    try:
        event = engine.feedback.toggle(
            trace.user_id, item_id, label, trace_id=trace.trace_id, hop=hop, labeller=labeller()
        )
    except MemlensError as exc:
        st.session_state[FLASH] = ("error", f"Could not label {item_id}: {error_text(exc)}")
        return
    if event is None:  # the same button again: the label comes off
        st.session_state[FLASH] = ("info", f"Took the {label} label off {item_id}.")
    else:
        st.session_state[FLASH] = ("success", f"Labelled {item_id} {label} (event {event.id}, hop {hop}).")


def _undo(engine: MemoryEngine, trace: RetrievalTrace, event_id: int, item_id: str) -> None:
    try:
        event = engine.feedback.retract(trace.user_id, event_id)
    except MemlensError as exc:
        st.session_state[FLASH] = ("error", f"Could not undo the label of {item_id}: {error_text(exc)}")
        return
    st.session_state[FLASH] = ("info", f"Undid the {event.label} label of {item_id} (event {event.id}).")


def show_label_flash() -> None:
    """The last label action's message, once (ids escaped: they reach markdown)."""
    kind, message = st.session_state.pop(FLASH, (None, None))
    if kind:
        getattr(st, kind)(md_escape(message))


def label_controls(
    engine: MemoryEngine, trace: RetrievalTrace, labels: TraceLabels, item_id: str, hop: int | None, key: str
) -> None:
    """Useful / Harmful / Undo for one memory of the trace, with its current label and net beside them."""
    current = labels.current(item_id)
    events = labels.from_trace.get(item_id, ())
    shown = f"label from this trace: **{current}**" if current else "not labelled from this trace"
    read_only = " · read-only store: no labelling" if engine.read_only else ""
    st.caption(f"{md_escape(item_id)} · {shown} · net over all labels {labels.net(item_id):+d}{read_only}")
    show_item_message_sources(engine, trace.user_id, item_id)  # the messages it came from, as links
    if engine.read_only:  # the label is shown, not offered: the store would refuse it
        return
    args = (engine, trace, item_id)
    # One row of buttons as wide as their labels: equal columns cut them to their icons at 820 px.
    row = button_row()
    row.button(
        "Useful",
        icon=":material/thumb_up:",
        key=f"{key}_useful_{item_id}",
        on_click=_label,
        args=(*args, "useful", hop),
        type="primary" if current == "useful" else "secondary",
    )
    row.button(
        "Harmful",
        icon=":material/thumb_down:",
        key=f"{key}_harmful_{item_id}",
        on_click=_label,
        args=(*args, "harmful", hop),
        type="primary" if current == "harmful" else "secondary",
    )
    row.button(
        "Undo",
        icon=":material/undo:",
        key=f"{key}_undo_{item_id}",
        disabled=not events,
        on_click=_undo,
        args=(engine, trace, events[0].id if events else 0, item_id),
        help="Delete your label of this memory from this trace (the one it replaced, if any, counts again)",
    )
