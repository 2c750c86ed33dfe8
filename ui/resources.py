"""The engine as a process-wide resource: opened once per process and shared by every session and page.

Nothing read from the store is cached here: agents write to the same store from other processes, so pages query
the engine on every run (paginated in SQL) and always show the live state.
"""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine, Settings


@st.cache_resource(show_spinner="Opening the memory store and loading the embedding model...")
def _open_engine() -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env())


def get_engine() -> MemoryEngine:
    """One engine per process, shared by every browser session: inside it one lock serialises the DuckDB work, so
    no connection is used by two sessions' threads at once (engine/store/sql/database.py).

    Settings come from the environment (``MEMLENS_STORE``...). Tests point it at another store by setting the
    variable and calling ``get_engine.clear()``. Every page calls this first, which is also where a page notices
    that it was started without the app frame (see :func:`leave_legacy_pages_mode`).
    """
    leave_legacy_pages_mode()
    return _open_engine()


get_engine.clear = _open_engine.clear  # type: ignore[attr-defined]


def leave_legacy_pages_mode() -> None:
    """Rerun through app.py when Streamlit ran a page file on its own.

    Streamlit sees our ``pages/`` folder and, until app.py has called ``st.navigation`` once in this process, serves
    a deep link such as ``/sessions`` as a legacy folder page: the page script runs alone, without the sidebar picker,
    under a file-name navigation. That happens for the first visitor of a freshly started server who does not come
    in through ``/``. ``st.navigation`` clears this process-wide flag; clearing it here and rerunning gives that
    visitor the whole app on the same URL (pages are identified by URL path either way).
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode: nothing to leave
        return
    if getattr(PagesManager, "uses_pages_directory", False) and st.runtime.exists():
        PagesManager.uses_pages_directory = False
        st.rerun()


def load_demo_with_progress(engine: MemoryEngine) -> dict[str, int]:
    """Load the bundled demo dataset, showing a progress bar while its memories are embedded."""
    bar = st.progress(0.0, text="Loading the demo dataset: reading it and warming up the embedding model...")
    shares = {"semantic": (0.0, 0.6), "episodic": (0.6, 0.2), "procedural": (0.8, 0.2)}

    def progress(kind: str, done: int, total: int) -> None:
        start, span = shares.get(kind, (0.0, 0.0))
        bar.progress(
            min(1.0, start + span * done / max(total, 1)), text=f"Embedding demo {kind} memories: {done}/{total}"
        )
        if kind == "procedural" and done >= total:  # the last kind: the demo evaluation runs next
            bar.progress(1.0, text="Running the demo evaluation...")

    # With the demo's expectation set and one stored run of it (the same load as the CLI's `demo`)
    counts = engine.admin.load_demo(progress=progress)
    bar.empty()
    return counts


def ensure_demo(engine: MemoryEngine) -> None:
    """On the first start against an empty store, load the bundled demo (checked once per browser session)."""
    if st.session_state.get("app_demo_checked"):
        return
    st.session_state["app_demo_checked"] = True
    if engine.read_only or engine.sessions.users():  # a read-only store is shown as it is, even empty
        return
    load_demo_with_progress(engine)
