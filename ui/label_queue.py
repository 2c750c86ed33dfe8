"""The labeller's queue on the Feedback page: a filter (traces in a date range, or an evaluation run's misses;
unlabelled only), one memory at a time with "n of N", and keys for useful / harmful / skip / undo / previous / next
(Streamlit's button shortcuts: no custom key handling).

The queue is built once per filter (``engine.feedback.queue``) and kept in the session, so "n of N" stays put while
a person labels: a labelled entry keeps its place and shows its label. Undo takes back the last action (a label, a
label taken off, a skip) and returns to its entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import streamlit as st

from engine import MemlensError, MemoryEngine, QueueEntry

from .error_display import engine_errors, error_text
from .memory_sources import show_item_message_sources
from .nav import page_file
from .text import md_escape, when
from .trace_data import shorten
from .trace_view import cached_trace
from .url_state import incoming, trace_params, write

AGENT_TRACES = "(none: the agent's traces)"
KEYS = "Keys: U useful · H harmful · S skip · Z undo · ← previous · → next"


@dataclass(frozen=True)
class Step:
    """One action to undo: the entry, and its label before the action ('' for none; None: only moved on)."""

    position: int
    before: str | None


def _day_start(day: date | None) -> datetime | None:
    return datetime.combine(day, time.min, tzinfo=UTC) if day else None


def _filters(engine: MemoryEngine) -> tuple[date | None, date | None, str | None, bool]:
    runs = []
    with engine_errors("Could not list the evaluation runs"):
        runs = [r for r in engine.evals.runs() if r.method == "memlens"]
    labels = {r.run_id: f"{r.label or r.run_id} · set {r.set_name} · {when(r.started_at)}" for r in runs}
    linked = incoming("run")
    if linked in labels:
        st.session_state["fbq_run"] = linked
    c1, c2, c3 = st.columns([1, 1, 2])
    since = c1.date_input("Traces from", value=None, key="fbq_since", format="YYYY-MM-DD")
    until = c2.date_input("to (inclusive)", value=None, key="fbq_until", format="YYYY-MM-DD")
    run = c3.selectbox(
        "Or an evaluation run's misses",
        [AGENT_TRACES, *labels],
        key="fbq_run",
        format_func=lambda r: labels.get(r, r),
        help="The traces of the run's cases that lost an expected memory: what came back instead",
    )
    write("run", None if run == AGENT_TRACES else run)
    unlabelled = st.toggle("Only what I have not labelled yet", True, key="fbq_unlabelled")
    return (
        since if isinstance(since, date) else None,
        until if isinstance(until, date) else None,
        None if run == AGENT_TRACES else run,
        unlabelled,
    )


def _entries(engine: MemoryEngine, user: str, who: str) -> list[QueueEntry] | None:
    since, until, run, unlabelled = _filters(engine)
    spec = (user, who, since, until, run, unlabelled)
    rebuild = st.button("Rebuild the queue", key="fbq_rebuild", icon=":material/refresh:")
    if st.session_state.get("fbq_spec") != spec or rebuild or "fbq_entries" not in st.session_state:
        entries = None
        with engine_errors("Could not build the queue"):
            end = _day_start(until + timedelta(days=1)) if until else None
            entries = engine.feedback.queue(user, who, _day_start(since), end, run, unlabelled)
        if entries is None:
            return None
        st.session_state.update(fbq_spec=spec, fbq_entries=entries, fbq_pos=0, fbq_undo=[])
    entries_now: list[QueueEntry] = st.session_state["fbq_entries"]
    return entries_now


def _hop(engine: MemoryEngine, entry: QueueEntry) -> int | None:
    trace = cached_trace(engine, entry.trace_id, "fb_trace_cache")
    return next((r.hop for r in trace.ranking if r.id == entry.item_id), None)


def _current(engine: MemoryEngine, entry: QueueEntry, who: str) -> str:
    events = engine.feedback.events(
        entry.user_id, item_id=entry.item_id, trace_id=entry.trace_id, labeller=who, current_only=True
    )
    return events[0].label if events else ""


def _set(engine: MemoryEngine, entry: QueueEntry, who: str, label: str) -> None:
    """Make this labeller's label of the entry ``label`` ('' takes it off)."""
    user = entry.user_id
    if label:
        note = st.session_state.get("fb_note", "")  # the page's note box, kept with the next label
        engine.feedback.label(
            user, entry.item_id, label, trace_id=entry.trace_id, hop=_hop(engine, entry), note=note, labeller=who
        )
        st.session_state["fb_note"] = ""
    else:
        engine.feedback.clear(user, entry.item_id, entry.trace_id, labeller=who)


def _move(to: int) -> None:
    entries = st.session_state.get("fbq_entries") or []
    st.session_state["fbq_pos"] = max(0, min(to, len(entries) - 1))


