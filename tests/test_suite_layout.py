"""How the suite is spread over pytest-xdist workers, kept true by reading the test files (see tests/conftest.py):
a module's tests stay on one worker, the longest modules go first, browser tests are marked, and tests that start
processes say so."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTS_PROCESSES = re.compile(r"subprocess\.(Popen|run)\(|cli_subprocess\(|stdio_server\(|start_http_server\(")


def test_plain_pytest_runs_in_parallel():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n auto" in addopts


def test_the_scheduler_keeps_a_module_on_one_worker_and_all_browser_tests_on_one():
    from tests.conftest import xdist_scope as split

    assert split("tests/engine/test_cli.py::test_a[x]") == split("tests/engine/test_cli.py::test_b")
    assert split("tests/engine/test_cli.py::test_a") != split("tests/engine/test_store.py::test_a")
    # every browser test runs on one worker, with its one Streamlit server and one Chromium
    assert split("tests/browser/test_overview_browser.py::t") == split("tests/browser/test_skills_browser.py::t")
    assert split("tests/browser/test_workbench_browser.py::a") == split("tests/browser/test_workbench_browser.py::b")


def test_the_slowest_modules_are_handed_out_first():
    from tests.conftest import SLOW_MODULES, expected_seconds

    for module in SLOW_MODULES:
        assert (ROOT / module).is_file(), f"{module} is in SLOW_MODULES but does not exist"
    slowest = max(SLOW_MODULES, key=SLOW_MODULES.__getitem__)
    assert expected_seconds(slowest, 1) > expected_seconds("tests/browser/test_overview_browser.py", 1)
    assert expected_seconds("tests/browser/test_overview_browser.py", 1) > expected_seconds("tests/ui/test_x.py", 40)


def test_every_browser_test_module_is_marked_browser():
    for path in sorted((ROOT / "tests" / "browser").glob("test_*.py")):
        marks = next((line for line in path.read_text().splitlines() if line.startswith("pytestmark = ")), "")
        assert "pytest.mark.browser" in marks, f"{path.name} is not marked browser"


def test_every_test_that_starts_a_process_is_marked_subprocess():
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "browser" in path.parts:
            continue  # they share their worker's Streamlit server: marked browser
        text = path.read_text()
        if "pytestmark = pytest.mark.subprocess" in text:
            continue
        tree = ast.parse(text)
        helpers = {
            f.name
            for f in tree.body
            if isinstance(f, ast.FunctionDef)
            and not f.name.startswith("test_")
            and STARTS_PROCESSES.search(ast.get_source_segment(text, f) or "")
        }
        for f in tree.body:
            if not isinstance(f, ast.FunctionDef) or not f.name.startswith("test_"):
                continue
            body = ast.get_source_segment(text, f) or ""
            starts = STARTS_PROCESSES.search(body) or any(re.search(rf"\b{h}\(", body) for h in helpers)
            marked = any("mark.subprocess" in ast.unparse(d) for d in f.decorator_list)
            assert not starts or marked, f"{path.name}::{f.name} starts a process but is not marked subprocess"
