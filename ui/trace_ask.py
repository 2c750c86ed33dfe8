"""The Retrieval trace page's question form: the question, hops, token budget, relevance judge, session and the
three scoring toggles, read into one :class:`Question` the page then retrieves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from engine import HOPS_RANGE, MemoryEngine


@dataclass(frozen=True)
class Question:
    """What the form was submitted with; ``overrides`` are the settings the retrieval runs with."""

    text: str
    session: str | None
    hops: int
    budget: int
    overrides: dict[str, Any]


def question_form(engine: MemoryEngine) -> Question | None:
    """Draw the form; the submitted question, or None while it was not submitted."""
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
            int(engine.settings.hops),
            key="trace_hops",
            help="More than 1: a reasoner proposes the next query from what was found.",
        )
        budget = c2.number_input(
            "Token budget", 1, 200_000, int(engine.settings.budget_tokens), 100, key="trace_budget"
        )
        judges = ["heuristic", "llm", "off"]
        relevance = c3.selectbox(
            "Relevance judge",
            judges,
            index=judges.index(engine.settings.relevance_filter),
            key="trace_relevance",
            help="llm needs a configured LLM; without one the heuristic runs and the trace says so.",
        )
        session_opts = [None] + ([st.session_state["app_session"]] if st.session_state.get("app_session") else [])
        session = c4.selectbox(
            "Session", session_opts, format_func=lambda s: "(none)" if s is None else s, key="trace_session"
        )
        toggles = st.container(horizontal=True, gap="medium")  # each as wide as its label, wrapping when narrow
        hybrid = toggles.toggle("Hybrid BM25", engine.settings.hybrid_enabled, key="trace_hybrid")
        use_mmr = toggles.toggle("MMR diversity", engine.settings.mmr_enabled, key="trace_mmr")
        use_feedback = toggles.toggle("Feedback factor", engine.settings.feedback_weight > 0, key="trace_feedback")
        asked = st.form_submit_button("Retrieve", type="primary")
    if not asked:
        return None
    overrides = {
        "hybrid_enabled": hybrid,
        "mmr_enabled": use_mmr,
        "relevance_filter": relevance,
        "feedback_weight": engine.settings.feedback_weight if use_feedback else 0.0,
    }
    return Question(question, session, int(hops), int(budget), overrides)
