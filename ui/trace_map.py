"""The trace's embedding map on the Retrieval trace page: the question, each hop's query and the candidates in 2-D
(``engine.traces.embedding_map``: PCA of the stored vectors and the re-embedded queries), coloured by verdict, shaped
by the hop that found them, the evaluation case's expected memories ringed. Figure and rows are plain functions."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from engine import MemlensError, MemoryEngine, RetrievalTrace, TraceMap

from .error_display import error_text
from .figures import _layout, plot_text
from .text import counted, md_escape

VERDICT_COLOURS = {
    "in the context": "#54A24B",
    "ranked, not in the context": "#F58518",
    "dropped by the relevance filter": "#BAB0AC",
}
HOP_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "pentagon")


def map_figure(m: TraceMap) -> go.Figure:
    fig = go.Figure()
    cands = [p for p in m.points if p.role == "candidate"]
    for verdict, colour in VERDICT_COLOURS.items():
        group = [p for p in cands if p.verdict == verdict]
        if not group:
            continue
        fig.add_scatter(
            name=verdict,
            x=[p.x for p in group],
            y=[p.y for p in group],
            mode="markers",
            marker={
                "color": colour,
                "size": 11,
                "symbol": [HOP_SYMBOLS[(p.hops[0] - 1) % len(HOP_SYMBOLS)] for p in group],
                "line": {"width": 1, "color": "#333"},
            },
            text=[plot_text(f"{p.id} · hop {', '.join(map(str, p.hops))} · {p.text}", 110) for p in group],
            hovertemplate="%{text}<extra>" + verdict + "</extra>",
        )
    gold = [p for p in cands if p.gold]
    if gold:
        fig.add_scatter(
            name="expected (gold)",
            x=[p.x for p in gold],
            y=[p.y for p in gold],
            mode="markers",
            marker={"size": 22, "symbol": "circle-open", "color": "#B8860B", "line": {"width": 3}},
            text=[plot_text(p.id, 60) for p in gold],
            hovertemplate="expected: %{text}<extra></extra>",
        )
    asked = [p for p in m.points if p.role != "candidate"]
    fig.add_scatter(
        name="question and queries",
        x=[p.x for p in asked],
        y=[p.y for p in asked],
        mode="markers+text",
        marker={"size": 16, "symbol": ["star" if p.role == "question" else "x" for p in asked], "color": "#1f3b73"},
        text=[_asked_label(p.role, p.hops) for p in asked],
        textposition="top center",
        hovertext=[plot_text(p.text, 110) for p in asked],
        hovertemplate="%{hovertext}<extra>%{text}</extra>",
    )
    fig.update_layout(
        xaxis={"title": f"first principal component ({100 * m.explained[0]:.0f} % of the spread)", "zeroline": False},
        yaxis={"title": f"second ({100 * m.explained[1]:.0f} %)", "zeroline": False},
    )
    return _layout(fig, "The trace in embedding space (PCA to 2-D)", height=520)


def _asked_label(role: str, hops: tuple[int, ...]) -> str:
    named = "question" if role == "question" else "query"
    if hops:
        return f"{named} (hop {', '.join(map(str, hops))})" if role == "question" else f"hop {hops[0]} query"
    return named


def map_rows(m: TraceMap) -> list[dict[str, Any]]:
    """The map's candidates as table rows: where each sits, its verdict and hops, gold or not."""
    return [
        {
            "memory": p.id,
            "verdict": p.verdict,
            "found at hop": ", ".join(map(str, p.hops)),
            "expected": "yes" if p.gold else "",
            "x": round(p.x, 3),
            "y": round(p.y, 3),
            "text": p.text,
        }
        for p in m.points
        if p.role == "candidate"
    ]


def map_tab(engine: MemoryEngine, trace: RetrievalTrace) -> None:
    try:
        m = engine.traces.embedding_map(trace)
    except MemlensError as exc:
        st.error(f"Could not draw the map: {md_escape(error_text(exc))}")
        return
    st.caption(
        "Nearness here is nearness in the embedding space the vector search used, squeezed to two dimensions "
        "(principal components; the axes say how much of the spread each keeps). Colour: the candidate's verdict; "
        "shape: the hop that first found it (circle hop 1, diamond hop 2, square hop 3)."
        + (f" Evaluation case {md_escape(m.case)}: its expected memories are ringed." if m.case else "")
    )
    if m.note:
        st.info(md_escape(m.note))
    if any(p.role == "candidate" for p in m.points):
        st.plotly_chart(map_figure(m), key="trace_map_fig")
    if m.gold_unseen:
        st.warning(
            f"{counted(len(m.gold_unseen), 'expected memory', 'expected memories')} no hop found, so not on the map: "
            + md_escape(", ".join(m.gold_unseen))
        )
    if m.without_vector:
        st.caption(
            f"Not drawn ({counted(len(m.without_vector), 'candidate')} without a vector): "
            + "; ".join(f"{md_escape(i)}: {md_escape(why)}" for i, why in m.without_vector)
        )
    with st.expander("The map as a table"):
        st.dataframe(map_rows(m), key="trace_map_rows", hide_index=True)
