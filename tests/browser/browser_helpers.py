"""Helpers for the browser tests: the lab user's seed data, waiting for Streamlit, sidebar picks, screenshots."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from engine import MemoryEngine

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
LAB_USER = "zz-lab"  # sorts after the demo users, so the sidebar still opens on the demo's first user
LAB_SESSION = "lab-s1"
HOSTILE = "<script>alert(1)</script> **bold** [link](http://x)"
MAX_SHOT_HEIGHT = 8000
SERVER_ENV_DROP = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMLENS_EMBEDDER",
    "MEMLENS_CHAT_MODEL",
    "MEMLENS_EMBEDDING_MODEL",
)
STARTUP_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def run_streamlit(
    store: Path | str, log_path: Path, extra_env: dict[str, str] | None = None, address: str | None = "127.0.0.1"
) -> Iterator[str]:
    """Start `streamlit run app.py` on a free loopback port, wait for /_stcore/health, yield the URL, stop it.
    ``store`` is a folder or a team store's DSN; ``extra_env`` adds variables (a team store's MEMLENS_VECTORS);
    ``address=None`` passes no --server.address, as the README's `streamlit run app.py` does."""
    flags = [*(["--server.address", address] if address is not None else []), *TEST_SERVER_FLAGS]
    with streamlit_process(store, log_path, extra_env, flags) as (url, _pid):
        yield url


# What the suite's servers add to the README's command: no usage statistics, no file watching (a test edits no page).
TEST_SERVER_FLAGS = ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]


