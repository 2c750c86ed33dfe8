"""Page state in the URL (``st.query_params``), so a reload keeps it and a link shares it.

The names every page uses (other pages and helpers rely on them):

- ``user``, ``session``: the sidebar's current user and session (every page);
- ``trace``: the open retrieval trace, ``trace_b``: the one it is compared with;
- ``tab``: the slug of the page's open tab (``hops``, ``context``, ``what-if``, ``why-not``, ``compare``, ...);
- ``memory``: the selected memory id.

Who wins when the URL and the session disagree: a value in the URL that differs from the one this session last
wrote there came from outside (a shared link, a reload, a ``st.page_link`` with query params), so it is adopted;
otherwise the session's state is the truth and is written back. Page switches clear the URL (Streamlit does), and
the next run writes the state again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

PARAMS = ("user", "session", "trace", "trace_b", "tab", "memory")
ALIASES = {"trace_id": "trace"}  # older links: ?trace_id=... opens the trace too
MAX_VALUE_CHARS = 200  # ids are short; anything longer in a URL is not one of ours
_WRITTEN = "_url_written_"  # session-state prefix: what this session last wrote for each name


def slug(label: str) -> str:
    """A tab label as it appears in the URL: ``"Why not?"`` -> ``why-not``, ``"What-if"`` -> ``what-if``."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def read(name: str) -> str | None:
    """The URL's value of ``name`` (or of an older alias of it), or None when absent, blank or implausibly long."""
    value = st.query_params.get(name)
    if value is None:
        for alias, target in ALIASES.items():
            if target == name and st.query_params.get(alias):
                value = st.query_params.get(alias)
                break
    value = (value or "").strip()
    return value if value and len(value) <= MAX_VALUE_CHARS else None


def incoming(name: str) -> str | None:
    """The URL's value of ``name`` when it came from outside this session (a link, a reload), else None."""
    value = read(name)
    if value is not None and value != st.session_state.get(_WRITTEN + name):
        return value
    return None


def write(name: str, value: str | None) -> None:
    """Put ``value`` in the URL under ``name`` (None or "" removes it), and remember it as this session's."""
    for alias, target in ALIASES.items():
        if target == name and alias in st.query_params:
            del st.query_params[alias]
    value = value or None
    st.session_state[_WRITTEN + name] = value
    if value is None:
        if name in st.query_params:
            del st.query_params[name]
    elif st.query_params.get(name) != value:
        st.query_params[name] = value


def url_tabs(labels: Sequence[str], key: str) -> Sequence[Any]:
    """``st.tabs`` that keep their open tab across reruns and in the URL (``tab=<slug>``).

    Stateful tabs (a key and ``on_change="rerun"``): the server knows the open tab and sends it with every run, so
    a message appearing or disappearing above them no longer sends the browser back to the first tab. Returns the
    tab containers; each one's ``.open`` says whether it is the open tab.
    """
    by_slug = {slug(label): label for label in labels}
    wanted = incoming("tab")
    if wanted in by_slug:
        st.session_state[key] = by_slug[wanted]
    elif st.session_state.get(key) not in labels:
        st.session_state[key] = labels[0]
    tabs = st.tabs(list(labels), key=key, on_change="rerun")
    write("tab", slug(st.session_state[key]))
    return tabs


def open_tab(key: str, label: str) -> None:
    """Switch the tabs under ``key`` to ``label`` on the next run (call from a callback or before the tabs)."""
    st.session_state[key] = label


def trace_url(trace_id: str, user: str | None = None, tab: str = "hops", memory: str | None = None) -> str:
    """A link (relative to the current page, so it works under any base path) opening a trace on the Retrieval
    trace page: for ``st.column_config.LinkColumn`` cells and anything else that wants a plain URL."""
    params = {"user": user, "trace": trace_id, "tab": tab, "memory": memory}
    return "./retrieval?" + urlencode({k: v for k, v in params.items() if v})


def trace_params(
    trace_id: str, user: str | None = None, tab: str = "hops", memory: str | None = None
) -> dict[str, str]:
    """The same as query params for ``st.page_link(page_file("retrieval"), query_params=...)``."""
    params = {"user": user, "trace": trace_id, "tab": tab, "memory": memory}
    return {k: v for k, v in params.items() if v}
