"""Shared fixtures: real DuckDB + LanceDB stores in tmp_path and the real local embedding model (loaded once per
process), and how the suite is spread over pytest-xdist workers (see ``pytest_collection_modifyitems``).

Each xdist worker is its own process with its own session fixtures, so every store below lives in that worker's own
temporary folder (``tmp_path_factory`` gives each worker its own base directory): workers never share a store.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine import MemoryEngine, Settings, prepare_process_environment  # noqa: E402
from engine.providers.embedders import LocalMiniLM  # noqa: E402

prepare_process_environment()  # the suite is an entry point too: before anything imports torch or LanceDB

BROWSER_GROUP = "browser"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node-id suffixes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group tests for ``--dist loadgroup``: every browser test in one group, so one worker starts one Streamlit
    server and one Chromium for all of them; every other module in a group of its own, so its module-scoped stores
    and servers are built once and its tests run in file order, as they do serially."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker("browser") is not None:
            group = BROWSER_GROUP
        else:
            group = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


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
    return LocalMiniLM()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # Environment-independent: a developer's OPENAI_API_KEY must not change what the tests exercise.
    return Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30)


@pytest.fixture
def empty_engine(settings: Settings, embedder: LocalMiniLM) -> MemoryEngine:
    return MemoryEngine.open(settings=settings, embedder=embedder)


@pytest.fixture(scope="session")
def demo_store_template(tmp_path_factory, embedder) -> Path:
    """The demo dataset loaded once per test session; tests copy it so they can change it freely."""
    path = tmp_path_factory.mktemp("demo-template") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.load_demo()
    engine.optimize()
    engine.close()  # checkpointed and let go, so tests copy a complete file
    return path


@pytest.fixture
def demo_engine(demo_store_template: Path, tmp_path: Path, embedder) -> MemoryEngine:
    import shutil

    path = tmp_path / "demo-store"
    shutil.copytree(demo_store_template, path)
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)