@contextmanager
def streamlit_process(
    store: Path | str, log_path: Path, extra_env: dict[str, str] | None = None, flags: list[str] | None = None
) -> Iterator[tuple[str, int]]:
    """`streamlit run app.py --server.headless true --server.port <free>` plus ``flags``; yields (URL, pid) once
    /_stcore/health answers, and kills the server's process group after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV_DROP}
    env["MEMLENS_STORE"] = str(store)
    env.update(extra_env or {})
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                *(flags or []),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"streamlit did not answer /_stcore/health in {STARTUP_TIMEOUT_S}s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.2)
        yield url, proc.pid
    finally:
        # The server runs in its own process group (start_new_session): end exactly that group. Killed, not stopped:
        # a clean stop checkpoints the store (10-17 s after a demo load on a busy machine) that no one opens again.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)


def seed_lab_user(engine: MemoryEngine) -> None:
    """A small user for tests that write (edit, forget, record, reflect), including stored markup."""
    u = LAB_USER
    engine.sessions.add_message(u, LAB_SESSION, "user", "Please plan the lab cleanup for Friday.")
    engine.sessions.add_message(u, LAB_SESSION, "assistant", "I will list the benches and the order of the work.")
    engine.working.update(u, LAB_SESSION, {"goals": ["plan the lab cleanup"], "bench_count": 6})
    engine.items.remember_many(
        [
            {"user_id": u, "content": "The lab printer is on the second floor.", "category": "lab"},
            {"user_id": u, "content": "Bench 4 has a broken gas tap.", "category": "lab"},
            {"user_id": u, "content": f"{HOSTILE} {'w' * 5000}", "category": "lab"},
            # another category: a filter that fell back to "all categories" shows one memory more than "lab"
            {"user_id": u, "content": "The coffee machine is in room 2.", "category": "kitchen"},
        ]
    )
    steps = [{"observation": "bench 4 smells of gas", "action": "close the main valve", "result": "smell gone"}]
    engine.episodes.record(u, steps, summary="Closed the gas on bench 4", outcome="success", session_id=LAB_SESSION)
    engine.episodes.record(
        u, [{"observation": "printer jammed", "action": "open the tray", "result": "still jammed"}], outcome="failure"
    )
    engine.episodes.record(
        u, [{"observation": HOSTILE, "action": "note it", "result": "noted"}], summary=HOSTILE, outcome="success"
    )
    skill = engine.skills.register(u, "bench-checklist", "1. gas 2. power 3. water", description="Bench safety check")
    for success in (True, True, False):
        engine.skills.report_outcome(u, skill.id, success)


# A script run can take long on a loaded machine (the Overview's first run imports the ML stack): a wait for a run to
# end gives it this long, where a wait for an element only gets expect()'s timeout.
RUN_TIMEOUT_MS = 180_000
# How long a wait for an action's run to *start* lasts before it falls back to waiting for rest (see settle()).
RUN_START_MS = 45_000

# Installed in every page before Streamlit's own scripts (``page`` fixture): counts the script runs the page has
# seen start. The app root's data-test-script-state turns to "running" (or "rerunRequested") at the start of every
# run and back to "notRunning" at its end; a MutationObserver sees every change, however short the run.
RUN_COUNTER_SCRIPT = """
window.__memlensRunStarts = 0;
const busy = (state) => state === 'running' || state === 'rerunRequested';
new MutationObserver((records) => {
  for (const r of records) {
    if (busy(r.target.getAttribute('data-test-script-state')) && !busy(r.oldValue)) window.__memlensRunStarts += 1;
  }
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""
RUN_IS_OVER = (
    "document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
    " === 'notRunning' && !document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
)


def script_runs_started(page: Page) -> int:
    """How many script runs this page has seen start (see RUN_COUNTER_SCRIPT)."""
    return int(page.evaluate("window.__memlensRunStarts || 0"))


def settle(page: Page, *, runs_before: int | None = None, started: bool = False) -> None:
    """Wait until the script run is over and no element is stale (what a person sees is final).

    With ``runs_before`` (``script_runs_started`` taken before an action that reruns the script), first wait for
    that rerun to start, however long the server takes to begin it (``rerun()`` does this around an action). With
    ``started``, the caller has seen something only that run draws (a page's title after a load or a page change), so
    it has started. Without either, give a run 300 ms to start: only for an action that may start no run at all.
    """
    if runs_before is not None:
        try:
            page.wait_for_function(f"(window.__memlensRunStarts || 0) > {int(runs_before)}", timeout=RUN_START_MS)
        except PlaywrightTimeout:
            # Seen only in full parallel runs, with the page showing the action's result (the URL of the tab it
            # opened, the session it filtered to): the start was not counted, the run itself happened. What the test
            # asserts next (expect() waits for it) still decides; only the wait for the start gives up.
            print(f"settle: no new script run seen after {RUN_START_MS} ms; waiting for rest instead", file=sys.stderr)
    elif not started:
        page.wait_for_timeout(300)
    page.wait_for_function(RUN_IS_OVER, timeout=RUN_TIMEOUT_MS)
    page.wait_for_function("!document.querySelector('[data-stale=\"true\"]')", timeout=30_000)


@contextmanager
def rerun(page: Page) -> Iterator[None]:
    """``with rerun(page): <click a widget>``: on leaving, wait until the script run the action caused has started
    and finished, instead of guessing how long the server needs to start it.

    The action waits for the page to be at rest first: a widget changed while a run is still going (the second run
    of an ``st.rerun()``, say) makes the server restart that run, and the root's state stays "running" throughout,
    so no new start is ever seen (a Browse tab clicked right after a forget waited 180 s for one)."""
    page.wait_for_function(RUN_IS_OVER, timeout=RUN_TIMEOUT_MS)
    before = script_runs_started(page)
    yield
    settle(page, runs_before=before)


def open_page(page: Page, app_url: str, path: str, title: str) -> None:
    """Open a dashboard page by URL (``""`` is the Overview) and wait until its title is shown."""
    page.goto(f"{app_url}/{path}", wait_until="domcontentloaded")
    page.get_by_role("heading", name=title, exact=True).wait_for(timeout=120_000)  # first load: model import
    settle(page, started=True)


def pick_user(page: Page, user: str) -> None:
    """Choose the user in the sidebar's User selectbox."""
    pick_option(page, "User", user)


def pick_option(page: Page, label: str, value: str) -> None:
    """Choose ``value`` in the (first) selectbox labelled ``label``; picking reruns the page."""
    combo = page.get_by_role("combobox", name=label).first
    for _ in range(3):  # a rerun that lands while the list is open closes it again
        if combo.input_value() == value:
            break
        page.wait_for_function(RUN_IS_OVER, timeout=RUN_TIMEOUT_MS)  # at rest, or the pick's run is never seen
        combo.click()
        before = script_runs_started(page)
        try:
            page.get_by_role("option", name=value, exact=True).click(timeout=5_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            settle(page)
        else:
            settle(page, runs_before=before)
    expect(combo).to_have_value(value)


# True once stMain's height has stayed the same for ``need`` polls in a row and no element still waits to be drawn:
# tables, tabs, code blocks and charts draw after the script run ends (some load their code lazily, showing a
# skeleton meanwhile). The count lives in the page; ``save_screenshot`` resets it.
STEADY_HEIGHT = """need => {
  const m = document.querySelector('[data-testid="stMain"]');
  const h = m ? m.scrollHeight : document.documentElement.scrollHeight;
  const s = window.__memlensHeight || {h: -1, n: 0};
  s.n = s.h === h && !document.querySelector('[data-testid="stSkeleton"]') ? s.n + 1 : 0;
  s.h = h;
  window.__memlensHeight = s;
  return s.n >= need ? h : 0;
}"""
STEADY_POLL_MS = 100
STEADY_WAIT_MS = 5_000  # a page that never settles (a moving bar) is shot as it is after this long


def _steady_height(page: Page, need: int) -> int:
    """stMain's height once it has held for ``need`` polls of STEADY_POLL_MS (see STEADY_HEIGHT)."""
    page.evaluate("window.__memlensHeight = undefined")
    try:
        steady = page.wait_for_function(STEADY_HEIGHT, arg=need, polling=STEADY_POLL_MS, timeout=STEADY_WAIT_MS)
        return int(steady.json_value())
    except PlaywrightTimeout:
        return int(page.evaluate("window.__memlensHeight.h"))


def save_screenshot(page: Page, name: str) -> Path:
    """The whole page: Streamlit scrolls inside its main section, so grow the viewport to its height first (once the
    height holds still), and shoot once the page has been laid out at that size."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
    size = page.viewport_size or {"width": 1400, "height": 1000}
    height = _steady_height(page, 4)
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(height, MAX_SHOT_HEIGHT))})
    _steady_height(page, 2)  # a frame or two at the new size: the newly visible part drawn
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path


def no_markup_rendered(page: Page) -> None:
    """Stored markup must not have become HTML: no link to http://x, no bold 'bold', no alert dialog."""
    assert page.locator("a[href='http://x']").count() == 0
    assert page.locator("[data-testid='stMain'] strong", has_text=re.compile(r"^bold$")).count() == 0
    assert page.evaluate("() => [...document.scripts].some(s => s.textContent.includes('alert(1)'))") is False
    assert not getattr(page, "dialogs", []), "an alert() ran"


def grid_cells(page: Page, text: str):
    """Dataframe cells whose text is exactly ``text`` (the grid is a canvas; it mirrors cells in a hidden table)."""
    return page.locator("[data-testid='stDataFrame'] td", has_text=re.compile(rf"^{re.escape(text)}$"))


def click_tab(page: Page, name: str) -> None:
    """Open the tab ``name`` and wait for the run it starts (tabs are stateful: the server reruns on a change), so
    the next click does not land in a page that is about to redraw. An already open tab starts no run."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.get_attribute("aria-selected") != "true":
        with rerun(page):
            tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
