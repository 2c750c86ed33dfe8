"""The presets a picker offers (engine/presets.py), the default first, and a one-line summary of what one sets.

Shared by the Retrieval trace page's ask form, the Evaluations page's run form and the Traces page's filter, so every
picker opens on the default preset and lists the same names in the same order."""

from __future__ import annotations

from engine import PRESETS

DEFAULT_PRESET = "default"
# The preset's settings shown under a picker, at most this many (llmemory's parity preset sets ~40).
_SHOWN_SETTINGS = 6


def preset_names() -> list[str]:
    """The presets the form offers, the default first."""
    return [DEFAULT_PRESET, *sorted(p for p in PRESETS if p != DEFAULT_PRESET)]


def preset_summary(name: str) -> str:
    """What the preset sets, in one line: ``hops = 2 · memory_keys = sentences · ...``."""
    changes = PRESETS[name]
    if not changes:
        return "The settings as they are (no preset)."
    shown = [f"{k} = {v}" for k, v in list(changes.items())[:_SHOWN_SETTINGS]]
    more = len(changes) - len(shown)
    return " · ".join(shown) + (f" · and {more} more" if more > 0 else "")
