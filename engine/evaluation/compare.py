"""A/B comparison of two runs of one expectation set: metric deltas per category, cases gained and lost, and a
paired significance figure (sign test and a paired bootstrap interval) for the per-case difference."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidInput
from .metrics import METRICS
from .records import CaseResult, Comparison, EvalRun

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 15


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if either run were as likely to win
    (ties dropped). 1.0 when nothing changed."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail: float = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap_interval(
    deltas: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float] | None:
    """95 % interval of the mean paired difference by resampling cases (seeded: the same runs give the same
    figure)."""
    if not deltas:
        return None
    values = np.asarray(deltas, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(samples, len(values)))
    means = np.sort(values[picks].mean(axis=1))
    return float(means[int(0.025 * (samples - 1))]), float(means[int(0.975 * (samples - 1))])


def compare(
    run_a: EvalRun,
    results_a: Sequence[CaseResult],
    run_b: EvalRun,
    results_b: Sequence[CaseResult],
    metric: str = "recall@10",
) -> Comparison:
    if run_a.set_name != run_b.set_name:
        raise InvalidInput(
            f"runs {run_a.run_id} and {run_b.run_id} are of different sets "
            f"({run_a.set_name!r}, {run_b.set_name!r}); compare runs of one set"
        )
    if metric not in METRICS or metric == "context_recall":
        raise InvalidInput(f"compare on one of {', '.join(m for m in METRICS if m != 'context_recall')}")
    by_a = {r.case_id: r for r in results_a}
    by_b = {r.case_id: r for r in results_b}
    paired = [cid for cid in by_a if cid in by_b]
    deltas: dict[str, dict[str, dict[str, Any]]] = {}
    for cat in dict.fromkeys([*run_a.metrics, *run_b.metrics]):
        a, b = run_a.metrics.get(cat, {}), run_b.metrics.get(cat, {})
        deltas[cat] = {}
        for key in (*METRICS, "latency_p50_ms", "latency_p95_ms"):
            va, vb = a.get(key), b.get(key)
            deltas[cat][key] = {"a": va, "b": vb, "delta": None if va is None or vb is None else vb - va}
        deltas[cat]["n"] = {"a": a.get("n"), "b": b.get("n"), "delta": None}
    source = "rr" if metric == "mrr" else metric
    rows, gained, lost, diffs = [], [], [], []
    for cid in paired:
        ra, rb = by_a[cid], by_b[cid]
        va, vb = float(ra.scores.get(source) or 0.0), float(rb.scores.get(source) or 0.0)
        d = vb - va
        diffs.append(d)
        if d > 1e-12:
            gained.append(cid)
        elif d < -1e-12:
            lost.append(cid)
        rows.append(
            {
                "case_id": cid,
                "category": rb.category,
                "question": rb.question,
                "a": va,
                "b": vb,
                "delta": d,
                "trace_a": ra.trace_id,
                "trace_b": rb.trace_id,
                "user_id": rb.user_id,
            }
        )
    interval = bootstrap_interval(diffs)
    significance = {
        "metric": metric,
        "n": len(paired),
        "wins": len(gained),
        "losses": len(lost),
        "ties": len(paired) - len(gained) - len(lost),
        "mean_delta": sum(diffs) / len(diffs) if diffs else None,
        "sign_test_p": sign_test(len(gained), len(lost)),
        "bootstrap_ci95": list(interval) if interval else None,
    }
    return Comparison(run_a.run_id, run_b.run_id, metric, deltas, tuple(rows), tuple(gained), tuple(lost), significance)
