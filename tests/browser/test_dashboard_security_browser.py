"""The dashboard closed by default and forgetting on screen (issue 29), on a real `streamlit run app.py` server.

The server is started as the README starts it (no --server.address: .streamlit/config.toml decides) with
MEMLENS_DASHBOARD_TOKEN set, over a small store of its own: one user, a memory holding a secret and a stored trace that
put it in the context.

- It listens on 127.0.0.1 only (read from the kernel's socket tables, /proc/net/tcp and tcp6).
- In Chromium: a deep link shows the sign-in form and nothing of the store until the token is given; then the trace
  shows the secret; the secret is hard-forgotten on the Memories page in the same browser session, and back on the
  trace its text is gone (not in the page's HTML at all) and its tombstone shows. Before ui/forget_watch.py the page
  kept showing the text from its session cache of traces.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import pytest
from browser_helpers import click_tab, rerun, run_streamlit, settle
from playwright.sync_api import expect

from engine import MemoryEngine, Settings

pytestmark = pytest.mark.browser

TOKEN = "browser-token-7k2m-not-a-guess"
USER = "vault"
SECRET = "Quillmore hides the spare key inside the green teapot"
SECRET_WORDS = ("Quillmore", "green teapot")


@pytest.fixture(scope="module")
def vault(tmp_path_factory, embedder) -> tuple[Path, str, str]:
    """The server's store: (path, the secret memory's id, the id of a trace whose context holds it)."""
    path = tmp_path_factory.mktemp("vault") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.sessions.add_message(USER, "vault-s1", "user", "Where did we leave the spare key?")
    secret = engine.items.remember(USER, SECRET, category="home")
    engine.items.remember(USER, "The spare key for the office is with the receptionist", category="office")
    trace = engine.retrieval.retrieve(USER, "where is the spare key", session_id="vault-s1")
    assert secret.id in trace.context_ids
    engine.close()
    return path, secret.id, trace.trace_id


@pytest.fixture(scope="module")
def guarded_url(vault, tmp_path_factory):
    with run_streamlit(
        vault[0],
        tmp_path_factory.mktemp("guarded-log") / "server.log",
        {"MEMLENS_DASHBOARD_TOKEN": TOKEN},
        address=None,  # as the README runs it: the address comes from .streamlit/config.toml
    ) as url:
        yield url


def listening_addresses(port: int) -> set[str]:
    """The local addresses of every TCP socket listening on ``port``, from the kernel's tables."""
    found = set()
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            host, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(host)
            # the kernel prints each 32-bit word in host byte order (little-endian here)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
            found.add(str(ipaddress.ip_address(raw)))
    return found


def test_the_dashboard_listens_on_loopback_only(guarded_url: str):
    port = int(guarded_url.rsplit(":", 1)[1])
    assert listening_addresses(port) == {"127.0.0.1"}
    # and another of this machine's addresses is refused, when it has one
    outside = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"}
    for address in sorted(a for a in outside if not ipaddress.ip_address(a).is_loopback):
        with pytest.raises(OSError), socket.create_connection((address, port), timeout=2):
            pass


def test_sign_in_then_a_hard_forget_removes_the_memorys_text_from_the_open_trace(page, guarded_url, vault, screenshot):
    _, secret_id, trace_id = vault
    page.goto(f"{guarded_url}/retrieval?trace={trace_id}", wait_until="domcontentloaded")
    token_box = page.get_by_label("Dashboard token")
    token_box.wait_for(timeout=120_000)
    settle(page, started=True)
    expect(page.get_by_role("heading", name="Retrieval trace", exact=True)).to_have_count(0)
    expect(page.get_by_role("link", name="Overview", exact=True)).to_have_count(0)  # not even the page titles
    assert USER not in page.content() and "spare key" not in page.content()  # nothing of the store before sign-in
    screenshot("guard_sign_in")
    token_box.fill("browser-token-7k2m-not-a-gues")
    with rerun(page):
        page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Wrong token.")).to_be_visible()
    token_box.fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Retrieval trace", exact=True).wait_for(timeout=180_000)  # the model loads
    settle(page, started=True)
    expect(page.get_by_role("combobox", name="User")).to_have_value(USER)
    assert "green teapot" in page.content()  # the trace shows the secret (label picker, context, tables)

    # Forget it, hard, on the Memories page: the same browser session, reached through the navigation.
    with rerun(page):
        page.get_by_role("navigation").get_by_role("link", name="Memories & forgetting", exact=True).click()
    page.get_by_role("heading", name="Memories & forgetting", exact=True).wait_for()
    click_tab(page, "Forget")
    ids_box = page.get_by_role("textbox", name="Other semantic items by id (comma-separated)")
    ids_box.fill(secret_id)
    with rerun(page):
        ids_box.press("Enter")
    panel = page.get_by_role("tabpanel", name="Forget", exact=True)
    expect(panel.get_by_text("Preview: 1 semantic items selected")).to_be_visible()
    page.get_by_text("hard: delete everywhere (cannot be undone)").click()
    page.get_by_role("textbox", name="Reason (required, kept in the forget log)").fill("the key was moved")
    page.get_by_text("I have checked the preview above").click()
    with rerun(page):
        page.get_by_role("button", name="Forget 1 semantic items").click()
    expect(page.get_by_text("Forgot 1 semantic item (hard)", exact=False)).to_be_visible()

    # Back on the trace: the open trace (kept in this session) without the text, with its tombstone.
    with rerun(page):
        page.get_by_role("navigation").get_by_role("link", name="Retrieval trace", exact=True).click()
    page.get_by_role("heading", name="Retrieval trace", exact=True).wait_for()
    settle(page)
    expect(page.get_by_text(trace_id, exact=False).first).to_be_attached()  # the trace is drawn
    html = page.content()
    for words in SECRET_WORDS:
        assert words not in html, f"{words!r} still on the page after a hard forget"
    expect(page.get_by_text("forgotten since it was stored", exact=False)).to_be_visible()
    click_tab(page, "Context")
    expect(page.get_by_text(f"[forgotten memory {secret_id}]", exact=False).first).to_be_visible()
    screenshot("guard_trace_after_forget")
