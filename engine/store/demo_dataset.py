"""The bundled demo dataset: its JSONL lines and its users (package data, wherever memlens is installed)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from ..config import DEMO_DIR

# Progress of a load: (kind of memory, done, total).
DemoProgress = Callable[[str, int, int], None]


def demo_lines() -> list[str]:
    """The bundled demo dataset's JSONL lines (package data, wherever memlens is installed)."""
    return (DEMO_DIR / "demo.jsonl").read_text(encoding="utf-8").splitlines()


@functools.cache
def demo_users() -> tuple[str, ...]:
    """The users of the demo dataset, sorted (read once per process: the file ships with the code)."""
    return tuple(sorted({json.loads(line)["user_id"] for line in demo_lines() if line.strip()}))
