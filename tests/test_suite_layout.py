"""How the suite is spread over pytest-xdist workers, kept true by reading the test files (see tests/conftest.py):
a module's tests stay on one worker, the longest modules go first, browser tests are marked, and tests that start
processes say so."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
STARTS_PROCESSES = re.compile(r"subprocess\.(Popen|run)\(|cli_subprocess\(|stdio_server\(|start_http_server\(")


def test_plain_pytest_runs_in_parallel():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n auto" in addopts


def test_the_scheduler_keeps_a_module_on_one_worker_and_all_browser_tests_on_one():
    from tests.conftest import xdist_scope as split

    assert split("tests/engine/cli/test_cli.py::test_a[x]") == split("tests/engine/cli/test_cli.py::test_b")
    assert split("tests/engine/cli/test_cli.py::test_a") != split("tests/engine/store/test_store.py::test_a")
    # every browser test runs on one worker, with its one Streamlit server and one Chromium
    assert split("tests/browser/test_overview_browser.py::t") == split("tests/browser/test_skills_browser.py::t")
    assert split("tests/browser/test_workbench_browser.py::a") == split("tests/browser/test_workbench_browser.py::b")


class _Worker:
    """What xdist's scheduler sees of a worker: it is sent batches of test indexes (logged, in the order they were
    sent, in ``log``) and may be told to shut down."""

    def __init__(self, name: str, log: list[tuple[str, list[int]]]) -> None:
        self.name, self.log, self.shutting_down = name, log, False
        self.gateway = SimpleNamespace(id=name)
        self.queue: list[int] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.log.append((self.name, list(indexes)))
        self.queue.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def hand_out(collection: list[str], workers: int = 2) -> list[tuple[str, list[str]]]:
    """Run the suite's own scheduler (``tests/conftest.py``'s ``pytest_xdist_make_scheduler``) over a collection with
    ``workers`` workers that finish their tests one at a time in turn: the batches of tests it sent, in the order it
    sent them, each with the worker that got it."""
    from tests.conftest import pytest_xdist_make_scheduler

    # xdist's default (reorder by number of tests) on: the suite's scheduler must switch it off itself
    config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True), getvalue=lambda name: [f"{workers}*popen"])
    scheduler = pytest_xdist_make_scheduler(config, None)
    log: list[tuple[str, list[int]]] = []
    nodes = [_Worker(f"w{i}", log) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    while any(node.queue for node in nodes):
        for node in nodes:
            if node.queue:
                scheduler.mark_test_complete(node, node.queue.pop(0))
    assert scheduler.tests_finished
    return [(name, [collection[i] for i in batch]) for name, batch in log]


def test_the_scheduler_hands_out_the_longest_modules_first_each_whole_to_one_worker():
    from tests.conftest import SLOW_MODULES

    for module in SLOW_MODULES:
        assert (ROOT / module).is_file(), f"{module} is in SLOW_MODULES but does not exist"
    slowest = max(SLOW_MODULES, key=SLOW_MODULES.__getitem__)
    second = max((m for m in SLOW_MODULES if SLOW_MODULES[m] < SLOW_MODULES[slowest]), key=SLOW_MODULES.__getitem__)
    # in file order, which is not the order of their expected times
    collection = [
        *(f"tests/engine/test_tiny.py::t{i}" for i in range(3)),
        *(f"tests/ui/test_many_quick.py::t{i}" for i in range(60)),  # 60 x 0.5 s
        *(f"{second}::t{i}" for i in range(3)),
        *(f"tests/browser/test_a_browser.py::t{i}" for i in range(2)),
        *(f"{slowest}::t{i}" for i in range(3)),
        *(f"tests/browser/test_b_browser.py::t{i}" for i in range(9)),  # 11 browser tests x 21 s in all
    ]
    batches = hand_out(collection)
    modules = [{test.split("::")[0] for test in tests} for _, tests in batches]
    # the browser scope (~230 s), the two slowest modules, the many quick tests (~30 s), the few (~1.5 s)
    assert [sorted(m) for m in modules] == [
        ["tests/browser/test_a_browser.py", "tests/browser/test_b_browser.py"],
        [slowest],
        [second],
        ["tests/ui/test_many_quick.py"],
        ["tests/engine/test_tiny.py"],
    ]
    # each scope in one batch to one worker: every test once, module-scoped fixtures built once
    assert sorted(test for _, tests in batches for test in tests) == sorted(collection)
    assert [name for name, _ in batches][:2] == ["w0", "w1"]  # the two longest start at once, on both workers


def test_every_browser_test_module_is_marked_browser():
    modules = sorted((ROOT / "tests" / "browser").glob("test_*.py"))
    assert len(modules) >= 10  # the loop below checks something
    for path in modules:
        marks = next((line for line in path.read_text().splitlines() if line.startswith("pytestmark = ")), "")
        assert "pytest.mark.browser" in marks, f"{path.name} is not marked browser"


def unmarked_process_starters(text: str) -> list[str]:
    """The tests in a module's source that start a process (directly or through a helper of the module) without
    being marked subprocess, themselves or by the module's ``pytestmark``."""
    marks = next((line for line in text.splitlines() if line.startswith("pytestmark = ")), "")
    if "pytest.mark.subprocess" in marks:  # `pytestmark = pytest.mark.subprocess` or a list that holds it
        return []
    tree = ast.parse(text)
    helpers = {
        f.name
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and not f.name.startswith("test_")
        and STARTS_PROCESSES.search(ast.get_source_segment(text, f) or "")
    }
    found = []
    for f in tree.body:
        if not isinstance(f, ast.FunctionDef) or not f.name.startswith("test_"):
            continue
        body = ast.get_source_segment(text, f) or ""
        starts = STARTS_PROCESSES.search(body) or any(re.search(rf"\b{h}\(", body) for h in helpers)
        if starts and not any("mark.subprocess" in ast.unparse(d) for d in f.decorator_list):
            found.append(f.name)
    return found


