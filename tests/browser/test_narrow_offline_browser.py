"""The dashboard in an 820 px wide Chromium window (the sidebar open leaves ~500 px for a page), as a new user saw it:
no metric, toggle or button cut short with an ellipsis, and nothing fetched from outside the machine (the page icon
was a material symbol, which Streamlit loads as a favicon from fonts.gstatic.com). What AppTest cannot show: widths,
and the browser's own requests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_helpers import open_page, pick_user, rerun, settle
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
QUESTION = json.loads((ROOT / "data" / "demo" / "two_hop.json").read_text())[0]

pytestmark = pytest.mark.browser

# Text elements of the main area cut by their box: an ellipsis, or a hidden overflow. Tables, charts, code and JSON
# scroll or draw on a canvas of their own and are left out.
CUT_TEXT = """() => {
  const out = [];
  const own = '[data-testid="stDataFrame"], .js-plotly-plot, [data-testid="stCode"], [data-testid="stJson"]';
  for (const el of document.querySelectorAll('[data-testid="stMain"] *')) {
    if (el.closest(own)) continue;
    const cs = getComputedStyle(el);
    const clips = cs.textOverflow === 'ellipsis' || cs.overflow === 'hidden' || cs.overflowX === 'hidden';
    if (clips && el.scrollWidth > el.clientWidth + 1 && el.innerText.trim()) {
      out.push(`${el.innerText.trim().slice(0, 60)} (${el.scrollWidth} px in ${el.clientWidth} px)`);
    }
  }
  return out;
}"""


def test_at_820_px_nothing_is_cut_and_nothing_is_fetched_from_outside(page, app_url: str, screenshot):
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((app_url, "data:", "blob:")) else None)
    page.set_viewport_size({"width": 820, "height": 1000})

    open_page(page, app_url, "", "Overview")  # eleven counts in a row of metrics
    assert page.evaluate(CUT_TEXT) == []

    open_page(page, app_url, "retrieval", "Retrieval trace")  # the question form, the header metrics, label buttons
    pick_user(page, QUESTION["user_id"])
    page.get_by_role("textbox", name="Question", exact=True).fill(QUESTION["question"])
    with rerun(page):
        page.get_by_role("button", name="Retrieve").click()
    page.get_by_role("heading", name="Hop 1", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    expect(page.get_by_role("button", name=re.compile("Harmful")).filter(visible=True).first).to_be_visible()
    assert page.evaluate(CUT_TEXT) == []
    screenshot("narrow_retrieval")

    open_page(page, app_url, "feedback", "Feedback labelling")  # a row of Useful / Harmful per memory
    assert page.evaluate(CUT_TEXT) == []

    icon = page.evaluate("document.querySelector(\"link[rel='shortcut icon']\")?.href || ''")
    assert icon.startswith(("data:", app_url)), icon  # drawn locally, not fetched
    assert outside == [], outside[:5]
