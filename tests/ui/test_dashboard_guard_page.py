"""The dashboard's guards (issue 29), through the whole app in AppTest:

- a forget empties the session's caches of memory text: a trace opened before a hard forget no longer shows the
  memory's text on the next run, on the Retrieval trace page and on the Feedback page (ui/forget_watch.py);
- read-only: no page offers a control that writes; only the buttons that read are left (an allowlist, so a new write
  button on any page fails here until it is hidden on a read-only store);
- the sign-in gate (ui/auth.py): with MEMLENS_DASHBOARD_TOKEN set no page runs before the right token is given; a
  dashboard bound beyond loopback without a token shows a refusal and nothing of the store.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apptest_helpers import ENTRY, ROOT, all_texts, app_engine, button, no_errors, open_page, values
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from engine import MemoryEngine, Settings
from ui.auth import is_loopback

SECRET = "Quillmore hides the spare key inside the green teapot"
TOKEN = "guard-token-5x9q-long-enough"


def test_a_trace_opened_before_a_hard_forget_loses_the_memorys_text_on_the_next_run(empty_app: MemoryEngine):
    engine = empty_app
    engine.admin.purges.grace_s = 0.5  # only this process reads the store: purge soon, not after the default 10 s
    secret = engine.items.remember("forgetful", SECRET)
    engine.items.remember("forgetful", "The spare key for the office is with the receptionist")
    trace = engine.retrieval.retrieve("forgetful", "where is the spare key")
    assert secret.id in trace.context_ids
    at = open_page("pages/retrieval.py", user="forgetful", state={"trace_current_id": trace.trace_id})
    no_errors(at)
    assert "green teapot" in all_texts(at)  # shown, and now in this session's trace cache
    at.switch_page(str(ROOT / "pages/feedback.py")).run()  # the Feedback page caches the trace too
    no_errors(at)
    assert "green teapot" in all_texts(at)

    # Another process (an agent over MCP, say) forgets it: nothing in this browser session knows.
    engine.forgetting.forget(
        "forgetful", "semantic", [secret.id], reason="asked to forget the key", mode="hard", actor="agent"
    )
    at.run()
    no_errors(at)
    assert "green teapot" not in all_texts(at) and "Quillmore" not in all_texts(at)
    at.switch_page(str(ROOT / "pages/retrieval.py")).run()
    no_errors(at)
    shown = all_texts(at)
    assert "green teapot" not in shown and "Quillmore" not in shown
    assert f"[forgotten memory {secret.id}]" in shown  # the tombstone in the assembled context
    assert any("forgotten since it was stored" in w for w in values(at, "warning"))
    engine.admin.purges.wait(60)


PAGES = (
    "pages/overview.py",
    "pages/sessions.py",
    "pages/working_memory.py",
    "pages/skills.py",
    "pages/retrieval.py",
    "pages/feedback.py",
    "pages/episodes.py",
    "pages/memories.py",
    "pages/evaluations.py",
)
# Buttons that only read or navigate. Anything else on a read-only page is a control that would write.
READING_BUTTONS = {
    "Make this the current session on every page",
    "Open by id",
    "Replay with these settings",
    "Retrieve this question again",
    "Open trace at Why not?",
    "Open both traces",
}


@pytest.fixture(scope="module")
def read_only_store(demo_store_template: Path, tmp_path_factory, embedder) -> Path:
    """A copy of the demo with its expectation set and one run of it (so the Evaluations page shows runs and cases,
    and the trace pages have traces), written before anything opens it read-only."""
    path = tmp_path_factory.mktemp("ui-read-only") / "store"
    shutil.copytree(demo_store_template, path)
    writer = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    writer.evals.load_demo()
    writer.close()
    return path


@pytest.mark.parametrize("page", PAGES)
def test_a_read_only_store_shows_no_control_that_writes(read_only_store: Path, page: str):
    with app_engine(read_only_store, MEMLENS_READ_ONLY="1") as engine:
        assert engine.read_only
        at = open_page(page)
        no_errors(at)
        writes = sorted({b.label for b in at.button} - READING_BUTTONS)
        assert not writes, f"{page} offers write buttons on a read-only store: {writes}"
        assert not [t for t in at.text_area if "JSON" in str(t.label) or "Memory text" in str(t.label)]
        assert any("Read-only store" in c for c in values(at, "caption")) or page in (
            "pages/sessions.py",  # its only write (pruning) is hidden with a caption below the session list
            "pages/evaluations.py",
        )


def test_an_empty_read_only_store_opens_without_loading_the_demo(tmp_path: Path, embedder):
    store = tmp_path / "empty"
    MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder).close()
    with app_engine(store, MEMLENS_READ_ONLY="1"):
        at = AppTest.from_file(str(ENTRY), default_timeout=60).run()  # a first visit: the demo check runs
        no_errors(at)  # was: "The memory store could not be used: ... read-only" from the demo load
        assert "Overview" in values(at, "title")
        assert not at.button and any("Read-only store" in c for c in values(at, "caption"))


def test_without_the_token_no_page_runs_and_the_right_token_opens_it(empty_app: MemoryEngine, monkeypatch):
    monkeypatch.setenv("MEMLENS_DASHBOARD_TOKEN", TOKEN)
    at = open_page("pages/memories.py")
    no_errors(at)
    assert "Memories & forgetting" not in values(at, "title")
    assert [b.label for b in at.button] == ["Sign in"]  # the form, nothing else: no page, no sidebar picker
    assert not at.sidebar.selectbox
    at.text_input(key="app_sign_in_token").input("guard-token-5x9q-long-enougX")
    button(at, "Sign in").click().run()
    assert "Wrong token." in values(at, "error")
    assert "Memories & forgetting" not in values(at, "title")
    at.text_input(key="app_sign_in_token").input(TOKEN)
    button(at, "Sign in").click().run()
    no_errors(at)
    assert "Memories & forgetting" in values(at, "title")
    at.run()  # signed in for the rest of the browser session
    assert "Memories & forgetting" in values(at, "title")


@pytest.mark.parametrize("token", ["", "short-token"])
def test_a_dashboard_bound_beyond_loopback_without_a_real_token_shows_nothing(
    empty_app: MemoryEngine, monkeypatch, token: str
):
    monkeypatch.setenv("MEMLENS_DASHBOARD_TOKEN", token)
    st_config.set_option("server.address", "0.0.0.0")
    try:
        at = open_page("pages/overview.py")
    finally:
        st_config.set_option("server.address", None)
    assert any("MEMLENS_DASHBOARD_TOKEN" in e and "0.0.0.0" in e for e in values(at, "error"))
    assert not values(at, "title") and not at.button and not at.sidebar.selectbox


def test_a_dashboard_bound_beyond_loopback_with_a_token_asks_for_it(empty_app: MemoryEngine, monkeypatch):
    monkeypatch.setenv("MEMLENS_DASHBOARD_TOKEN", TOKEN)
    st_config.set_option("server.address", "0.0.0.0")
    try:
        at = open_page("pages/overview.py")
        assert [b.label for b in at.button] == ["Sign in"] and not values(at, "error")
        at.text_input(key="app_sign_in_token").input(TOKEN)
        button(at, "Sign in").click().run()
    finally:
        st_config.set_option("server.address", None)
    no_errors(at)
    assert "Overview" in values(at, "title")


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        (None, False),
        ("", False),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("dashboard.example", False),
    ],
)
def test_loopback_addresses(address: str | None, loopback: bool):
    assert is_loopback(address) is loopback
