"""A run and one of its 2-hop traces seen as a researcher sees them (issue 32, deliver 4 and 5), in headless Chromium
on the demo store: the demo set run with two hops; the run's hop attribution, score calibration with the threshold
sweep, and the set's history; then a case's trace on the Retrieval trace page as an embedding map (its expected
memories ringed) and as a span tree whose spans open onto their inputs and outputs. Screenshots go to
test-artifacts/screenshots/."""

from __future__ import annotations

import re

import pytest
from browser_helpers import click_tab, open_page, rerun, settle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_a_two_hop_run_its_views_and_one_traces_map_and_span_tree(page, app_url: str, screenshot):
    # the demo set by deep link: the browser server is shared, and other tests make sets of their own
    open_page(page, app_url, "evaluations?set=demo", "Evaluations")
    create = page.get_by_role("button", name="Create the demo expectation set and run it")
    start = page.get_by_text("Start a run")
    expect(create.or_(start).first).to_be_visible()
    if create.count():  # a fresh server: the demo set and its default run first
        with rerun(page):
            create.click()
        page.get_by_role("heading", name="Cases", exact=True).wait_for(timeout=300_000)
        settle(page)
    if not page.get_by_role("button", name="Run evaluation").is_visible():
        page.get_by_text("Start a run").click()
    page.get_by_role("spinbutton", name="Hops").fill("2")
    page.get_by_role("textbox", name="Label").fill("browser two hops")
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_text(re.compile(r"^Run run_\w+ finished: 14 cases")).first).to_be_visible(timeout=300_000)
    settle(page)
    expect(page.get_by_role("combobox", name="Run", exact=True)).to_have_value(re.compile("browser two hops"))
    expect(page.get_by_text("Ranking cut-off k")).to_be_visible()

    # Which hop found each expected memory, how each signal separates them, the threshold swept on request.
    click_tab(page, "Hops and scores")
    panel = page.get_by_role("tabpanel", name="Hops and scores", exact=True)
    expect(panel.get_by_role("heading", name="Which hop found each expected memory")).to_be_visible(timeout=120_000)
    expect(panel.locator("[data-testid='stMetric']", has_text="Cases read")).to_contain_text("14 of 14")
    expect(panel.get_by_text("expected memories vs the other candidates").first).to_be_attached()
    with rerun(page):
        panel.get_by_role("button", name=re.compile("^Sweep the relevance threshold")).click()
    expect(panel.get_by_text("The relevance threshold swept over the run's stored traces").first).to_be_attached(
        timeout=120_000
    )
    screenshot("eval_hops_and_scores")

    click_tab(page, "History")
    history = page.get_by_role("tabpanel", name="History", exact=True)
    expect(history.get_by_text("The set's metrics across runs").first).to_be_attached()
    screenshot("eval_history")

    # A two-hop case's trace: the map with its expected memories, and the span tree.
    click_tab(page, "Runs")
    expect(page.get_by_role("combobox", name="Open a case")).to_have_value(re.compile("demo-two-hop-1"))
    page.get_by_role("button", name="Open trace at Why not?").click()
    page.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    click_tab(page, "Map")
    trace_map = page.get_by_role("tabpanel", name="Map", exact=True)
    expect(trace_map.get_by_text(re.compile("Evaluation case demo · demo-two-hop-1")).first).to_be_visible(
        timeout=120_000
    )
    expect(trace_map.locator(".js-plotly-plot").first).to_be_visible()
    expect(trace_map.get_by_text("expected (gold)").first).to_be_attached()  # the legend: gold ringed
    expect(trace_map.get_by_text("hop 2 query").first).to_be_attached()
    screenshot("trace_embedding_map")

    click_tab(page, "Timings")
    timings = page.get_by_role("tabpanel", name="Timings", exact=True)
    expect(timings.get_by_text("Span tree").first).to_be_visible()
    hop2 = timings.get_by_text(re.compile(r"^└ hop 2 · [\d.]+ ms")).first
    hop2.click()
    opened = timings.locator("details[open]")  # the hop's span, open: its inputs and outputs
    expect(opened.get_by_text(re.compile(r"^proposed by: "))).to_be_visible()
    expect(opened.get_by_text(re.compile(r"^reached the context: \d+$"))).to_be_visible()
    screenshot("trace_span_tree")
