"""Browser fixtures: the real dashboard (`streamlit run app.py` in a subprocess) on a copy of the demo store, driven
by Debian's Chromium through Playwright's sync API (no pytest-playwright plugin).

- ``app_url`` / ``streamlit_server`` (session): the base URL of the server shared by the browser tests of this xdist
  worker. Session fixtures are per worker; tests/conftest.py's scheduler runs every browser test on one worker, so
  one server on a free port over its own ``server_store`` (``pytest -n 0`` on browser files works the same).
- ``server_store`` (session): that server's store: the demo plus a small ``zz-lab`` user (``LAB_USER``) that tests
  which *write* use, so the demo users' data stays as shipped for every other test file, in any order. Which browser
  modules share a server, and in which order they run, depends on the scheduling: a module may count only lab data
  that no other module changes.
- ``browser`` (session), ``page`` / ``browser_page`` (function): one Chromium for all the browser tests of a worker
  (each launch cost ~4 s of CPU in Chromium's browser and GPU processes), and a fresh context (own cookies, cache and
  Streamlit session) with a 1400x1000 page per test.
- ``screenshot`` (function): ``screenshot("name")`` saves the whole page to test-artifacts/screenshots/name.png.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_helpers import RUN_COUNTER_SCRIPT, run_streamlit, save_screenshot, seed_lab_user
from playwright.sync_api import expect

from engine import MemoryEngine, Settings

CHROMIUM = Path("/usr/bin/chromium")
# expect() gives up after 5 s by default. On a busy 2-core machine a rerun of a page can take longer than that to
# redraw (seen: the Overview's first metrics not back after 5 s; the Skills chart not drawn after 20 s with two
# browser modules and a soak test running at once); a real failure still fails, just later.
expect.set_options(timeout=40_000)

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def server_store(demo_store_template: Path, tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("browser") / "store"
    shutil.copytree(demo_store_template, path)
    seed_lab_user(MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder))
    return path


@pytest.fixture(scope="session")
def streamlit_server(server_store: Path, tmp_path_factory) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port over ``server_store``; yields the base URL."""
    with run_streamlit(server_store, tmp_path_factory.mktemp("streamlit-log") / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def app_url(streamlit_server: str) -> str:
    return streamlit_server


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's Chromium with "
            "`apt-get update && apt-get install -y chromium chromium-driver` (.ci/run does this); "
            "never `playwright install`."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page (own cookies, own Streamlit session). Browser dialogs are recorded in ``page.dialogs``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, reduced_motion="reduce")
    context.add_init_script(RUN_COUNTER_SCRIPT)  # lets settle()/rerun() wait for the script run an action started
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.dialogs = []  # an alert() from stored text would land here

    def on_dialog(dialog) -> None:
        pg.dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def browser_page(page):
    return page


@pytest.fixture
def screenshot(page) -> Callable[[str], Path]:
    """``screenshot(name)`` saves the whole page (not just the viewport) as test-artifacts/screenshots/name.png."""
    return lambda name: save_screenshot(page, name)
