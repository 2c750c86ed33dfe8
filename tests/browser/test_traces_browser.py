"""The Traces page in Chromium (issue 32, deliver 2), for a user of its own on the shared server's store: Tao has
two unlabelled agent traces, one labelled agent trace, one asked on the dashboard and one of an evaluation run.

Filtered from the page to Tao's unlabelled agent traces, the table shows exactly the two; the URL keeps the filter,
so the link opened in a fresh browser shows the same two."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import grid_cells, open_page, rerun, save_screenshot, settle
from playwright.sync_api import expect
from test_narrow_offline_browser import CUT_TEXT

from engine import MemoryEngine, Settings, recording_origin
from ui.trace_table_data import ORIGINS

pytestmark = pytest.mark.browser

USER = "zz-traces"
FACTS = ["Tao waters the orchids on Sundays.", "The orchid fertiliser is in the garage.", "Tao's bike is blue."]
QUESTIONS = {
    "agent 1": "When does Tao water the orchids?",
    "agent 2": "Where is the orchid fertiliser?",
    "labelled": "What colour is Tao's bike?",
    "dashboard": "Which day are the orchids watered?",
    "evaluation": "Where does the fertiliser live?",
}


@pytest.fixture(scope="module")
def tao(server_store: Path, embedder) -> dict[str, str]:
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(server_store), lock_timeout_s=60), embedder=embedder
    )
    try:
        items = [engine.items.remember(USER, fact, "home") for fact in FACTS]
        ids = {name: engine.retrieval.retrieve(USER, QUESTIONS[name]).trace_id for name in ("agent 1", "agent 2")}
        labelled = engine.retrieval.retrieve(USER, QUESTIONS["labelled"])
        engine.feedback.label(USER, items[2].id, "useful", trace_id=labelled.trace_id)
        with recording_origin("dashboard"):
            engine.retrieval.retrieve(USER, QUESTIONS["dashboard"])
        engine.evals.add_case("zz-traces-set", USER, QUESTIONS["evaluation"], [items[1].id], create_set=True)
        engine.evals.evaluate("zz-traces-set")
        return ids
    finally:
        engine.close()  # the server's process takes the store over


def shown(page, name: str):
    return grid_cells(page, QUESTIONS[name])


def test_one_users_unlabelled_agent_traces_from_the_page_and_by_link(page, browser, app_url, tao, screenshot):
    open_page(page, app_url, "traces", "Traces")
    combo = page.get_by_role("combobox", name="Whose traces")
    combo.click()
    with rerun(page):
        page.get_by_role("option", name=USER, exact=True).click()
    expect(combo).to_have_value(USER)
    for name in ("agent 1", "agent 2", "labelled", "dashboard"):
        expect(shown(page, name)).to_have_count(1)
    expect(shown(page, "evaluation")).to_have_count(0)  # evaluation runs are left out unless picked

    with rerun(page):
        page.locator("[data-testid='stButtonGroup']").get_by_text("unlabelled", exact=True).click()
    expect(shown(page, "labelled")).to_have_count(0)
    origins = page.get_by_role("combobox", name="Origin (evaluation runs are left out unless picked)")
    # the origins' chips (the page's only multiselect); hidden copies in a <template> have no role, so are left out
    chips = page.get_by_role("group", name="Selected values").locator("[data-tag]")
    expect(chips.first).to_have_text("agent (API, MCP, CLI)")  # the origins in their order: the agent's first
    for _ in range(len(ORIGINS)):  # every origin after the agent's, the last chip first, whatever origins exist
        if chips.count() == 1:
            break
        other = chips.last.inner_text()
        with rerun(page):
            origins.press("Backspace")  # takes the last chosen origin off, as a person clearing the box does
        expect(chips.filter(has_text=other)).to_have_count(0)
    expect(chips).to_have_text(["agent (API, MCP, CLI)"])
    page.keyboard.press("Escape")
    expect(origins).to_be_visible()
    expect(shown(page, "dashboard")).to_have_count(0)
    expect(shown(page, "agent 1")).to_have_count(1)
    expect(shown(page, "agent 2")).to_have_count(1)
    expect(grid_cells(page, "agent (API, MCP, CLI)")).to_have_count(2)
    expect(page.get_by_text("Filtered: user zz-traces", exact=False)).to_be_visible()
    settle(page)
    screenshot("traces_unlabelled_agent")

    url = page.url
    assert "of=zz-traces" in url and "labelled=unlabelled" in url and "origin=agent" in url
    other = browser.new_context(viewport={"width": 1400, "height": 1000})  # no cookies, no session: a shared link
    try:
        fresh = other.new_page()
        fresh.goto(url, wait_until="domcontentloaded")
        fresh.get_by_role("heading", name="Traces", exact=True).wait_for(timeout=120_000)
        expect(grid_cells(fresh, QUESTIONS["agent 1"])).to_have_count(1)
        expect(grid_cells(fresh, QUESTIONS["agent 2"])).to_have_count(1)
        expect(grid_cells(fresh, QUESTIONS["labelled"])).to_have_count(0)
        expect(grid_cells(fresh, QUESTIONS["dashboard"])).to_have_count(0)
        expect(fresh.get_by_role("combobox", name="Whose traces")).to_have_value(USER)
        # At 820 px (a ~500 px page beside the sidebar) no filter's label is cut short, here or under the trace
        # page's picker.
        fresh.set_viewport_size({"width": 820, "height": 1000})
        expect(grid_cells(fresh, QUESTIONS["agent 1"])).to_have_count(1)
        assert fresh.evaluate(CUT_TEXT) == []
        fresh.goto(f"{app_url}/retrieval?user={USER}", wait_until="domcontentloaded")
        fresh.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=120_000)
        fresh.get_by_text("Filter the stored traces").click()
        expect(
            fresh.get_by_role("combobox", name="Origin (evaluation runs are left out unless picked)")
        ).to_be_visible()
        assert fresh.evaluate(CUT_TEXT) == []
        save_screenshot(fresh, "traces_filters_on_the_trace_page_at_820px")
    finally:
        other.close()
