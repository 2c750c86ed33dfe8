"""Stored text is shown as text on every page: no HTML, no markdown (bold, links), no truncation of long lines.

A hostile user's memory holds ``<script>``, markdown and a 5,000-character line in every kind of stored text. Each
page must show the raw text through plain-text elements and never hand it unescaped to anything that renders
markdown (element bodies, widget labels, pill options).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_helpers import app_engine, markdown_texts, no_errors, open_page, plain_texts

from engine import MemoryEngine, Settings

SCRIPT = "<script>alert(1)</script>"
MARKDOWN = "**bold** [link](http://x)"
LONG_LINE = "w" * 5000
HOSTILE = f"{SCRIPT} {MARKDOWN} {LONG_LINE}"
SHORT = f"{SCRIPT} {MARKDOWN}"
USER, SESSION = "mallory", "s1"
RAW_MARKUP = ("<script>", "**bold**", "[link](http://x)")


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.sessions.add_message(USER, SESSION, "user", HOSTILE)
    engine.sessions.add_message(USER, SESSION, "tool_result", SHORT)
    engine.working.update(USER, SESSION, {"goals": [SHORT], "notes": HOSTILE})
    engine.working.update(USER, SESSION, {"goals": [SHORT, "second"]})
    kept = engine.items.remember(USER, HOSTILE, "general")
    dropped = engine.items.remember(USER, SHORT + " (to forget)", "general")
    engine.forgetting.forget(USER, "semantic", [dropped.id], reason=SHORT, actor=SHORT[:90])
    engine.admin.ingest_lines(
        [json.dumps({"kind": "category", "user_id": USER, "name": "general", "summary": HOSTILE})]
    )
    engine.episodes.record(
        USER,
        [{"observation": HOSTILE, "action": SHORT, "result": MARKDOWN}],
        summary=SHORT,
        outcome="**win** <b>",
        session_id=SESSION,
    )
    skill = engine.skills.register(USER, f"**bold** {SCRIPT}", HOSTILE, description=SHORT)
    engine.skills.report_outcome(USER, skill.id, True)
    engine.retrieval.retrieve(USER, f"{SHORT}?", session_id=SESSION)
    assert kept.content == HOSTILE
    return path


@pytest.fixture
def hostile_app(hostile_store):
    with app_engine(hostile_store) as engine:
        yield engine


def pill_options(at) -> list[str]:
    return [str(o) for group in at.get("button_group") for o in group.options]


@pytest.mark.parametrize("page", ["overview", "sessions", "working_memory", "skills", "episodes", "memories"])
def test_stored_markup_is_never_rendered_as_markdown_or_html(hostile_app, page):
    at = open_page(f"pages/{page}.py", user=USER, session=SESSION)
    no_errors(at)
    rendered = markdown_texts(at) + pill_options(at)
    leaks = [(markup, text[:120]) for text in rendered for markup in RAW_MARKUP if markup in text]
    assert not leaks, f"stored markup reached markdown on {page}: {leaks}"


@pytest.mark.parametrize("page", ["sessions", "working_memory", "skills", "episodes", "memories"])
def test_the_raw_text_including_a_5000_character_line_is_shown_as_plain_text(hostile_app, page):
    # the slot table shortens values; the selected slot is shown in full
    at = open_page(f"pages/{page}.py", user=USER, session=SESSION, state={"wm_slot": "notes"})
    shown = plain_texts(at)
    assert any(HOSTILE in text for text in shown), f"{page} does not show the stored text verbatim"


def test_the_overview_lists_a_hostile_trace_question_as_plain_table_text(hostile_app):
    at = open_page("pages/overview.py", user=USER)
    assert f"{SHORT}?" in plain_texts(at)


def test_the_forget_log_shows_a_hostile_reason_as_plain_table_text(hostile_app):
    at = open_page("pages/memories.py", user=USER)
    assert SHORT in plain_texts(at)
