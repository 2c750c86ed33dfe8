"""Identifier rules and safe quoting.

Ids are strings chosen by callers (agents, the CLI, the dashboard). They are validated before they reach a
query so that a hostile id fails with a clear message instead of becoming part of SQL, a LanceDB filter or a path.
SQL always uses parameters as well; LanceDB filters, which are strings, go through :func:`lance_literal`.
"""

from __future__ import annotations

import re
import uuid

from . import validation
from .errors import InvalidInput

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
ID_RULE = "1-128 characters: letters, digits and . _ : @ + - (starting with a letter or digit)"


def check_id(value: object, what: str = "id") -> str:
    """Return ``value`` if it is a valid id, else raise :class:`InvalidInput` naming the rule."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    if not ID_PATTERN.fullmatch(value) or value in {".", ".."}:
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise InvalidInput(f"invalid {what} {shown!r}: use {ID_RULE}")
    return value


def check_ids(values: object, what: str = "id") -> list[str]:
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise InvalidInput(f"{what}s must be a list of strings")
    return [check_id(v, what) for v in values]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def lance_literal(value: str) -> str:
    """Quote a string for a LanceDB (DataFusion SQL) filter. Ids are validated first; this is the second wall."""
    if "\x00" in value:
        raise InvalidInput("NUL character in a filter value")
    return "'" + value.replace("'", "''") + "'"


def check_text(value: object, what: str, max_chars: int) -> str:
    """Non-blank text of at most ``max_chars`` characters, without NUL or lone surrogates (the validation wall's
    text rule, :func:`engine.validation.check_text`)."""
    return validation.check_text(value, what, max_chars)


def check_unit(value: object, what: str, default: float) -> float:
    """A number in [0, 1] (``None`` gives the default)."""
    if value is None:
        return default
    return validation.check_number(value, what, lo=0.0, hi=1.0)
