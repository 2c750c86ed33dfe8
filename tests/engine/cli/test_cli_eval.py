"""`python -m engine eval-sets | eval-runs | eval` in-process: the listing, the metrics table, and the regression
gate's exit codes (0 passed, 3 a check failed, 2 bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import MemoryEngine
from tests.engine.evaluation.test_evaluation import CASES, ITEMS, NOW
from tests.support.cli import cli


@pytest.fixture
def store(empty_engine: MemoryEngine) -> Path:
    e = empty_engine
    e.items.remember_many(
        {"user_id": "kim", "id": i, "content": t, "created_at": "2026-11-20T10:00:00+00:00"} for i, t in ITEMS.items()
    )
    e.evals.add_cases(
        "kim-set",
        [
            {"user_id": "kim", "question": q, "expected": exp, "category": cat, "case_id": cid, "now": NOW}
            for cid, (q, exp, cat) in CASES.items()
        ],
        create_set=True,
    )
    path = e.path
    e.close()
    return path


def test_eval_sets_lists_names_and_case_counts(store: Path):
    run = cli(store, "eval-sets", "--json")
    assert run.code == 0, run.err
    assert [(s["name"], s["cases"]) for s in run.json()] == [("kim-set", 5)]
    assert "kim-set" in cli(store, "eval-sets").out


def test_the_gate_passes_fails_and_compares_with_a_baseline(store: Path):
    ok = cli(store, "eval", "--set", "kim-set", "--set", "top_k=4", "--fail-under", "recall@25=0.5", "--json")
    assert ok.code == 0, ok.err
    data = ok.json()
    assert data["gate"]["passed"] and data["run"]["settings"]["top_k"] == 4
    assert data["run"]["metrics"]["overall"]["n"] == 5
    base = data["run"]["run_id"]

    failed = cli(store, "eval", "--set", "kim-set", "--fail-under", "recall@1=0.99", "--fail-under", "hit@25=0.1")
    assert failed.code == 3
    assert "FAIL  recall@1 >= 0.99" in failed.out and "PASS  hit@25 >= 0.1" in failed.out
    assert "gate FAILED" in failed.out and "recall@10" in failed.out  # the metrics table is printed too

    # A tighter candidate pool loses recall@25 against the baseline: more than a 0.01 drop fails, 1.0 passes.
    worse = cli(
        store, "eval", "--set", "kim-set", "--set", "top_k=1", "--baseline", base, "--max-drop", "recall@25=0.01"
    )
    assert worse.code == 3, worse.out
    fine = cli(store, "eval", "--set", "kim-set", "--set", "top_k=1", "--baseline", base, "--max-drop", "1.0")
    assert fine.code == 0 and "PASS  recall@10 drop" in fine.out
    runs = cli(store, "eval-runs", "--set", "kim-set", "--json").json()
    assert len(runs) == 4


def test_bad_gate_arguments_are_one_line_errors(store: Path):
    for argv in (
        ["eval", "--set", "nope"],
        ["eval", "--set", "kim-set", "--fail-under", "recall@7=0.5"],
        ["eval", "--set", "kim-set", "--fail-under", "recall@10=high"],
        ["eval", "--set", "kim-set", "--max-drop", "0.1"],
        ["eval", "--set", "kim-set", "--set", "other-set"],
        ["eval", "--set", "kim-set", "--set", "no_such_setting=1"],
        ["eval", "--set", "kim-set", "--baseline", "run_missing"],
    ):
        run = cli(store, *argv)
        assert run.code == 2 and run.one_error_line, (argv, run.err)
    assert cli(store, "eval-runs", "--json").json() == []
