"""Plotly figures of the Evaluations page: recall per category, the loss funnel and the losses by stage and rule,
and the per-case A/B scatter. Stored text goes through ``plot_text`` (plotly renders some HTML)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .figures import _layout, plot_text
from .wording import rule_words

RECALL_KEYS = ("recall@5", "recall@10", "recall@25", "context_recall")


def category_bars(metrics: Mapping[str, Mapping[str, Any]], keys: Sequence[str] = RECALL_KEYS) -> go.Figure:
    cats = list(metrics)
    fig = go.Figure()
    for key in keys:
        vals = [metrics[c].get(key) for c in cats]
        if all(v is None for v in vals):
            continue
        fig.add_bar(
            name=key,
            x=[plot_text(c, 30) for c in cats],
            y=vals,
            hovertemplate="%{x}<br>" + key + " %{y:.3f}<extra></extra>",
        )
    fig.update_layout(barmode="group", yaxis={"range": [0, 1], "title": "mean over cases"})
    return _layout(fig, "Recall per category")


def funnel_figure(steps: Sequence[Mapping[str, Any]]) -> go.Figure:
    fig = go.Figure(
        go.Funnel(y=[s["step"] for s in steps], x=[s["count"] for s in steps], textinfo="value+percent initial")
    )
    return _layout(fig, "Expected memories through the pipeline", height=320)


def loss_label(stage: str, rule: str) -> str:
    return f"{stage} · {rule_words(rule)}" if rule else stage  # "score N < N" said in words


def loss_bars(losses: Sequence[Mapping[str, Any]]) -> go.Figure:
    """One bar per (stage, rule) loss bucket; ``customdata`` carries both so a click can filter the cases."""
    rows = list(reversed(losses))
    fig = go.Figure(
        go.Bar(
            orientation="h",
            x=[r["count"] for r in rows],
            y=[plot_text(loss_label(r["stage"], r["rule"]), 80) for r in rows],
            customdata=[[r["stage"], r["rule"]] for r in rows],
            hovertemplate="%{y}: %{x} expected memories<extra></extra>",
            marker_color="#E45756",
        )
    )
    fig.update_layout(xaxis={"title": "expected memories lost"}, clickmode="event+select")
    return _layout(
        fig, "Where the misses were lost (click a bar to filter the cases)", height=max(220, 60 + 34 * len(rows))
    )


def ab_scatter(cases: Sequence[Mapping[str, Any]], metric: str) -> go.Figure:
    fig = go.Figure(
        go.Scatter(
            x=[c["a"] for c in cases],
            y=[c["b"] for c in cases],
            mode="markers",
            marker={
                "size": 9,
                "opacity": 0.6,
                "color": ["#54A24B" if c["delta"] > 0 else "#E45756" if c["delta"] < 0 else "#888" for c in cases],
            },
            text=[plot_text(f"{c['case_id']}: {c['question']}", 90) for c in cases],
            hovertemplate="%{text}<br>A %{x:.2f} → B %{y:.2f}<extra></extra>",
        )
    )
    fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line={"dash": "dot", "color": "#999"})
    fig.update_layout(
        xaxis={"title": f"{metric} in run A", "range": [-0.05, 1.05]},
        yaxis={"title": f"{metric} in run B", "range": [-0.05, 1.05]},
    )
    return _layout(fig, f"Per case: {metric}, A vs B (above the line: B better)", height=420)
