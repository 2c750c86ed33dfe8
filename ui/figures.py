"""Plotly figures for the dashboard pages: plain functions from engine records/plain data to figures (no st import).

Plotly renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``...) in labels and hover text, so every stored string
that ends up in a figure goes through :func:`plot_text` first.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from engine import RankedSkill, SkillOutcome

KIND_COLOURS = {
    "messages": "#4C78A8",
    "semantic items": "#F58518",
    "episodes": "#54A24B",
    "skill outcomes": "#B279A2",
    "working-memory edits": "#EECA3B",
    "feedback labels": "#E45756",
    "retrieval traces": "#72B7B2",
    "forget actions": "#9D755D",
}


def plot_text(text: object, limit: int = 60) -> str:
    """Stored text made safe for plotly labels: one line, cut, HTML-escaped."""
    flat = " ".join(str(text if text is not None else "").split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return html.escape(flat, quote=True)


def _layout(fig: go.Figure, title: str | None, height: int = 360) -> go.Figure:
    # legend above the plot, right-aligned: below it, it collides with the x-axis title on short charts
    fig.update_layout(
        title=title,
        height=height,
        margin={"l": 10, "r": 10, "t": 70 if title else 40, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1},
    )
    return fig


def activity_figure(rows: Iterable[Mapping[str, Any]]) -> go.Figure:
    """Stacked daily bars, one colour per kind, from ``engine.admin.activity()`` rows."""
    by_kind: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for r in rows:
        days, counts = by_kind[r["kind"]]
        days.append(r["day"])
        counts.append(r["count"])
    fig = go.Figure()
    for kind, (days, counts) in by_kind.items():
        fig.add_bar(
            x=days,
            y=counts,
            name=kind,
            marker_color=KIND_COLOURS.get(kind),
            hovertemplate="%{x|%Y-%m-%d}: %{y} " + plot_text(kind) + "<extra></extra>",
        )
    fig.update_layout(barmode="stack", xaxis_title="day (UTC)", yaxis_title="records")
    return _layout(fig, None)  # the page's subheader names it


def skill_label(rs: RankedSkill) -> str:
    return f"#{rs.rank} {plot_text(rs.skill.name, 40)} v{rs.skill.version}"


def skill_interval_figure(ranked: Sequence[RankedSkill]) -> go.Figure:
    """Success rate per skill with its 95% Wilson interval as error bars; the ranking key (lower bound) marked."""
    fig = go.Figure()
    groups = {False: ("enough trials", "#4C78A8"), True: ("few trials (interval wide)", "#BBBBBB")}
    for few, (name, colour) in groups.items():
        chosen = [r for r in ranked if r.few_trials == few]
        if not chosen:
            continue
        fig.add_scatter(
            x=[r.success_rate for r in chosen],
            y=[skill_label(r) for r in chosen],
            mode="markers",
            name=name,
            marker={"color": colour, "size": 10},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [max(0.0, r.wilson_upper - r.success_rate) for r in chosen],
                "arrayminus": [max(0.0, r.success_rate - r.wilson_lower) for r in chosen],
            },
            customdata=[[r.trials, r.wilson_lower, r.wilson_upper] for r in chosen],
            hovertemplate="%{y}<br>success rate %{x:.2f} over %{customdata[0]} trials<br>"
            "95% Wilson interval %{customdata[1]:.2f}–%{customdata[2]:.2f}<extra></extra>",
        )
    fig.add_scatter(
        x=[r.wilson_lower for r in ranked],
        y=[skill_label(r) for r in ranked],
        mode="markers",
        name="Wilson lower bound (ranking key)",
        marker={"symbol": "line-ns-open", "size": 16, "color": "#E45756"},
        hoverinfo="skip",
    )
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=[skill_label(r) for r in ranked])
    fig.update_xaxes(range=[-0.02, 1.02], title="success rate (bars: 95% Wilson interval)")
    return _layout(fig, "Skills by proven utility", height=max(260, 60 + 26 * len(ranked)))


def cumulative_rate_figure(outcomes: Sequence[SkillOutcome], labels: Mapping[str, str]) -> go.Figure:
    """Cumulative success rate over time, one line per skill id (``labels`` maps id -> legend text)."""
    fig = go.Figure()
    series: dict[str, list[SkillOutcome]] = defaultdict(list)
    for o in outcomes:
        series[o.skill_id].append(o)
    for skill_id, events in series.items():
        wins, xs, ys, trials = 0, [], [], []
        for n, o in enumerate(events, 1):
            wins += int(o.success)
            xs.append(o.at)
            ys.append(wins / n)
            trials.append(n)
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines+markers",
            name=plot_text(labels.get(skill_id, skill_id), 40),
            customdata=trials,
            line={"shape": "hv"},
            hovertemplate="%{x|%Y-%m-%d %H:%M}<br>rate %{y:.2f} after %{customdata} trials<extra></extra>",
        )
    fig.update_yaxes(range=[-0.02, 1.02], title="cumulative success rate")
    fig.update_xaxes(title="outcome time (UTC)")
    return _layout(fig, None)  # the page's subheader names it


def outcome_bar_figure(counts: Mapping[str, int]) -> go.Figure:
    """Episodes per outcome label."""
    names = [plot_text(k or "(none)", 30) for k in counts]
    fig = go.Figure(
        go.Bar(
            x=list(counts.values()),
            y=names,
            orientation="h",
            marker_color="#54A24B",
            hovertemplate="%{y}: %{x}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, "Episodes per outcome", height=max(160, 50 + 28 * len(names)))
