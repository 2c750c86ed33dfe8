"""The Overview page in Chromium: counts, the activity chart (switched to one user), traces and settings."""

from __future__ import annotations

import re

import pytest
from browser_helpers import grid_cells, open_page, rerun, settle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_overview_shows_counts_activity_and_the_settings_in_use(page, app_url, screenshot):
    open_page(page, app_url, "", "Overview")
    for label in ("Users", "Sessions", "Semantic items", "Episodes", "Skills", "Retrieval traces"):
        expect(page.locator("[data-testid='stMetric']", has_text=label).first).to_be_visible()
    users = page.locator("[data-testid='stMetric']", has_text="Users").locator("[data-testid='stMetricValue']")
    assert int(users.inner_text()) >= 3
    expect(page.locator(".js-plotly-plot").first).to_be_visible()

    with rerun(page):  # waits for the rerun to finish, however long it takes on a loaded machine
        page.get_by_role("radio", name="ada", exact=True).click()  # "Whose activity": only the sidebar user
    expect(page.get_by_role("radio", name="ada", exact=True)).to_have_attribute("aria-checked", "true")
    expect(page.locator(".js-plotly-plot").first).to_be_visible()

    expect(page.get_by_text("all-MiniLM-L6-v2 (384d)")).to_be_visible()
    expect(page.get_by_text("offline (no LLM configured", exact=False)).to_be_visible()
    page.get_by_text("All settings (values in use, defaults, meaning)").click()
    settle(page)
    expect(grid_cells(page, "openai_api_key")).to_have_count(1)
    key_cell = page.locator("td", has_text=re.compile("^openai_api_key$"))
    row = page.locator("[data-testid='stDataFrame'] tr", has=key_cell)
    expect(row.locator("td").nth(1)).to_have_text("not set")  # the key itself is never shown
    screenshot("overview")
