"""The Graph page's network: an entity's neighbourhood as a plotly figure (no streamlit import).

Nodes are entities, one trace per type (coloured, in the legend); edges are relations, an arrow from subject to
object with the predicate written at its middle. Hovering a node shows its name, type and distance; hovering an
edge's middle shows the fact, its validity, method, confidence and sources. Every point carries
``customdata = [kind, id]`` ("entity" or "relation"), so a selection on the chart says what was clicked.
Stored text reaches the figure only through :func:`ui.figures.plot_text` (plotly renders a subset of HTML).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import plotly.graph_objects as go

from engine import Neighbourhood, Relation

from .figures import plot_text
from .graph_data import confidence_text, period, radial_layout, sources_text, validity

TYPE_COLOURS = {
    "person": "#4C78A8",
    "organization": "#F58518",
    "organisation": "#F58518",
    "place": "#54A24B",
    "location": "#54A24B",
    "project": "#B279A2",
    "event": "#E45756",
    "date": "#9D755D",
    "concept": "#72B7B2",
}
OTHER_COLOURS = ("#EECA3B", "#FF9DA6", "#BAB0AC", "#86BCB6", "#D67195", "#8CD17D")
EDGE_COLOUR = "#9aa5b1"
MAX_ARROWS = 300  # beyond this many relations the edges are drawn as plain lines (annotations get slow to draw)
# An arrow from the subject to the object, stopping short of both markers (in data coordinates: it scales with zoom)
ARROW = {
    "xref": "x",
    "yref": "y",
    "axref": "x",
    "ayref": "y",
    "showarrow": True,
    "arrowhead": 2,
    "arrowsize": 1.2,
    "arrowwidth": 1.2,
    "arrowcolor": EDGE_COLOUR,
    "standoff": 11,
    "startstandoff": 11,
    "text": "",
}
MIN_HEIGHT = 280  # px: room for the legend and a row of names
PREDICATE_LABELS_UP_TO = 120  # predicate text on the edges up to this many relations; hover still says it beyond


def type_colour(entity_type: str, others: dict[str, str]) -> str:
    """A type's colour: the fixed ones for the common types, then the next of OTHER_COLOURS in order of first use."""
    if entity_type in TYPE_COLOURS:
        return TYPE_COLOURS[entity_type]
    if entity_type not in others:
        others[entity_type] = OTHER_COLOURS[len(others) % len(OTHER_COLOURS)]
    return others[entity_type]


def relation_hover(rel: Relation) -> str:
    """What hovering an edge shows: the fact, its validity, who made it and from what (all stored text escaped)."""
    return (
        f"<b>{plot_text(rel.sentence, 120)}</b><br>{validity(rel)}: {plot_text(period(rel))}<br>"
        f"method {plot_text(rel.method, 30)}, confidence {confidence_text(rel.confidence)}<br>"
        f"sources: {plot_text(sources_text(rel, 3), 160)}"
    )


