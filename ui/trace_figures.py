"""Plotly figures for retrieval traces. No streamlit import: these are plain functions of trace data.

Figures show ids and numbers only, never memory text: plotly renders a subset of HTML in labels and hover text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import plotly.graph_objects as go

from engine import CandidateTrace, RetrievalTrace, Settings

from .trace_data import score_parts, shorten

# Short step names on the axis; the formulas are in the page's caption.
PART_LABELS = {
    "vector": "vector",
    "bm25": "bm25",
    "decay": "×decay",
    "importance": "×importance",
    "feedback": "×feedback",
    "hop": "×hop",
}
UP, DOWN, TOTAL = "#2e7d32", "#c62828", "#1f4e79"


def waterfall_steps(candidate: CandidateTrace, settings: Settings) -> tuple[list[str], list[str], list[float]]:
    """One candidate's waterfall: (step labels, plotly measures, values). The first step sets the running total,
    ``total`` steps show it (hybrid after the blend, final at the end), so the bars end exactly at the final score."""
    parts = dict(score_parts(candidate.scores, settings))
    labels = [
        PART_LABELS["vector"],
        PART_LABELS["bm25"],
        "=hybrid",
        PART_LABELS["decay"],
        PART_LABELS["importance"],
        PART_LABELS["feedback"],
        PART_LABELS["hop"],
        "=final",
    ]
    measures = ["absolute", "relative", "total", "relative", "relative", "relative", "relative", "total"]
    values = [
        parts["vector"],
        parts["bm25"],
        0.0,
        parts["decay"],
        parts["importance"],
        parts["feedback"],
        parts["hop"],
        0.0,
    ]
    return labels, measures, values


def bar_texts(measures: Sequence[str], values: Sequence[float]) -> list[str]:
    """The number on each waterfall bar: the running score on the first and total bars, the signed change on the
    others (4 decimals: final scores after decay are often a few hundredths)."""
    out, running = [], 0.0
    for measure, value in zip(measures, values, strict=True):
        if measure == "absolute":
            running = value
            out.append(f"{running:.4f}")
        elif measure == "total":
            out.append(f"{running:.4f}")
        else:
            running += value
            out.append(f"{value:+.4f}")
    return out


def score_waterfall(
    candidates: Sequence[CandidateTrace],
    settings: Settings,  # the trace's retrieval settings (trace.settings.retrieval)
    top_n: int = 5,
    title: str = "How the final score was built",
) -> go.Figure:
    """A waterfall per candidate (top ``top_n`` by final score), side by side on a grouped axis."""
    chosen = sorted(candidates, key=lambda c: -(c.scores.final or 0.0))[:top_n]
    groups: list[str] = []
    steps: list[str] = []
    measures: list[str] = []
    values: list[float] = []
    texts: list[str] = []
    for c in chosen:
        labels, m, v = waterfall_steps(c, settings)
        groups += [shorten(c.id, 28)] * len(labels)
        steps += labels
        measures += m
        values += v
        texts += bar_texts(m, v)
    # Each bar carries its value: decay can shrink a final score to ~0.04, too small to read off the axis.
    fig = go.Figure(
        go.Waterfall(
            x=[groups, steps],
            measure=measures,
            y=values,
            orientation="v",
            text=texts,
            textposition="outside",
            textfont={"size": 9},
            cliponaxis=False,
            increasing={"marker": {"color": UP}},
            decreasing={"marker": {"color": DOWN}},
            totals={"marker": {"color": TOTAL}},
            connector={"line": {"color": "#999", "width": 1}},
            hovertemplate="%{x}<br>%{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        height=380,
        margin={"l": 40, "r": 10, "t": 50, "b": 110},
        showlegend=False,
        yaxis_title="score",
        xaxis={"tickangle": -60, "tickfont": {"size": 10}},
    )
    return fig


class RankShift(Protocol):
    """What the slope chart draws of a memory: a replay's ranking entry (engine.RankedMemory) or two traces'
    comparison (ui.trace_compare.ComparedRank)."""

    @property
    def id(self) -> str: ...
    @property
    def old_rank(self) -> int | None: ...
    @property
    def rank(self) -> int | None: ...
    @property
    def context_change(self) -> str | None: ...


def rank_shift_figure(ranking: Sequence[RankShift], top_n: int = 20) -> go.Figure:
    """Old rank -> new rank per memory of a replay (a slope chart); lines into the context are green, out red."""
    rows = [r for r in ranking if r.old_rank is not None or r.rank is not None]
    rows = sorted(rows, key=lambda r: min(x for x in (r.old_rank, r.rank) if x is not None))[:top_n]
    bottom = max([max(r.old_rank or 0, r.rank or 0) for r in rows] + [1]) + 1
    fig = go.Figure()
    colors = {"entered": UP, "left": DOWN, "stayed": TOTAL, "out": "#9e9e9e"}
    for r in rows:
        old = r.old_rank or bottom
        new = r.rank or bottom
        fig.add_trace(
            go.Scatter(
                x=["before", "after"],
                y=[old, new],
                mode="lines+markers",
                line={"color": colors.get(r.context_change or "out", "#9e9e9e"), "width": 2},
                name=shorten(r.id, 28),
                hovertemplate=f"{shorten(r.id, 40)}<br>rank %{{y}}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Rank before and after the replay (green: enters the context, red: leaves)",
        height=380,
        showlegend=False,
        margin={"l": 40, "r": 10, "t": 50, "b": 30},
        yaxis={"autorange": "reversed", "title": "rank", "dtick": 1},
    )
    return fig


def hop_counts_figure(trace: RetrievalTrace) -> go.Figure:
    """Per hop: candidates found, kept by the relevance filter, and in the final context."""
    context = set(trace.context_ids)
    hops = [f"hop {h.hop}" for h in trace.hops]
    found = [h.counts.found or len(h.candidates) for h in trace.hops]
    kept = [h.counts.kept for h in trace.hops]
    used = [sum(1 for c in h.candidates if c.id in context and c.in_context) for h in trace.hops]
    fig = go.Figure(
        [
            go.Bar(name="found", x=hops, y=found),
            go.Bar(name="kept", x=hops, y=kept),
            go.Bar(name="in context", x=hops, y=used),
        ]
    )
    fig.update_layout(
        barmode="group", height=260, margin={"l": 30, "r": 10, "t": 30, "b": 30}, title="Candidates per hop"
    )
    return fig


def timing_figure(spans: Sequence[Any]) -> go.Figure:
    """Where the time went: one horizontal bar per span (``ui.trace_timing.Span``) from its start to its end, in
    the order the stages ran, nested spans indented; each bar says its milliseconds."""
    names = [("\u2003" * s.depth) + s.name for s in spans]
    colors = {0: TOTAL, 1: "#5b8db8", 2: "#9cc3e4"}
    fig = go.Figure(
        go.Bar(
            y=names,
            x=[max(s.duration_ms, 0.001) for s in spans],
            base=[s.start_ms for s in spans],
            orientation="h",
            marker={"color": [colors.get(s.depth, "#9cc3e4") for s in spans]},
            text=[f"{s.duration_ms:.1f} ms" for s in spans],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>starts at %{base:.1f} ms, takes %{x:.1f} ms<extra></extra>",
        )
    )
    fig.update_layout(
        title="Where the time went (stages in the order they ran)",
        height=90 + 26 * len(spans),
        margin={"l": 10, "r": 60, "t": 50, "b": 40},
        showlegend=False,
        xaxis_title="milliseconds since the retrieval started",
        yaxis={"autorange": "reversed", "automargin": True},
    )
    return fig
