"""Showing engine errors as readable messages, never as tracebacks."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import streamlit as st

from engine import MemlensError


@contextmanager
def engine_errors(action: str = "That did not work") -> Iterator[None]:
    """Turn engine errors raised inside the block into an error box; nothing else is swallowed."""
    try:
        yield
    except MemlensError as exc:
        st.error(f"{action}: {exc}")
