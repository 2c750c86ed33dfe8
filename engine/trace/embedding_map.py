"""A trace seen as space: the question, each hop's query and every candidate, projected from the embedding space to
two dimensions (PCA), each candidate with its verdict and the hop that found it, and the evaluation case's expected
("gold") memories marked when the trace was a run's case.

The candidates' vectors are the stored ones (the user's rows of the vector tables, never re-embedded); the question
and queries are embedded again with the store's embedder, which must be the model the trace ran with (a trace of
another model is not mapped: its candidates' vectors are not in this store's tables). A memory forgotten since the
trace ran has no vector any more: it is listed, not drawn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..memory.base import Backends
from ..vocab import MemoryStatus
from .memory_state import memory_states
from .records import RetrievalTrace
from .why_not import MemoryState

# Verdicts of a candidate, from best to worst: a memory several hops found takes its best one.
IN_CONTEXT = "in the context"
RANKED = "ranked, not in the context"
FILTERED = "dropped by the relevance filter"
VERDICTS = (IN_CONTEXT, RANKED, FILTERED)


@dataclass(frozen=True)
class MapPoint:
    role: str  # question | query | candidate
    id: str  # the memory id; "question" or "hop N" for the texts of the question and the queries
    hops: tuple[int, ...]  # candidate: the hops that found it (first first); query: its hop; question: ()
    text: str
    verdict: str  # a candidate's (VERDICTS); "" for the question and the queries
    gold: bool  # an expected memory of the evaluation case the trace ran for
    x: float
    y: float


@dataclass(frozen=True)
class TraceMap:
    trace_id: str
    points: tuple[MapPoint, ...]
    without_vector: tuple[tuple[str, str], ...]  # (memory id, why it is not drawn) for candidates left out
    gold: tuple[str, ...]  # the case's expected memories (empty: the trace was not an evaluation case)
    case: str | None  # "set · case id" of that case
    gold_unseen: tuple[str, ...]  # expected memories no hop of the trace found
    explained: tuple[float, float]  # the share of the points' variance each axis shows
    note: str  # why the map is empty, when it is


def project_2d(vectors: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Rows projected on their first two principal components, and the share of the variance each one carries.
    Each axis's sign is fixed (its largest loading positive) so the same trace draws the same map every time."""
    n = int(vectors.shape[0])
    if n == 0:
        return np.zeros((0, 2)), (0.0, 0.0)
    centred = vectors.astype(np.float64) - vectors.astype(np.float64).mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((n, 2))
    shares = [0.0, 0.0]
    total = float((s**2).sum())
    for axis in range(min(2, len(s))):
        direction = vt[axis]
        if direction[int(np.argmax(np.abs(direction)))] < 0:
            direction = -direction
        coords[:, axis] = centred @ direction
        shares[axis] = float(s[axis] ** 2 / total) if total > 0 else 0.0
    return coords, (shares[0], shares[1])


def case_of_trace(b: Backends, trace_id: str) -> tuple[str | None, tuple[str, ...]]:
    """The evaluation case a stored trace ran for ("set · case id") and its expected memories; (None, ()) when the
    trace was no run's case."""
    with b.db.read() as conn:
        row = conn.execute(
            "SELECT ru.set_name, re.case_id, re.expected FROM eval_results re JOIN eval_runs ru ON ru.id = re.run_id "
            "WHERE re.trace_id=? LIMIT 1",
            [trace_id],
        ).fetchone()
    if row is None:
        return None, ()
    return f"{row[0]} · {row[1]}", tuple(json.loads(row[2]))


def _candidates(trace: RetrievalTrace) -> dict[str, tuple[str, str, list[int]]]:
    """Memory id -> (kind, text, hops that found it), in the order the hops found them."""
    out: dict[str, tuple[str, str, list[int]]] = {}
    for hop in trace.hops:
        for c in hop.candidates:
            if c.id in out:
                out[c.id][2].append(hop.hop)
            else:
                out[c.id] = (str(c.kind), c.text, [hop.hop])
    return out


