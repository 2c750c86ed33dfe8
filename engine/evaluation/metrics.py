"""Retrieval metrics of one case and their aggregation per category: recall/hit/all@k, MRR, nDCG@10, context recall,
latency percentiles, and the loss counts behind the funnel. Pure functions of ranks, no storage."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

KS = (1, 5, 10, 25)
METRICS = (*(f"{m}@{k}" for m in ("recall", "hit", "all") for k in KS), "mrr", "ndcg@10", "context_recall")
# The columns a run's metrics table shows (CLI and Evaluations page alike).
TABLE_METRICS = (
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@25",
    "hit@10",
    "all@10",
    "mrr",
    "ndcg@10",
    "context_recall",
    "latency_p50_ms",
    "latency_p95_ms",
)
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def case_scores(
    expected: Sequence[str], ranking: Sequence[str], context_ids: Iterable[str] | None
) -> dict[str, float | None]:
    """One case's measures. ``ranking`` is the run's order (best first); ``context_ids`` None for a baseline."""
    gold = set(expected)
    if not gold:
        raise ValueError("a case needs at least one expected memory")
    position: dict[str, int] = {}
    for n, item_id in enumerate(ranking, 1):
        position.setdefault(item_id, n)
    ranks = [position[g] for g in gold if g in position]
    out: dict[str, float | None] = {}
    for k in KS:
        found = sum(1 for r in ranks if r <= k)
        out[f"recall@{k}"] = found / len(gold)
        out[f"hit@{k}"] = float(found > 0)
        out[f"all@{k}"] = float(found == len(gold))
    out["rr"] = 1.0 / min(ranks) if ranks else 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 10)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), 10) + 1))
    out["ndcg@10"] = dcg / ideal
    out["context_recall"] = None if context_ids is None else len(gold & set(context_ids)) / len(gold)
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), None for no values."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def aggregate(rows: Iterable[tuple[str | None, Mapping[str, Any], float | None]]) -> dict[str, dict[str, Any]]:
    """Mean of each measure per category and ``overall`` (each with ``n`` and latency p50/p95 in ms).
    ``rows``: (category, case scores, latency_ms)."""
    groups: dict[str, list[tuple[Mapping[str, Any], float | None]]] = defaultdict(list)
    for category, scores, latency in rows:
        groups["overall"].append((scores, latency))
        groups[category or "(none)"].append((scores, latency))
    out: dict[str, dict[str, Any]] = {}
    for name in ["overall", *sorted(k for k in groups if k != "overall")]:
        members = groups[name]
        summary: dict[str, Any] = {"n": len(members)}
        for key in METRICS:
            source = "rr" if key == "mrr" else key
            vals = [s[source] for s, _ in members if s.get(source) is not None]
            summary[key] = sum(vals) / len(vals) if vals else None
        lat = [v for _, v in members if v is not None]
        summary["latency_p50_ms"] = percentile(lat, 50)
        summary["latency_p95_ms"] = percentile(lat, 95)
        out[name] = summary
    return out


def rule_family(rule: str) -> str:
    """A rule with its numbers blanked, so losses to the same rule group together ('score N < N and no shared
    word')."""
    return _NUMBER.sub("N", rule or "").strip()


RANKING = "ranking"  # the loss stage of an expected memory in the context but below the ranking cut-off
RANKING_RULE = "in the context, but ranked below the cut-off"
DEFAULT_CUTOFF = 10  # the cut-off of the funnel's ranking step unless one is given (recall@10 is the headline)


def ranking_losses(result: Any, k: int) -> dict[str, dict[str, Any]]:
    """Expected memories that reached the context but ranked below ``k``: lost to ranking, not to retrieval (a run
    with recall@1 0.07 whose every memory reached the context lost most of them here)."""
    out: dict[str, dict[str, Any]] = {}
    for item_id in result.expected:
        rank = result.ranks.get(item_id)
        if item_id not in result.lost and result.in_context.get(item_id) and rank is not None and rank > k:
            out[item_id] = {"status": RANKING, "stage": RANKING, "rule": RANKING_RULE, "hop": None, "rank": rank}
    return out


def all_losses(result: Any, k: int | None) -> dict[str, dict[str, Any]]:
    """A case's losses (``result.lost``) with its ranking losses at cut-off ``k`` (None: without them)."""
    return {**result.lost, **ranking_losses(result, k)} if k else dict(result.lost)


def loss_counts(results: Iterable[Any], k: int | None = DEFAULT_CUTOFF) -> list[dict[str, Any]]:
    """How many expected memories were lost at each stage and rule family, most first (``results``: CaseResult);
    with ``k``, those in the context but ranked below ``k`` count as lost to ranking."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in results:
        for lost in all_losses(r, k).values():
            counts[(lost.get("stage", ""), rule_family(lost.get("rule", "")))] += 1
    return [
        {"stage": stage, "rule": rule, "count": n}
        for (stage, rule), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def funnel(results: Iterable[Any], k: int = DEFAULT_CUTOFF) -> list[dict[str, Any]]:
    """Expected memories through the pipeline: expected, in the store, found by search, past the relevance filter
    (ranked), in the context, and in the context within the top ``k`` of the ranking. Each step holds the ones of
    the step before it (for the baselines, which have no filter and no context, 'past the relevance filter' means
    ranked in their top 25)."""
    steps: Counter[str] = Counter()
    top = f"in the context, in the top {k}"
    for r in results:
        for item_id in r.expected:
            lost = r.lost.get(item_id)
            status = lost["status"] if lost else "context"
            steps["expected"] += 1
            if status in ("archived", "forgotten", "missing"):
                continue
            steps["in the store"] += 1
            if status == "never":
                continue
            steps["found by search"] += 1
            if status == "filtered":
                continue
            steps["past the relevance filter"] += 1
            if r.in_context.get(item_id):
                steps["in the context"] += 1
                rank = r.ranks.get(item_id)
                if rank is not None and rank <= k:
                    steps[top] += 1
    order = ("expected", "in the store", "found by search", "past the relevance filter", "in the context", top)
    return [{"step": s, "count": steps[s]} for s in order]
