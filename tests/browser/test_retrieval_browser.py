"""The Retrieval trace page in headless Chromium, on a running `streamlit run app.py` over the demo store.

A person asks the first two-hop demo question with two hops and sees both hops' queries, then replays the trace
with its own settings and sees that nothing moved. Screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
QUESTION = json.loads((ROOT / "data" / "demo" / "two_hop.json").read_text())[0]

pytestmark = pytest.mark.browser


def settle(page) -> None:
    """Wait until the script run is over and no element is stale (what a person sees is final)."""
    page.wait_for_timeout(300)
    page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')"
                           "?.getAttribute('data-test-script-state') !== 'running'", timeout=120_000)
    page.wait_for_function("!document.querySelector('[data-stale=\"true\"]')", timeout=30_000)


def open_from_sidebar(page, app_url: str, title: str) -> None:
    """Load the app and click a page in the sidebar navigation, as a person would."""
    page.goto(app_url, wait_until="domcontentloaded")
    page.get_by_role("link", name=re.compile(title)).first.click(timeout=120_000)
    page.get_by_role("heading", name=title).wait_for(timeout=60_000)


def pick_user(page, user: str) -> None:
    """Choose the user in the sidebar's User combobox (the demo store has three)."""
    settle(page)
    combo = page.get_by_role("combobox", name="User")
    combo.wait_for(timeout=60_000)
    for _ in range(3):  # a rerun that lands while the list is open closes it again
        if combo.input_value() == user:
            break
        combo.click()
        option = page.get_by_role("option", name=user, exact=True)
        try:
            option.click(timeout=5_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
        settle(page)
    expect(combo).to_have_value(user)


def ask(page, question: str, hops: int) -> None:
    page.get_by_role("textbox", name="Question", exact=True).fill(question)
    hops_box = page.get_by_role("spinbutton", name="Hops", exact=True)
    hops_box.fill(str(hops))
    hops_box.press("Tab")
    page.get_by_role("button", name="Retrieve").click()


def test_asking_a_two_hop_question_shows_both_hops_queries(browser_page, app_url: str):
    page = browser_page
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, QUESTION["user_id"])
    ask(page, QUESTION["question"], hops=2)
    page.get_by_role("heading", name="Hop 2", exact=True).wait_for(timeout=120_000)
    hop2_code = page.locator("[data-testid='stCode']", has_text=QUESTION["bridge"]).first
    hop2_code.wait_for(timeout=60_000)
    settle(page)
    codes = [c.inner_text().strip() for c in page.locator("[data-testid='stCode'] code").all()]
    assert QUESTION["question"] in codes  # hop 1 searches with the question itself
    hop2 = [c for c in codes if QUESTION["bridge"] in c and c != QUESTION["question"]]
    assert hop2, f"no hop-2 query naming the bridge {QUESTION['bridge']!r}: {codes[:3]}"
    assert page.get_by_text("offline:bridge_entities").first.is_visible()  # who proposed it
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "retrieval_two_hops.png"), full_page=True)
    page.get_by_role("heading", name="Hop 2", exact=True).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "retrieval_hop2.png"))

    # What-if with the trace's own settings: a person sees that no rank changed.
    page.get_by_role("tab", name="What-if").click()
    page.get_by_role("button", name="Replay with these settings").click()
    page.get_by_text("Changed settings: none (the original settings)").wait_for(timeout=60_000)
    rank_changes = page.locator('[data-testid="stMetric"]', has_text="Rank changes")
    assert rank_changes.locator('[data-testid="stMetricValue"]').inner_text().strip() == "0"
    settle(page)
    page.screenshot(path=str(SHOTS / "retrieval_whatif.png"), full_page=True)
