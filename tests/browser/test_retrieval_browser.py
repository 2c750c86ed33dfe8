"""The Retrieval trace page in headless Chromium, on a running `streamlit run app.py` over the demo store.

A person asks the first two-hop demo question with two hops and sees both hops' queries (the second one naming the
bridge entity), then replays the trace with its own settings and sees that nothing moved. Another picks the deep
preset: the form opens on its two hops, warns that the user has no sentence keys, and the trace names the preset.
Screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_helpers import click_tab, grid_cells, pick_option, pick_user, rerun, settle
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
QUESTION = json.loads((ROOT / "data" / "demo" / "two_hop.json").read_text())[0]

pytestmark = pytest.mark.browser


def open_from_sidebar(page, app_url: str, title: str) -> None:
    """Load the app, then click the page in the sidebar navigation, as a person would."""
    page.goto(app_url, wait_until="domcontentloaded")
    page.get_by_role("link", name=re.compile(title)).first.click(timeout=120_000)
    page.get_by_role("heading", name=title, exact=True).wait_for(timeout=120_000)
    settle(page, started=True)


def ask(page, question: str, hops: int | None) -> None:
    """Fill the question form (hops None: as the form shows them) and press Retrieve; returns when the run is over."""
    page.get_by_role("textbox", name="Question", exact=True).fill(question)
    if hops is not None:
        hops_box = page.get_by_role("spinbutton", name="Hops", exact=True)
        hops_box.fill(str(hops))
        hops_box.press("Tab")
    with rerun(page):  # a second question: "Hop 1" of the first answer is still on the page until the run ends
        page.get_by_role("button", name="Retrieve").click()
    page.get_by_role("heading", name="Hop 1", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)


def test_asking_a_two_hop_question_shows_both_hops_queries(page, app_url: str, screenshot):
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, QUESTION["user_id"])
    ask(page, QUESTION["question"], hops=2)
    expect(page.get_by_role("heading", name="Hop 2", exact=True)).to_be_visible()
    code_blocks = page.locator("[data-testid='stCode'] code")
    # Code blocks draw after the script run ends (their highlighter loads lazily): wait for them, never snapshot early.
    expect(code_blocks.filter(has_text=QUESTION["question"]).first).to_be_visible(timeout=60_000)
    expect(code_blocks.filter(has_text=QUESTION["bridge"]).first).to_be_visible(timeout=60_000)
    codes = [c.inner_text().strip() for c in code_blocks.all()]
    assert QUESTION["question"] in codes  # hop 1 searches with the question itself
    hop2 = [c for c in codes if QUESTION["bridge"] in c and c != QUESTION["question"]]
    assert hop2, f"no hop-2 query naming the bridge {QUESTION['bridge']!r}: {codes[:3]}"
    expect(page.get_by_text("the offline bridge").first).to_be_visible()  # who proposed it, in words
    screenshot("retrieval_two_hops")

    # What-if with the trace's own settings: a person sees that no rank changed.
    click_tab(page, "What-if")
    page.get_by_role("button", name="Replay with these settings").click()
    page.get_by_text("Changed settings: none (the original settings)").wait_for(timeout=60_000)
    settle(page, started=True)
    rank_changes = page.locator("[data-testid='stMetric']", has_text="Rank changes")
    expect(rank_changes.locator("[data-testid='stMetricValue']")).to_have_text("0")
    screenshot("retrieval_whatif")


# The demo's lab chat (data/demo/README.md, "Replies stored with what they answer").
TRAPS_ASKED = 'Katrin in the lab chat: "Who collects the pan traps from the upper transects before the first snow?"'
TRAPS_REPLY = 'Samuel in the lab chat: "Me, on Saturday with the department van. I will drop them at Irchel on Monday."'


def test_a_reply_found_through_the_question_before_it_shows_that_question(page, app_url: str, screenshot):
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, "mira")
    ask(page, "Who collects the pan traps before the first snow?", hops=1)
    expect(page.get_by_text("preceded_by is what came right before a memory", exact=False)).to_be_visible()
    screenshot("retrieval_preceding_text")
    # The text columns are the table's last: scroll it sideways, as a person would, to see them.
    # (id and text are pinned on the left, so after the scroll the reply's text and its preceded_by show together)
    page.locator("[data-testid='stDataFrame']").first.hover()
    for _ in range(4):
        page.mouse.wheel(3000, 0)
        page.wait_for_timeout(200)
    screenshot("retrieval_preceding_text_columns")
    expect(grid_cells(page, TRAPS_REPLY).first).to_be_attached()
    expect(grid_cells(page, TRAPS_ASKED).first).to_be_attached()  # its own row, and beside the reply it preceded
    expect(grid_cells(page, TRAPS_ASKED)).to_have_count(2)
    # The what-if tab offers the weight of those words, starting at the trace's value.
    click_tab(page, "What-if")
    slider = page.get_by_role("slider", name="preceding_bm25_weight")
    expect(slider).to_be_visible()
    expect(slider).to_have_attribute("aria-valuetext", "0.50")
    screenshot("retrieval_preceding_whatif")


def test_the_deep_preset_opens_the_form_on_two_hops_and_the_trace_names_it(page, app_url: str, screenshot):
    open_from_sidebar(page, app_url, "Retrieval trace")
    pick_user(page, QUESTION["user_id"])
    pick_option(page, "Preset", "deep")
    expect(page.get_by_role("spinbutton", name="Hops", exact=True)).to_have_value("2")
    expect(page.get_by_text("hops = 2 · memory_keys = sentences").first).to_be_visible()
    # the demo store is written without keys: said before asking, not discovered in the trace
    expect(page.get_by_text(f"{QUESTION['user_id']} has none").first).to_be_visible()
    screenshot("retrieval_deep_preset")
    ask(page, QUESTION["question"], hops=None)
    expect(page.get_by_role("heading", name="Hop 2", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r" · preset deep · ")).first).to_be_visible()
    expect(page.get_by_text("vector search of the keys: semantic: none written").first).to_be_visible()
