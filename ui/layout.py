"""Layout pieces that hold at narrow widths (an 820 px window with the sidebar open leaves ~500 px for a page)."""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator


def metric_row() -> DeltaGenerator:
    """A row for ``.metric(..., width="content")``: each metric as wide as its label and value, wrapping to a new
    line when they do not fit. Equal columns cut a label or value to "Context tok…" / "51…" at narrow widths."""
    return st.container(horizontal=True, horizontal_alignment="distribute", gap="medium")


def button_row() -> DeltaGenerator:
    """A row of buttons, each as wide as its label (columns squeezed "Useful" / "Harmful" down to their icons)."""
    return st.container(horizontal=True, gap="small", vertical_alignment="center")
