"""Time in one place: UTC everywhere, ISO-8601 strings accepted at the edges."""

from __future__ import annotations

from datetime import UTC, datetime

from .errors import InvalidInput


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: object, what: str = "timestamp") -> datetime:
    """A timezone-aware UTC datetime from a datetime or an ISO-8601 string (naive values are taken as UTC)."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00") if value.strip().endswith("Z") else value.strip()
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(f"{what} {value[:40]!r} is not an ISO-8601 time") from None
    else:
        raise InvalidInput(f"{what} must be an ISO-8601 time, got {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def optional_time(value: object, what: str = "timestamp") -> datetime | None:
    return None if value is None or value == "" else parse_time(value, what)
