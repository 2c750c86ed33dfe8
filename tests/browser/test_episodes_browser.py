"""The Episodes page in Chromium: timelines, reflection, and an insight's link back to a source episode."""

from __future__ import annotations

import pytest
from browser_helpers import HOSTILE, LAB_USER, no_markup_rendered, open_page, pick_user, rerun
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_reflection_shows_insights_that_link_to_their_source_episodes(page, app_url, screenshot):
    open_page(page, app_url, "episodes", "Episodes")
    expect(page.get_by_text("episodes 1–10 of 12")).to_be_visible()
    screenshot("episodes")
    pick_user(page, LAB_USER)
    expect(page.get_by_text("episodes 1–3 of 3")).to_be_visible()
    page.locator("[data-testid='stExpander'] summary", has_text="Closed the gas on bench 4").click()  # its timeline
    expect(page.get_by_text("close the main valve", exact=True)).to_be_visible()
    expect(page.get_by_text(HOSTILE, exact=False).first).to_be_attached()  # a summary with markup, as text
    no_markup_rendered(page)

    page.get_by_role("spinbutton", name="Episodes to reflect on (the most recent)").fill("3")
    with rerun(page):
        page.get_by_role("button", name="Run reflection").click()
    expect(page.get_by_text("Across the last 3 episodes the outcomes were success: 2, failure: 1.")).to_be_visible()
    expect(page.get_by_text("Made by outcome statistics and recurring actions", exact=False)).to_be_visible()
    links = page.locator("[data-testid='stPageLink'] a")
    expect(links.nth(2)).to_be_visible()  # at least three source links (expect retries; count() would not)
    screenshot("episodes_reflection")

    source = links.first.locator("[data-testid='stMarkdownContainer']").inner_text().strip()
    with rerun(page):
        links.first.click()
    expect(page.get_by_role("heading", name=f"Episode {source}", exact=False)).to_be_visible()
    expect(page.get_by_role("textbox", name="Open an episode by id")).to_have_value(source)
    screenshot("episodes_source_episode")
