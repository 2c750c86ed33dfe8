"""Showing engine errors as readable messages, never as tracebacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from engine import MemlensError, NotFound, StoreBusy
from ui.text import md_escape


def error_text(exc: MemlensError) -> str:
    """The engine's message, with a hint for the errors a person can do something about."""
    text = str(exc)
    if isinstance(exc, StoreBusy):
        text += " (another process, such as an agent or the CLI, is writing to the store; try again)"
    elif isinstance(exc, NotFound):
        text += " (it may have been deleted meanwhile by another process; reload the page)"
    return text


@contextmanager
def engine_errors(action: str = "That did not work") -> Iterator[None]:
    """Turn engine errors raised inside the block into an error box; nothing else is swallowed."""
    try:
        yield
    except MemlensError as exc:
        # st.error renders markdown and the message may quote user-typed ids or text: escape it
        st.error(f"{action}: {md_escape(error_text(exc))}", icon=":material/error:")
