"""Evaluation runs: every case of a set through the normal traced retrieval (or a plain vector / BM25 ranking as a
baseline), per-case ranks, context reach and where each miss was lost, metrics per category, all stored.

A run embeds each question once (retrieval does) and never re-embeds stored memories. Each memlens case's trace is
stored like any other trace and linked from its result; deleting a run deletes those traces.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import utcnow
from ..config import Settings
from ..errors import InvalidInput, NotFound
from ..ids import check_id, new_id
from ..memory.base import Backends, insert_rows
from ..presets import preset_overrides
from ..store.sql.database import Connection, one_row
from ..trace.records import RetrievalTrace
from ..trace.trace_index import recording_origin
from ..trace.why_not import GONE, STAGE_NAMES, MemoryState, why_not
from ..vocab import TraceOrigin
from .metrics import KS, aggregate, case_scores
from .records import METHODS, CaseResult, EvalCase, EvalRun
from .sets import ExpectationSets, check_set_name

if TYPE_CHECKING:
    from ..retrieval.namespace import Retrieval

RESULT_TYPES = (
    ("run_id", "str"),
    ("case_id", "str"),
    ("user_id", "str"),
    ("question", "str"),
    ("category", "str"),
    ("expected", "str"),
    ("trace_id", "str"),
    ("ranks", "str"),
    ("in_context", "str"),
    ("lost", "str"),
    ("scores", "str"),
    ("latency_ms", "float"),
    ("top_ids", "str"),
)
RUN_COLUMNS = (
    "id, set_name, label, method, preset, overrides, hops, settings, code_version, store_counts, metrics, "
    "status, cases, started_at, finished_at"
)
WRITE_EVERY = 100  # results are written in batches (one transaction per 100 cases, not per case)
BASELINE_DEPTH = max(KS)
Progress = Callable[[int, int], None]


@cache
def code_version() -> str:
    """The memlens commit a run was made with: a clone's commit (with '+dirty' for local changes) when memlens runs
    from its own checkout (`pip install -e .`), else the installed package's version. Only a checkout of memlens
    itself counts: an installed copy inside some other git repository does not report that repository's commit."""
    try:
        version = importlib.metadata.version("memlens")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parents[2]  # the folder holding the engine package
    if not ((root / ".git").exists() and (root / "pyproject.toml").is_file()):
        return version
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return version


def pipeline_ranking(trace: RetrievalTrace) -> list[str]:
    """A memlens trace's order: the final merged ranking, then the candidates its relevance filter dropped (best
    hybrid score first), so recall@25 is defined even when the filter is strict."""
    ranked = [r.id for r in trace.ranking]
    seen = set(ranked)
    dropped = []
    for hop in trace.hops:
        for c in hop.candidates:
            if c.id not in seen and c.context_reason == "filtered":
                dropped.append((c.scores.hybrid or 0.0, c.id))
                seen.add(c.id)
    return ranked + [i for _, i in sorted(dropped, key=lambda t: -t[0])]


def _gone(state: MemoryState | None) -> dict[str, Any] | None:
    if state is None or state.status not in GONE:
        return None
    return {"status": state.status, "stage": STAGE_NAMES[state.status], "rule": state.detail, "hop": None, "rank": None}


def _run(row: Sequence[Any]) -> EvalRun:
    return EvalRun(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        json.loads(row[5] or "{}"),
        row[6],
        json.loads(row[7] or "{}"),
        row[8] or "",
        json.loads(row[9] or "{}"),
        json.loads(row[10] or "{}"),
        row[11],
        row[12],
        row[13],
        row[14],
    )


def _result(row: Sequence[Any]) -> CaseResult:
    return CaseResult(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        tuple(json.loads(row[5])),
        row[6],
        json.loads(row[7]),
        json.loads(row[8]),
        json.loads(row[9]),
        json.loads(row[10]),
        row[11],
        tuple(json.loads(row[12])),
    )


