"""The validation wall: one named rule per kind of value, used by every entry point.

The Python API, the CLI, the MCP tools (stdio and HTTP), JSONL ingest and the dashboard's editors all reach the
engine through these rules, so a hostile value is refused the same way wherever it comes from: with
:class:`InvalidInput` whose message names the field, before anything is written. The rules:

* **text** (:func:`check_text`, :func:`check_optional_text`): a ``str``, at most a per-field number of characters, no
  NUL, and no lone surrogate (``"\\ud800"``, or an undecodable byte a shell handed over as ``"\\udcff"``): such a
  string cannot be encoded as UTF-8, so no file, database or JSON answer could hold it.
* **integers** (:func:`check_int`): an ``int`` (never a ``bool``, never a float) inside the field's range in
  :data:`INT_RULES`.
* **numbers** (:func:`check_number`): an ``int`` or ``float`` (never a ``bool``), finite, inside the field's range in
  :data:`FLOAT_RULES`.
* **JSON values** (:func:`check_json_value`, :func:`parse_json`): nesting at most :data:`MAX_JSON_DEPTH` levels, at most
  :data:`MAX_JSON_CHARS` characters as JSON text, object keys are text, strings follow the text rule, integers lie
  within signed 64 bits and floats are finite. Checked without recursion, so a 5,000-level value is refused cheaply
  instead of raising RecursionError.
* **times** (:func:`check_time`): between :data:`EARLIEST` and :data:`LATEST` (UTC), so date arithmetic (decay, ages,
  pruning cut-offs) can never overflow. :func:`engine.clock.parse_time` applies it to every time it parses.

docs/reliability.md ("Hostile input") lists the ranges; ``tests/engine/test_validation_fuzz.py`` fuzzes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .config import HOPS_RANGE
from .errors import InvalidInput

MAX_JSON_DEPTH = 64
MAX_JSON_CHARS = 1_000_000
JSON_INT_MAX = 2**63 - 1
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)

# Integer fields: (lowest, highest) allowed. The same name means the same range at every entry point.
INT_RULES: dict[str, tuple[int, int]] = {
    "hops": HOPS_RANGE,  # retrieval hops per call (the hops setting's range)
    "hop": (1, 100),  # the hop a feedback label points at
    "budget_tokens": (1, 1_000_000),  # context token budget (retrieve's budget, MCP max_tokens)
    "version": (1, 1_000_000),  # a skill's version
    "count": (0, 1_000_000),  # ids counted by a forget-log entry
    "window": (1, 1_000),  # episodes looked at by reflect / mine-skills
    "limit": (1, 10_000_000),  # rows in one listing (search: 1-1000)
    "search_limit": (1, 1_000),  # hits of one plain search
    "offset": (0, 1_000_000_000),  # rows skipped by a listing
    "port": (1, 65_535),
}
# Float fields: (lowest, highest) allowed; NaN and infinities are always refused.
FLOAT_RULES: dict[str, tuple[float, float]] = {
    "importance": (0.0, 1.0),
    "confidence": (0.0, 1.0),
    "older_than_days": (0.0, 36_500.0),
}
# Settings without a declared maximum still get one, so 10**30 never reaches DuckDB or a sleep.
SETTING_INT_MAX = 1_000_000_000
SETTING_FLOAT_MAX = 1e9

_SURROGATES = range(0xD800, 0xE000)


def _shown(value: str, n: int = 40) -> str:
    """A short printable form of a refused value (repr escapes surrogates and control characters)."""
    return repr(value if len(value) <= n else value[: n - 3] + "...")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a NUL or a lone surrogate), or None."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        return (
            f"contains a lone surrogate U+{ord(bad):04X} at character {exc.start + 1} (not valid Unicode; "
            "an undecodable byte from a shell or a bad \\u escape)"
        )
    return None


def check_text(value: object, field: str, max_chars: int, *, blank_ok: bool = False) -> str:
    """Text of at most ``max_chars`` characters without NUL or lone surrogates; blank only when ``blank_ok``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text, got {type(value).__name__}")
    if not blank_ok and not value.strip():
        raise InvalidInput(f"{field} is empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value):,} characters; the limit is {max_chars:,}")
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"{field} {problem}")
    return value


def check_optional_text(value: object, field: str, max_chars: int) -> str:
    """Like :func:`check_text` but ``None`` and blank are allowed (``None`` becomes ``""``)."""
    return "" if value is None else check_text(value, field, max_chars, blank_ok=True)


def int_range(rule: str) -> tuple[int, int]:
    return INT_RULES[rule]


