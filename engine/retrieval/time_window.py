"""The date window a question names: offline rules, or the LLM when one is configured (``time_parser``).

A question that names a time ("last June", "in 2023", "on 8 May 2023", "the weekend before 10 April 2023") becomes a
:class:`~engine.trace.time_records.TimeWindow` relative to the retrieval's ``now``; a question that names none (or
only asks for one: "When did Caroline move?", "How many days ago ...?") becomes none, and nothing changes.

The offline rules, tried in this order (the first that matches decides; month names must be capitalised, so the
verb "may" or "march" never reads as a month):

1. ``between DATE and DATE``: from the first day to the second (a first date without a year takes the second's).
2. ``[N days|weeks|months] / the day / the week / the weekend / the <weekday> before DATE``: that day, week (the
   7 days before DATE), weekend or weekday, through DATE itself (what a conversation dated DATE tells of it).
3. A relative phrase (rule 8) anchored by a full date elsewhere in the question ("last Friday, on 23 January,
   2022", "last week, as mentioned on November 6, 2023"): read from that date, and through it.
4. ``by / until / as of / up to / before / after / since DATE`` names one end of an open span: no window from it.
5. A full date (``8 May 2023``, ``8th May, 2023``, ``May 8, 2023``, ``2023-05-08``): that day. Day and month
   without a year: the latest such day on or before ``now``.
6. ``the first|second|third|fourth|last week of MONTH [YEAR]`` (days 1-7, 8-14, 15-21, 22-28, the last 7),
   ``the first|second half of MONTH [YEAR]`` (1-15, 16-end), ``beginning of|early MONTH`` (1-10), ``mid MONTH``
   (11-20), ``end of|late MONTH`` (21-end).
7. ``MONTH YEAR`` (the month), ``in|during|of|since ... MONTH`` without a year (the latest such month that began
   on or before ``now``), ``SEASON YEAR`` (spring: March-May, summer: June-August, fall/autumn:
   September-November, winter: December of the year before to February), ``in|during YEAR`` or a bare year
   1900-2099 (the year).
8. Relative to ``now`` (or the anchor of rule 3): ``yesterday``; ``N days|weeks|months|years ago`` (that day, the
   7 days around it, that calendar month, that calendar year; N a number, a/an, a couple of, a few or several (3));
   ``last MONTH`` (the latest before this month), ``this MONTH``; ``last week`` (the calendar week before,
   Monday-Sunday), ``last weekend`` (the latest Saturday-Sunday before),
   ``last <weekday>``, ``last month``, ``last year``, ``last <season>`` (the latest that ended before), ``this
   week|month|year`` (from its first day), ``this|the <season>`` (the latest that began), ``in the past|last N
   days|weeks|months|years`` and ``in the past|last week|month|year`` (that span up to now), ``since the
   start|beginning of the year``.

Future phrases ("next month", "tonight", "tomorrow") name no window over memories already told, and a phrase hung
on an event rather than a date ("two weeks before the trip", "the weekend before") names none offline: the rules
cannot date the event (the LLM parser may, when the question says enough).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from ..providers.llm import LLM
from ..trace.time_records import TimeWindow
from .time_window_llm import llm_window

__all__ = ["offline_window", "question_window"]

_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}

# Capitalised month names only (see the module docstring), longest first so "Sept" wins over "Sep".
_MONTH = r"(?-i:(?P<{name}>" + "|".join(sorted((m.capitalize() for m in _MONTHS), key=len, reverse=True)) + r"))\.?"
_DAY = r"(?P<{name}>[0-3]?\d)(?:st|nd|rd|th)?(?!\d)"
_YEAR = r"(?P<{name}>(?:19|20)\d\d)"
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"


def _month(name: str) -> str:
    return _MONTH.replace("{name}", name)


def _day(name: str) -> str:
    return _DAY.replace("{name}", name)


def _year(name: str) -> str:
    return _YEAR.replace("{name}", name)


# A full date: day month year, month day year, or ISO.
_FULL_DATE = (
    rf"(?:{_day('d1')}\s+(?:of\s+)?{_month('m1')},?\s*{_year('y1')}"
    rf"|{_month('m2')}\s+{_day('d2')},?\s*{_year('y2')}"
    rf"|(?P<iy>(?:19|20)\d\d)[-/](?P<im>[01]?\d)[-/](?P<id>[0-3]?\d))"
)
# Day and month without a year.
_DAY_MONTH = rf"(?:{_day('d3')}\s+(?:of\s+)?{_month('m3')}|{_month('m4')}\s+{_day('d4')})(?![\d,]*\s*(?:19|20)\d\d)"
_DATE = rf"(?:{_FULL_DATE}|{_DAY_MONTH})"


def _flags(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_FULL_DATE_RE = _flags(rf"\b{_FULL_DATE}\b")
_DATE_RE = _flags(rf"\b{_DATE}\b")


@dataclass(frozen=True)
class _Found:
    start: date
    end: date
    phrase: str
    rule: str


def _date_of(m: re.Match[str], now: date, year_hint: int | None = None) -> date | None:
    """The date a _DATE match names (None: no such day); a date without a year is the latest on or before
    ``now`` (or in ``year_hint``)."""
    g = m.groupdict()
    try:
        if g.get("iy"):
            return date(int(g["iy"]), int(g["im"]), int(g["id"]))
        for d, mo, y in (("d1", "m1", "y1"), ("d2", "m2", "y2")):
            if g.get(mo) and g.get(y):
                return date(int(g[y]), _MONTHS[g[mo].lower()], int(g[d]))
        for d, mo in (("d3", "m3"), ("d4", "m4")):
            if g.get(mo):
                month, day = _MONTHS[g[mo].lower()], int(g[d])
                if year_hint is not None:
                    return date(year_hint, month, day)
                year = now.year if (month, day) <= (now.month, now.day) else now.year - 1
                return date(year, month, day)
    except ValueError:  # 31 February
        return None
    return None


def _month_range(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _latest_month(month: int, now: date) -> int:
    """The year of the latest ``month`` that began on or before ``now``."""
    return now.year if month <= now.month else now.year - 1


def _season_range(season: str, year: int) -> tuple[date, date]:
    first, last = _SEASONS[season]
    if first > last:  # winter: December of the year before to February
        return date(year - 1, 12, 1), _month_range(year, last)[1]
    return date(year, first, 1), _month_range(year, last)[1]


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[" ".join(word.lower().split())]


def _shift_months(day: date, months: int) -> date:
    total = day.year * 12 + day.month - 1 - months
    year, month = divmod(total, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _ago(n: int, unit: str, anchor: date) -> tuple[date, date]:
    """``n`` units before ``anchor``: the day, the 7 days around it, its calendar month, or its calendar year."""
    if unit == "day":
        day = anchor - timedelta(days=n)
        return day, day
    if unit == "week":
        center = anchor - timedelta(weeks=n)
        return center - timedelta(days=3), center + timedelta(days=3)
    if unit == "month":
        center = _shift_months(anchor, n)
        return _month_range(center.year, center.month)
    return date(anchor.year - n, 1, 1), date(anchor.year - n, 12, 31)


def _span(n: int, unit: str, anchor: date) -> date:
    """The first day of the last ``n`` units up to ``anchor``."""
    if unit == "day":
        return anchor - timedelta(days=n)
    if unit == "week":
        return anchor - timedelta(weeks=n)
    if unit == "month":
        return _shift_months(anchor, n)
    return _shift_months(anchor, 12 * n)


def _weekday_before(weekday: int, anchor: date) -> date:
    """The latest ``weekday`` strictly before ``anchor``."""
    back = (anchor.weekday() - weekday) % 7 or 7
    return anchor - timedelta(days=back)


def _weekend_before(anchor: date) -> tuple[date, date]:
    """The latest Saturday-Sunday that ended before ``anchor`` (from a weekend day: the one before it)."""
    saturday = _weekday_before(5, anchor)
    if anchor - saturday <= timedelta(days=1):  # anchor is that weekend's Sunday
        saturday -= timedelta(weeks=1)
    return saturday, saturday + timedelta(days=1)


# -- rule 8: relative phrases ---------------------------------------------------------------------------------------
_RELATIVE = _flags(
    r"\b(?:(?P<yesterday>yesterday)"
    rf"|(?P<month_of>last|this)\s+{_month('rm')}(?![\w-])"
    rf"|(?:{_NUM}\s+{_UNIT}\s+ago)"
    r"|(?P<last>last|past|previous)\s+(?P<what>week(?:end)?|month|year|spring|summer|fall|autumn|winter|"
    + "|".join(_WEEKDAYS)
    + r")"
    r"|(?P<this>this)\s+(?P<this_what>week|month|year|spring|summer|fall|autumn|winter)"
    r"|(?:in|during|over|within)\s+the\s+(?:past|last)\s+"
    r"(?:(?P<pn>\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|few|several|couple of)\s+)?"
    r"(?P<punit>day|week|month|year)s?"
    r"|since\s+the\s+(?:start|beginning)\s+of\s+(?:the|this)\s+year"
    r"|(?:during|in)\s+the\s+(?P<the_season>spring|summer|fall|autumn|winter))\b"
)


def _relative(m: re.Match[str], anchor: date) -> tuple[date, date, str] | None:
    g = m.groupdict()
    if g["yesterday"]:
        day = anchor - timedelta(days=1)
        return day, day, "yesterday"
    if g["month_of"]:
        month = _MONTHS[g["rm"].lower()]
        if g["month_of"].lower() == "this":
            return (*_month_range(_latest_month(month, anchor), month), "this MONTH")
        year = anchor.year if month < anchor.month else anchor.year - 1  # the latest that ended before this one
        return (*_month_range(year, month), "last MONTH")
    if g["n"]:
        start, end = _ago(_number(g["n"]), g["unit"].lower(), anchor)
        return start, end, "N units ago"
    if g["last"]:
        what = g["what"].lower()
        if g["last"].lower() == "past" and what not in ("week", "month", "year"):
            return None
        if what == "week":
            monday = anchor - timedelta(days=anchor.weekday() + 7)
            return monday, monday + timedelta(days=6), "last week"
        if what == "weekend":
            return (*_weekend_before(anchor), "last weekend")
        if what == "month":
            before = anchor.replace(day=1) - timedelta(days=1)
            return (*_month_range(before.year, before.month), "last month")
        if what == "year":
            return date(anchor.year - 1, 1, 1), date(anchor.year - 1, 12, 31), "last year"
        if what in _WEEKDAYS:
            day = _weekday_before(_WEEKDAYS.index(what), anchor)
            return day, day, "last weekday"
        return (*_latest_season(what, anchor, ended=True), "last season")
    if g["this"]:
        what = g["this_what"].lower()
        if what == "week":
            return anchor - timedelta(days=anchor.weekday()), anchor, "this week"
        if what == "month":
            return anchor.replace(day=1), anchor, "this month"
        if what == "year":
            return anchor.replace(month=1, day=1), anchor, "this year"
        return (*_latest_season(what, anchor, ended=False), "this season")
    if g["punit"]:
        n = _number(g["pn"]) if g["pn"] else 1
        return _span(n, g["punit"].lower(), anchor), anchor, "in the past N units"
    if g["the_season"]:
        return (*_latest_season(g["the_season"].lower(), anchor, ended=False), "this season")
    return anchor.replace(month=1, day=1), anchor, "since the start of the year"


def _latest_season(season: str, anchor: date, ended: bool) -> tuple[date, date]:
    """The latest ``season`` that began on or before ``anchor`` (``ended``: that ended before it)."""
    for year in (anchor.year + 1, anchor.year, anchor.year - 1, anchor.year - 2):
        start, end = _season_range(season, year)
        if (end < anchor) if ended else (start <= anchor):
            return start, end
    return _season_range(season, anchor.year - 1)  # unreachable: one of the years above qualifies


# -- the rules, in order ----------------------------------------------------------------------------------------------
_BETWEEN = _flags(rf"\bbetween\s+(?P<a>{_DATE.replace('(?P<', '(?P<a_')})\s+and\s+(?P<b>{_FULL_DATE})")
_BEFORE = _flags(
    r"\b(?:(?:the|last)\s+)?(?:"
    rf"{_NUM}\s+{_UNIT}"
    r"|(?P<which>day|week(?:end)?|" + "|".join(_WEEKDAYS) + r"))"
    rf"\s+before\s+(?:on\s+)?{_DATE}"
)
_OPEN_END = _flags(rf"\b(?:by|until|till|as\s+of|up\s+to|before|after|since)\s+(?:the\s+)?{_DATE}")
_PART = _flags(
    r"\b(?:(?:the\s+)?(?P<nth>first|second|third|fourth|last)\s+(?P<part>week|half)\s+of"
    r"|(?:the\s+)?(?P<edge>beginning\s+of|start\s+of|early|mid|middle\s+of|end\s+of|late))"
    rf"[\s-]+{_month('pm')}(?:,?\s+{_year('py')})?"
)
_MONTH_YEAR = _flags(rf"\b{_month('mm')},?\s+{_year('my')}\b")
_SEASON_YEAR = _flags(r"\b(?P<season>spring|summer|fall|autumn|winter)(?:\s+of)?,?\s+" + _year("sy") + r"\b")
_MONTH_ALONE = _flags(
    r"\b(?:in|during|of|since|on|throughout)\s+(?:(?:early|late|mid)[\s-]+)?(?:the\s+month\s+of\s+)?"
    + _month("ma")
    + r"(?![\w-])"
)
_YEAR_ALONE = _flags(r"(?<![\w/-])" + _year("ya") + r"(?![\d/-]|'?s\b)")  # not a decade ("the 1990s")


def _found(m: re.Match[str], start: date, end: date, rule: str) -> _Found:
    return _Found(start, end, " ".join(m.group(0).split()), rule)


def _rule_between(text: str, now: date) -> _Found | None:
    for m in _BETWEEN.finditer(text):
        last = _date_of(_FULL_DATE_RE.match(m.group("b")) or m, now)
        inner = _DATE_RE.match(m.group("a"))
        first = _date_of(inner, now, last.year if last else None) if inner else None
        if first and last and first <= last:
            return _found(m, first, last, "between DATE and DATE")
    return None


def _rule_before(text: str, now: date) -> _Found | None:
    for m in _BEFORE.finditer(text):
        anchor = _date_of(m, now)
        if anchor is None:
            continue
        which = (m.group("which") or "").lower()
        if m.group("n"):
            start, _ = _ago(_number(m.group("n")), m.group("unit").lower(), anchor)
        elif which == "day":
            start = anchor - timedelta(days=1)
        elif which == "week":
            start = anchor - timedelta(days=7)
        elif which == "weekend":
            start = _weekend_before(anchor)[0]
        else:
            start = _weekday_before(_WEEKDAYS.index(which), anchor)
        return _found(m, start, anchor, "... before DATE")
    return None


def _rule_anchored(text: str, now: date) -> _Found | None:
    dates = list(_FULL_DATE_RE.finditer(text))
    relative = _RELATIVE.search(text)
    if len(dates) != 1 or relative is None:
        return None
    anchor = _date_of(dates[0], now)
    read = _relative(relative, anchor) if anchor else None
    if anchor is None or read is None:
        return None
    start, _, rule = read
    phrase = f"{' '.join(relative.group(0).split())} ... {' '.join(dates[0].group(0).split())}"
    return _Found(min(start, anchor), anchor, phrase, f"{rule}, from DATE")


def _rule_full_date(text: str, now: date) -> _Found | None:
    for m in _DATE_RE.finditer(text):
        day = _date_of(m, now)
        if day is not None:
            return _found(m, day, day, "DATE")
    return None


def _rule_part(text: str, now: date) -> _Found | None:
    m = _PART.search(text)
    if m is None:
        return None
    month = _MONTHS[m.group("pm").lower()]
    year = int(m.group("py")) if m.group("py") else _latest_month(month, now)
    first, last = _month_range(year, month)
    if m.group("part"):
        nth, part = m.group("nth").lower(), m.group("part").lower()
        if part == "half":
            if nth not in ("first", "second", "last"):
                return None
            start = first if nth == "first" else first.replace(day=16)
            return _found(m, start, first.replace(day=15) if nth == "first" else last, "half of MONTH")
        if nth == "last":
            return _found(m, last - timedelta(days=6), last, "week of MONTH")
        k = ("first", "second", "third", "fourth").index(nth)
        return _found(m, first + timedelta(days=7 * k), first + timedelta(days=7 * k + 6), "week of MONTH")
    edge = m.group("edge").lower().split()[0]
    if edge in ("beginning", "start", "early"):
        return _found(m, first, first.replace(day=10), "early MONTH")
    if edge in ("mid", "middle"):
        return _found(m, first.replace(day=11), first.replace(day=20), "mid MONTH")
    return _found(m, first.replace(day=21), last, "late MONTH")


def _rule_month_season_year(text: str, now: date) -> _Found | None:
    m = _MONTH_YEAR.search(text)
    if m is not None:
        return _found(m, *_month_range(int(m.group("my")), _MONTHS[m.group("mm").lower()]), "MONTH YEAR")
    m = _SEASON_YEAR.search(text)
    if m is not None:
        return _found(m, *_season_range(m.group("season").lower(), int(m.group("sy"))), "SEASON YEAR")
    m = _MONTH_ALONE.search(text)
    if m is not None:
        month = _MONTHS[m.group("ma").lower()]
        return _found(m, *_month_range(_latest_month(month, now), month), "MONTH")
    m = _YEAR_ALONE.search(text)
    if m is not None:
        year = int(m.group("ya"))
        return _found(m, date(year, 1, 1), date(year, 12, 31), "YEAR")
    return None


def _rule_relative(text: str, now: date) -> _Found | None:
    for m in _RELATIVE.finditer(text):
        read = _relative(m, now)
        if read is not None:
            return _found(m, read[0], min(read[1], now), read[2])
    return None


_RULES: tuple[Callable[[str, date], _Found | None], ...] = (
    _rule_between,
    _rule_before,
    _rule_anchored,
    _rule_full_date,
    _rule_part,
    _rule_month_season_year,
    _rule_relative,
)
_OPEN_FROM = _RULES.index(_rule_full_date)


def offline_window(question: str, now: datetime) -> TimeWindow | None:
    """The window the offline rules read in ``question`` relative to ``now`` (None: it names no time)."""
    today = now.date()
    for n, rule in enumerate(_RULES):
        if n == _OPEN_FROM:  # rule 4: an open span's date is no window, so the later rules must not see it
            question = _OPEN_END.sub(lambda m: " " * len(m.group(0)), question)
        found = rule(question, today)
        if found is not None:
            return TimeWindow(found.start.isoformat(), found.end.isoformat(), found.phrase, "offline", found.rule)
    return None


# A word any time phrase needs: without one, auto asks no LLM (one call per retrieval for nothing).
_TIME_CUE = _flags(
    r"\b(?:(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)?|day|days|week|weeks|weekend|month|months|year|years|ago|"
    r"yesterday|today|tonight|tomorrow|recently|lately|since|before|after|during|last|past|previous|this|next|"
    r"spring|summer|fall|autumn|winter|morning|evening|night|christmas|holiday|holidays|"
    + "|".join(_WEEKDAYS)
    + "|"
    + "|".join(_MONTHS)
    + r")\b"
)


def question_window(
    question: str, now: datetime, parser: str, llm: LLM, user_id: str | None
) -> tuple[TimeWindow | None, str]:
    """The question's window and the strategy that read it (for the trace's strategies): the LLM's under ``llm``,
    or under ``auto`` with an LLM configured when the question has a word a time phrase needs (a number, a month, a
    weekday, "week", "ago", "last", "before" ...: see _TIME_CUE); the offline rules' otherwise, or when the LLM
    fails."""
    if parser == "llm" or (parser == "auto" and llm.available and _TIME_CUE.search(question)):
        read = llm_window(llm, question, now, user_id)
        if not isinstance(read, str):
            return read, "llm" if read is not None else "llm (no time named)"
        window = offline_window(question, now)
        return window, f"offline (LLM failed: {read[:120]})"
    window = offline_window(question, now)
    return window, "offline" if window is not None else "offline (no time named)"
