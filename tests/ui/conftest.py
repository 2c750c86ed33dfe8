"""AppTest fixtures: the dashboard's cached engine (``ui.resources.get_engine``) pointed at a throwaway store.

``get_engine`` is one ``st.cache_resource`` per process and reads ``MEMLENS_STORE`` when it is first called, so each
test sets the variable and clears the cache before the app runs; the engine the test checks results with is that
same cached engine (``get_engine()``), so what the page wrote is verified through the engine's public API.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest_helpers import app_engine

from engine import MemoryEngine


@pytest.fixture(scope="session", autouse=True)
def components_scanned_once() -> Iterator[None]:
    """Each new AppTest looks for Streamlit components in every installed package's metadata (~0.3-0.7 s of CPU
    here, ~170 packages, once per test); the installed packages do not change during a run, so look once. The
    dashboard's own server scans once per process anyway."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    found = scan()
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(found)
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(scope="module")
def demo_store_dir(demo_store_template: Path, tmp_path_factory) -> Path:
    """One copy of the demo store per test module (tests in a module may change it; each uses its own data)."""
    path = tmp_path_factory.mktemp("ui-demo") / "store"
    shutil.copytree(demo_store_template, path)
    return path


@pytest.fixture
def demo_app(demo_store_dir: Path) -> Iterator[MemoryEngine]:
    """The dashboard on this module's demo store copy; yields the engine the pages use."""
    with app_engine(demo_store_dir) as engine:
        yield engine


@pytest.fixture
def empty_app(tmp_path: Path) -> Iterator[MemoryEngine]:
    """The dashboard on a new, empty store."""
    with app_engine(tmp_path / "empty-store") as engine:
        yield engine
