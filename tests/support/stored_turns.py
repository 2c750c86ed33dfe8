"""Turns of a conversation written the way a test of a retrieval stage needs them: one memory each, a minute apart."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from engine import MemoryEngine


def remember_turns(engine: MemoryEngine, user_id: str, texts: Sequence[str], start: datetime) -> list[str]:
    """Remember each text as a memory of ``user_id`` stamped ``start`` plus its position in minutes; their ids."""
    return [engine.items.remember(user_id, t, created_at=start + timedelta(minutes=n)).id for n, t in enumerate(texts)]
