"""The Feedback labelling page in headless Chromium: ask a question, label what it recalled, find the label in the
ledger. Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_retrieval_browser import ask, open_from_sidebar, pick_user, settle

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
QUESTION = "What medication must the friend joining the Dolomites trek carry?"
NOTE = "exactly the allergy the trek leader must know about"

pytestmark = pytest.mark.browser


def test_labelling_a_candidate_shows_it_in_the_ledger(browser_page, app_url: str):
    page = browser_page
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, "tomas")
    ask(page, QUESTION, hops=1)
    page.get_by_role("heading", name="Hop 1", exact=True).wait_for(timeout=120_000)

    page.get_by_role("link", name=re.compile("Feedback labelling")).first.click()
    page.get_by_role("heading", name="Feedback labelling").wait_for(timeout=60_000)
    page.get_by_text(f"Question: {QUESTION}").wait_for(timeout=60_000)  # the trace just asked is the one offered
    settle(page)
    page.get_by_label("Note for the next label (optional)").fill(NOTE)
    page.get_by_label("Note for the next label (optional)").press("Tab")
    first_row = page.locator('[data-testid="stHorizontalBlock"]', has=page.get_by_role("button", name=re.compile(
        "Useful"))).first
    item_id = re.search(r"(\S+) · \w+ · hop \d", first_row.inner_text()).group(1)
    first_row.get_by_role("button", name=re.compile("Useful")).click()
    page.get_by_text(re.compile(rf"Labelled {re.escape(item_id)} useful")).wait_for(timeout=60_000)

    page.get_by_role("tab", name="Label ledger").click()
    ledger_line = page.get_by_text(re.compile(r"useful \(\+1\) · trace tr_\w+ · hop 1 · note: " + re.escape(NOTE)))
    ledger_line.first.wait_for(timeout=30_000)
    assert ledger_line.first.is_visible()
    assert page.get_by_text(re.compile(rf"^{re.escape(item_id)}: \d+ label\(s\), net ")).first.is_visible()
    settle(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "feedback_ledger.png"), full_page=True)
