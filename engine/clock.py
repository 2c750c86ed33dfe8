"""Time in one place: UTC everywhere, ISO-8601 strings accepted at the edges."""

from __future__ import annotations

from datetime import UTC, datetime

from .errors import InvalidInput
from .validation import check_time


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: object, what: str = "timestamp") -> datetime:
    """A timezone-aware UTC datetime from a datetime or an ISO-8601 string (naive values are taken as UTC), within the
    validation wall's range (:func:`engine.validation.check_time`: 1900-01-01 to 2999-12-31)."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00") if value.strip().endswith("Z") else value.strip()
        if len(text) > 64:
            raise InvalidInput(f"{what} {value[:40]!r}... is not an ISO-8601 time")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(f"{what} {value[:40]!r} is not an ISO-8601 time") from None
    else:
        raise InvalidInput(f"{what} must be an ISO-8601 time, got {type(value).__name__}")
    try:
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        dt = dt.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00 has no UTC time
        raise InvalidInput(f"{what} {str(value)[:40]!r} is outside the accepted range") from None
    return check_time(dt, what)


def optional_time(value: object, what: str = "timestamp") -> datetime | None:
    return None if value is None or value == "" else parse_time(value, what)
