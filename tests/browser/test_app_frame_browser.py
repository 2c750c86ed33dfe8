"""The app frame in Chromium: a deep link opened first on a freshly started server gets the whole app.

Streamlit treats a ``pages/`` folder as a legacy multipage app until app.py has called ``st.navigation`` once in the
process; without ui.resources' fix the first visitor of ``/memories`` saw the page alone, with file-name navigation
and no sidebar picker. This module starts its own server so that its first request really is the first one.
"""

from __future__ import annotations

import shutil

import pytest
from browser_helpers import open_page, run_streamlit, settle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fresh_url(demo_store_template, tmp_path_factory):
    """A server on a store of its own (a copy of the demo): the worker's shared server (``app_url``) may be running
    over ``server_store`` already (browser modules run in any order), and this test is about a first start, not about
    two servers sharing one store."""
    store = tmp_path_factory.mktemp("fresh-store") / "store"
    shutil.copytree(demo_store_template, store)
    with run_streamlit(store, tmp_path_factory.mktemp("fresh-log") / "server.log") as url:
        yield url


def test_a_deep_link_on_a_fresh_server_shows_the_navigation_and_the_sidebar_picker(page, fresh_url, screenshot):
    open_page(page, fresh_url, "memories", "Memories & forgetting")
    nav = page.get_by_role("navigation")
    for title in (
        "Overview",
        "Sessions",
        "Working memory",
        "Skills",
        "Retrieval trace",
        "Feedback labelling",
        "Episodes",
        "Memories & forgetting",
    ):
        expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
    expect(page.get_by_role("combobox", name="User")).to_have_value("ada")
    expect(page.get_by_role("combobox", name="Session")).to_have_value("ada-s06")
    screenshot("frame_deep_link")

    nav.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("heading", name="Sessions", exact=True).wait_for()
    settle(page)
    expect(page.get_by_role("heading", name="Messages of ada-s06")).to_be_visible()  # the sidebar's session


@pytest.fixture(scope="module")
def empty_url(tmp_path_factory):
    """A fresh server on an empty store: its first visitor gets the demo loaded."""
    store = tmp_path_factory.mktemp("empty-store") / "store"
    with run_streamlit(store, tmp_path_factory.mktemp("empty-log") / "server.log") as url:
        yield url


def test_the_first_start_shows_page_titles_and_a_moving_bar_while_the_demo_loads(page, empty_url, screenshot):
    page.goto(empty_url, wait_until="domcontentloaded")
    bar = page.locator("[data-testid='stProgress']")
    bar.wait_for(timeout=180_000)  # the engine opens (model load) first, then the demo load starts
    nav = page.get_by_role("navigation")
    expect(nav.get_by_role("link", name="Overview", exact=True)).to_be_visible()  # not the file names
    assert nav.get_by_role("link", name="app", exact=True).count() == 0
    assert nav.get_by_role("link", name="episodes", exact=True).count() == 0
    # The bar moves during the load (it used to sit at 0 for one silent 512-record batch).
    expect(page.get_by_text("Embedding demo semantic memories:", exact=False)).to_be_visible(timeout=120_000)
    screenshot("frame_first_start_demo_loading")
    page.get_by_role("heading", name="Overview", exact=True).wait_for(timeout=300_000)
    settle(page)
    expect(page.get_by_role("combobox", name="User")).to_have_value("ada")
