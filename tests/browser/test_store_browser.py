"""The Store insights page in Chromium (issue 32, deliver 3), for a user of its own on the shared server's store:
Zia's memories hold a copy of one memory, and the memory a question brought into its context was labelled harmful
and is expected by an evaluation case.

- the near-duplicate pair is found by a refresh and merged from the page (the copy forgotten, the forget log says so);
- the harmful memory's blast radius lists the trace and the evaluation case it touched, and it is forgotten there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import grid_cells, open_page, rerun, settle
from playwright.sync_api import expect

from engine import MemoryEngine, Settings

pytestmark = pytest.mark.browser

USER = "zz-store"
DUPLICATED = "The greenhouse key hangs behind the blue door."
HARMFUL = "Zia's allergy medicine is kept in the top drawer."


@pytest.fixture(scope="module")
def zia(server_store: Path, embedder) -> dict[str, str]:
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(server_store), lock_timeout_s=60), embedder=embedder
    )
    try:
        older = engine.items.remember(USER, DUPLICATED, "house")
        harmful = engine.items.remember(USER, HARMFUL, "health")
        trace = engine.retrieval.retrieve(USER, "where is Zia's allergy medicine kept?")
        engine.feedback.label(USER, harmful.id, "harmful", trace_id=trace.trace_id)
        engine.evals.add_case("zz-store-set", USER, "where is the allergy medicine?", [harmful.id], create_set=True)
        copy = engine.items.remember(USER, DUPLICATED.rstrip("."), "house")
        return {"older": older.id, "copy": copy.id, "harmful": harmful.id, "trace": trace.trace_id}
    finally:
        engine.close()  # the server's process takes the store over


def test_a_near_duplicate_pair_is_merged_from_the_page(page, app_url, zia, screenshot):
    open_page(page, app_url, f"store?user={USER}", "Store insights")
    # every page's title in the sidebar, none folded away under "View n more" by the two new pages
    expect(page.locator("[data-testid='stSidebarNav']").get_by_text("Evaluations", exact=True)).to_be_visible()
    expect(page.get_by_text("Not computed yet for this user", exact=False)).to_be_visible()
    with rerun(page):
        page.get_by_role("button", name="Refresh now").click()
    expect(page.get_by_text("Computed: 1 near-duplicate pair", exact=False)).to_be_visible()
    expect(page.get_by_text("Pair 1", exact=False)).to_be_visible()
    expect(page.locator("[data-testid='stText']", has_text=DUPLICATED.rstrip("."))).to_have_count(2)  # side by side
    screenshot("store_near_duplicates")
    with rerun(page):
        page.get_by_role("button", name="Keep older, forget newer").click()
    expect(page.get_by_text("keeping", exact=False)).to_be_visible()
    expect(page.get_by_text("No near-duplicate pairs at this similarity.")).to_be_visible()
    expect(grid_cells(page, f"near-duplicate of {zia['older']} (store insights)")).to_have_count(1)
    expect(grid_cells(page, zia["copy"])).to_have_count(1)  # the forget log's entry names the copy
    settle(page)
    screenshot("store_near_duplicate_forgotten")


def test_the_blast_radius_of_a_harmful_memory_and_forgetting_it_there(page, app_url, zia, screenshot):
    open_page(page, app_url, f"store?user={USER}&tab=blast-radius", "Store insights")
    page.get_by_role("combobox", name="Or one labelled harmful").click()
    with rerun(page):
        page.get_by_role("option", name=zia["harmful"], exact=False).click()
    expect(page.locator("[data-testid='stText']", has_text=HARMFUL)).to_be_visible()
    expect(page.get_by_text("Traces it was a candidate in")).to_be_visible()
    expect(grid_cells(page, "where is Zia's allergy medicine kept?")).to_have_count(1)
    expect(grid_cells(page, "harmful")).to_have_count(2)  # on its trace's row and in its labels
    expect(grid_cells(page, "zz-store-set")).to_have_count(1)  # the evaluation case expecting it
    metric = page.locator("[data-testid='stMetric']", has_text="Harmful labels")
    expect(metric.locator("[data-testid='stMetricValue']")).to_have_text("1")
    screenshot("store_blast_radius")
    page.get_by_role("textbox", name="Reason (required, kept in the forget log)").fill("labelled harmful")
    page.get_by_text("I have checked what it touched above").click()
    with rerun(page):
        page.get_by_role("button", name="Forget this memory").click()
    expect(page.get_by_text("it touched 1 trace", exact=False)).to_be_visible()
    expect(page.get_by_text("forgotten (soft)", exact=False)).to_be_visible()
