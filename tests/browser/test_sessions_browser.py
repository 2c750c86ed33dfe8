"""The Sessions page in Chromium: filter sessions by a word in their messages and read the messages found."""

from __future__ import annotations

import pytest
from browser_helpers import grid_cells, open_page, rerun
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_filtering_sessions_by_a_word_opens_the_matching_conversation(page, app_url, screenshot):
    open_page(page, app_url, "sessions", "Sessions")
    expect(page.get_by_text("sessions 1–6 of 6")).to_be_visible()  # ada's sessions, the sidebar user
    search = page.get_by_role("textbox", name="Search", exact=True)
    search.fill("JPY")
    with rerun(page):
        search.press("Enter")
    expect(page.get_by_text("sessions 1–1 of 1")).to_be_visible()
    expect(grid_cells(page, "ada-s06")).to_have_count(1)
    expect(page.get_by_role("heading", name="Messages of ada-s06")).to_be_visible()
    expect(page.get_by_text("New bug: JPY refunds show a decimal in the dashboard, like ¥1200.0.")).to_be_visible()
    expect(page.get_by_text("#1 · user · 18 tokens", exact=False)).to_be_visible()  # role and tokens per message
    screenshot("sessions")
