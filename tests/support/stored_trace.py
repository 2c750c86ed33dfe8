"""A stored trace with nothing in it but its settings: what a test of how an older trace's settings are read needs."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from engine.trace.records import RetrievalTrace
from engine.trace.traces import Traces


def empty_trace(settings: dict[str, Any], at: datetime) -> RetrievalTrace:
    """A stored trace, read back, of a retrieval that found nothing and recorded only ``settings``."""
    return Traces.from_json(
        json.dumps(
            {
                "trace_id": "t",
                "user_id": "u",
                "session_id": None,
                "question": "q",
                "created_at": at.isoformat(),
                "settings": settings,
                "strategies": {},
                "hops": [],
                "stop_reason": "max_hops",
                "context": "",
                "context_ids": [],
                "context_tokens": 0,
                "ranking": [],
                "timings_ms": {},
            }
        )
    )
