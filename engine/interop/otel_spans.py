"""memlens traces, writes and forgets as OpenTelemetry span data (pure: no OpenTelemetry import, no clock).

A retrieval becomes a ``search_memory`` span (the GenAI memory conventions, semantic-conventions-genai
docs/gen-ai/gen-ai-spans.md "Memory"), with a child span per hop and, under each hop, a span per timed stage. Every
start and end is computed from the trace itself: ``created_at`` is when the pipeline finished (``pipeline`` ms after
it began), and the stages follow one another in the order the trace recorded them. A write is ``create_memory``, a
working-memory slot or a skill's outcome ``update_memory``, a forget ``delete_memory``.

Attributes, by namespace:

* ``gen_ai.*`` (the conventions): ``gen_ai.operation.name``; ``gen_ai.memory.store.id`` is the memlens user whose
  memory it is (memlens keeps one memory per user); ``gen_ai.memory.query.text`` the question;
  ``gen_ai.memory.records`` (JSON: ``id``, ``content``, ``score`` = the final score, ``metadata``) the memories
  retrieval put in the context; ``gen_ai.memory.record.count`` how many; ``gen_ai.memory.record.id`` when the
  operation touched one record; ``gen_ai.conversation.id`` the session.
* OpenInference (what Arize Phoenix reads; it does not map ``search_memory`` itself): ``openinference.span.kind``
  (RETRIEVER for the retrieval and its hops, CHAIN for stages), ``input.value``, and
  ``retrieval.documents.N.document.{id,content,score,metadata}``.
* ``memlens.*`` (what the conventions have no place for, semantic-conventions-genai issue #139): ``memlens.trace.id``,
  ``memlens.user.id``, ``memlens.preset``, ``memlens.stop_reason``, ``memlens.hops``, ``memlens.context.tokens``,
  ``memlens.replay_of``, ``memlens.settings`` and ``memlens.strategies`` (JSON), ``memlens.ranking`` (JSON: per
  ranked memory its ``rank``, ``hop``, ``final``, ``in_context``, ``reason``); on a hop ``memlens.hop``,
  ``memlens.hop.query``, ``memlens.hop.proposed_by``, ``memlens.hop.counts`` and ``memlens.candidates`` (JSON: per
  candidate its ``scores`` by signal, ``ranks`` by stage, ``verdict``, ``in_context``, ``context_reason``; the hop's
  documents are its best ``HOP_DOCUMENTS`` candidates by final rank); on a
  stage ``memlens.stage`` and ``memlens.stage.ms``; on a write ``memlens.memory.kind``; on a forget
  ``memlens.memory.ids``, ``memlens.forget.mode``, ``memlens.forget.actor``. A document's metadata carries the same
  rank, hop, kind, verdict and scores.

A hard-forgotten memory's text never enters a span: a candidate with a hard tombstone, or an id the caller names in
``gone`` (the store's word: hard-forgotten since), is exported with ``[forgotten memory <id>]`` as its content.
``capture_content=False`` leaves every text out (question, queries, memories), as the conventions' opt-in asks.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from ..trace.records import CandidateTrace, HopTrace, RetrievalTrace
from ..trace.redaction import FORGOTTEN_TEXT

AttributeValue = str | bool | int | float | tuple[str, ...]

SEARCH_MEMORY = "search_memory"
CREATE_MEMORY = "create_memory"
UPDATE_MEMORY = "update_memory"
DELETE_MEMORY = "delete_memory"
RETRIEVER, CHAIN = "RETRIEVER", "CHAIN"  # OpenInference span kinds
# Stages a hop runs one after another; any other stage a hop records was timed inside ``scoring``.
SEQUENTIAL_HOP_STAGES = (
    "embed_query",
    "search",
    "participants",
    "entities",
    "keys",
    "candidates",
    "llm_judge",
    "scoring",
)
# A hop span's documents: its best candidates by final rank (every candidate is in ``memlens.candidates``). Each
# document is four attributes, and a hop's dozens of candidates as documents were most of the export's work.
HOP_DOCUMENTS = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RANKING_FIELDS = ("id", "kind", "hop", "final", "rank", "in_context", "reason")


@dataclass(frozen=True)
class SpanData:
    """One span to export: its name, when it ran (ns since the epoch), its attributes and its child spans."""

    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue]
    children: tuple[SpanData, ...] = ()
    client: bool = False  # span kind CLIENT (the memory operation itself) rather than INTERNAL

    def walk(self) -> Iterable[SpanData]:
        """This span and every span under it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class _Content:
    """What texts may leave: every one (``capture``) but those of the ids in ``gone``."""

    capture: bool = True
    gone: frozenset[str] = field(default_factory=frozenset)

    def memory_text(self, memory_id: str, text: str, hard_forgotten: bool) -> str | None:
        if not self.capture:
            return None
        if hard_forgotten or memory_id in self.gone:
            return FORGOTTEN_TEXT.format(id=memory_id)
        return text


