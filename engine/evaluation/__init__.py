"""Evaluations inside memlens: expectation sets, runs through the traced retrieval, loss analysis, A/B comparison
and benchmark importers. ``MemoryEngine.evals`` is the front door (an :class:`Evaluations`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..memory.base import Backends
from .compare import compare
from .demo import load_demo_evaluation
from .importers import ImportProgress, import_benchmark
from .metrics import funnel, loss_counts
from .records import CaseResult, Comparison, EvalCase, EvalRun, EvalSet
from .runs import Evaluator
from .sets import ExpectationSets

if TYPE_CHECKING:
    from ..memory.semantic import SemanticMemory
    from ..retrieval.namespace import Retrieval
    from ..trace.traces import Traces

__all__ = ["Evaluations", "EvalSet", "EvalCase", "EvalRun", "CaseResult", "Comparison"]


class Evaluations(Evaluator):
    """``engine.evals``: sets, cases, runs and comparisons of one store. Runs (evaluate, runs, get_run, results,
    delete_run) are the Evaluator's (runs.py); cases are read through ``retrieval``, pinned from ``traces`` and
    benchmark turns are written into ``items``."""

    def __init__(self, b: Backends, retrieval: Retrieval, items: SemanticMemory, traces: Traces) -> None:
        super().__init__(b, ExpectationSets(b), retrieval, traces.memory_states)
        self._items = items
        self._traces = traces

    # -- sets and cases ------------------------------------------------------------------------------------------
    def sets(self) -> list[EvalSet]:
        return self._sets.list()

    def get_set(self, name: str) -> EvalSet:
        return self._sets.get(name)

    def create_set(self, name: str, description: str = "", exist_ok: bool = False) -> EvalSet:
        return self._sets.create(name, description, exist_ok)

    def delete_set(self, name: str) -> int:
        """Delete a set with its cases, runs and the runs' traces; returns how many runs went with it."""
        return self._sets.delete(name)

    def cases(self, set_name: str, category: str | None = None) -> list[EvalCase]:
        return self._sets.cases(set_name, category)

    def add_case(
        self,
        set_name: str,
        user_id: str,
        question: str,
        expected: Iterable[str],
        *,
        case_id: str | None = None,
        session_id: str | None = None,
        now: Any = None,
        category: str | None = None,
        source: str = "manual",
        create_set: bool = False,
    ) -> EvalCase:
        """Add (or, with an existing ``case_id``, replace) one case; ``create_set`` makes the set if needed."""
        case = self._sets.prepare(
            set_name,
            user_id,
            question,
            expected,
            case_id=case_id,
            session_id=session_id,
            now=now,
            category=category,
            source=source,
        )
        return self._sets.add([case], create_set)[0]

    def add_cases(self, set_name: str, cases: Iterable[Mapping[str, Any]], create_set: bool = False) -> list[EvalCase]:
        """Several cases in one transaction (each a mapping of add_case's arguments); all or nothing."""
        prepared = [self._sets.prepare(set_name, **dict(c)) for c in cases]
        return self._sets.add(prepared, create_set)

    def update_case(self, set_name: str, case_id: str, **changes: Any) -> EvalCase:
        return self._sets.update_case(set_name, case_id, changes)

    def delete_case(self, set_name: str, case_id: str) -> None:
        self._sets.delete_case(set_name, case_id)

    def pin(
        self,
        trace_id: str,
        expected: Sequence[str],
        set_name: str,
        category: str | None = None,
        create_set: bool = True,
    ) -> EvalCase:
        """Pin a stored trace's question as a case: the memories that should be recalled for it (the trace's user,
        session and retrieval time are kept). The user's question pinned again in the same set replaces that case
        (same case id; its category kept unless a new one is given) instead of adding a duplicate."""
        trace = self._traces.get(trace_id)
        pinned = self.cases(set_name) if self._sets.exists(set_name) else []
        same = next((c for c in pinned if (c.user_id, c.question) == (trace.user_id, trace.question)), None)
        return self.add_case(
            set_name,
            trace.user_id,
            trace.question,
            expected,
            case_id=same.case_id if same else None,
            session_id=trace.session_id,
            now=trace.settings.now,
            category=category or (same.category if same else None),
            source="pinned",
            create_set=create_set,
        )

    # -- runs (evaluate, runs, get_run, results, delete_run: runs.py) ---------------------------------------------
    def losses(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """The loss funnel of a run: ``funnel`` (expected memories through each stage) and ``losses`` (lost
        memories per stage and rule)."""
        results = self.results(run_id)
        return {"funnel": funnel(results), "losses": loss_counts(results)}

    # -- benchmarks ---------------------------------------------------------------------------------------------
    def import_benchmark(
        self,
        kind: str,
        path: str,
        set_name: str,
        limit: int | None = None,
        preceding: bool = True,
        progress: ImportProgress | None = None,
    ) -> dict[str, Any]:
        """Import a LoCoMo or LongMemEval file (users, one item per turn, the expectation set); idempotent.
        ``preceding=False`` stores bare turns (no previous turn as preceding text)."""
        return import_benchmark(self._items, self._sets, kind, path, set_name, limit, preceding, progress)

    def load_demo(self, run: bool = True) -> str | None:
        """The demo's expectation set ('demo') and one run of it (when it has none); needs the demo dataset."""
        return load_demo_evaluation(self, run)

    def compare(self, run_a: str, run_b: str, metric: str = "recall@10") -> Comparison:
        return compare(self.get_run(run_a), self.results(run_a), self.get_run(run_b), self.results(run_b), metric)
