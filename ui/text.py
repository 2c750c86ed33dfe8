"""Stored text is data, never markup. Helpers to put it on screen inertly (no st import: pure functions).

Streamlit renders markdown in ``st.markdown``, captions, titles and in the labels of buttons, expanders, tabs and
metrics. Memory text written by an agent (or an attacker talking to one) must not become links, bold text, LaTeX,
colour directives or HTML there. Pages show full stored text with ``st.text``/``st.code``/``st.dataframe``/``st.json``;
anywhere markdown is rendered they pass it through :func:`md_escape` (usually via :func:`label`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all the ones markdown, GFM,
# Streamlit directives (:red[...], :material/x:) and LaTeX ($) give meaning to makes the text literal.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=^\"'&])")
_WHITESPACE = re.compile(r"\s+")


def md_escape(text: object) -> str:
    """Text that markdown renders literally: every markup character is backslash-escaped, newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(text, limit=None))


def one_line(text: object, limit: int | None = 80) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters with an ellipsis."""
    flat = _WHITESPACE.sub(" ", str(text if text is not None else "")).strip()
    if limit is not None and len(flat) > limit:
        return flat[: max(1, limit - 1)].rstrip() + "…"
    return flat


def label(text: object, limit: int = 80) -> str:
    """A short, markdown-safe label for stored text (expander titles, captions, button labels)."""
    return md_escape(one_line(text, limit))


def pretty_json(value: Any) -> str:
    """Indented JSON for editing and diffs; keeps non-ASCII characters readable."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def compact_json(value: Any, limit: int = 120) -> str:
    """One-line JSON for tables."""
    return one_line(json.dumps(value, ensure_ascii=False), limit)


def when(value: Any) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC as stored), or an em dash when missing: the one format every page
    shows times in. A datetime or an ISO-8601 string (as traces and tombstones keep them); microseconds, the ``T``
    and the offset are left out, since people compare times to the second, not to the microsecond."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    try:
        return value.strftime("%Y-%m-%d %H:%M:%S")
    except AttributeError:
        return str(value)[:19]


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 episode``, ``3 episodes``, ``1 semantic item``: the count with the noun in the number it takes."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def size_text(n: int) -> str:
    """Bytes for people: 950 B, 12.3 kB, 4.5 MB, 2.1 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
