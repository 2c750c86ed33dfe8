"""The Feedback labelling page in headless Chromium: ask a question, label what it recalled with a note, and find the
label in the ledger. Writes go to the lab user (the demo users stay as shipped for the other browser tests).
Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

import re

import pytest
from browser_helpers import LAB_USER, click_tab, no_markup_rendered, pick_user, rerun, settle
from playwright.sync_api import expect
from test_retrieval_browser import ask, open_from_sidebar

QUESTION = "Where is the lab printer, and which bench has a broken gas tap?"
NOTE = "answers the question"

pytestmark = pytest.mark.browser


def test_labelling_a_candidate_shows_it_in_the_ledger(page, app_url: str, screenshot):
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, LAB_USER)
    ask(page, QUESTION, hops=1)

    page.get_by_role("link", name=re.compile("Feedback labelling")).first.click()
    page.get_by_role("heading", name="Feedback labelling", exact=True).wait_for(timeout=60_000)
    settle(page, started=True)
    click_tab(page, "Label a trace")  # the page opens on the queue
    expect(page.get_by_text(f"Question: {QUESTION}")).to_be_visible()  # the trace just asked is the one offered
    screenshot("feedback_label_a_trace")
    no_markup_rendered(page)  # the lab user's hostile memory is listed as plain text

    note = page.get_by_label("Note for the next label (optional)")
    note.fill(NOTE)
    with rerun(page):
        note.press("Tab")
    # The first memory's "id · kind · hop" line, and the Useful button that comes next on the page (its own, under
    # it): found by what the page shows in that order, not by which block of the layout holds the buttons.
    where = page.get_by_text(re.compile(r"^\S+ · \w+ · hop 1 · ")).filter(visible=True).first
    expect(where).to_be_visible()
    item_id = re.match(r"(\S+) · \w+ · hop 1", where.inner_text()).group(1)
    where.locator("xpath=following::button[contains(., 'Useful')][1]").click()
    page.get_by_text(re.compile(rf"Labelled {re.escape(item_id)} useful")).wait_for(timeout=60_000)
    settle(page, started=True)

    click_tab(page, "Label ledger")
    expect(page.get_by_text(re.compile(rf"^{re.escape(item_id)}: 1 label\(s\), net \+1"))).to_be_visible()
    # No name given on this page: the dashboard's labels are recorded as "dashboard".
    event = r"useful \(\+1\) · by dashboard · trace tr_\w+ · hop 1 · note: "
    line = page.get_by_text(re.compile(event + re.escape(NOTE)))
    expect(line).to_be_visible()
    screenshot("feedback_ledger")
