"""The Skills page in Chromium: the ranking with its interval chart, and recording an outcome."""

from __future__ import annotations

import re

import pytest
from browser_helpers import LAB_USER, open_page, pick_user, rerun
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_recording_a_skill_outcome_updates_its_counts(page, app_url, screenshot):
    open_page(page, app_url, "skills", "Skills")
    expect(page.locator(".js-plotly-plot").first).to_be_visible()  # ada's ranking with intervals
    screenshot("skills")
    pick_user(page, LAB_USER)
    expect(page.get_by_role("heading", name="Versions of bench-checklist")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^2 of 3 trials succeeded"))).to_be_visible()
    page.get_by_text("failure", exact=True).click()
    with rerun(page):
        page.get_by_role("button", name="Record outcome").click()
    expect(
        page.get_by_text("Recorded a failure for bench-checklist v1: now 2 of 4 trials succeeded (50.0%).")
    ).to_be_visible()
    expect(page.get_by_text(re.compile(r"^2 of 4 trials succeeded"))).to_be_visible()
    screenshot("skills_outcome_recorded")
