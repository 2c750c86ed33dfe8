"""'Pin as expectation' on the Retrieval trace page: keep this trace's question, with the memories that should be
recalled for it, as a case of an expectation set (evaluations). Pre-selected: only the memories this trace labelled
useful (none when nothing is labelled): "what reached the context" would make every case pass its own trace, and a
researcher pins the memories they judged. Any candidate of the trace, or any memory id typed in (a searched one), can
be added. Pinning the question again into the same set updates its case (engine: ``Evaluations.pin``)."""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine, RetrievalTrace

from .error_display import engine_errors
from .text import counted, md_escape
from .trace_data import candidate_texts, shorten

NEW_SET = "(new set)"


def pin_expectation(engine: MemoryEngine, trace: RetrievalTrace) -> None:
    if engine.read_only:  # pinning writes a case; the store refuses it, so the control is not offered
        return
    with st.expander("Pin as expectation"):
        st.caption(
            "Keep this question as a case of an expectation set, with the memories it should recall; the "
            "Evaluations page then runs the set and shows where each of them is lost."
        )
        texts = candidate_texts(trace)
        options = list(dict.fromkeys([*trace.context_ids, *texts]))
        useful = [i for i in labelled_useful(engine, trace) if i in options]
        sets = [s.name for s in engine.evals.sets()]
        with st.form(f"pin_form_{trace.trace_id}"):
            chosen = st.multiselect(
                "Memories that should be recalled",
                options,
                default=useful,
                key=f"pin_ids_{trace.trace_id}",
                format_func=lambda i: f"{i} · {shorten(texts.get(i, ''), 70)}",
            )
            extra = st.text_input("More memory ids (e.g. one found with 'Why not?'; comma-separated)", key="pin_extra")
            c1, c2, c3 = st.columns(3)
            target = c1.selectbox("Set", [NEW_SET, *sets], key="pin_set")
            new_name = c2.text_input("New set name", key="pin_new_set", placeholder="e.g. regressions")
            category = c3.text_input("Category (optional)", key="pin_category")
            go = st.form_submit_button("Pin as expectation")
        if go:
            ids = list(dict.fromkeys([*chosen, *(x.strip() for x in extra.split(",") if x.strip())]))
            name = new_name.strip() if target == NEW_SET else target
            if not name:
                st.warning("Name the new set (or pick an existing one).")
                return
            with engine_errors("Could not pin"):
                before = {c.case_id for c in engine.evals.cases(name)} if name in sets else set()
                case = engine.evals.pin(trace.trace_id, ids, name, category=category.strip() or None)
                done = "Updated the case" if case.case_id in before else "Pinned as case"
                st.success(
                    f"{done} {case.case_id} of set {md_escape(name)} with "
                    f"{counted(len(case.expected), 'expected memory', 'expected memories')}"
                    + (" (this question was pinned there before)." if case.case_id in before else ".")
                )


def labelled_useful(engine: MemoryEngine, trace: RetrievalTrace) -> list[str]:
    """The memories whose newest label from this trace is useful (a later harmful one, or an undo, takes it out)."""
    newest: dict[str, str] = {}
    for event in engine.feedback.events(trace.user_id, trace_id=trace.trace_id, limit=10_000):
        newest.setdefault(event.item_id, event.label)  # newest first, as the engine lists them
    return [i for i, label in newest.items() if label == "useful"]