def check_int(
    value: object, field: str, rule: str | None = None, *, lo: int | None = None, hi: int | None = None
) -> int:
    """An ``int`` (not a bool, not a float) within ``INT_RULES[rule]`` or ``[lo, hi]``."""
    if rule is not None:
        lo, hi = INT_RULES[rule]
    assert lo is not None and hi is not None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer from {lo:,} to {hi:,}, got {type(value).__name__}")
    if not lo <= value <= hi:
        bits = abs(value).bit_length()
        shown = str(value) if bits < 100 else f"an integer of about {int(bits * 0.30103) + 1:,} digits"
        raise InvalidInput(f"{field} must be an integer from {lo:,} to {hi:,}, got {shown}")
    return value


def check_optional_int(value: object, field: str, rule: str) -> int | None:
    return None if value is None else check_int(value, field, rule)


def check_number(
    value: object, field: str, rule: str | None = None, *, lo: float | None = None, hi: float | None = None
) -> float:
    """A finite ``int`` or ``float`` (not a bool) within ``FLOAT_RULES[rule]`` or ``[lo, hi]``."""
    if rule is not None:
        lo, hi = FLOAT_RULES[rule]
    assert lo is not None and hi is not None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{field} must be a number from {lo:g} to {hi:g}, got {type(value).__name__}")
    if isinstance(value, int) and not -(10**300) < value < 10**300:
        raise InvalidInput(f"{field} must be a number from {lo:g} to {hi:g}, got a huge integer")
    number = float(value)
    if not math.isfinite(number) or not lo <= number <= hi:  # NaN fails every comparison
        raise InvalidInput(f"{field} must be a number from {lo:g} to {hi:g}, got {value!r}")
    return number


def check_json_value(
    value: Any, field: str, *, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS
) -> Any:
    """Refuse a value JSON cannot hold safely: too deep, too big, non-text keys, bad text, huge ints, NaN/inf,
    or anything that is not a dict/list/str/int/float/bool/None. Walks with an explicit stack (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    budget = max_chars  # a cheap running size estimate stops a huge value before json.dumps is tried
    while stack:
        v, depth = stack.pop()
        if depth > max_depth:
            raise InvalidInput(f"{field} is nested more than {max_depth} levels deep")
        if v is None or isinstance(v, bool):
            budget -= 5
        elif isinstance(v, str):
            problem = text_problem(v)
            if problem:
                raise InvalidInput(f"{field} has a string that {problem}")
            budget -= len(v) + 2
        elif isinstance(v, int):
            if not -JSON_INT_MAX - 1 <= v <= JSON_INT_MAX:
                raise InvalidInput(f"{field} has an integer outside the signed 64-bit range")
            budget -= 20
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InvalidInput(f"{field} has NaN or an infinite number, which JSON cannot hold")
            budget -= 24
        elif isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise InvalidInput(f"{field} has an object key that is not text ({type(k).__name__})")
                problem = text_problem(k)
                if problem:
                    raise InvalidInput(f"{field} has an object key that {problem}")
                budget -= len(k) + 4
                stack.append((item, depth + 1))
            budget -= 2
        elif isinstance(v, (list, tuple)):
            stack.extend((item, depth + 1) for item in v)
            budget -= 2 + len(v)
        else:
            raise InvalidInput(f"{field} holds a {type(v).__name__}, which is not a JSON value")
        if budget < 0:
            raise InvalidInput(f"{field} is more than {max_chars:,} characters of JSON; that is the limit")
    return value


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text, counted without parsing (brackets inside strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json(text: object, field: str, *, max_depth: int = MAX_JSON_DEPTH, max_chars: int = MAX_JSON_CHARS) -> Any:
    """Parse JSON text under the JSON value rule: size and depth are checked before parsing, NaN/Infinity, huge
    numbers and lone surrogates refused; the error names the field (and line/column for bad syntax)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{field} is not UTF-8 text") from None
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be JSON text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise InvalidInput(f"{field} is {len(text):,} characters of JSON; the limit is {max_chars:,}")
    if json_depth(text) > max_depth:
        raise InvalidInput(f"{field} is nested more than {max_depth} levels deep")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"invalid JSON for {field}: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except InvalidInput as exc:
        raise InvalidInput(f"invalid JSON for {field}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # e.g. a 5,000-digit integer
        raise InvalidInput(f"invalid JSON for {field}: {str(exc)[:120]}") from None
    return check_json_value(value, field, max_depth=max_depth, max_chars=max_chars)


def _refuse_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not allowed")


def check_time(dt: datetime, field: str) -> datetime:
    """A timezone-aware time between :data:`EARLIEST` and :data:`LATEST`."""
    if not EARLIEST <= dt <= LATEST:
        raise InvalidInput(
            f"{field} {dt.isoformat()[:40]} is outside the accepted range "
            f"{EARLIEST.date().isoformat()} to {LATEST.date().isoformat()}"
        )
    return dt
