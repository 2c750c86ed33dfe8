"""What a new user's run found in Chromium (issue 32), on a dashboard started the way the README starts it (no
`--server.fileWatcherType` flag, so the app's own .streamlit/config.toml decides) over its own copy of the demo:

- the dashboard watches no files: with a virtualenv inside the repository, Streamlit's default watching printed ~80
  "Inotify queue overflowed" lines per click;
- the Forget tab's id box is empty after a forget (it kept showing, and sending back, the forgotten ids).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import click_tab, open_page, pick_user, rerun, streamlit_process
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
ID_BOX = "Other semantic items by id (comma-separated)"


@pytest.fixture(scope="module")
def own_server(demo_store_template: Path, tmp_path_factory) -> Iterator[tuple[str, int, Path]]:
    """`streamlit run app.py` with only the README's flags (headless and a free port for the test) on a store of this
    module's own; yields the URL, the server's pid and its log."""
    store = tmp_path_factory.mktemp("fixes-store") / "store"
    shutil.copytree(demo_store_template, store)
    log_path = tmp_path_factory.mktemp("fixes-log") / "server.log"
    with streamlit_process(store, log_path) as (url, pid):  # no test flags: the config's own file watching
        yield url, pid, log_path


def inotify_watches(pid: int) -> int:
    """The inotify watches a process holds (each folder watched is one ``inotify wd:`` line of its inotify fds)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                count += sum(1 for line in info if line.startswith("inotify"))
        except OSError:  # an fd closed meanwhile
            continue
    return count


def test_the_dashboard_watches_no_folder(page, own_server):
    url, pid, log = own_server
    open_page(page, url, "memories", "Memories & forgetting")  # a session has run a page: watching would be set up
    # Streamlit's default ("auto") watched the app's folder tree: dozens of this repository's folders, and every
    # folder of a virtualenv created inside it.
    assert inotify_watches(pid) == 0
    assert "Inotify" not in log.read_text(errors="replace")


def test_the_forget_id_box_is_empty_after_a_forget(page, own_server):
    url, _, _ = own_server
    open_page(page, url, "memories", "Memories & forgetting")
    pick_user(page, "ada")
    click_tab(page, "Forget")
    box = page.get_by_role("textbox", name=ID_BOX)
    with rerun(page):
        box.fill("ada-item-010")
        box.press("Enter")
    page.get_by_role("textbox", name="Reason (required, kept in the forget log)").fill("a test forgets it")
    page.get_by_text("I have checked the preview above").click()
    with rerun(page):
        page.get_by_role("button", name="Forget 1 semantic items").click()
    expect(page.get_by_text("Forgot 1 semantic item (soft)", exact=False)).to_be_visible()
    expect(box).to_have_value("")  # before: still "ada-item-010", sent back with the next click
    expect(page.get_by_text("Pick what to forget to see a preview.")).to_be_visible()
