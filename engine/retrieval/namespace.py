"""``engine.retrieval``: the traced pipeline (retrieve), its replay on a stored trace, and plain search."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..memory.base import Backends
from ..memory.forgetting import Forgetter
from ..providers.llm import LLM
from ..records import SearchHit
from ..trace.records import RetrievalTrace
from ..trace.store import TraceStore
from ..validation import check_optional_int
from .pipeline import Retriever
from .search import plain_search


class Retrieval:
    """Retrieval over one store. ``pipeline`` is the ranking machinery (settings per call, query vectors) that
    evaluation runs drive directly."""

    def __init__(self, b: Backends, llm: LLM, traces: TraceStore, forgetting: Forgetter) -> None:
        self.b = b
        self.traces = traces
        self.forgetting = forgetting
        self.pipeline = Retriever(b, llm, traces.save)

    def retrieve(
        self,
        user_id: str,
        question: str,
        session_id: str | None = None,
        hops: int | None = None,
        budget: int | None = None,
        overrides: Mapping[str, Any] | None = None,
        reasoner: Any = None,
        now: datetime | str | None = None,
        save: bool = True,
        preset: str | None = None,
    ) -> RetrievalTrace:
        """The traced pipeline; returns (and stores) the trace, whose ``context`` is what the agent gets.
        ``preset`` names a set of overrides (engine.presets; ``llmemory`` for parity), ``overrides`` win over it."""
        check_optional_int(hops, "hops", "hops")
        check_optional_int(budget, "budget", "budget_tokens")
        return self.pipeline.retrieve(
            user_id, question, session_id, hops, budget, overrides, reasoner, now, save=save, preset=preset
        )

    def search(
        self, user_id: str, query: str, kind: str = "all", limit: int = 10, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Plain search without the ranking pipeline (retrieval/search.py). ``hybrid``: (1-w)*cosine + w*BM25/max
        with w = ``bm25_weight``, over the union of vector and full-text hits; ``vector``: cosine only (no full-text
        search runs); ``fts``: LanceDB BM25 only."""
        return plain_search(self.b, user_id, query, kind, limit, mode)

    def replay(self, trace_id: str, overrides: Mapping[str, Any] | None = None) -> RetrievalTrace:
        """Re-rank a stored trace under other settings without searching again."""
        return self.replay_trace(self.traces.get(trace_id), overrides)

    def replay_trace(
        self, trace: RetrievalTrace, overrides: Mapping[str, Any] | None = None, graph: bool = False
    ) -> RetrievalTrace:
        """Replay a trace (stored, or read from JSON); memories forgotten in this store since are left out of the
        context and reported with reason ``forgotten``. With ``graph``, the entity stage links the trace's
        candidates by the graph as it is now (an entity forgotten or a relation superseded since shows)."""
        ids = sorted({c.id for h in trace.hops for c in h.candidates})
        forgotten = self.forgetting.tombstones(trace.user_id, ids) if ids else {}
        return self.pipeline.replay(trace, overrides, forgotten, graph)