class Evaluator:
    """Runs sets and keeps their runs: each case through ``retrieval`` (the engine's traced pipeline and plain
    search); ``memory_states`` says which expected memories were forgotten before the run."""

    def __init__(
        self,
        b: Backends,
        sets: ExpectationSets,
        retrieval: Retrieval,
        memory_states: Callable[[str, Sequence[str]], dict[str, MemoryState]],
    ) -> None:
        self.b = b
        self._sets = sets
        self._retrieval = retrieval
        self._memory_states = memory_states

    # -- running ------------------------------------------------------------------------------------------------
    def evaluate(
        self,
        set_name: str,
        preset: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        hops: int | None = None,
        label: str | None = None,
        method: str = "memlens",
        progress: Progress | None = None,
    ) -> EvalRun:
        """Run an expectation set through traced retrieval (``method`` memlens) or a plain ``vector`` / ``bm25``
        ranking and store the run; returns it with its metrics. Bad arguments raise InvalidInput before anything is
        written."""
        if method not in METHODS:
            raise InvalidInput(f"unknown evaluation method {str(method)[:20]!r}; use {', '.join(METHODS)}")
        cases = self._sets.cases(set_name)
        if not cases:
            raise InvalidInput(f"expectation set {set_name!r} has no cases")
        changes = {**preset_overrides(preset), **dict(overrides or {})}
        if hops is not None and (isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= 5):
            raise InvalidInput("hops must be an integer from 1 to 5")
        settings: Settings = self._retrieval.pipeline.settings_for(changes, hops, None)
        label = label or (f"{method}" + (f" · {preset}" if preset else "") + (f" · {hops} hops" if hops else ""))
        if not isinstance(label, str) or len(label) > 200 or "\x00" in label:
            raise InvalidInput("a run label is text of at most 200 characters")
        users = sorted({c.user_id for c in cases})
        states: dict[str, dict[str, MemoryState]] = {
            u: self._memory_states(u, sorted({e for c in cases if c.user_id == u for e in c.expected})) for u in users
        }
        if method == "memlens":  # one batched encoder call for every question (a short one is its own first query)
            self._retrieval.pipeline.query_vectors.prime([c.question for c in cases])
        run_id = new_id("run")
        with self.b.db.write() as conn:
            conn.execute(
                f"INSERT INTO eval_runs ({RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    run_id,
                    set_name,
                    label,
                    method,
                    preset,
                    json.dumps(changes),
                    hops,
                    json.dumps(settings.retrieval_dict(), default=str),
                    code_version(),
                    json.dumps(self._store_counts(conn, users)),
                    "{}",
                    "running",
                    len(cases),
                    utcnow(),
                    None,
                ],
            )
        pending: list[list[Any]] = []
        summary: list[tuple[str | None, dict[str, Any], float | None]] = []
        try:
            for n, case in enumerate(cases, 1):
                with recording_origin(TraceOrigin.EVALUATION):  # the run's traces are not an agent's
                    result = self._one(run_id, case, method, changes, hops, states[case.user_id])
                summary.append((result.category, result.scores, result.latency_ms))
                pending.append(self._row(result))
                if len(pending) >= WRITE_EVERY:
                    self._write(pending)
                if progress is not None:
                    progress(n, len(cases))
            self._write(pending)
        except BaseException:
            with self.b.db.write() as conn:
                conn.execute("UPDATE eval_runs SET status='failed', finished_at=? WHERE id=?", [utcnow(), run_id])
            raise
        with self.b.db.write() as conn:
            conn.execute(
                "UPDATE eval_runs SET status='done', metrics=?, finished_at=? WHERE id=?",
                [json.dumps(aggregate(summary)), utcnow(), run_id],
            )
            # Read back inside the transaction: a read after the commit could raise (StoreBusy) about a finished run.
            return self._get(conn, run_id)

    def _one(
        self,
        run_id: str,
        case: EvalCase,
        method: str,
        changes: dict[str, Any],
        hops: int | None,
        states: Mapping[str, MemoryState],
    ) -> CaseResult:
        t = time.perf_counter()
        trace_id, context = None, None
        lost: dict[str, dict[str, Any]] = {}
        if method == "memlens":
            trace = self._retrieval.retrieve(
                case.user_id,
                case.question,
                session_id=case.session_id,
                hops=hops,
                overrides=changes or None,
                now=case.now,
            )
            latency = (time.perf_counter() - t) * 1000
            ranking, trace_id, context = pipeline_ranking(trace), trace.trace_id, set(trace.context_ids)
            seen = {c.id for h in trace.hops for c in h.candidates}
            for item_id in case.expected:
                if item_id in context:
                    continue
                gone = None if item_id in seen else _gone(states.get(item_id))
                if gone is not None:
                    lost[item_id] = gone
                    continue
                v = why_not(trace, item_id)
                lost[item_id] = {"status": v.status, "stage": v.stage, "rule": v.rule, "hop": v.hop, "rank": v.rank}
        else:
            hits = self._retrieval.search(
                case.user_id,
                case.question,
                kind="all",
                limit=BASELINE_DEPTH,
                mode="vector" if method == "vector" else "fts",
            )
            latency = (time.perf_counter() - t) * 1000
            ranking = [h.id for h in hits]
            for item_id in case.expected:
                if item_id not in ranking:
                    lost[item_id] = _gone(states.get(item_id)) or {
                        "status": "never",
                        "stage": STAGE_NAMES["never"],
                        "rule": f"not in the top {BASELINE_DEPTH}",
                        "hop": None,
                        "rank": None,
                    }
        position = {i: n for n, i in reversed(list(enumerate(ranking, 1)))}
        scores = case_scores(case.expected, ranking, context)
        return CaseResult(
            run_id,
            case.case_id,
            case.user_id,
            case.question,
            case.category,
            case.expected,
            trace_id,
            {e: position.get(e) for e in case.expected},
            {e: bool(context and e in context) for e in case.expected},
            lost,
            scores,
            latency,
            tuple(ranking[:BASELINE_DEPTH]),
        )

    @staticmethod
    def _row(r: CaseResult) -> list[Any]:
        return [
            r.run_id,
            r.case_id,
            r.user_id,
            r.question,
            r.category,
            json.dumps(list(r.expected)),
            r.trace_id,
            json.dumps(r.ranks),
            json.dumps(r.in_context),
            json.dumps(r.lost),
            json.dumps(r.scores),
            r.latency_ms,
            json.dumps(list(r.top)),
        ]

    def _write(self, pending: list[list[Any]]) -> None:
        if pending:
            with self.b.db.write() as conn:
                insert_rows(conn, "eval_results", RESULT_TYPES, pending)
            pending.clear()

    @staticmethod
    def _store_counts(conn: Connection, users: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind, table in (("semantic", "items"), ("episodic", "episodes"), ("procedural", "skills")):
            counts[kind] = one_row(
                conn.execute(
                    f"SELECT count(*) FROM {table} WHERE archived_at IS NULL AND user_id IN (SELECT unnest(?))",
                    [list(users)],
                )
            )[0]
        counts["users"] = len(users)
        return counts

    # -- stored runs --------------------------------------------------------------------------------------------
    def runs(self, set_name: str | None = None) -> list[EvalRun]:
        sql, params = f"SELECT {RUN_COLUMNS} FROM eval_runs", []
        if set_name is not None:
            sql += " WHERE set_name=?"
            params.append(check_set_name(set_name))
        with self.b.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY started_at DESC, id", params).fetchall()
        return [_run(r) for r in rows]

    def get_run(self, run_id: str) -> EvalRun:
        check_id(run_id, "run id")
        with self.b.db.read() as conn:
            return self._get(conn, run_id)

    @staticmethod
    def _get(conn: Connection, run_id: str) -> EvalRun:
        row = conn.execute(f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE id=?", [run_id]).fetchone()
        if row is None:
            raise NotFound(f"no evaluation run {run_id!r}")
        return _run(row)

    def results(self, run_id: str) -> list[CaseResult]:
        self.get_run(run_id)
        with self.b.db.read() as conn:
            rows = conn.execute(
                "SELECT run_id, case_id, user_id, question, category, expected, trace_id, ranks, "
                "in_context, lost, scores, latency_ms, top_ids FROM eval_results WHERE run_id=? "
                "ORDER BY rowid",
                [run_id],
            ).fetchall()
        return [_result(r) for r in rows]

    def delete_run(self, run_id: str) -> int:
        """Delete a run with its results and the traces it stored; returns the number of traces deleted."""
        check_id(run_id, "run id")
        with self.b.db.write() as conn:
            if not conn.execute("SELECT 1 FROM eval_runs WHERE id=?", [run_id]).fetchone():
                raise NotFound(f"no evaluation run {run_id!r}")
            deleted = conn.execute(
                "DELETE FROM traces WHERE id IN (SELECT trace_id FROM eval_results WHERE run_id=?) RETURNING id",
                [run_id],
            ).fetchall()
            conn.execute("DELETE FROM eval_results WHERE run_id=?", [run_id])
            conn.execute("DELETE FROM eval_runs WHERE id=?", [run_id])
        return len(deleted)
