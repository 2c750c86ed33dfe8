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


# -- the views of one run: attribution, calibration; and the set's history ------------------------------------------
GOLD, OTHER = "#B8860B", "#9D9D9D"


def attribution_bars(strategies: Mapping[str, int]) -> go.Figure:
    """Expected memories by the hop and strategy that first found them (``HopAttribution.strategies``)."""
    rows = list(reversed(list(strategies.items())))
    fig = go.Figure(
        go.Bar(
            orientation="h",
            x=[n for _, n in rows],
            y=[plot_text(name, 80) for name, _ in rows],
            marker_color="#4C78A8",
            hovertemplate="%{y}: %{x} expected memories<extra></extra>",
        )
    )
    fig.update_layout(xaxis={"title": "expected memories first found this way"})
    return _layout(fig, "Which hop and search first found each expected memory", height=max(220, 80 + 30 * len(rows)))


def signal_figure(signal: str, gold: Sequence[float], other: Sequence[float]) -> go.Figure:
    """One signal's values on the expected memories and on the other candidates, as two overlaid histograms
    (each normalised to its own count, so a few gold memories still show their shape)."""
    fig = go.Figure()
    for name, values, colour in (("other candidates", other, OTHER), ("expected memories", gold, GOLD)):
        if values:
            fig.add_histogram(
                x=list(values),
                name=f"{name} ({len(values)})",
                histnorm="probability",
                opacity=0.65,
                marker_color=colour,
                nbinsx=30,
                hovertemplate="%{x}: %{y:.0%} of them<extra></extra>",
            )
    fig.update_layout(barmode="overlay", xaxis={"title": signal}, yaxis={"title": "share", "tickformat": ".0%"})
    return _layout(fig, f"{signal}: expected memories vs the other candidates", height=340)


def sweep_figure(points: Sequence[Any], run_threshold: float | None) -> go.Figure:
    """Context recall (left axis) and context size (right axis) at each relevance threshold of the sweep."""
    x = [p.threshold for p in points]
    fig = go.Figure()
    fig.add_scatter(x=x, y=[p.context_recall for p in points], name="context recall", mode="lines+markers")
    fig.add_scatter(x=x, y=[p.recall_at_10 for p in points], name="recall@10", mode="lines+markers")
    fig.add_scatter(
        x=x,
        y=[p.context_memories for p in points],
        name="memories in the context",
        mode="lines+markers",
        yaxis="y2",
        line={"dash": "dot"},
    )
    if run_threshold is not None:
        fig.add_vline(x=run_threshold, line={"dash": "dash", "color": "#999"}, annotation_text="the run's threshold")
    fig.update_layout(
        xaxis={"title": "relevance threshold (relevance_min_score)"},
        yaxis={"title": "recall (mean over cases)", "range": [0, 1.05]},
        yaxis2={"title": "memories in the context (mean)", "overlaying": "y", "side": "right", "rangemode": "tozero"},
    )
    return _layout(fig, "The relevance threshold swept over the run's stored traces", height=380)


def history_figure(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> go.Figure:
    """Each metric across the set's runs, oldest first (``Evaluations.history`` rows)."""
    x = [f"{n}. {plot_text(r['label'], 40)}" for n, r in enumerate(rows, 1)]
    fig = go.Figure()
    for key in keys:
        fig.add_scatter(
            x=x, y=[r.get(key) for r in rows], name=key, mode="lines+markers", hovertemplate="%{x}: %{y:.3f}"
        )
    fig.update_layout(yaxis={"range": [0, 1.05], "title": "overall, mean over cases"}, xaxis={"title": "run"})
    return _layout(fig, "The set's metrics across runs (oldest first)", height=380)
