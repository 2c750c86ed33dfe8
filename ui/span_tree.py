"""The trace's stage timings drawn as a nested span tree (retrieval -> hop -> stage), as Phoenix shows spans: each
span one row with its duration and share, indented under its parent, its inputs and outputs one click away."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from engine import RetrievalTrace

from .text import md_escape
from .trace_timing import Rows, Span, span_io

INDENT = 3  # columns of indentation per level (of 40)


def _lines(title: str, rows: Rows) -> str:
    if not rows:
        return f"**{title}**: the trace records none for this span."
    return f"**{title}**\n\n" + "\n".join(f"- {md_escape(what)}: {md_escape(value)}" for what, value in rows)


def span_tree(trace: RetrievalTrace, spans: Sequence[Span]) -> None:
    """One expander per span, nested spans indented under their parent; opening one shows what went in and out."""
    whole = spans[0].duration_ms if spans and spans[0].duration_ms > 0 else 1.0
    for span in spans:
        place = st.container() if span.depth == 0 else st.columns([INDENT * span.depth, 40 - INDENT * span.depth])[1]
        branch = "" if span.depth == 0 else "└ "
        title = f"{branch}{md_escape(span.name)} · {span.duration_ms:.1f} ms · {100 * span.duration_ms / whole:.0f} %"
        with place.expander(title):
            inputs, outputs = span_io(trace, span.key)
            st.markdown(_lines("Inputs", inputs))
            st.markdown(_lines("Outputs", outputs))
