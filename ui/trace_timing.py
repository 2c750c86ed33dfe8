"""Where a retrieval's time went: the stage timings a trace records, laid out as a span tree (like Phoenix's or
LangSmith's run view). Plain data, no streamlit or plotly.

A trace records each stage's duration, not its start: the question's date window, query generation, then per hop
embed -> search -> (entity stage) -> (key search) -> candidates -> (LLM judge) -> scoring, the reasoner between hops,
then merge and assembly. Stages ran one after the other in that order, so starts are the running sum; whatever the
pipeline's total has beyond the timed stages is shown as its own "untimed" span, so nothing is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import RetrievalTrace, asks_rather_than_tells, personal_word, spoken_by_assistant

HOP_STAGES = ("embed_query", "search", "participants", "entities", "keys", "candidates", "llm_judge", "scoring")
FIRST_STAGES = ("time_window", "query_generation")  # before the first hop, in this order
INSIDE_STAGES = {"sessions": "scoring"}  # a hop's stages timed inside another of its stages (stages.score_hop)
STAGE_LABELS = {
    "time_window": "read the question's date window",
    "query_generation": "query generation",
    "embed_query": "embed the query",
    "search": "search",
    "participants": "search again without the participants' names",
    "entities": "entity stage",
    "keys": "search the extra keys",
    "candidates": "load candidates",
    "llm_judge": "LLM relevance judge",
    "scoring": "scoring",
    "sessions": "session stage",
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


def stage_words(key: str) -> str:
    """A stage's name in words; a stage this module does not know yet keeps its key, without underscores."""
    return STAGE_LABELS.get(key, key.replace("_", " "))


def timing_spans(trace: RetrievalTrace) -> list[Span]:
    """The trace's timings as spans in the order they ran; the first span is the whole retrieval."""
    top: dict[str, Any] = trace.timings_ms.as_dict()
    children: list[Span] = []
    clock = 0.0

    def add(name: str, key: str, depth: int, ms: float) -> None:
        nonlocal clock
        children.append(Span(name, key, depth, clock, float(ms)))
        clock += float(ms)

    for key in FIRST_STAGES:
        if isinstance(top.get(key), (int, float)):
            add(STAGE_LABELS[key], key, 1, top[key])
    for hop in trace.hops:
        timed = {k: float(v) for k, v in hop.timings_ms.as_dict().items() if isinstance(v, (int, float))}
        stages = {k: ms for k, ms in timed.items() if k not in INSIDE_STAGES}
        ordered = [k for k in HOP_STAGES if k in stages] + [k for k in stages if k not in HOP_STAGES]
        children.append(Span(f"hop {hop.hop}", f"hop{hop.hop}", 1, clock, sum(stages.values())))
        for key in ordered:
            start = clock
            add(f"{stage_words(key)} (hop {hop.hop})", f"hop{hop.hop}.{key}", 2, stages[key])
            for inner, outer in INSIDE_STAGES.items():  # part of this stage's time: nested, the clock not moved
                if outer == key and inner in timed:
                    name = f"{stage_words(inner)} (hop {hop.hop})"
                    children.append(Span(name, f"hop{hop.hop}.{inner}", 3, start, timed[inner]))
        reasoner = top.get(f"reasoner_hop{hop.hop}")
        if isinstance(reasoner, (int, float)):
            add(f"reasoner after hop {hop.hop}", f"reasoner_hop{hop.hop}", 1, reasoner)
    known = {*FIRST_STAGES, *TOTAL_KEYS, *(f"reasoner_hop{h.hop}" for h in trace.hops)}
    for key in ("merge_and_assembly", *sorted(k for k in top if k not in known and k != "merge_and_assembly")):
        if isinstance(top.get(key), (int, float)):
            add(stage_words(key), key, 1, top[key])
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


