"""The Feedback page's "Agreement and export" tab: how far the labellers agree on the memories they both labelled
(counts and Cohen's kappa per pair), the labels as a JSONL download, and the labels turned into an expectation set
in one step (``engine.evals.set_from_labels``)."""

from __future__ import annotations

import json

import streamlit as st

from engine import Agreement, MemoryEngine, PairAgreement

from .components import can_edit
from .error_display import engine_errors
from .nav import page_file
from .text import counted, md_escape

ALL = "(everyone)"


def kappa_words(kappa: float | None) -> str:
    """Cohen's kappa with the usual reading of its size (Landis and Koch), or why there is none."""
    if kappa is None:
        return "undefined (both gave a single, identical label throughout)"
    bands = ((0.0, "less than chance"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"))
    word = "almost perfect"
    for upper, name in bands:
        if kappa <= upper:
            word = name
            break
    return f"{kappa:.2f} ({word})"


def pair_row(p: PairAgreement) -> dict[str, object]:
    return {
        "labellers": f"{p.first} and {p.second}",
        "labelled by both": p.both,
        "agreed": p.agreed,
        "both useful": p.both_useful,
        "both harmful": p.both_harmful,
        f"{p.first} useful, {p.second} harmful": p.first_useful_second_harmful,
        f"{p.first} harmful, {p.second} useful": p.first_harmful_second_useful,
        "Cohen's kappa": kappa_words(p.kappa),
    }


def agreement_tab(engine: MemoryEngine, user: str) -> None:
    agreement: Agreement | None = None
    with engine_errors("Could not read the labels"):
        agreement = engine.feedback.agreement(user)
    if agreement is None:
        return
    st.subheader("Agreement between labellers")
    if not agreement.labellers:
        st.info("No named labeller has labelled a memory of this user yet: give your name and label from the queue.")
    else:
        st.caption(
            "Current labels per labeller: "
            + ", ".join(f"{md_escape(n)} {counted(c, 'label')}" for n, c in agreement.labellers)
            + ". Agreement counts the (trace, memory) pairs both labelled; kappa corrects it for the agreement "
            "each labeller's own rates of useful and harmful would give by chance."
        )
    if agreement.pairs:
        for p in agreement.pairs:
            st.text(
                f"{p.first} and {p.second}: agreed on {p.agreed} of {counted(p.both, 'shared item')}; "
                f"Cohen's kappa {kappa_words(p.kappa)}"
            )
        st.dataframe([pair_row(p) for p in agreement.pairs], hide_index=True, key="fb_agreement_table")
    elif agreement.labellers:
        st.info("No two labellers have labelled the same memory on the same trace yet.")
    export_section(engine, user, [n for n, _ in agreement.labellers])


def export_section(engine: MemoryEngine, user: str, labellers: list[str]) -> None:
    st.subheader("Export")
    who = st.selectbox("Labels of", [ALL, *labellers], key="fb_export_labeller")
    one = None if who == ALL else who
    rows = []
    with engine_errors("Could not read the labels"):
        rows = engine.feedback.export_labels(user, labeller=one)
    if not rows:
        st.info("No labels to export yet.")
        return
    st.download_button(
        f"Download {counted(len(rows), 'label')} as JSONL",
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
        file_name=f"labels-{user}.jsonl",
        mime="application/jsonl",
        on_click="ignore",
        key="fb_export_jsonl",
        icon=":material/download:",
    )
    if not can_edit(engine, "making an expectation set"):
        return
    st.caption(
        "An expectation set from these labels: each labelled question becomes a case expecting the memories "
        + ("this labeller found useful." if one else "more labellers found useful than harmful.")
        + " A question already in the set has its case replaced."
    )
    name = st.text_input("Expectation set", key="fb_export_set", placeholder="e.g. labelled-by-hand", max_chars=64)
    if st.button("Make the expectation set", key="fb_export_go", icon=":material/playlist_add_check:"):
        with engine_errors("Could not make the set"):
            cases = engine.evals.set_from_labels(name.strip(), user, labeller=one)
            st.session_state["fb_export_made"] = (name.strip(), len(cases))
            # The Evaluations page opens on the new set (its set picker's kept choice, ui/components.kept_choice).
            st.session_state["ev_set"] = st.session_state["ev_set__kept"] = name.strip()
    made = st.session_state.get("fb_export_made")
    if made:
        st.success(f"Set {md_escape(made[0])} holds {counted(made[1], 'case')} from these labels.")
        st.page_link(page_file("evaluations"), label="Run it on the Evaluations page", icon=":material/science:")
