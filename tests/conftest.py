"""Shared fixtures: real DuckDB + LanceDB stores in tmp_path and the real local embedding model (loaded once)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine import MemoryEngine, Settings  # noqa: E402
from engine.providers.embedders import LocalMiniLM  # noqa: E402


@pytest.fixture(scope="session")
def embedder() -> LocalMiniLM:
    """The real all-MiniLM-L6-v2 from the bundled weights; the model itself loads once per process."""
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
