"""The date window a question names ("last June", "on 8 May 2023"), as the trace records it, and how a memory's date
stands to it.

A window is recorded once per retrieval (``RetrievalTrace.time_window``): its first and last day (inclusive), the
phrase it came from, which parser read it (offline rules, engine/retrieval/time_window.py, or the LLM) and, for the
offline parser, the rule. Replay scores the recorded candidates against the recorded window, so a replay never
parses again (engine/retrieval/time_stage.py). A trace without a window (the stage off, a question naming no time,
an older trace) stores no ``time_window`` key at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Self

from .hop_records import stored_object

__all__ = ["TimeWindow", "days_outside", "memory_day", "time_words", "window_note"]


@dataclass(frozen=True)
class TimeWindow:
    """A question's date window: ``start``..``end`` (ISO dates, both days included), the ``phrase`` it was read
    from, the ``parser`` (offline | llm) and the offline ``rule`` that matched ("" for the LLM's)."""

    start: str
    end: str
    phrase: str
    parser: str
    rule: str = ""

    @property
    def first_day(self) -> date:
        return date.fromisoformat(self.start)

    @property
    def last_day(self) -> date:
        return date.fromisoformat(self.end)

    @property
    def label(self) -> str:
        """``2023-06-01..2023-06-30`` (one date for a one-day window)."""
        return self.start if self.start == self.end else f"{self.start}..{self.end}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self | None:
        if isinstance(data, cls):
            return data
        if data is None:
            return None
        plain = stored_object(cls, data)
        return cls(
            start=str(plain["start"]),
            end=str(plain["end"]),
            phrase=str(plain.get("phrase", "")),
            parser=str(plain.get("parser", "")),
            rule=str(plain.get("rule", "")),
        )

    def to_dict(self) -> dict[str, str]:
        return {"start": self.start, "end": self.end, "phrase": self.phrase, "parser": self.parser, "rule": self.rule}

    def plain_fields(self) -> dict[str, str]:
        return self.to_dict()


def memory_day(created_at: str) -> date:
    """The calendar day (UTC, as stored) a memory is dated by."""
    return datetime.fromisoformat(created_at).date()


def days_outside(window: TimeWindow, created_at: str) -> int:
    """How many days a memory's date lies outside the window: 0 inside, else the days before its first day or
    after its last."""
    day = memory_day(created_at)
    if day < window.first_day:
        return (window.first_day - day).days
    if day > window.last_day:
        return (day - window.last_day).days
    return 0


def window_note(window: TimeWindow, created_at: str) -> str:
    """Where a memory stands to the window, as a person reads it: "inside the question's window 2023-06-01..
    2023-06-30" or "outside the question's window 2023-06-01..2023-06-30 (12 days after)"."""
    day = memory_day(created_at)
    outside = days_outside(window, created_at)
    if not outside:
        return f"inside the question's window {window.label} ({window.phrase!r})"
    side = "before" if day < window.first_day else "after"
    unit = "day" if outside == 1 else "days"
    return f"outside the question's window {window.label} ({window.phrase!r}; dated {day}, {outside} {unit} {side})"


def time_words(window: TimeWindow | None, mode: str, created_at: str, factor: float | None) -> str:
    """What the time stage made of a candidate, for why-not: "; outside the question's window 2023-07-01..
    2023-07-31 ('in July'; dated 2023-06-10, 21 days before), time factor x1.12" ("" without a window or under
    ``filter``, whose verdict's rule already says it)."""
    if window is None or mode != "boost" or factor is None:
        return ""
    return f"; {window_note(window, created_at)}, time factor x{factor:.2f}"
