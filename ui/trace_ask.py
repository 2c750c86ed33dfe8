"""The Retrieval trace page's question form: a preset, then the question, hops, token budget, relevance judge,
session and the three scoring toggles, read into one :class:`Question` the page then retrieves.

The preset is picked above the form (a form's widgets do not rerun the page), so the form opens on that preset's
values; what the form then changes is passed as overrides on top of the preset, and only what differs from it, so
the trace records the preset and the changes apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from engine import HOPS_RANGE, PRESETS, MemoryEngine, Settings
from ui.preset_choice import DEFAULT_PRESET, preset_names, preset_summary
from ui.text import md_escape


@dataclass(frozen=True)
class Question:
    """What the form was submitted with: ``preset`` (None: the engine's settings) and ``overrides``, what the form
    changed on top of it."""

    text: str
    session: str | None
    hops: int
    budget: int
    overrides: dict[str, Any]
    preset: str | None = None


def _key(name: str, preset: str) -> str:
    """A widget key per preset, so switching presets opens the form on the new preset's values (a keyed widget
    keeps its first value otherwise); the default preset keeps the plain keys links and tests use."""
    return name if preset == DEFAULT_PRESET else f"{name}@{preset}"


def question_form(engine: MemoryEngine, user: str) -> Question | None:
    """Draw the preset picker and the form; the submitted question, or None while it was not submitted."""
    preset = st.selectbox(
        "Preset",
        preset_names(),
        key="trace_preset",
        help="A named set of retrieval settings (the same presets as the CLI's --preset and the Evaluations page). "
        "The form below opens on its values; what you change there is applied on top of it.",
    )
    st.caption(preset_summary(preset))
    base = engine.settings.with_overrides(PRESETS[preset])
    if base.memory_keys != "off" and engine.admin.key_count(user, base.memory_keys) == 0:
        st.warning(
            f"This preset searches the memories' extra keys ({base.memory_keys}), and {md_escape(user)} has none: "
            f"`memlens keys --kinds {base.memory_keys}` writes them (or memory_keys_write on while memories are "
            "written). Until then it retrieves as if they were off, and the trace's key search says 'none written'.",
            icon=":material/key_off:",
        )
    with st.form("trace_ask_form"):
        question = st.text_area(
            "Question",
            key="trace_question",
            height=80,
            placeholder="e.g. Which timezone does the engineer who owns the refund job work in?",
        )
        # Two by two, so "Relevance judge" and "Token budget" keep their labels in a narrow window.
        c1, c2 = st.columns(2)
        c3, c4 = st.columns(2)
        hops = c1.number_input(
            "Hops",
            *HOPS_RANGE,
            int(base.hops),
            key=_key("trace_hops", preset),
            help="More than 1: a reasoner proposes the next query from what was found.",
        )
        budget = c2.number_input(
            "Token budget", 1, 200_000, int(base.budget_tokens), 100, key=_key("trace_budget", preset)
        )
        judges = ["heuristic", "llm", "off"]
        relevance = c3.selectbox(
            "Relevance judge",
            judges,
            index=judges.index(base.relevance_filter),
            key=_key("trace_relevance", preset),
            help="llm needs a configured LLM; without one the heuristic runs and the trace says so.",
        )
        session_opts = [None] + ([st.session_state["app_session"]] if st.session_state.get("app_session") else [])
        session = c4.selectbox(
            "Session", session_opts, format_func=lambda s: "(none)" if s is None else s, key="trace_session"
        )
        toggles = st.container(horizontal=True, gap="medium")  # each as wide as its label, wrapping when narrow
        hybrid = toggles.toggle("Hybrid BM25", base.hybrid_enabled, key=_key("trace_hybrid", preset))
        use_mmr = toggles.toggle("MMR diversity", base.mmr_enabled, key=_key("trace_mmr", preset))
        use_feedback = toggles.toggle("Feedback factor", base.feedback_weight > 0, key=_key("trace_feedback", preset))
        asked = st.form_submit_button("Retrieve", type="primary")
    if not asked:
        return None
    return Question(
        question,
        session,
        int(hops),
        int(budget),
        form_overrides(base, relevance, hybrid, use_mmr, use_feedback),
        None if preset == DEFAULT_PRESET else preset,
    )


def form_overrides(base: Settings, relevance: str, hybrid: bool, mmr: bool, feedback: bool) -> dict[str, Any]:
    """The form's choices that differ from the preset's settings ``base``. Feedback on keeps the preset's weight,
    or the engine default's when the preset had it off."""
    weight = base.feedback_weight if base.feedback_weight > 0 else Settings().feedback_weight
    chosen = {
        "hybrid_enabled": hybrid,
        "mmr_enabled": mmr,
        "relevance_filter": relevance,
        "feedback_weight": weight if feedback else 0.0,
    }
    return {k: v for k, v in chosen.items() if getattr(base, k) != v}
