"""The Memories & forgetting page in Chromium: forget an item after its preview, then find it in the audit table."""

from __future__ import annotations

import re

import pytest
from browser_helpers import (
    HOSTILE,
    LAB_USER,
    click_tab,
    grid_cells,
    no_markup_rendered,
    open_page,
    pick_user,
    rerun,
    settle,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
ITEM = "Bench 4 has a broken gas tap."
REASON = "fixed on Friday, no longer true"


def test_forgetting_an_item_after_its_preview_lands_in_the_forget_log(page, app_url, screenshot):
    open_page(page, app_url, "memories", "Memories & forgetting")
    screenshot("memories")
    pick_user(page, LAB_USER)
    page.get_by_role("combobox", name="Category").click()
    with rerun(page):
        page.get_by_role("option", name="lab (3)").click()  # other tests may add insights to this user
    expect(page.get_by_text("memories 1–3 of 3")).to_be_visible()
    page.get_by_role("combobox", name="Details of").click()
    # may be the item shown already (then no run starts): settle() gives a run its 300 ms to start
    page.get_by_role("option", name=HOSTILE, exact=False).click()  # option text is plain text, too
    settle(page)
    expect(page.locator("[data-testid='stText']", has_text=HOSTILE)).to_be_visible()  # stored markup as text
    no_markup_rendered(page)

    click_tab(page, "Forget")
    page.get_by_role("combobox", name="Items from the list on the Browse tab").click()
    page.get_by_role("option", name=ITEM, exact=False).click()
    page.keyboard.press("Escape")
    settle(page)
    panel = page.get_by_role("tabpanel", name="Forget", exact=True)
    expect(panel.get_by_text("Preview: 1 semantic items selected")).to_be_visible()
    expect(panel.locator("[data-testid='stText']", has_text=ITEM)).to_be_visible()  # the text to be forgotten
    expect(panel.get_by_text(re.compile(r" · active$"))).to_be_visible()
    page.get_by_role("textbox", name="Reason (required, kept in the forget log)").fill(REASON)
    page.get_by_text("I have checked the preview above").click()
    with rerun(page):
        page.get_by_role("button", name="Forget 1 semantic items").click()
    expect(page.get_by_text("Forgot 1 semantic item (soft)", exact=False)).to_be_visible()
    expect(page.get_by_role("tab", name="Forget", exact=True)).to_have_attribute("aria-selected", "true")  # kept
    click_tab(page, "Browse")
    expect(page.get_by_text("memories 1–2 of 2")).to_be_visible()

    # Not click_tab(): it waits to see the click's run start, and a click that lands in a run already going (the
    # server restarts it) shows no new start, though the tab opens (a full run failed so, its URL at tab=forget-log).
    # Every run draws every tab, so the entry is there at once; expect() waits for what a person sees.
    log_tab = page.get_by_role("tab", name="Forget log", exact=True)
    log_tab.click()
    expect(log_tab).to_have_attribute("aria-selected", "true")
    panel = page.get_by_role("tabpanel", name="Forget log", exact=True)
    expect(
        panel.locator("[data-testid='stDataFrame'] td", has_text=re.compile(rf"^{re.escape(REASON)}$"))
    ).to_have_count(1)
    expect(grid_cells(page, "ui").first).to_be_attached()
    settle(page)  # the tab's run over before the screenshot
    screenshot("memories_forget_log")
