"""Where the page files are, as absolute paths, so links work whichever script Streamlit started from."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

# The `pages` package wherever memlens is installed (a clone's pages/ with `pip install -e .`).
PAGES_DIR = Path(str(importlib.resources.files("pages")))


def page_file(name: str) -> Path:
    """``pages/<name>.py`` as an absolute path (for ``st.Page`` and ``st.page_link``)."""
    return PAGES_DIR / f"{name}.py"