def test_the_process_check_finds_an_unmarked_test_that_starts_a_process():
    # (split where the pattern would match, so that this test itself starts no process in the check's eyes)
    source = (
        "import subprocess\nimport pytest\n\n"
        "def run(): return subprocess"
        ".run(['true'])\n\n"
        "def test_direct(): subprocess"
        ".Popen(['true'])\n\n"
        "def test_through_a_helper(): run()\n\n"
        "@pytest.mark.subprocess\ndef test_marked(): run()\n\n"
        "def test_no_process(): assert True\n"
    )
    assert unmarked_process_starters(source) == ["test_direct", "test_through_a_helper"]
    assert unmarked_process_starters("pytestmark = [pytest.mark.slow, pytest.mark.subprocess]\n" + source) == []


def test_every_test_that_starts_a_process_is_marked_subprocess():
    modules = [p for p in sorted((ROOT / "tests").rglob("test_*.py")) if "browser" not in p.parts]
    assert len(modules) >= 50  # browser tests share their worker's Streamlit server: marked browser instead
    for path in modules:
        unmarked = unmarked_process_starters(path.read_text())
        assert not unmarked, f"{path.name}: {unmarked} start a process but are not marked subprocess"


def test_the_engine_tests_are_laid_out_like_the_engine():
    """tests/engine/<part>/ for each engine package (its tests live beside each other); test modules at the top of
    tests/engine/ are the front door's and cross-cutting ones."""
    folders = sorted(d.name for d in (ROOT / "tests" / "engine").iterdir() if d.is_dir() and d.name != "__pycache__")
    assert len(folders) >= 8
    for name in folders:
        assert (ROOT / "engine" / name / "__init__.py").is_file(), f"tests/engine/{name}/ mirrors no engine package"
        assert list((ROOT / "tests" / "engine" / name).glob("test_*.py")), f"tests/engine/{name}/ has no tests"
