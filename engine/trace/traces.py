"""``engine.traces``: the stored traces (trace/store.py) plus what is read off them: export, the why-not analysis and
the store's word on a memory's state. Replay re-runs ranking, so it sits with retrieval (retrieval/namespace.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import InvalidInput
from ..ids import check_id
from ..validation import parse_json
from ..vocab import TraceOrigin
from .codec import trace_from_dict
from .embedding_map import TraceMap, case_of_trace, trace_map
from .memory_state import memory_states
from .records import RetrievalTrace
from .store import TraceStore
from .why_not import MemoryState, WhyNot, why_not

# Traces of long multi-hop runs are large; a pasted or uploaded trace up to this size is read.
MAX_TRACE_JSON_CHARS = 50_000_000


class Traces(TraceStore):
    """Save, get, list, delete and prune traces (inherited), export them, and explain a missing memory."""

    def export(self, trace_id: str) -> str:
        """A stored trace as indented JSON (the format :meth:`from_json` and the dashboard's upload read)."""
        return json.dumps(self.get(trace_id).to_dict(), ensure_ascii=False, indent=2)

    @staticmethod
    def from_json(text: str) -> RetrievalTrace:
        """A trace from its JSON (any stored format); anything else raises InvalidInput."""
        try:
            data = parse_json(text, "trace JSON", max_chars=MAX_TRACE_JSON_CHARS)
        except InvalidInput as exc:
            raise InvalidInput(f"not a memlens trace: {exc}") from None
        return trace_from_dict(data)

    def import_json(self, text: str) -> RetrievalTrace:
        """Store a trace read from its JSON (e.g. exported from another store) with origin ``import``; a trace id
        this store already holds is refused."""
        trace = self.from_json(text)
        with self.b.db.write() as conn:
            if conn.execute("SELECT 1 FROM traces WHERE id=?", [trace.trace_id]).fetchall():
                raise InvalidInput(f"this store already holds a trace {trace.trace_id!r}")
            self.save(trace, conn, origin=TraceOrigin.IMPORT)
        return trace

    def memory_states(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryState]:
        """Whether each memory id of a user is active, archived, hard-forgotten (with the forget log's date and
        reason) or not in the store."""
        return memory_states(self.b, user_id, ids)

    def why_not(self, trace: RetrievalTrace | str, item_id: str) -> WhyNot:
        """Where a trace (or a stored trace's id) lost a memory: per hop the stage and rule; for a memory no hop saw,
        whether it was forgotten or is not in the store."""
        trace = self.get(trace) if isinstance(trace, str) else trace
        check_id(item_id, "memory id")
        # The store's word even on a memory the trace saw: it may have been forgotten since (trace/why_not.py).
        state = self.memory_states(trace.user_id, [item_id])[item_id]
        return why_not(trace, item_id, state)

    def embedding_map(self, trace: RetrievalTrace | str) -> TraceMap:
        """The trace as space: its question, each hop's query and its candidates projected to 2-D (PCA of the
        stored vectors and of the queries embedded again), with each candidate's verdict and hops, and the expected
        memories marked when the trace was an evaluation case (trace/embedding_map.py)."""
        trace = self.get(trace) if isinstance(trace, str) else trace
        case, gold = case_of_trace(self.b, trace.trace_id)
        return trace_map(self.b, trace, gold, case)
