"""An hour of labelling, compressed, in Chromium (issue 32, deliver 1): two labellers each give their name once and
label 15 memories from the Feedback page's queue by keyboard alone (30 labels; a skip and an undo on the way), the
Agreement tab shows their counts and Cohen's kappa, the labels download as JSONL and become an expectation set in
one step, and the Evaluations page runs that set.

A user of its own (``zz-labels``) on the shared server's store: its facts and agent traces are written before the
page opens, so what the queue holds is known. Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_helpers import click_tab, open_page, rerun, settle
from playwright.sync_api import expect

from engine import MemoryEngine, Settings

pytestmark = pytest.mark.browser

USER = "zz-labels"
FACTS = [
    "The greenhouse vents open at 24 degrees.",
    "The greenhouse heater runs on propane.",
    "The propane tank is refilled every March.",
    "Tomato seedlings go into the greenhouse in April.",
    "The greenhouse door sticks when it rains.",
    "The watering timer in the greenhouse runs at 6 am.",
    "The greenhouse thermometer hangs by the door.",
    "Cucumbers grow on the greenhouse's north wall.",
]
QUESTIONS = [
    "When do the greenhouse vents open?",
    "What does the greenhouse heater run on?",
    "When is the watering timer in the greenhouse?",
    "Where does the greenhouse thermometer hang?",
]
# What each labeller presses on the first 15 memories of the queue (the same 15: each sees what they left).
ANA = "u" * 10 + "h" * 5
BEN = "u" * 8 + "h" * 2 + "h" * 4 + "u"
# Agreed on 8 useful + 4 harmful = 12 of 15; Ana said useful 10 times, Ben 9, so chance agreement is
# 10/15 * 9/15 + 5/15 * 6/15 = 120/225 and kappa = (12/15 - 120/225) / (1 - 120/225) = 60/105 = 0.57.
KAPPA = "0.57 (moderate)"


@pytest.fixture(scope="module")
def queue_size(server_store: Path, embedder) -> int:
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(server_store), lock_timeout_s=60), embedder=embedder
    )
    try:
        for fact in FACTS:
            engine.items.remember(USER, fact, "garden")
        for question in QUESTIONS:
            engine.retrieval.retrieve(USER, question)
        size = len(engine.feedback.queue(USER, "ana"))
        assert size > 15, size  # room to move on after the 15th
        return size
    finally:
        engine.close()  # the server's process takes the store over


def name_yourself(page, name: str) -> None:
    page.get_by_role("textbox", name=re.compile("Your name as labeller")).fill(name)
    with rerun(page):
        page.get_by_role("button", name="Start labelling").click()
    expect(page.get_by_text(f"Labelling as {name}")).to_be_visible()


def press(page, key: str) -> None:
    with rerun(page):
        page.keyboard.press(key)


def label_by_keyboard(page, keys: str, total: int) -> None:
    for n, key in enumerate(keys, 1):
        press(page, key)
        expect(page.get_by_text(f"{n + 1} of {total}", exact=True)).to_be_visible()


def test_two_labellers_label_the_queue_by_keyboard_then_agree_export_and_evaluate(
    page, app_url: str, queue_size: int, screenshot, tmp_path: Path
):
    open_page(page, app_url, f"feedback?user={USER}", "Feedback labelling")
    name_yourself(page, "ana")
    expect(page.get_by_text(f"1 of {queue_size}", exact=True)).to_be_visible()
    screenshot("labelling_queue")
    press(page, "s")  # skip the first one, then take the skip back
    expect(page.get_by_text(f"2 of {queue_size}", exact=True)).to_be_visible()
    press(page, "z")
    expect(page.get_by_text(f"1 of {queue_size}", exact=True)).to_be_visible()
    label_by_keyboard(page, ANA, queue_size)
    press(page, "ArrowLeft")  # back to the last one labelled: it shows Ana's label
    expect(page.get_by_text(f"15 of {queue_size}", exact=True)).to_be_visible()
    expect(page.get_by_text("your label: harmful")).to_be_visible()

    with rerun(page):
        page.get_by_role("button", name="Change labeller").click()
    name_yourself(page, "ben")
    expect(page.get_by_text(f"1 of {queue_size}", exact=True)).to_be_visible()  # Ben's own queue
    label_by_keyboard(page, BEN, queue_size)

    click_tab(page, "Agreement and export")
    expect(page.get_by_text(f"ana and ben: agreed on 12 of 15 shared items; Cohen's kappa {KAPPA}")).to_be_visible()
    screenshot("labelling_agreement")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download 30 labels as JSONL").click()
    saved = tmp_path / "labels.jsonl"
    download.value.save_as(saved)
    rows = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 30 and {r["labeller"] for r in rows} == {"ana", "ben"}

    page.get_by_role("textbox", name="Expectation set").fill("zz-labels-set")
    with rerun(page):
        page.get_by_role("button", name="Make the expectation set").click()
    expect(page.get_by_text(re.compile(r"^Set zz-labels-set holds \d+ cases? from these labels\.$"))).to_be_visible()

    page.get_by_role("link", name="Run it on the Evaluations page").click()
    page.get_by_role("heading", name="Evaluations", exact=True).wait_for(timeout=120_000)
    settle(page, started=True)
    expect(page.get_by_role("combobox", name="Expectation set")).to_have_value(re.compile("^zz-labels-set"))
    with rerun(page):
        page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_text(re.compile(r"^Run \S+ finished: \d+ cases?\.$"))).to_be_visible()
    screenshot("labelling_set_evaluated")
