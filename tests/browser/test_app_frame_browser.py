"""The app frame in Chromium: the first request of a freshly started server, a deep link on an empty store, gets the
whole app, first while the demo loads and then on the page it asked for.

Streamlit treats a ``pages/`` folder as a legacy multipage app until app.py has called ``st.navigation`` once in the
process; without ui.resources' fix the first visitor of ``/memories`` saw the page alone, with file-name navigation
and no sidebar picker. The page's ``get_engine()`` leaves that mode and reruns through app.py, which draws the
navigation before it opens the engine and loads the demo into the empty store (a first start), so one first request
checks both: page titles and a moving bar while the demo loads, then the Memories page with the sidebar picker.
This module starts its own server on an empty store of its own, so that its first request really is the first one.
"""

from __future__ import annotations

import pytest
from browser_helpers import run_streamlit, settle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PAGE_TITLES = (
    "Overview",
    "Sessions",
    "Working memory",
    "Skills",
    "Retrieval trace",
    "Feedback labelling",
    "Episodes",
    "Memories & forgetting",
)
FILE_NAMES = ("app", "episodes", "memories")  # what the legacy folder navigation would show


@pytest.fixture(scope="module")
def empty_url(tmp_path_factory):
    """A fresh server on an empty store of its own: its first visitor gets the demo loaded. Not the worker's shared
    server (``app_url``), which may have served other modules already (browser modules run in any order)."""
    store = tmp_path_factory.mktemp("empty-store") / "store"
    with run_streamlit(store, tmp_path_factory.mktemp("empty-log") / "server.log") as url:
        yield url


def test_a_deep_link_as_the_first_request_shows_titles_and_a_moving_bar_then_the_page_with_its_picker(
    page, empty_url, screenshot
):
    page.goto(f"{empty_url}/memories", wait_until="domcontentloaded")
    bar = page.locator("[data-testid='stProgress']")
    bar.wait_for(timeout=180_000)  # the engine opens (model load) first, then the demo load starts
    nav = page.get_by_role("navigation")
    for title in PAGE_TITLES:  # the app's navigation while the demo loads, not the file names
        expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
    for name in FILE_NAMES:
        assert nav.get_by_role("link", name=name, exact=True).count() == 0
    # The bar moves during the load (it used to sit at 0 for one silent 512-record batch).
    expect(page.get_by_text("Embedding demo semantic memories:", exact=False)).to_be_visible(timeout=120_000)
    screenshot("frame_first_start_demo_loading")

    # Then the page the link asked for, inside the app: navigation and the sidebar picker.
    page.get_by_role("heading", name="Memories & forgetting", exact=True).wait_for(timeout=300_000)
    settle(page, started=True)
    expect(bar).to_have_count(0)
    for title in PAGE_TITLES:
        expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
    expect(page.get_by_role("combobox", name="User")).to_have_value("ada")
    expect(page.get_by_role("combobox", name="Session")).to_have_value("ada-s06")
    screenshot("frame_deep_link")

    nav.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("heading", name="Sessions", exact=True).wait_for()
    settle(page, started=True)
    expect(page.get_by_role("heading", name="Messages of ada-s06")).to_be_visible()  # the sidebar's session
