"""Frozen records of evaluations: expectation sets and their cases, runs, per-case results and comparisons."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

SOURCES = ("pinned", "imported", "manual")
METHODS = ("memlens", "vector", "bm25")


@dataclass(frozen=True)
class EvalSet:
    name: str
    description: str
    cases: int
    categories: dict[str, int]  # category -> number of cases ("" for none)
    runs: int
    created_at: datetime


@dataclass(frozen=True)
class EvalCase:
    set_name: str
    case_id: str
    user_id: str
    question: str
    session_id: str | None
    now: datetime | None  # the retrieval time (time decay); None: the wall clock when the run runs
    expected: tuple[str, ...]  # memory ids (any kind) that should be recalled
    category: str | None
    source: str  # pinned | imported | manual
    added_at: datetime


@dataclass(frozen=True)
class EvalRun:
    run_id: str
    set_name: str
    label: str
    method: str  # memlens | vector | bm25
    preset: str | None
    overrides: dict[str, Any]  # settings name -> value, as given
    hops: int | None
    settings: dict[str, Any]  # the retrieval settings the run used (after preset and overrides)
    code_version: str
    store_counts: dict[str, int]  # memories of the set's users when the run started: kind -> count
    metrics: dict[str, dict[str, Any]]  # "overall" and each category -> metric -> value (and "n")
    status: str  # running | done | failed
    cases: int
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class CaseResult:
    run_id: str
    case_id: str
    user_id: str
    question: str
    category: str | None
    expected: tuple[str, ...]
    trace_id: str | None  # None for the vector and bm25 baselines (no pipeline, no trace)
    ranks: dict[str, int | None]  # expected id -> 1-based rank in the run's ranking, or None
    in_context: dict[str, bool]  # expected id -> reached the assembled context (False for baselines)
    lost: dict[str, dict[str, Any]]  # expected id not in the context -> {status, stage, rule, hop, rank}
    scores: dict[str, float | None]  # recall@k, hit@k, all@k, rr, ndcg@10, context_recall
    latency_ms: float | None
    top: tuple[str, ...] = ()  # the run's first 25 memory ids for this case (what was found)


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    metric: str  # the per-case measure the gained/lost lists and the tests use (recall@10)
    deltas: dict[str, dict[str, dict[str, Any]]]  # category -> metric -> {"a", "b", "delta", "n"}
    cases: tuple[dict[str, Any], ...]  # one per paired case: case_id, category, question, a, b, delta, trace_a, trace_b
    gained: tuple[str, ...]  # case ids whose measure rose from A to B
    lost: tuple[str, ...]
    significance: dict[str, Any]  # n, wins, losses, ties, sign_test_p, bootstrap_ci (95 %), mean_delta
