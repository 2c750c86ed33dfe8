"""The dashboard as a researcher's workbench, in headless Chromium (issue 18): deep links that survive a reload and
open in a fresh browser, tabs that keep their place, labelling straight from a trace with undo, two traces side by
side, and where a retrieval's time went. Screenshots go to test-artifacts/screenshots/.

Traces are asked through the page (the server owns the store); writes go to the lab user or to a trace's own labels,
which each test undoes or makes on its own trace.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from browser_helpers import LAB_USER, click_tab, open_page, pick_user, rerun, save_screenshot, settle
from playwright.sync_api import expect
from test_retrieval_browser import QUESTION, ask

pytestmark = pytest.mark.browser


def url_params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def wait_for_param(page, name: str, value: str | None = None) -> str:
    """The URL's query parameter ``name`` once the page has written it (Streamlit updates the URL after a run)."""
    pattern = rf"[?&]{name}={re.escape(value) if value else '[^&]+'}(&|$)"
    page.wait_for_url(re.compile(pattern), timeout=60_000)
    return url_params(page)[name]


def wait_for_new_trace(page, previous: str) -> str:
    """The URL's ``trace`` once it names a trace other than ``previous`` (the page writes it after the run)."""
    page.wait_for_function(
        "prev => { const t = new URLSearchParams(location.search).get('trace'); return t && t !== prev; }",
        arg=previous,
        timeout=60_000,
    )
    return url_params(page)["trace"]


def selected_tab(page, name: str):
    return expect(page.get_by_role("tab", name=name, exact=True)).to_have_attribute("aria-selected", "true")


def test_a_link_to_a_trace_opens_on_its_tab_in_a_fresh_browser_and_survives_a_reload(
    page, browser, app_url, screenshot
):
    open_page(page, app_url, "retrieval", "Retrieval trace")
    pick_user(page, QUESTION["user_id"])
    ask(page, QUESTION["question"], hops=2)
    trace_id = wait_for_param(page, "trace")
    click_tab(page, "Why not?")
    wait_for_param(page, "tab", "why-not")
    link = page.url
    assert url_params(page)["user"] == QUESTION["user_id"]

    # The link, shared: a new browser context (no cookies, no session) opens the same trace on the same tab.
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = other.new_page()
        fresh.goto(link, wait_until="domcontentloaded")
        fresh.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=120_000)
        settle(fresh, started=True)
        selected_tab(fresh, "Why not?")
        expect(fresh.get_by_role("combobox", name="User")).to_have_value(QUESTION["user_id"])
        expect(fresh.get_by_text(f"Trace {trace_id}", exact=False).first).to_be_attached()
        save_screenshot(fresh, "workbench_deep_link_fresh_browser")
        # A reload keeps it all too (the sidebar user used to fall back to the first user).
        fresh.reload(wait_until="domcontentloaded")
        fresh.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=120_000)
        settle(fresh, started=True)
        selected_tab(fresh, "Why not?")
        expect(fresh.get_by_role("combobox", name="User")).to_have_value(QUESTION["user_id"])
        assert url_params(fresh)["trace"] == trace_id
    finally:
        other.close()