def _verdict(trace: RetrievalTrace, memory_id: str, ranked: set[str]) -> str:
    if memory_id in trace.context_ids:
        return IN_CONTEXT
    return RANKED if memory_id in ranked else FILTERED


def trace_map(b: Backends, trace: RetrievalTrace, gold: Sequence[str] = (), case: str | None = None) -> TraceMap:
    """The trace's map (see the module's docstring); ``gold``/``case``: the evaluation case it ran for."""
    gold = tuple(gold)
    found = _candidates(trace)
    unseen = tuple(g for g in gold if g not in found)
    if trace.settings.embedder and trace.settings.embedder != b.embedder.name:
        note = (
            f"This trace ran with the embedding model {trace.settings.embedder}; this store embeds with "
            f"{b.embedder.name}, so its candidates' vectors are not here to map."
        )
        return TraceMap(trace.trace_id, (), (), gold, case, unseen, (0.0, 0.0), note)
    by_kind: dict[str, list[str]] = {}
    for memory_id, (kind, _, _) in found.items():
        by_kind.setdefault(kind, []).append(memory_id)
    vectors: dict[str, np.ndarray] = {}
    for kind, ids in by_kind.items():
        vectors.update({h.id: h.vector for h in b.index.rows_for(kind, trace.user_id, ids)})
    gone = {c.id for h in trace.hops for c in h.candidates if c.forgotten} | set(trace.forgotten)
    missing = [i for i in found if i not in vectors or i in gone]
    states = memory_states(b, trace.user_id, missing) if missing else {}
    without = tuple((i, _why_no_vector(i, gone, states)) for i in missing)

    # The question and each distinct query once (hop 1's query is often the question itself).
    texts: list[tuple[str, str, tuple[int, ...]]] = [("question", trace.question, ())]
    for hop in trace.hops:
        same = next((n for n, t in enumerate(texts) if t[1] == hop.query), None)
        if same is None:
            texts.append((f"hop {hop.hop}", hop.query, (hop.hop,)))
        else:
            texts[same] = (texts[same][0], texts[same][1], (*texts[same][2], hop.hop))
    texts = [t for t in texts if t[1].strip()]  # a text a hard forget blanked has nothing left to embed
    query_vectors = np.asarray(b.embedder.embed([t for _, t, _ in texts]), dtype=np.float32) if texts else None
    if query_vectors is None:
        query_vectors = np.zeros((0, b.embedder.dim), dtype=np.float32)
    drawn = [i for i in found if i not in missing]
    stacked = np.vstack([query_vectors, *(vectors[i][None, :] for i in drawn)]) if drawn else query_vectors
    coords, explained = project_2d(stacked)
    ranked = {r.id for r in trace.ranking if r.rank is not None}
    points = [
        MapPoint("question" if name == "question" else "query", name, hops, text, "", False, *map(float, coords[n]))
        for n, (name, text, hops) in enumerate(texts)
    ]
    for n, memory_id in enumerate(drawn, len(texts)):
        _, text, hops_found = found[memory_id]
        points.append(
            MapPoint(
                "candidate",
                memory_id,
                tuple(hops_found),
                text,
                _verdict(trace, memory_id, ranked),
                memory_id in gold,
                float(coords[n, 0]),
                float(coords[n, 1]),
            )
        )
    note = "" if drawn else "No candidate of this trace has a stored vector to map."
    return TraceMap(trace.trace_id, tuple(points), without, gold, case, unseen, explained, note)


def _why_no_vector(memory_id: str, gone: set[str], states: dict[str, MemoryState]) -> str:
    state = states.get(memory_id)
    status = state.status if state else None
    detail = state.detail if state else ""
    if memory_id in gone or status in (MemoryStatus.FORGOTTEN, MemoryStatus.ARCHIVED):
        return f"forgotten since the trace ran: no vector to place ({detail})" if detail else "forgotten: no vector"
    if status == MemoryStatus.MISSING:
        return "no longer in the store: no vector to place"
    return "no stored vector of this store's embedding model"
