"""Reading model output defensively: malformed output becomes ``None`` (the caller falls back), never a crash."""

from __future__ import annotations

import json
import math
from typing import Any


def json_array(text: str) -> list[Any] | None:
    """The JSON array between the first ``[`` and the last ``]`` (llmemory's parsing rule), or None."""
    if not isinstance(text, str):
        return None
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) else None


def unit_number(value: Any) -> float | None:
    """A finite number in [0, 1], else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(str(value))
        except ValueError:
            return None
    value = float(value)
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None


def parse_number_list(text: str, expected: int) -> list[float] | None:
    """Exactly ``expected`` numbers in [0, 1], or None when the output has another shape."""
    values = json_array(text)
    if values is None or len(values) != expected:
        return None
    out = [unit_number(v) for v in values]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]
