"""Plain-data views of evaluation runs for the Evaluations page: metric tables, the case table and its filters,
override parsing. No streamlit and no plotly here, so all of it is testable on its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine import TABLE_METRICS, CaseResult, EvalRun, InvalidInput, all_losses, rule_family

from .text import counted, one_line, when
from .wording import rule_words

FOUND = "found"  # the loss-stage filter's value for cases that lost nothing


def parse_overrides(text: str) -> dict[str, str]:
    """``KEY=VALUE`` per line (or separated by commas) -> overrides; the engine checks keys and values."""
    out: dict[str, str] = {}
    for part in (p.strip() for line in (text or "").splitlines() for p in line.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"expected KEY=VALUE, got {part[:60]!r}")
        out[key.strip()] = value.strip()
    return out


def run_label(run: EvalRun) -> str:
    started = when(run.started_at)  # to the second, as every time on the dashboard
    r10 = run.metrics.get("overall", {}).get("recall@10")
    score = f" · recall@10 {r10:.3f}" if r10 is not None else ""
    return f"{started} · {one_line(run.label, 60)} · {counted(run.cases, 'case')}{score} · {run.status} · {run.run_id}"


def metric_rows(metrics: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"category": cat, "n": m.get("n"), **{k: m.get(k) for k in TABLE_METRICS}} for cat, m in metrics.items()]


def delta_rows(
    deltas: Mapping[str, Mapping[str, Mapping[str, Any]]],
    keys: Sequence[str] = ("recall@5", "recall@10", "recall@25", "all@10", "mrr", "ndcg@10", "context_recall"),
) -> list[dict[str, Any]]:
    rows = []
    for cat, per in deltas.items():
        row: dict[str, Any] = {"category": cat, "n": per.get("n", {}).get("b")}
        for k in keys:
            d = per.get(k, {})
            row[f"{k} A"], row[f"{k} B"], row[f"{k} Δ"] = d.get("a"), d.get("b"), d.get("delta")
        rows.append(row)
    return rows


def loss_stages(result: CaseResult, k: int | None = None) -> set[str]:
    return {lost["stage"] for lost in all_losses(result, k).values()} or {FOUND}


def case_rows(
    results: Iterable[CaseResult],
    categories: Sequence[str] | None = None,
    stage: str | None = None,
    rule: str | None = None,
    k: int | None = None,
) -> list[dict[str, Any]]:
    """The case table, filtered by category, loss stage (or ``found``) and rule family (the funnel's click); with
    ``k``, an expected memory in the context but ranked below ``k`` counts as lost to ranking."""
    rows = []
    for r in results:
        if categories and (r.category or "(none)") not in categories:
            continue
        lost = all_losses(r, k)
        stages = {x["stage"] for x in lost.values()} or {FOUND}
        if stage and stage not in stages:
            continue
        if rule is not None and not any(
            rule_family(x.get("rule", "")) == rule and (not stage or x["stage"] == stage) for x in lost.values()
        ):
            continue
        missed = [e for e in r.expected if e in lost]
        rows.append(
            {
                "case": r.case_id,
                "category": r.category or "",
                "question": one_line(r.question, 160),
                "expected": ", ".join(r.expected),
                "found (top 5)": ", ".join(r.top[:5]),
                "ranks": ", ".join(f"{e}: {v if v is not None else '—'}" for e, v in r.ranks.items()),
                "recall@10": r.scores.get("recall@10"),
                "context": sum(1 for v in r.in_context.values() if v),
                "where lost": "; ".join(f"{e}: {lost[e]['stage']}" for e in missed) or "—",
                "rule": "; ".join(one_line(rule_words(lost[e].get("rule", "")), 120) for e in missed),
                "trace": r.trace_id or "",
                "user": r.user_id,
            }
        )
    return rows
