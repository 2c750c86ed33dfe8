"""The app frame in Chromium: a deep link opened first on a freshly started server gets the whole app.

Streamlit treats a ``pages/`` folder as a legacy multipage app until app.py has called ``st.navigation`` once in the
process; without ui.resources' fix the first visitor of ``/memories`` saw the page alone, with file-name navigation
and no sidebar picker. This module starts its own server so that its first request really is the first one.
"""

from __future__ import annotations

import pytest
from browser_helpers import open_page, run_streamlit, settle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fresh_url(server_store, tmp_path_factory):
    with run_streamlit(server_store, tmp_path_factory.mktemp("fresh-log") / "server.log") as url:
        yield url


def test_a_deep_link_on_a_fresh_server_shows_the_navigation_and_the_sidebar_picker(page, fresh_url, screenshot):
    open_page(page, fresh_url, "memories", "Memories & forgetting")
    nav = page.get_by_role("navigation")
    for title in ("Overview", "Sessions", "Working memory", "Skills", "Retrieval trace", "Feedback labelling",
                  "Episodes", "Memories & forgetting"):
        expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
    expect(page.get_by_role("combobox", name="User")).to_have_value("ada")
    expect(page.get_by_role("combobox", name="Session")).to_have_value("ada-s06")
    screenshot("frame_deep_link")

    nav.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("heading", name="Sessions", exact=True).wait_for()
    settle(page)
    expect(page.get_by_role("heading", name="Messages of ada-s06")).to_be_visible()  # the sidebar's session
