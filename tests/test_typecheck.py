"""The type checker is part of the suite: `pytest` (the README's and CI's test command) fails on a type error in
engine/, ui/, pages/ or app.py. What mypy checks and how strictly is configured once, in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent


def run_mypy(*args: str) -> tuple[str, int]:
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), *args])
    return out + err, status


def test_the_code_base_has_no_type_errors(monkeypatch):
    monkeypatch.chdir(ROOT)  # the configured `files` are relative to the project root
    report, status = run_mypy()
    assert status == 0, report


def test_a_type_error_fails_the_check(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def half(n: int) -> int:\n    return n / 2\n")
    report, status = run_mypy("--cache-dir", str(tmp_path / "cache"), str(bad))
    assert status == 1
    assert "bad.py:2: error" in report