def _act(engine: MemoryEngine, who: str, label: str | None) -> None:
    """Button callback: label (toggling: the label it has comes off) or skip (``None``), then on to the next."""
    pos = st.session_state.get("fbq_pos", 0)
    entry: QueueEntry = st.session_state["fbq_entries"][pos]
    try:
        before = _current(engine, entry, who)
        if label is not None:
            after = "" if before == label else label
            _set(engine, entry, who, after)
    except MemlensError as exc:
        st.session_state["fbq_flash"] = ("error", f"Could not label {entry.item_id}: {error_text(exc)}")
        return
    st.session_state["fbq_undo"] = [*st.session_state.get("fbq_undo", []), Step(pos, None if label is None else before)]
    if label is None or after:
        _move(pos + 1)
    what = "Skipped" if label is None else (f"Labelled {label}" if after else f"Took the {label} label off")
    st.session_state["fbq_flash"] = ("ok", f"{what}: {entry.item_id} (trace {entry.trace_id}).")


def _undo(engine: MemoryEngine, who: str) -> None:
    steps: list[Step] = st.session_state.get("fbq_undo", [])
    if not steps:
        return
    step = steps[-1]
    entry: QueueEntry = st.session_state["fbq_entries"][step.position]
    if step.before is not None:
        try:
            _set(engine, entry, who, step.before)
        except MemlensError as exc:
            st.session_state["fbq_flash"] = ("error", f"Could not undo: {error_text(exc)}")
            return
    st.session_state["fbq_undo"] = steps[:-1]
    st.session_state["fbq_pos"] = step.position
    st.session_state["fbq_flash"] = ("ok", f"Undid the last step on {entry.item_id}.")


def queue_tab(engine: MemoryEngine, user: str, who: str | None) -> None:
    """The queue for ``who`` (None: no name yet, so the queue is not built)."""
    st.caption(
        "Every memory that reached the context of a trace matching the filter, one at a time, newest trace "
        "first (evaluation runs' own traces only through their misses). Labels toggle: the same key again takes "
        "your label off, the other one replaces it."
    )
    if who is None:
        st.info("Give your name above to start: each label records who gave it, and the queue is yours.")
        return
    entries = _entries(engine, user, who)
    if entries is None:
        return
    flash = st.session_state.pop("fbq_flash", None)
    if flash:
        (st.success if flash[0] == "ok" else st.error)(md_escape(flash[1]))
    if not entries:
        st.info("Nothing to label with this filter (no trace matches, or you labelled everything in it).")
        return
    _move(st.session_state.get("fbq_pos", 0))
    pos = st.session_state["fbq_pos"]
    entry = entries[pos]
    st.progress((pos + 1) / len(entries), text=f"{pos + 1} of {len(entries)}")
    current = _current(engine, entry, who)
    _entry_view(engine, entry, current)
    _buttons(engine, who, pos, len(entries), current)
    st.caption(KEYS)


def _entry_view(engine: MemoryEngine, entry: QueueEntry, current: str) -> None:
    user = entry.user_id
    text = engine.feedback.memory_texts(user, [entry.item_id]).get(entry.item_id, "(no longer stored)")
    with st.container(border=True):
        st.text(f"Question: {shorten(entry.question, 300)}")
        st.text(text)
        st.caption(
            f"{md_escape(entry.item_id)} · #{entry.rank} in the context · trace {md_escape(entry.trace_id)} · "
            f"{when(entry.created_at)} · your label: **{current or 'none yet'}**"
        )
        show_item_message_sources(engine, user, entry.item_id)
        st.page_link(
            page_file("retrieval"),
            label=f"Open trace {entry.trace_id}",
            icon=":material/manage_search:",
            query_params=trace_params(entry.trace_id, user, "context", entry.item_id),
        )


def _buttons(engine: MemoryEngine, who: str, pos: int, total: int, current: str) -> None:
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    kinds: list[tuple[str, str, str, str | None, Any]] = [
        ("Useful", ":material/thumb_up:", "U", "useful", _act),
        ("Harmful", ":material/thumb_down:", "H", "harmful", _act),
        ("Skip", ":material/skip_next:", "S", None, _act),
    ]
    for text, icon, key, label, call in kinds:
        row.button(
            text,
            icon=icon,
            key=f"fbq_{text.lower()}",
            shortcut=key,
            on_click=call,
            args=(engine, who, label),
            type="primary" if label and current == label else "secondary",
        )
    row.button(
        "Undo",
        icon=":material/undo:",
        key="fbq_undo_go",
        shortcut="Z",
        on_click=_undo,
        args=(engine, who),
        disabled=not st.session_state.get("fbq_undo"),
    )
    row.button(
        "Previous",
        icon=":material/arrow_back:",
        key="fbq_prev",
        shortcut="Left",
        on_click=_move,
        args=(pos - 1,),
        disabled=pos == 0,
    )
    row.button(
        "Next",
        icon=":material/arrow_forward:",
        key="fbq_next",
        shortcut="Right",
        on_click=_move,
        args=(pos + 1,),
        disabled=pos >= total - 1,
    )