def iso_to_ns(value: str | datetime) -> int:
    """Nanoseconds since the epoch of an ISO-8601 time (a naive one is UTC)."""
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return ((when - _EPOCH) // timedelta(microseconds=1)) * 1000


def _ms_to_ns(ms: float | None) -> int:
    return max(0, round(float(ms or 0.0) * 1_000_000))


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _hard_forgotten(trace: RetrievalTrace, c: CandidateTrace) -> bool:
    tomb = c.forgotten or trace.forgotten.get(c.id)
    return tomb is not None and tomb.hard


def _candidate_detail(c: CandidateTrace) -> dict[str, Any]:
    # The score records go to orjson as the dataclasses they are (serialised in C; a score no stage computed is null).
    return {
        "id": c.id,
        "kind": c.kind,
        "found_by": c.found_by,
        "search_order": c.search_order,
        "scores": c.scores,
        "ranks": c.ranks,
        "verdict": c.verdicts,
        "in_context": c.in_context,
        "context_reason": c.context_reason,
        **({"forgotten": c.forgotten.mode} if c.forgotten is not None else {}),
    }


def _documents(docs: Sequence[Mapping[str, Any]]) -> dict[str, AttributeValue]:
    """OpenInference's flattened ``retrieval.documents.N.document.*`` for Phoenix's retriever view."""
    out: dict[str, AttributeValue] = {}
    for n, d in enumerate(docs):
        base = f"retrieval.documents.{n}.document"
        out[f"{base}.id"] = d["id"]
        if d.get("score") is not None:
            out[f"{base}.score"] = float(d["score"])
        if d.get("content") is not None:
            out[f"{base}.content"] = d["content"]
        out[f"{base}.metadata"] = _json(d.get("metadata", {}))
    return out


def _stage_spans(stages: Sequence[tuple[str, float]], start_ns: int) -> tuple[tuple[SpanData, ...], int]:
    """Spans of a hop's stages laid end to end from ``start_ns`` (a stage timed inside ``scoring`` starts where
    scoring started); returns them and where the last one ended."""
    spans: list[SpanData] = []
    cursor, scoring_start = start_ns, start_ns
    for name, ms in stages:
        begin = cursor if name in SEQUENTIAL_HOP_STAGES else scoring_start
        end = begin + _ms_to_ns(ms)
        if name == "scoring":
            scoring_start = begin
        spans.append(SpanData(f"memlens.stage {name}", begin, end, _stage_attributes(name, ms)))
        if name in SEQUENTIAL_HOP_STAGES:
            cursor = end
    return tuple(spans), cursor


def _stage_attributes(name: str, ms: float) -> dict[str, AttributeValue]:
    return {"openinference.span.kind": CHAIN, "memlens.stage": name, "memlens.stage.ms": float(ms or 0.0)}


def _hop_span(trace: RetrievalTrace, hop: HopTrace, start_ns: int, content: _Content) -> SpanData:
    stages, end_ns = _stage_spans(hop.timings_ms.stages, start_ns)
    ranked = sorted(hop.candidates, key=lambda c: (c.ranks.final is None, c.ranks.final or 0, c.search_order))
    docs = [
        {
            "id": c.id,
            "score": c.scores.final,
            "content": content.memory_text(c.id, c.text, _hard_forgotten(trace, c)),
            "metadata": {"hop": hop.hop, "rank": c.ranks.final, "kind": str(c.kind), "in_context": c.in_context},
        }
        for c in ranked[:HOP_DOCUMENTS]
    ]
    attrs: dict[str, AttributeValue] = {
        "openinference.span.kind": RETRIEVER,
        "memlens.trace.id": trace.trace_id,
        "memlens.hop": hop.hop,
        "memlens.hop.proposed_by": hop.proposed_by,
        "memlens.hop.counts": _json(hop.counts.to_dict()),
        "memlens.hop.candidate_count": len(hop.candidates),
        "memlens.candidates": _json([_candidate_detail(c) for c in ranked]),
        **_documents(docs),
    }
    if content.capture:
        attrs["memlens.hop.query"] = hop.query
        attrs["input.value"] = hop.query
    return SpanData(f"memlens.hop {hop.hop}", start_ns, end_ns, attrs, stages)


def retrieval_spans(
    trace: RetrievalTrace, capture_content: bool = True, gone: Collection[str] = ()
) -> tuple[SpanData, ...]:
    """The trace as one ``search_memory`` span with its hops and stages beneath (module docstring). ``gone``: ids
    hard-forgotten since the trace was stored, whose text must not leave even if the trace still held it."""
    content = _Content(capture_content, frozenset(gone))
    timings = trace.timings_ms
    pipeline_ms = timings.get("pipeline") or timings.get("replay") or timings.total or 0.0
    start_ns = iso_to_ns(trace.created_at) - _ms_to_ns(pipeline_ms)
    top = dict(timings.stages)
    children: list[SpanData] = []
    cursor = start_ns

    def stage(name: str) -> None:
        nonlocal cursor
        if name in top:
            end = cursor + _ms_to_ns(top[name])
            children.append(SpanData(f"memlens.stage {name}", cursor, end, _stage_attributes(name, top[name])))
            cursor = end

    stage("time_window")
    stage("query_generation")
    for hop in trace.hops:
        span = _hop_span(trace, hop, cursor, content)
        children.append(span)
        cursor = span.end_ns
        stage(f"reasoner_hop{hop.hop}")
    stage("merge_and_assembly")
    stage("trace_write")
    whole_ms = timings.get("total") or pipeline_ms
    end_ns = max([start_ns + _ms_to_ns(whole_ms), cursor, *(c.end_ns for c in children)])
    return (SpanData(SEARCH_MEMORY, start_ns, end_ns, _retrieval_attributes(trace, content), tuple(children), True),)


def _retrieval_attributes(trace: RetrievalTrace, content: _Content) -> dict[str, AttributeValue]:
    candidates = {(c.id, h.hop): c for h in trace.hops for c in h.candidates}
    returned = [r for r in trace.ranking if r.in_context and r.rank is not None]
    records = []
    for r in returned:
        c = candidates.get((r.id, r.hop))
        text = c.text if c is not None else ""
        hard = c is not None and _hard_forgotten(trace, c) or (r.forgotten is not None and r.forgotten.hard)
        metadata = {
            "rank": r.rank,
            "hop": r.hop,
            "kind": str(r.kind),
            "tokens": r.tokens,
            **({"scores": _without_none(c.scores.to_dict()), "verdict": str(c.verdicts.relevance)} if c else {}),
        }
        records.append(
            _without_none(
                {"id": r.id, "score": r.final, "content": content.memory_text(r.id, text, hard), "metadata": metadata}
            )
        )
    attrs: dict[str, AttributeValue] = {
        "gen_ai.operation.name": SEARCH_MEMORY,
        "gen_ai.memory.store.id": trace.user_id,
        "gen_ai.memory.record.count": len(records),
        "gen_ai.memory.records": _json(records),
        "openinference.span.kind": RETRIEVER,
        "memlens.trace.id": trace.trace_id,
        "memlens.user.id": trace.user_id,
        "memlens.preset": trace.settings.preset or "default",
        "memlens.stop_reason": trace.stop_reason,
        "memlens.hops": len(trace.hops),
        "memlens.context.tokens": trace.context_tokens,
        "memlens.settings": _json(trace.settings.to_dict()),
        "memlens.strategies": _json(trace.strategies.to_dict()),
        "memlens.ranking": _json([{k: getattr(r, k) for k in _RANKING_FIELDS} for r in trace.ranking]),
        **_documents(records),
    }
    if trace.session_id:
        attrs["gen_ai.conversation.id"] = trace.session_id
    if trace.replay_of:
        attrs["memlens.replay_of"] = trace.replay_of
    if trace.speaker is not None:  # the speaker stage's cue (engine/retrieval/speaker_stage.py)
        attrs["memlens.speaker"] = trace.speaker
    if content.capture:
        attrs["gen_ai.memory.query.text"] = trace.question
        attrs["input.value"] = trace.question
    return attrs


@dataclass(frozen=True)
class MemoryWrite:
    """One memory written (``create_memory``) or changed (``update_memory``), as a span reads it."""

    id: str
    kind: str  # semantic | episodic | procedural | working
    text: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


def write_span(
    operation: str,
    user_id: str,
    writes: Sequence[MemoryWrite],
    start_ns: int,
    end_ns: int,
    capture_content: bool = True,
    error: str | None = None,
) -> SpanData:
    """A ``create_memory`` or ``update_memory`` span over the memories one call wrote."""
    if operation not in (CREATE_MEMORY, UPDATE_MEMORY):
        raise ValueError(f"not a write operation: {operation}")
    records = [
        _without_none({"id": w.id, "content": w.text if capture_content else None, "metadata": dict(w.metadata)})
        for w in writes
    ]
    attrs: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store.id": user_id,
        "gen_ai.memory.record.count": len(writes),
        "gen_ai.memory.records": _json(records),
        "memlens.user.id": user_id,
        "memlens.memory.kind": ",".join(sorted({w.kind for w in writes})),
        "memlens.memory.ids": tuple(w.id for w in writes),
    }
    if len(writes) == 1:
        attrs["gen_ai.memory.record.id"] = writes[0].id
    if error:
        attrs["error.type"] = error
    return SpanData(operation, start_ns, end_ns, attrs, client=True)


def delete_span(
    user_id: str,
    kind: str,
    ids: Sequence[str],
    mode: str,
    actor: str,
    start_ns: int,
    end_ns: int,
    error: str | None = None,
) -> SpanData:
    """A ``delete_memory`` span for one forget: ids, kind, mode and actor; never a text (nor the forget's reason,
    which a person wrote and may quote the memory)."""
    attrs: dict[str, AttributeValue] = {
        "gen_ai.operation.name": DELETE_MEMORY,
        "gen_ai.memory.store.id": user_id,
        "gen_ai.memory.record.count": len(ids),
        "memlens.user.id": user_id,
        "memlens.memory.kind": kind,
        "memlens.memory.ids": tuple(ids),
        "memlens.forget.mode": mode,
        "memlens.forget.actor": actor,
    }
    if len(ids) == 1:
        attrs["gen_ai.memory.record.id"] = ids[0]
    if error:
        attrs["error.type"] = error
    return SpanData(DELETE_MEMORY, start_ns, end_ns, attrs, client=True)
