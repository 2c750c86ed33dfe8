"""The Working memory page in Chromium: invalid JSON is refused with the parse error, valid JSON is saved."""

from __future__ import annotations

import pytest
from browser_helpers import LAB_USER, open_page, pick_user, rerun
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_editing_a_slot_with_invalid_then_valid_json(page, app_url, screenshot):
    open_page(page, app_url, "working_memory", "Working memory")
    pick_user(page, LAB_USER)
    box = page.get_by_role("textbox", name="New value of goals as JSON")
    expect(box).to_have_value('[\n  "plan the lab cleanup"\n]')

    box.fill('["plan the lab cleanup", ')
    with rerun(page):
        page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Not saved: invalid JSON for goals", exact=False)).to_be_visible()
    expect(page.locator("[data-testid='stCode']").first).to_contain_text('"plan the lab cleanup"')
    expect(page.locator("[data-testid='stCode']").first).not_to_contain_text("order the spare gas taps")
    screenshot("working_memory_invalid_json")

    box = page.get_by_role("textbox", name="New value of goals as JSON")
    box.fill('["plan the lab cleanup", "order the spare gas taps"]')
    with rerun(page):
        page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved goals.")).to_be_visible()
    expect(page.locator("[data-testid='stCode']").first).to_contain_text('"order the spare gas taps"')
    expect(page.get_by_text('+  "order the spare gas taps"', exact=False)).to_be_visible()  # the edit's diff
    screenshot("working_memory")
