"""The dashboard on a team store (issue 19): `streamlit run app.py` with MEMLENS_STORE=postgresql://... and
MEMLENS_VECTORS=s3://... on the real PostgreSQL and S3-compatible servers of the test session (127.0.0.1), holding
a copy of the demo store (copy-store). A person sees the store's DSN with its password masked (never the password),
the demo's sessions listed, and a retrieval that stores its trace in the team store.

This module has its own Streamlit server (the session's shared one is on a folder store), started and stopped within
the module.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_helpers import open_page, pick_user, rerun, run_streamlit, settle
from playwright.sync_api import expect

from engine import MemoryEngine, Settings
from engine.store.copy import copy_store

pytestmark = [pytest.mark.browser, pytest.mark.team_store]

ROOT = Path(__file__).resolve().parents[2]
QUESTION = json.loads((ROOT / "data" / "demo" / "two_hop.json").read_text())[0]
PASSWORD = "dashboard-pw-9q7x-never-shown"


@pytest.fixture(scope="module")
def team_store(team_servers, demo_store_template: Path):
    """A team store holding a copy of the demo; its DSN carries a password (the embedded server trusts local logins,
    so it is accepted and ignored), which no page may show."""
    dsn, vectors = team_servers.fresh("dashboard")
    secret_dsn = dsn.replace("postgresql://postgres:@", f"postgresql://postgres:{PASSWORD}@", 1)
    assert PASSWORD in secret_dsn
    copy_store(str(demo_store_template), secret_dsn, destination_vectors=vectors, settings=Settings.from_env({}))
    yield secret_dsn, vectors
    team_servers.drop(secret_dsn)


@pytest.fixture(scope="module")
def team_app_url(team_store, team_servers, tmp_path_factory):
    dsn, vectors = team_store
    log = tmp_path_factory.mktemp("team-streamlit-log") / "server.log"
    with run_streamlit(dsn, log, {"MEMLENS_VECTORS": vectors, **team_servers.aws_environ()}) as url:
        yield url


@pytest.fixture(scope="module")
def reader(team_store, embedder):
    """A second engine on the same team store, read-only, to check what the dashboard wrote."""
    dsn, vectors = team_store
    return MemoryEngine.open(dsn, Settings.from_env({}, read_only=True), embedder=embedder, vectors=vectors)


def no_password_on(page) -> None:
    assert PASSWORD not in page.content()


def test_the_overview_shows_the_team_store_with_its_password_masked(page, team_app_url, screenshot):
    open_page(page, team_app_url, "", "Overview")
    expect(page.get_by_text("Team store · tables on PostgreSQL", exact=False)).to_be_visible()
    masked = page.locator("[data-testid='stCode']", has_text="postgresql://postgres:***@")
    expect(masked.first).to_be_visible()
    expect(masked.first).to_contain_text("vectors s3://")
    users = page.locator("[data-testid='stMetric']", has_text="Users").locator("[data-testid='stMetricValue']")
    assert int(users.inner_text()) >= 3  # the demo's users, read from PostgreSQL
    sidebar = page.locator("[data-testid='stSidebar']")
    expect(sidebar.get_by_text("postgresql://postgres:***@", exact=False)).to_be_visible()
    no_password_on(page)
    screenshot("team_store_overview")


def test_the_sessions_page_lists_the_team_store_s_sessions(page, team_app_url, screenshot):
    open_page(page, team_app_url, "sessions", "Sessions")
    expect(page.get_by_text("sessions 1–6 of 6")).to_be_visible()  # ada's sessions, the sidebar user
    search = page.get_by_role("textbox", name="Search", exact=True)
    search.fill("JPY")
    with rerun(page):
        search.press("Enter")
    expect(page.get_by_text("sessions 1–1 of 1")).to_be_visible()
    expect(page.get_by_text("New bug: JPY refunds show a decimal in the dashboard, like ¥1200.0.")).to_be_visible()
    no_password_on(page)
    screenshot("team_store_sessions")


def test_a_retrieval_on_the_team_store_shows_and_stores_its_trace(page, team_app_url, reader, screenshot):
    user = QUESTION["user_id"]
    before = reader.traces.list_traces(user).total
    page.goto(team_app_url, wait_until="domcontentloaded")
    page.get_by_role("link", name=re.compile("Retrieval trace")).first.click(timeout=120_000)
    page.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    pick_user(page, user)
    page.get_by_role("textbox", name="Question", exact=True).fill(QUESTION["question"])
    with rerun(page):
        page.get_by_role("button", name="Retrieve").click()
    page.get_by_role("heading", name="Hop 1", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    code_blocks = page.locator("[data-testid='stCode'] code")
    expect(code_blocks.filter(has_text=QUESTION["question"]).first).to_be_visible(timeout=60_000)
    no_password_on(page)
    screenshot("team_store_retrieval")
    traces = reader.traces.list_traces(user)
    assert traces.total == before + 1  # stored in PostgreSQL, seen by another engine
    assert traces.rows[0]["question"] == QUESTION["question"]
    assert reader.traces.get(traces.rows[0]["trace_id"]).context  # the whole trace reads back
