"""Where a retrieval's time went: the stage timings a trace records, laid out as a span tree (like Phoenix's or
LangSmith's run view). Plain data, no streamlit or plotly.

A trace records each stage's duration, not its start: query generation, then per hop embed -> search ->
candidates -> (LLM judge) -> scoring, the reasoner between hops, then merge and assembly. Stages ran one after the
other in that order, so starts are the running sum; whatever the pipeline's total has beyond the timed stages is
shown as its own "untimed" span, so nothing is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import RetrievalTrace

HOP_STAGES = ("embed_query", "search", "candidates", "llm_judge", "scoring")
STAGE_LABELS = {
    "query_generation": "query generation",
    "embed_query": "embed the query",
    "search": "search",
    "candidates": "load candidates",
    "llm_judge": "LLM relevance judge",
    "scoring": "scoring",
    "merge_and_assembly": "merge and assembly",
    "trace_write": "write the trace",
}
TOTAL_KEYS = ("total", "pipeline", "replay")  # total: a fresh trace also timed writing itself


@dataclass(frozen=True)
class Span:
    name: str  # what ran (a readable label)
    key: str  # its key in the trace's timings, e.g. "hop2.search"
    depth: int  # 0: the whole retrieval, 1: a stage or hop, 2: a stage inside a hop
    start_ms: float
    duration_ms: float


def timing_spans(trace: RetrievalTrace) -> list[Span]:
    """The trace's timings as spans in the order they ran; the first span is the whole retrieval."""
    top: dict[str, Any] = trace.timings_ms.as_dict()
    children: list[Span] = []
    clock = 0.0

    def add(name: str, key: str, depth: int, ms: float) -> None:
        nonlocal clock
        children.append(Span(name, key, depth, clock, float(ms)))
        clock += float(ms)

    if "query_generation" in top:
        add(STAGE_LABELS["query_generation"], "query_generation", 1, top["query_generation"])
    for hop in trace.hops:
        stages = {k: float(v) for k, v in hop.timings_ms.as_dict().items() if isinstance(v, (int, float))}
        ordered = [k for k in HOP_STAGES if k in stages] + [k for k in stages if k not in HOP_STAGES]
        hop_start = clock
        children.append(Span(f"hop {hop.hop}", f"hop{hop.hop}", 1, hop_start, sum(stages.values())))
        for key in ordered:
            add(f"{STAGE_LABELS.get(key, key)} (hop {hop.hop})", f"hop{hop.hop}.{key}", 2, stages[key])
        reasoner = top.get(f"reasoner_hop{hop.hop}")
        if isinstance(reasoner, (int, float)):
            add(f"reasoner after hop {hop.hop}", f"reasoner_hop{hop.hop}", 1, reasoner)
    known = {"query_generation", *TOTAL_KEYS, *(f"reasoner_hop{h.hop}" for h in trace.hops)}
    for key in ("merge_and_assembly", *sorted(k for k in top if k not in known and k != "merge_and_assembly")):
        if isinstance(top.get(key), (int, float)):
            add(STAGE_LABELS.get(key, key), key, 1, top[key])
    total = next((float(top[k]) for k in TOTAL_KEYS if isinstance(top.get(k), (int, float))), clock)
    if total - clock > 0.05:  # e.g. opening the store, the reasoner's set-up: the gap between timed stages
        children.append(Span("untimed (between stages)", "untimed", 1, clock, total - clock))
    return [Span("retrieval", "pipeline", 0, 0.0, max(total, clock)), *children]


def timing_rows(spans: list[Span]) -> list[dict]:
    """The spans as table rows, with each one's share of the whole."""
    whole = spans[0].duration_ms if spans and spans[0].duration_ms > 0 else 1.0
    return [
        {
            "stage": ("    " * s.depth) + s.name,
            "starts at ms": round(s.start_ms, 2),
            "ms": round(s.duration_ms, 2),
            "share": f"{100 * s.duration_ms / whole:.1f} %",
        }
        for s in spans
    ]
