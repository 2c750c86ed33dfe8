"""The trace table's words and rows (plain): origins said in words, a latency in ms or s, one stored trace as a row
of the table, and the filter a set of choices makes (the choices are what the controls and the URL hold)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from engine import TraceFilter, TraceOrigin

from .text import counted, when
from .trace_data import shorten

ORIGIN_WORDS: dict[str, str] = {
    TraceOrigin.AGENT: "agent (API, MCP, CLI)",
    TraceOrigin.DASHBOARD: "dashboard",
    TraceOrigin.EVALUATION: "evaluation run",
    TraceOrigin.IMPORT: "imported",
    TraceOrigin.LANGGRAPH: "LangGraph agent (memlens store)",
    TraceOrigin.UNKNOWN: "unknown (stored before origins were kept)",
}
ORIGINS: tuple[str, ...] = tuple(o.value for o in TraceOrigin)
# What a picker shows unless asked: every origin but the evaluation runs' (a run stores one trace per case).
USUAL_ORIGINS: tuple[str, ...] = tuple(o for o in ORIGINS if o != TraceOrigin.EVALUATION)
LABELLED_CHOICES = ("any", "labelled", "unlabelled")
SORT_WORDS: dict[str, str] = {
    "created_at": "time",
    "latency": "latency",
    "hops": "hops",
    "user": "user",
    "question": "question",
    "origin": "origin",
    "labels": "labels",
}


def origin_words(origin: str | None) -> str:
    return ORIGIN_WORDS.get(origin or TraceOrigin.UNKNOWN, str(origin))


def latency_words(ms: float | None) -> str:
    """``340 ms``, ``1.2 s``; an em dash for a trace without timings."""
    if ms is None:
        return "—"
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


@dataclass(frozen=True)
class TraceChoices:
    """What a person chose in the trace filters (all plain values: they go into the session and the URL)."""

    user: str | None = None  # None: every user
    text: str = ""
    origins: tuple[str, ...] = USUAL_ORIGINS
    labelled: str = "any"  # one of LABELLED_CHOICES
    preset: str | None = None
    hops: int | None = None
    since: date | None = None
    until: date | None = None  # the last day shown (included)
    min_ms: float | None = None
    max_ms: float | None = None

    def to_filter(self) -> TraceFilter:
        """The engine's filter. Days are whole UTC days: ``until`` includes its own day."""
        return TraceFilter(
            user_id=self.user,
            text=self.text.strip(),
            since=datetime.combine(self.since, time(), UTC) if self.since else None,
            until=datetime.combine(self.until + timedelta(days=1), time(), UTC) if self.until else None,
            preset=self.preset,
            hops=self.hops,
            min_ms=self.min_ms,
            max_ms=self.max_ms,
            labelled={"labelled": True, "unlabelled": False}.get(self.labelled),
            # all origins chosen: no condition, so a trace of an origin this version does not know is shown too
            origins=() if set(self.origins) >= set(ORIGINS) else tuple(self.origins),
            exclude_origins=() if self.origins else ORIGINS,  # none chosen: none shown
        )

    def narrows(self) -> bool:
        """Whether anything beyond the usual (evaluation runs left out) narrows the list."""
        return self != TraceChoices(user=self.user)

    def summary(self) -> str:
        """The filters in force, in words (empty when none narrows: every user's traces of every origin)."""
        parts = []
        if self.user:
            parts.append(f"user {self.user}")
        if self.text.strip():
            parts.append(f"question contains “{shorten(self.text.strip(), 40)}”")
        if set(self.origins) == set(USUAL_ORIGINS):
            parts.append("evaluation runs left out")
        elif set(self.origins) != set(ORIGINS):
            parts.append("from " + ", ".join(origin_words(o) for o in self.origins) if self.origins else "no origin")
        if self.labelled != "any":
            parts.append(self.labelled)
        if self.preset:
            parts.append(f"preset {self.preset}")
        if self.hops is not None:
            parts.append(counted(self.hops, "hop"))
        if self.since or self.until:
            parts.append(f"{self.since or '…'} to {self.until or '…'}")
        if self.min_ms is not None or self.max_ms is not None:
            parts.append(f"latency {latency_words(self.min_ms)} to {latency_words(self.max_ms)}")
        return "; ".join(parts)


def usual_traces(with_runs: bool = False) -> TraceChoices:
    """The choices a short list of recent traces starts from: every user's, evaluation runs only when asked."""
    return TraceChoices(origins=ORIGINS if with_runs else USUAL_ORIGINS)


def table_rows(rows: Sequence[Mapping[str, Any]], link: Any = None) -> list[dict[str, Any]]:
    """``engine.traces.list_traces`` rows as the table shows them; ``link(row)`` gives the "open" cell."""
    out = []
    for t in rows:
        row: dict[str, Any] = {"open": link(t)} if link else {}
        row.update(
            {
                "when": when(t["created_at"]),
                "user": t["user_id"],
                "question": shorten(t["question"], 160),
                "origin": origin_words(t.get("origin")),
                "preset": t.get("preset") or "—",
                "hops": t["hops"],
                "latency": latency_words(t.get("total_ms")),
                "labels": t.get("labels", 0),
                "in context": len(t.get("context_ids") or ()),
                "trace id": t["trace_id"],
            }
        )
        out.append(row)
    return out
