"""How the CLI writes: JSON documents, JSON lines, plain tables, progress lines and one-line errors."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..records import to_plain

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def one_line(text: str, limit: int = 600) -> str:
    """Collapse a message to a single printable line (an error must never span lines or hide in control bytes)."""
    flat = _CONTROL.sub(" ", str(text))
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def plain(value: Any) -> Any:
    """Records to JSON-ready data, with NaN and infinities as null so the output is always valid JSON."""
    value = to_plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    return json.dumps(plain(value), ensure_ascii=False, indent=indent, allow_nan=False, default=str)


def cell(value: Any, width: int) -> str:
    """A table cell: one line, at most ``width`` characters."""
    if value is None:
        text = ""
    elif isinstance(value, float):
        text = f"{value:.3f}" if math.isfinite(value) else ""
    elif isinstance(value, (dict, list, tuple)):
        text = json.dumps(plain(value), ensure_ascii=False, default=str)
    elif hasattr(value, "isoformat"):
        text = value.isoformat()[:16].replace("T", " ")
    elif isinstance(value, str) and _ISO_TIME.match(value):
        text = value[:16].replace("T", " ")  # tables show minutes; JSON keeps the full timestamp
    else:
        text = str(value)
    text = one_line(text, 10_000)
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    width: int = 20


def table(rows: Sequence[Mapping[str, Any]], cols: Sequence[Col], empty: str = "(none)") -> str:
    """A fixed-width text table; the last column is not padded."""
    if not rows:
        return empty
    cells = [[cell(r.get(c.key), c.width) for c in cols] for r in rows]
    widths = [max([len(c.header)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=False)).rstrip()

    out = [line([c.header for c in cols]), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def pairs(data: Mapping[str, Any], keys: Sequence[str] | None = None) -> str:
    """``key: value`` lines for a small object."""
    keys = list(keys or data.keys())
    width = max((len(k) for k in keys), default=0)
    return "\n".join(f"{k.ljust(width)}  {cell(data.get(k), 200)}" for k in keys)


@dataclass
class Result:
    """What a command produced: ``data`` (printed as JSON with --json or when ``human`` is None), else ``human``."""

    data: Any
    human: Callable[[Any], str] | None = None
    exit_code: int = 0  # non-zero when the command ran but a check it was asked for failed (eval's gate)


class Progress:
    """Progress lines on stderr: rewritten in place on a terminal, one line per step otherwise."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.dirty = False

    def __call__(self, kind: str, done: int, total: int) -> None:
        text = f"{self.label}: embedding {kind} {done}/{total}"
        if self.tty:
            self.stream.write("\r" + text.ljust(60))
            self.dirty = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.dirty:
            self.stream.write("\n")
            self.stream.flush()
            self.dirty = False


def size(n: int) -> str:
    """Bytes for people: 950 B, 12.3 kB, 4.5 MB, 2.1 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
