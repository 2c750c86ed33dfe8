"""Where the page files are, as absolute paths, so links work whichever script Streamlit started from."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def page_file(name: str) -> Path:
    """``pages/<name>.py`` as an absolute path (for ``st.Page`` and ``st.page_link``)."""
    return ROOT / "pages" / f"{name}.py"
