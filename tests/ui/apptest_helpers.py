"""Helpers for AppTest page tests: open a page through the app frame, and read what it shows (markdown vs text)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from engine import MemoryEngine
from ui.resources import get_engine

ROOT = Path(__file__).resolve().parents[2]
ENTRY = Path(__file__).resolve().parent / "app_entry.py"  # runs app.py; see its docstring for why
# get_engine() called by a test (outside a script run) makes Streamlit warn once per call; that is expected here.
logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").disabled = True

# Settings.from_env reads these; a developer's own configuration must not change what the tests exercise.
ENV_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMLENS_EMBEDDER",
    "MEMLENS_CHAT_MODEL",
    "MEMLENS_EMBEDDING_MODEL",
    "MEMLENS_LLM_TIMEOUT",
    "MEMLENS_LLM_RETRIES",
)


@contextmanager
def app_engine(store: Path, **env: str) -> Iterator[MemoryEngine]:
    """Point the dashboard at ``store`` (extra environment in ``env``) and yield the engine its pages will use."""
    with pytest.MonkeyPatch.context() as mp:
        for var in ENV_VARS:
            mp.delenv(var, raising=False)
        mp.setenv("MEMLENS_STORE", str(store))
        for key, value in env.items():
            mp.setenv(key, value)
        get_engine.clear()
        try:
            yield get_engine()
        finally:
            get_engine.clear()


# Elements whose text Streamlit renders as markdown (values) and widgets whose labels it renders as markdown.
MARKDOWN_ELEMENTS = (
    "markdown",
    "caption",
    "title",
    "header",
    "subheader",
    "error",
    "warning",
    "info",
    "success",
    "toast",
)
LABELLED_ELEMENTS = (
    "expander",
    "tab",
    "button",
    "metric",
    "checkbox",
    "toggle",
    "radio",
    "text_input",
    "text_area",
    "selectbox",
    "multiselect",
    "number_input",
    "date_input",
    "slider",
)


def open_page(
    page: str | None, user: str | None = None, session: str | None = None, state: dict[str, Any] | None = None
) -> AppTest:
    """The whole app (frame + ``page``, e.g. "pages/sessions.py") after one run, as a person opening that page.

    The demo auto-load is marked as done, so an empty store stays empty. ``user``/``session`` preset the sidebar;
    ``state`` presets other session-state keys. Every later ``at.run()`` runs app.py and the page again.
    """
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.session_state["app_demo_checked"] = True
    if user is not None:
        at.session_state["app_user"] = user
    if session is not None:
        at.session_state["app_session"] = session
    for key, value in (state or {}).items():
        at.session_state[key] = value
    if page is not None:
        at.switch_page(str(ROOT / page))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# -- reading what a page shows ---------------------------------------------------------------------------------------
def values(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in at.get(kind)]


def markdown_texts(at: AppTest) -> list[str]:
    """Every string Streamlit renders as markdown on the page: element bodies and widget labels."""
    out = [v for kind in MARKDOWN_ELEMENTS for v in values(at, kind)]
    for kind in LABELLED_ELEMENTS:
        out += [str(getattr(e, "label", "") or "") for e in at.get(kind)]
    out += [str(e.proto.label) for e in at.get("page_link")] if at.get("page_link") else []
    return out


def plain_texts(at: AppTest) -> list[str]:
    """Every string shown as plain text: st.text, st.code, st.json and dataframe cells."""
    out = values(at, "text") + values(at, "code") + values(at, "json")
    for frame in at.dataframe:
        df = frame.value
        out += [str(v) for col in df.columns for v in df[col].tolist()]
    return out


def all_texts(at: AppTest) -> str:
    return "\n".join(markdown_texts(at) + plain_texts(at))


def button(at: AppTest, label: str):
    """The button (or form submit button) with exactly this label."""
    found = [b for b in at.button if b.label == label]
    assert found, f"no button {label!r}; buttons: {[b.label for b in at.button]}"
    return found[0]


def by_label(at: AppTest, kind: str, prefix: str):
    """The first widget of ``kind`` whose label starts with ``prefix``."""
    found = [w for w in at.get(kind) if str(w.label).startswith(prefix)]
    assert found, f"no {kind} labelled {prefix!r}; have {[w.label for w in at.get(kind)]}"
    return found[0]


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, values(at, "error")


def open_link(page: str, params: dict[str, str]) -> AppTest:
    """The app opened from a link: ``page`` with these URL query params, in a new browser session."""
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.session_state["app_demo_checked"] = True
    at.query_params.update(params)
    at.switch_page(str(ROOT / page))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