def _edge_points(
    rel: Relation, pos: Mapping[str, tuple[float, float]], nth: int
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """The edge's two ends and the point where its label sits: the middle, shifted along the edge for the second,
    third... relation between the same two entities so their labels do not cover each other."""
    x0, y0 = pos[rel.subject_id]
    x1, y1 = pos[rel.object_id]
    t = 0.5 + (0.12 * ((nth + 1) // 2) * (1 if nth % 2 else -1) if nth else 0.0)
    return (x0, y0), (x1, y1), (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)


def network_figure(
    hood: Neighbourhood, mentions: Mapping[str, int] | None = None, height: int = 560, title: str | None = None
) -> go.Figure:
    """The neighbourhood as a network figure (see the module docstring). ``mentions``: entity id -> the number of
    memories naming it, shown on hover and in the node size."""
    pos = radial_layout(hood)
    counts = mentions or {}
    fig = go.Figure()
    pair_seen: dict[frozenset[str], int] = defaultdict(int)
    line_x: list[float | None] = []
    line_y: list[float | None] = []
    mid_x, mid_y, mid_text, mid_hover, mid_data = [], [], [], [], []
    arrows = len(hood.relations) <= MAX_ARROWS
    arrow_list: list[dict[str, object]] = []
    for rel in hood.relations:
        if rel.subject_id not in pos or rel.object_id not in pos:
            continue
        pair = frozenset((rel.subject_id, rel.object_id))
        (x0, y0), (x1, y1), (mx, my) = _edge_points(rel, pos, pair_seen[pair])
        pair_seen[pair] += 1
        if arrows:
            arrow_list.append({"x": x1, "y": y1, "ax": x0, "ay": y0, **ARROW})
        else:
            line_x += [x0, x1, None]
            line_y += [y0, y1, None]
        mid_x.append(mx)
        mid_y.append(my)
        mid_text.append(plot_text(rel.predicate, 24) if len(hood.relations) <= PREDICATE_LABELS_UP_TO else "")
        mid_hover.append(relation_hover(rel))
        mid_data.append(["relation", rel.id])
    if line_x:
        fig.add_trace(
            go.Scatter(
                x=line_x,
                y=line_y,
                mode="lines",
                line={"color": EDGE_COLOUR, "width": 1},
                hoverinfo="skip",
                showlegend=False,
                name="relations",
            )
        )
    if mid_x:
        fig.add_trace(
            go.Scatter(
                x=mid_x,
                y=mid_y,
                mode="markers+text",
                text=mid_text,
                textposition="top center",
                textfont={"size": 10, "color": "#52606d"},
                marker={"size": 7, "color": EDGE_COLOUR, "symbol": "diamond"},
                hovertext=mid_hover,
                hovertemplate="%{hovertext}<extra></extra>",
                customdata=mid_data,
                name="relation",
                showlegend=False,
            )
        )
    others: dict[str, str] = {}
    by_type: dict[str, list[str]] = defaultdict(list)
    names = {e.id: e for e in hood.entities}
    for e in hood.entities:
        if e.id in pos:
            by_type[e.type].append(e.id)
    start = set(hood.start)
    for entity_type in sorted(by_type):
        ids = by_type[entity_type]
        fig.add_trace(
            go.Scatter(
                x=[pos[i][0] for i in ids],
                y=[pos[i][1] for i in ids],
                mode="markers+text",
                text=[plot_text(names[i].name, 32) for i in ids],
                textposition="top center",
                marker={
                    "size": [26 if i in start else min(22, 12 + 2 * counts.get(i, 0) ** 0.5) for i in ids],
                    "color": type_colour(entity_type, others),
                    "line": {"width": [3 if i in start else 1 for i in ids], "color": "#1f2933"},
                },
                hovertext=[
                    f"<b>{plot_text(names[i].name, 80)}</b> ({plot_text(entity_type, 30)})<br>"
                    f"{'start' if i in start else f'{hood.distance.get(i, 0)} hop(s) away'}"
                    + (f"<br>named by {counts[i]} memories" if i in counts else "")
                    for i in ids
                ],
                hovertemplate="%{hovertext}<extra></extra>",
                customdata=[["entity", i] for i in ids],
                name=plot_text(entity_type, 30),
            )
        )
    # Each axis spans what is drawn plus a margin for the names, and the figure is only as tall as the drawing
    # needs: a neighbourhood that lies on one line (two neighbours, each with one more) is a short, wide strip
    # instead of a line in the middle of an empty square.
    x_reach = max((abs(x) for x, _ in pos.values()), default=0.0) + 0.45
    y_reach = max((abs(y) for _, y in pos.values()), default=0.0) + 0.45
    fig.update_layout(
        title=title,
        height=int(max(MIN_HEIGHT, height * min(1.0, y_reach / x_reach))),
        margin={"l": 10, "r": 10, "t": 50 if title else 30, "b": 10},
        xaxis={"visible": False, "range": [-x_reach, x_reach]},
        yaxis={"visible": False, "range": [-y_reach, y_reach]},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1, "title": "type"},
        annotations=arrow_list,  # set at once: fig.add_annotation per edge took 2.7 s for 100 (quadratic)
        clickmode="event+select",
        dragmode="pan",
        hovermode="closest",
    )
    return fig


def selected_point(selection: object) -> tuple[str, str] | None:
    """(kind, id) of the point a chart selection holds (``st.plotly_chart(..., on_select="rerun")``), else None."""
    points = _get(_get(selection, "selection"), "points")
    for point in points if isinstance(points, (list, tuple)) else []:
        data = _get(point, "customdata")
        if isinstance(data, (list, tuple)) and len(data) == 2 and data[0] in ("entity", "relation"):
            return str(data[0]), str(data[1])
    return None


def _get(value: object, name: str) -> object:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)
