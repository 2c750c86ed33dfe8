"""Evaluations inside memlens: expectation sets, runs through the traced retrieval, loss analysis, A/B comparison
and benchmark importers. ``MemoryEngine.evals`` is the front door (an :class:`Evaluations`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, NotFound
from ..memory.base import Backends
from ..trace.records import RetrievalTrace
from .attribution import GoldFinding, HopAttribution, attribute
from .calibration import MAX_CASES, MAX_SWEEP_CASES, SWEEP_THRESHOLDS, Calibration, SignalValues, SweepPoint, calibrate
from .compare import compare
from .demo import load_demo_evaluation
from .importers import ImportProgress, import_benchmark
from .label_cases import cases_from_labels
from .metrics import DEFAULT_CUTOFF, METRICS, funnel, loss_counts
from .records import CaseResult, Comparison, EvalCase, EvalRun, EvalSet
from .runs import Evaluator
from .sets import ExpectationSets

if TYPE_CHECKING:
    from ..memory.semantic import SemanticMemory
    from ..retrieval.namespace import Retrieval
    from ..trace.traces import Traces

__all__ = [
    "Evaluations",
    "EvalSet",
    "EvalCase",
    "EvalRun",
    "CaseResult",
    "Comparison",
    "Calibration",
    "GoldFinding",
    "HopAttribution",
    "SignalValues",
    "SweepPoint",
]


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

    def set_from_labels(
        self, set_name: str, user_id: str, labeller: str | None = None, category: str | None = None
    ) -> list[EvalCase]:
        """Turn the user's labels into cases of ``set_name`` in one step (the set is made if needed): each labelled
        trace's question, expecting the memories labelled useful there (by ``labeller``, or by more labellers
        than found them harmful); a question already in the set has its case replaced (evaluation/label_cases.py)."""
        return cases_from_labels(self.b, self._sets, self._traces.get, set_name, user_id, labeller, category)

    # -- runs (evaluate, runs, get_run, results, delete_run: runs.py) ---------------------------------------------
    def losses(self, run_id: str, k: int = DEFAULT_CUTOFF) -> dict[str, list[dict[str, Any]]]:
        """The loss funnel of a run: ``funnel`` (expected memories through each stage, the last one: in the context
        within the top ``k`` of the ranking) and ``losses`` (lost memories per stage and rule, with those in the
        context but ranked below ``k`` lost to ranking)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput("the ranking cut-off k is a whole number from 1")
        results = self.results(run_id)
        return {"funnel": funnel(results, k), "losses": loss_counts(results, k)}

    def attribution(self, run_id: str, max_cases: int = MAX_CASES) -> HopAttribution:
        """Which hop and strategy first found each expected memory of a run's first ``max_cases`` traced cases, and
        what the later hops gained and lost in the context (against each trace replayed with its first hop alone;
        evaluation/attribution.py)."""
        _check_cases(max_cases, "max_cases")
        return attribute(
            run_id,
            self.results(run_id),
            self._stored_trace,
            lambda t: self._retrieval.replay_trace(t, {"hops": 1}),
            max_cases,
        )

    def calibration(
        self,
        run_id: str,
        thresholds: Sequence[float] = SWEEP_THRESHOLDS,
        max_cases: int = MAX_CASES,
        sweep_cases: int = MAX_SWEEP_CASES,
    ) -> Calibration:
        """Per scoring signal, its values on the expected memories and on the other candidates of the run's first
        ``max_cases`` traced cases; and the relevance filter's threshold swept over ``thresholds`` (none: no sweep)
        by replaying the first ``sweep_cases`` of them, with the context recall and size at each value
        (evaluation/calibration.py)."""
        try:
            values = sorted({float(t) for t in thresholds})
        except (TypeError, ValueError):
            raise InvalidInput("thresholds are numbers from 0 to 1") from None
        if any(not 0.0 <= t <= 1.0 for t in values) or len(values) > 50:
            raise InvalidInput("thresholds are at most 50 numbers from 0 to 1")
        _check_cases(max_cases, "max_cases")
        _check_cases(sweep_cases, "sweep_cases")
        run = self.get_run(run_id)
        traced: list[tuple[CaseResult, RetrievalTrace]] = []
        for r in self.results(run_id):
            if len(traced) >= max_cases:
                break
            if r.trace_id and (t := self._stored_trace(r.trace_id)) is not None:
                traced.append((r, t))
        return calibrate(run_id, run.settings, traced, self._retrieval.replay_trace, values, sweep_cases, run.cases)

    def history(self, set_name: str) -> list[dict[str, Any]]:
        """The set's finished runs, oldest first, each with its overall metrics: how a set's numbers moved."""
        runs = [r for r in self.runs(set_name) if r.status == "done"]
        return [
            {
                "run_id": r.run_id,
                "label": r.label,
                "started_at": r.started_at,
                "method": r.method,
                "cases": r.cases,
                **{m: r.metrics.get("overall", {}).get(m) for m in METRICS},
            }
            for r in sorted(runs, key=lambda r: (r.started_at, r.run_id))
        ]

    def _stored_trace(self, trace_id: str) -> RetrievalTrace | None:
        try:
            return self._traces.get(trace_id)
        except NotFound:  # a trace pruned since the run: its case is left out
            return None

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


def _check_cases(n: int, name: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInput(f"{name} is a whole number from 1")