def test_label_from_the_trace_compare_two_traces_and_see_where_the_time_went(page, app_url, screenshot):
    open_page(page, app_url, "retrieval", "Retrieval trace")
    pick_user(page, LAB_USER)
    question = "Where is the lab printer?"
    ask(page, question, hops=1)
    first = wait_for_param(page, "trace")
    ask(page, question, hops=2)
    wait_for_new_trace(page, first)

    # Label a memory of the open trace from its Context tab, see the label, undo it.
    click_tab(page, "Context")
    panel = page.get_by_role("tabpanel", name="Context", exact=True)
    with rerun(page):
        panel.get_by_role("button", name=re.compile("Useful")).first.click()
    expect(panel.get_by_text(re.compile(r"^Labelled \S+ useful")).first).to_be_visible()
    expect(panel.get_by_text("label from this trace: useful").first).to_be_visible()
    selected_tab(page, "Context")  # the message above did not send the tabs back to Hops
    screenshot("workbench_label_from_trace")
    with rerun(page):
        panel.get_by_role("button", name=re.compile("Undo")).first.click()
    expect(panel.get_by_text(re.compile(r"^Undid the useful label of"))).to_be_visible()
    expect(panel.get_by_text("label from this trace: useful")).to_have_count(0)
    screenshot("workbench_label_undone")

    # Two traces side by side: B defaults to the other trace of the same question.
    click_tab(page, "Compare")
    wait_for_param(page, "trace_b", first)
    compare = page.get_by_role("tabpanel", name="Compare", exact=True)
    expect(compare.get_by_text("Settings that differ")).to_be_visible()
    expect(compare.locator("[data-testid='stMetric']", has_text="Entered the context")).to_be_visible()
    expect(compare.locator(".js-plotly-plot").first).to_be_visible()
    screenshot("workbench_compare")

    # Where the time went.
    click_tab(page, "Timings")
    timings = page.get_by_role("tabpanel", name="Timings", exact=True)
    expect(timings.locator(".js-plotly-plot").first).to_be_visible()
    expect(timings.get_by_text("Where the time went", exact=False).first).to_be_attached()
    expect(timings.get_by_text(re.compile(r"^\d+\.\d ms$")).first).to_be_attached()  # the numbers on the bars
    screenshot("workbench_timings")


def test_labelling_a_selected_candidate_from_a_link_and_undoing_it(page, app_url, screenshot):
    open_page(page, app_url, "retrieval", "Retrieval trace")
    pick_user(page, LAB_USER)
    ask(page, "Which bench has a broken gas tap?", hops=1)
    trace_id = wait_for_param(page, "trace")
    memory = url_params(page).get("memory") or wait_for_param(page, "memory")
    page.goto(
        f"{app_url}/retrieval?user={LAB_USER}&trace={trace_id}&tab=hops&memory={memory}", wait_until="domcontentloaded"
    )
    page.get_by_role("heading", name="Hop 1", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    selected_tab(page, "Hops")
    hops = page.get_by_role("tabpanel", name="Hops", exact=True)
    expect(hops.get_by_text(f"{memory} · not labelled from this trace", exact=False)).to_be_visible()
    with rerun(page):
        hops.get_by_role("button", name=re.compile("Harmful")).first.click()
    expect(hops.get_by_text(f"{memory} · label from this trace: harmful", exact=False)).to_be_visible()
    screenshot("workbench_label_candidate")
    with rerun(page):
        hops.get_by_role("button", name=re.compile("Undo")).first.click()
    expect(hops.get_by_text(f"{memory} · not labelled from this trace", exact=False)).to_be_visible()


def test_tabs_stay_put_when_a_message_appears_above_them(page, app_url, screenshot):
    open_page(page, app_url, "memories", "Memories & forgetting")
    pick_user(page, LAB_USER)
    click_tab(page, "Add a memory")
    wait_for_param(page, "tab", "add-a-memory")
    text = page.get_by_role("textbox", name="Memory text")
    text.fill("The lab's spare keys hang behind the door.")
    # not "lab": the Memories test counts the lab user's "lab" memories, and may run after this one on this server
    page.get_by_role("textbox", name="Category").fill("keys")
    with rerun(page):
        page.get_by_role("button", name="Add memory").click()
    expect(page.get_by_text(re.compile(r"^Added \S+ to keys\.$"))).to_be_visible()  # the message above the tabs
    selected_tab(page, "Add a memory")  # before the fix: back on "Browse"
    expect(page.get_by_role("textbox", name="Memory text")).to_have_value("")  # and no duplicate on a second click
    screenshot("workbench_tabs_stay_put")
