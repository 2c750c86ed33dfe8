"""The Maintenance page in Chromium (issue 30), on a dashboard of its own over a small store: Noor said two things in
session ``garden`` and recorded two successful episodes.

- the preview lists each step's planned changes (the memories the messages would become, linked to their messages;
  the insights) and writes nothing;
- applying writes exactly those, the audit log shows every change, and a deep link to the run shows only its rows;
- a planned memory's message link lands on the Sessions page at that message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import rerun, run_streamlit, settle
from playwright.sync_api import Page, expect

from engine import MemoryEngine, Settings

pytestmark = pytest.mark.browser

USER, SESSION = "noor", "garden"
SAID = ("I water the ferns every Sunday.", "Noted: ferns on Sundays.")
STEPS = [{"observation": "leaves yellow", "action": "check the soil"}, {"action": "water less"}]


@pytest.fixture(scope="module")
def maintenance_server(tmp_path_factory, embedder) -> Iterator[tuple[str, Path]]:
    path = tmp_path_factory.mktemp("maintenance-browser") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.sessions.add_message(USER, SESSION, "user", SAID[0])
    engine.sessions.add_message(USER, SESSION, "assistant", SAID[1])
    for _ in range(2):
        engine.episodes.record(USER, STEPS, outcome="success")
    engine.close()
    with run_streamlit(path, tmp_path_factory.mktemp("maintenance-log") / "server.log") as url:
        yield url, path


def open_maintenance(page: Page, url: str, query: str) -> None:
    page.goto(f"{url}/maintenance?{query}", wait_until="domcontentloaded")
    page.get_by_role("heading", name="Maintenance", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)


def reader(path: Path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)


def test_preview_shows_the_planned_changes_then_apply_writes_them_and_the_log_shows_them(
    page, maintenance_server, embedder, screenshot
):
    url, path = maintenance_server
    open_maintenance(page, url, f"user={USER}")
    expect(page.get_by_text("No maintenance has been applied for noor yet", exact=False)).to_be_visible()

    with rerun(page):
        page.get_by_role("button", name="Preview the cycle").click()
    expect(page.get_by_role("heading", name="Preview · 5 changes")).to_be_visible()
    expect(page.get_by_text("1 · Consolidate sessions — 3 changes")).to_be_visible()
    expect(page.get_by_text("2 · Reflect on recent episodes — 2 changes")).to_be_visible()
    for text in SAID:
        expect(page.get_by_text(text, exact=True)).to_be_visible()  # the memories the messages would become
    expect(page.get_by_role("link", name=f"{SESSION} · message #1")).to_be_visible()
    screenshot("maintenance_preview")
    e = reader(path, embedder)
    assert e.items.list_items(USER).total == 0 and e.maintenance.log(USER) == []  # the preview wrote nothing
    e.close()

    with rerun(page):
        page.get_by_role("button", name="Apply these 5 changes").click()
    expect(page.get_by_text("Applied 5 changes (run run_", exact=False)).to_be_visible()
    e = reader(path, embedder)
    assert {i.content for i in e.items.list_items(USER, category="general").rows} == set(SAID)
    log = e.maintenance.log(USER)
    e.close()
    assert len(log) == 5 and {x.actor for x in log} == {"dashboard"}
    run_id = log[0].run_id
    grid = page.locator("[data-testid='stDataFrame']")
    expect(grid).to_be_visible()
    expect(page.get_by_text("5 changes, newest first")).to_be_visible()
    assert f"maintenance_run={run_id}" in page.url  # the applied run, shareable
    screenshot("maintenance_applied_log")

    with rerun(page):
        page.get_by_role("button", name="Preview the cycle").click()
    expect(page.get_by_text("Nothing to do: the memory is maintained.")).to_be_visible()


def test_a_deep_link_to_a_run_filters_the_log_and_a_planned_memory_links_to_its_message(
    page, maintenance_server, embedder
):
    url, path = maintenance_server
    open_maintenance(page, url, f"user={USER}&maintenance_run=run_0000000000000000")
    expect(page.get_by_text("No applied maintenance changes for this run.")).to_be_visible()
    expect(page.get_by_role("textbox", name="Only the run")).to_have_value("run_0000000000000000")

    e = reader(path, embedder)
    e.sessions.add_message(USER, SESSION, "user", "The basil needs more sun.")  # message #3, not consolidated yet
    e.close()
    with rerun(page):
        page.get_by_role("button", name="Preview the cycle").click()
    expect(page.get_by_text("The basil needs more sun.", exact=True)).to_be_visible()
    link = page.get_by_role("link", name=f"{SESSION} · message #3")
    expect(link).to_be_visible()
    link.click()
    page.get_by_role("heading", name="Sessions", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    expect(page.locator(".st-key-sessions_linked_message")).to_contain_text("The basil needs more sun.")
    assert "message=3" in page.url
