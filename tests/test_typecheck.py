"""The type checker is part of the suite: `pytest` (the README's and CI's test command) fails on a type error in
engine/, ui/, pages/, app.py or bench/. What mypy checks and how strictly is configured once, in pyproject.toml:
engine/ with every flag of `mypy --strict`, the rest at the project's default level."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent

# Untyped, a bare generic and an Any returned where a str is promised: what --strict refuses and the default allows.
LOOSE = """import json


def load(text):
    return json.loads(text)


def name(d: dict) -> str:
    return d["n"]
"""


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


def test_engine_is_checked_strictly_and_ui_is_not(tmp_path, monkeypatch):
    # The same loose module as part of a package named `engine` and of one named `ui`: the configuration's
    # per-package strictness applies by module name.
    for package in ("engine", "ui"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "loose.py").write_text(LOOSE)
    monkeypatch.chdir(tmp_path)
    report, status = run_mypy("--cache-dir", str(tmp_path / "cache"), "engine/loose.py", "ui/loose.py")
    assert status == 1, report
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert {line.split(":")[0] for line in errors} == {"engine/loose.py"}, report
    for code in ("no-untyped-def", "type-arg", "no-any-return"):
        assert any(f"[{code}]" in line for line in errors), report
