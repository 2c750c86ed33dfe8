"""Turning a raw value (a ``KEY=VALUE`` string from the CLI or an environment variable, or a typed value from Python)
into a setting's value: its type, its choices and range, the validation wall's text rule and ceiling; and the short
words a refusal uses. The settings themselves are declared in engine/config.py."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from .errors import InvalidInput


def known_settings_hint(key: object, fields: Mapping[str, Any]) -> str:
    """Close matches of a mistyped name, not the whole list (60 names made a 1,000-character error line)."""
    import difflib

    close = difflib.get_close_matches(key, list(fields), n=3, cutoff=0.6) if isinstance(key, str) else []
    known = f"{len(fields)} settings are listed in docs/settings.md"
    return f"did you mean {', '.join(close)}? ({known})" if close else known


def short_repr(value: Any) -> str:
    """A short, recursion-safe repr of a refused value (a 5,000-level list must not raise RecursionError)."""
    import reprlib

    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 128:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1:,} digits"
    try:
        r = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
        r.maxlevel, r.maxstring, r.maxother, r.maxlong = 3, 60, 60, 40
        return r.repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"


def coerce_setting(f: dataclasses.Field[Any], raw: Any) -> Any:
    """``raw`` as the value of setting ``f``, or InvalidInput saying what the setting expects."""
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    m = f.metadata
    try:
        if kind == "bool":
            if isinstance(raw, bool):
                value: Any = raw
            elif str(raw).strip().lower() in {"1", "true", "yes", "on"}:
                value = True
            elif str(raw).strip().lower() in {"0", "false", "no", "off"}:
                value = False
            else:
                raise ValueError
        elif kind == "int":
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw)
        elif kind == "float":
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError
        else:
            value = str(raw)
    except (TypeError, ValueError):
        raise InvalidInput(f"setting {f.name} expects {kind}, got {short_repr(raw)}") from None
    from .validation import text_problem

    if isinstance(value, str) and text_problem(value):
        raise InvalidInput(f"setting {f.name} {text_problem(value)}")
    if m["choices"] and value not in m["choices"]:
        raise InvalidInput(f"setting {f.name} must be one of {', '.join(m['choices'])}, got {str(value)[:60]!r}")
    if m["lo"] is not None and value < m["lo"]:
        raise InvalidInput(f"setting {f.name} must be >= {m['lo']}, got {short_repr(value)}")
    if m["hi"] is not None and value > m["hi"]:
        raise InvalidInput(f"setting {f.name} must be <= {m['hi']}, got {short_repr(value)}")
    # The validation wall's ceiling for settings without their own maximum: 10**30 never reaches DuckDB or a sleep.
    if kind in ("int", "float") and m["hi"] is None and value > (1_000_000_000 if kind == "int" else 1e9):
        raise InvalidInput(
            f"setting {f.name} must be <= {1_000_000_000 if kind == 'int' else 1e9:g}, got {short_repr(value)}"
        )
    return value


def setting(
    default: Any,
    help: str,
    *,
    choices: tuple[Any, ...] | None = None,
    lo: float | None = None,
    hi: float | None = None,
    retrieval: bool = False,
    secret: bool = False,
    env: str | None = None,
) -> Any:
    """One setting: its default, help, allowed values or range, whether a retrieval call may override it, whether
    it is a secret, and the environment variable that sets it (``env``; read by ``Settings.from_env`` only)."""
    return field(
        default=default,
        repr=not secret,
        metadata={
            "help": help,
            "choices": choices,
            "lo": lo,
            "hi": hi,
            "retrieval": retrieval,
            "secret": secret,
            "env": env,
        },
    )
