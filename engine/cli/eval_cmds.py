"""CLI commands of evaluations: ``eval-sets``, ``eval-runs``, ``import-benchmark`` and ``eval``, the regression gate.

``eval`` runs a set and prints the metrics table; with ``--fail-under METRIC=X`` or ``--baseline RUN --max-drop D``
it exits with status 3 when a check fails (0 when all pass, 2 for bad input), so pinned expectations can guard a CI.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, TextIO

from ..config import HOPS_RANGE, parse_assignments
from ..errors import InvalidInput
from ..evaluation.metrics import METRICS, TABLE_METRICS
from .args import bounded_int, id_type
from .output import Col, Result, cell, plain, table

if TYPE_CHECKING:
    from .main import Context, Handler, Parser, Subcommands

EXIT_GATE_FAILED = 3
SET_NAME = id_type("set name")
RUN_ID = id_type("run id")


def metrics_table(metrics: dict[str, dict[str, Any]]) -> str:
    rows = [{"category": cat, "n": m.get("n"), **{k: m.get(k) for k in TABLE_METRICS}} for cat, m in metrics.items()]
    cols = [Col("category", "category", 24), Col("n", "n", 6)]
    cols += [Col(k, k.replace("latency_", "").replace("context_recall", "ctx_recall"), 10) for k in TABLE_METRICS]
    return table(rows, cols, "(no cases)")


def _line(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def cmd_eval_sets(ctx: Context) -> Result:
    rows = plain(ctx.engine.evals.sets())
    cols = [
        Col("name", "set", 30),
        Col("cases", "cases", 6),
        Col("runs", "runs", 5),
        Col("categories", "categories", 60),
        Col("description", "description", 50),
    ]
    return Result(rows, lambda r: table(r, cols, "(no expectation sets)"))


def cmd_eval_runs(ctx: Context) -> Result:
    runs = ctx.engine.evals.runs(ctx.args.set_name)
    rows = [{**plain(r), "recall@10": r.metrics.get("overall", {}).get("recall@10")} for r in runs]
    cols = [
        Col("started_at", "started"),
        Col("run_id", "run", 22),
        Col("set_name", "set", 20),
        Col("label", "label", 30),
        Col("status", "status", 7),
        Col("cases", "cases", 6),
        Col("recall@10", "recall@10", 9),
    ]
    return Result(rows, lambda r: table(r, cols, "(no runs)"))


def cmd_import_benchmark(ctx: Context) -> Result:
    a = ctx.args
    stderr = ctx.stderr

    def progress(what: str, done: int, total: int) -> None:
        if done == total or done % 500 == 0:
            _line(stderr, f"import {a.kind}: {what} {done}/{total}")

    report = ctx.engine.evals.import_benchmark(a.kind, a.path, a.set_name, limit=a.limit, progress=progress)
    return Result(plain(report), lambda d: "\n".join(f"{k}: {cell(v, 200)}" for k, v in d.items()))


def _split_sets(values: list[str] | None) -> tuple[str, dict[str, str]]:
    """``--set`` names the expectation set once and may also give KEY=VALUE retrieval overrides."""
    names = [v for v in values or [] if "=" not in v]
    if len(names) != 1:
        raise InvalidInput("give the expectation set once with --set NAME (other --set values are KEY=VALUE overrides)")
    try:
        name = SET_NAME(names[0])
    except argparse.ArgumentTypeError as exc:
        raise InvalidInput(str(exc)) from None
    return name, parse_assignments([v for v in values or [] if "=" in v])


def _thresholds(values: list[str] | None, what: str) -> dict[str, float]:
    out = {}
    for key, raw in parse_assignments(values).items():
        if key not in METRICS:
            raise InvalidInput(f"{what}: unknown metric {key[:30]!r}; use one of {', '.join(METRICS)}")
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInput(f"{what} {key}: {raw[:30]!r} is not a number") from None
        if not math.isfinite(value):
            raise InvalidInput(f"{what} {key}: use a finite number")
        out[key] = value
    return out


def _max_drop(text: str | None) -> dict[str, float]:
    if text is None:
        return {}
    if "=" in text:
        return _thresholds([text], "--max-drop")
    return _thresholds([f"recall@10={text}"], "--max-drop")


def cmd_eval(ctx: Context) -> Result:
    a = ctx.args
    set_name, overrides = _split_sets(a.set)
    floors = _thresholds(a.fail_under, "--fail-under")
    drops = _max_drop(a.max_drop)
    if drops and not a.baseline:
        raise InvalidInput("--max-drop needs --baseline RUN")
    evals = ctx.engine.evals
    baseline = evals.get_run(a.baseline) if a.baseline else None  # checked before the run starts
    if baseline is not None and baseline.set_name != set_name:
        raise InvalidInput(f"baseline run {baseline.run_id} is of set {baseline.set_name!r}, not {set_name!r}")
    stderr = ctx.stderr

    def progress(done: int, total: int) -> None:
        if done == total or done % 100 == 0:
            _line(stderr, f"eval {set_name}: {done}/{total} cases")

    run = ctx.engine.evals.evaluate(
        set_name,
        preset=a.preset,
        overrides=overrides or None,
        hops=a.hops,
        label=a.label,
        method=a.method,
        progress=progress,
    )
    overall = run.metrics.get("overall", {})
    checks: list[dict[str, Any]] = []
    for key, floor in floors.items():
        value = overall.get(key)
        checks.append({"check": f"{key} >= {floor}", "value": value, "passed": value is not None and value >= floor})
    for key, drop in drops.items():
        before = baseline.metrics.get("overall", {}).get(key) if baseline else None
        value = overall.get(key)
        ok = value is not None and before is not None and before - value <= drop + 1e-12
        checks.append(
            {
                "check": f"{key} drop from {baseline.run_id if baseline else ''} <= {drop}",
                "value": value,
                "baseline": before,
                "passed": ok,
            }
        )
    passed = all(c["passed"] for c in checks)
    data = {"run": plain(run), "gate": {"passed": passed, "checks": checks}}

    def human(d: dict[str, Any]) -> str:
        r = d["run"]
        head = (
            f"run {r['run_id']} of set {r['set_name']} ({r['label']}; method {r['method']}, "
            f"{r['cases']} cases, code {r['code_version']})"
        )
        lines = [head, "", metrics_table(r["metrics"])]
        for c in d["gate"]["checks"]:
            extra = f" (baseline {c['baseline']:.4f})" if c.get("baseline") is not None else ""
            shown = "none" if c["value"] is None else f"{c['value']:.4f}"
            lines.append(f"{'PASS' if c['passed'] else 'FAIL'}  {c['check']}: {shown}{extra}")
        if d["gate"]["checks"]:
            lines.append("gate passed" if d["gate"]["passed"] else "gate FAILED")
        return "\n".join(lines)

    return Result(data, human, 0 if passed else EXIT_GATE_FAILED)


def register(sub: Subcommands, common: Parser) -> None:
    def add(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    add("eval-sets", cmd_eval_sets, "list the expectation sets (name, cases, categories, runs)")

    p = add("eval-runs", cmd_eval_runs, "list stored evaluation runs, newest first")
    p.add_argument("--set", dest="set_name", type=SET_NAME, metavar="NAME", help="only the runs of this set")

    p = add(
        "import-benchmark",
        cmd_import_benchmark,
        "import a LoCoMo or LongMemEval file into this store as users, memories and an expectation set (idempotent)",
    )
    p.add_argument("kind", choices=("locomo", "longmemeval"), help="the file's format")
    p.add_argument("path", metavar="PATH", help="locomo10.json-style or longmemeval_s-style JSON file")
    p.add_argument(
        "--set", dest="set_name", required=True, type=SET_NAME, metavar="NAME", help="the expectation set to fill"
    )
    p.add_argument(
        "--limit",
        type=bounded_int(1, 1_000_000),
        metavar="N",
        help="only the first N conversations (LoCoMo) or questions (LongMemEval)",
    )

    p = add("eval", cmd_eval, "run an expectation set and print its metrics; a failed check exits with status 3")
    p.add_argument(
        "--set",
        action="append",
        required=True,
        metavar="NAME|KEY=VALUE",
        help="the expectation set (once), and retrieval overrides as KEY=VALUE (repeatable)",
    )
    p.add_argument("--preset", metavar="P", help="a named retrieval preset (see engine/presets.py)")
    p.add_argument(
        "--hops", type=bounded_int(*HOPS_RANGE), metavar="N", help="hops (default: the preset's, else the hops setting)"
    )
    p.add_argument(
        "--method",
        choices=("memlens", "vector", "bm25"),
        default="memlens",
        help="memlens (traced pipeline, default) or a plain vector / bm25 ranking",
    )
    p.add_argument("--label", metavar="TEXT", help="a name for the run")
    p.add_argument(
        "--fail-under",
        action="append",
        metavar="METRIC=X",
        help="fail (exit 3) when the overall METRIC is below X, e.g. recall@10=0.8 (repeatable)",
    )
    p.add_argument("--baseline", type=RUN_ID, metavar="RUN", help="a stored run of the same set to compare with")
    p.add_argument(
        "--max-drop", metavar="D|METRIC=D", help="fail when recall@10 (or METRIC) is more than D below the baseline's"
    )
