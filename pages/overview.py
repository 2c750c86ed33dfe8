"""Overview: counts per memory kind (placeholder frame until the dashboard issue fills it in)."""

import streamlit as st

from ui.resources import get_engine

engine = get_engine()
stats = engine.stats()
st.title("memlens")
st.caption(f"Store: {stats.store} · embedder: {stats.embedder} · LLM: {stats.llm}")
cols = st.columns(5)
for col, (label, value) in zip(cols, [("Sessions", stats.sessions), ("Messages", stats.messages),
                                      ("Memories", stats.items), ("Episodes", stats.episodes),
                                      ("Skills", stats.skills)]):
    col.metric(label, value)
