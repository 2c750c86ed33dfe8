"""The engine as a process-wide resource: opened once per process and shared by every session and page."""

from __future__ import annotations

import streamlit as st

from engine import MemoryEngine, Settings


@st.cache_resource(show_spinner="Opening the memory store and loading the embedding model...")
def get_engine() -> MemoryEngine:
    """One engine per process. DuckDB connections are opened per operation inside, so sharing it is safe."""
    return MemoryEngine.open(settings=Settings.from_env())


def ensure_demo(engine: MemoryEngine) -> None:
    """On the first start against an empty store, load the bundled demo, showing progress while embedding."""
    if st.session_state.get("app_demo_checked"):
        return
    st.session_state["app_demo_checked"] = True
    if engine.users():
        return
    bar = st.progress(0.0, text="First start: loading the demo dataset...")

    def progress(kind: str, done: int, total: int) -> None:
        share = {"semantic": 0.0, "episodic": 0.6, "procedural": 0.8}.get(kind, 0.0)
        span = {"semantic": 0.6, "episodic": 0.2, "procedural": 0.2}.get(kind, 0.0)
        bar.progress(min(1.0, share + span * done / max(total, 1)),
                     text=f"Embedding demo {kind} memories: {done}/{total}")

    engine.load_demo(progress=progress)
    bar.empty()