# -- each span's inputs and outputs (what a click on a span shows) --------------------------------------------------
PROPOSERS = {
    "question": "the question itself",
    "offline:keywords": "keywords of the question (offline)",
    "llm:query": "a query the LLM wrote",
    "offline:bridge_entities": "names the previous hop found (offline bridge)",
    "llm:reasoner": "the LLM reasoner",
    "custom": "a custom reasoner",
}
SEARCHES = {"vector": "vector search", "fts": "full-text search", "both": "both searches", "entity": "the entity graph"}
Rows = list[tuple[str, str]]  # (what, value) in words


def proposer_words(proposed_by: str) -> str:
    return PROPOSERS.get(proposed_by, proposed_by.replace("_", " ").replace(":", ": "))


def found_by_words(found_by: str) -> str:
    return SEARCHES.get(found_by, found_by)


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _top(candidates: Any, n: int = 3) -> str:
    best = sorted((c for c in candidates if c.scores.final is not None), key=lambda c: -(c.scores.final or 0.0))[:n]
    return "; ".join(f"{c.id} ({c.scores.final:.3f})" for c in best) or "—"


def _hop_io(trace: RetrievalTrace, number: int, stage: str | None) -> tuple[Rows, Rows]:
    hop = next((h for h in trace.hops if h.hop == number), None)
    if hop is None:
        return [], []
    cands = hop.candidates
    by_search: dict[str, int] = {}
    for c in cands:
        by_search[found_by_words(c.found_by)] = by_search.get(found_by_words(c.found_by), 0) + 1
    found = ", ".join(f"{n} by {how}" for how, n in by_search.items()) or "none"
    query = [("query", _short(hop.query)), ("proposed by", proposer_words(hop.proposed_by))]
    if stage is None:
        inputs = query + ([("relevance judged against", _short(hop.relevance_text))] if hop.relevance_text else [])
        outputs = [
            ("candidates", str(hop.counts.found or len(cands))),
            ("kept by the relevance filter", str(hop.counts.kept)),
            ("dropped by it", str(hop.counts.dropped)),
            ("reached the context", str(sum(1 for c in cands if c.in_context))),
        ]
        return inputs, outputs
    if stage == "embed_query":
        model = trace.settings.embedder or "the embedding model"
        return query[:1], [("vector", f"{trace.settings.embedding_dim or '?'} numbers from {model}")]
    if stage == "search":
        how = [s for s in (trace.strategies.vector_search, trace.strategies.full_text_search) if s]
        words = [("full-text query", _short(hop.text_query))] if hop.text_query else []
        return query + words + [("searches", "; ".join(how) or "—")], [("found", found)]
    if stage == "participants":
        blended = trace.settings.retrieval_values().get("participant_weight")
        return [
            ("query without the names", _short(hop.vector_query or "—")),
            ("its share of the vector", str(blended)),
        ], [("found", found)]
    if stage == "candidates":
        kinds: dict[str, int] = {}
        for c in cands:
            kinds[str(c.kind)] = kinds.get(str(c.kind), 0) + 1
        return [("found", found)], [("loaded", ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none")]
    if stage == "llm_judge":
        judged = [c for c in cands if c.scores.llm_relevance is not None]
        return [("candidates", str(len(cands)))], [("judged by the LLM", str(len(judged)))]
    if stage == "entities":
        named = ", ".join(f"{e.name} ({e.mentions} memories)" for e in hop.entities) or "none named"
        linked = sum(1 for c in cands if c.entity is not None)
        alone = sum(1 for c in cands if c.found_by == "entity")
        return [("entities followed", _short(named))], [
            ("candidates it linked", str(linked)),
            ("found by it alone", str(alone)),
        ]
    if stage == "keys":
        matched = sum(1 for c in cands if c.key is not None)
        alone = sum(1 for c in cands if c.found_by == "key")
        said = trace.strategies.to_dict()
        keys_how = said.get(f"key_search_hop{hop.hop}") or said.get("key_search")
        searched = [("keys' vectors searched", str(keys_how))] if keys_how else []  # older traces do not say
        return query[:1] + [("keys", str(trace.settings.retrieval.memory_keys))] + searched, [
            ("candidates a key matched", str(matched)),
            ("found by a key alone", str(alone)),
        ]
    if stage == "scoring":
        fusion = [("BM25 weight", hop.fusion.describe())] if hop.fusion is not None else []
        parted = [c for c in cands if c.scores.hybrid_speaker_part is not None]
        lowered = sum(1 for c in parted if spoken_by_assistant(c.text))
        speaker = [("assistant turns lowered", f"{lowered} ({trace.speaker})")] if trace.speaker else []
        if trace.settings.retrieval.question_turn_penalty > 0:
            speaker.append(
                (
                    "turns that ask, lowered",
                    str(
                        sum(
                            1
                            for c in parted
                            if asks_rather_than_tells(c.text, int(trace.settings.retrieval.question_turn_max_words))
                        )
                    ),
                )
            )
        if trace.settings.retrieval.brevity_weight > 0:
            personal = personal_word(trace.question)
            short = sum(1 for c in cands if (c.scores.brevity_factor or 1.0) < 1.0)
            how_many = (
                f'none: the question speaks in the first or second person ("{personal}")' if personal else str(short)
            )
            speaker.append(("short turns lowered", how_many))
        return (
            [("candidates", str(len(cands))), ("fusion", str(trace.settings.retrieval.fusion)), *fusion, *speaker],
            [
                ("kept / dropped by the relevance filter", f"{hop.counts.kept} / {hop.counts.dropped}"),
                ("best final scores", _top(cands)),
            ],
        )
    return [], []


def span_io(trace: RetrievalTrace, key: str) -> tuple[Rows, Rows]:
    """A span's inputs and outputs in words, read off the trace (``key``: a :class:`Span`'s key). A stage the trace
    records only the duration of has none."""
    if key == "pipeline":
        return (
            [("question", _short(trace.question)), ("user", trace.user_id), ("hops run", str(len(trace.hops)))],
            [
                ("context", f"{len(trace.context_ids)} memories, {trace.context_tokens} tokens"),
                ("ranked memories", str(sum(1 for r in trace.ranking if r.rank is not None))),
                ("stopped because", trace.stop_reason.replace("_", " ") if trace.stop_reason else "—"),
            ],
        )
    if key == "query_generation":
        first = trace.hops[0] if trace.hops else None
        out = [("hop 1's query", _short(first.query)), ("made by", proposer_words(first.proposed_by))] if first else []
        return [("question", _short(trace.question))], out
    if key.startswith("hop") and key[3:].split(".")[0].isdigit():
        digits, _, stage = key[3:].partition(".")
        return _hop_io(trace, int(digits), stage or None)
    if key.startswith("reasoner_hop") and key[len("reasoner_hop") :].isdigit():
        number = int(key[len("reasoner_hop") :])
        done = next((h for h in trace.hops if h.hop == number), None)
        after = next((h for h in trace.hops if h.hop == number + 1), None)
        inputs = [(f"hop {number}'s best memories", _top(done.candidates))] if done else []
        if after is not None:
            return inputs, [("next query", _short(after.query)), ("proposed by", proposer_words(after.proposed_by))]
        return inputs, [("decision", f"stop ({trace.stop_reason.replace('_', ' ')})")]
    if key == "merge_and_assembly":
        left = [r for r in trace.ranking if r.rank is not None and not r.in_context]
        return (
            [("ranked memories of all hops", str(sum(1 for r in trace.ranking if r.rank is not None)))],
            [
                ("context", f"{len(trace.context_ids)} memories, {trace.context_tokens} tokens"),
                ("ranked but left out", str(len(left))),
            ],
        )
    if key == "time_window":
        w = trace.time_window
        read = f"{w.label}, read from {_short(repr(w.phrase))}" if w is not None else "none named"
        return [("question", _short(trace.question))], [("date window", read)]
    if key == "trace_write":
        return [], [("stored as", trace.trace_id)]
    return [], []
