"""The settings in use as table rows, with secrets hidden (no st import)."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine import Settings


def _secret_names() -> set[str]:
    # Settings declares secrets in its field metadata; describe() blanks their defaults but the value in use must be
    # hidden too. Anything named like a key or token is treated as secret as well, in case a new field forgets it.
    names = {f.name for f in dataclasses.fields(Settings) if f.metadata.get("secret")}
    return names | {f.name for f in dataclasses.fields(Settings) if "key" in f.name or "token" in f.name}


def mask_url(url: str) -> str:
    """A URL without any user:password part (nor a ``password=`` parameter, as a PostgreSQL DSN may carry)."""
    parts = urlsplit(url)
    query = "&".join("password=***" if p.lower().startswith("password=") else p for p in parts.query.split("&") if p)
    if "@" not in parts.netloc:
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, query, parts.fragment))


def settings_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per setting: name, value in use (secrets shown only as set / not set), default, meaning."""
    secret = _secret_names()
    rows = []
    for d in Settings.describe():
        name = d["name"]
        value = getattr(settings, name, None)
        shown: Any
        if name in secret:
            shown = "set (hidden)" if value else "not set"
            default = ""
        else:
            shown = mask_url(value) if isinstance(value, str) and "://" in value else value
            default = d["default"]
        rows.append(
            {
                "setting": name,
                "in use": str(shown),
                "default": str(default),
                "changed": (name not in secret and value != d["default"]),
                "meaning": d["help"] + (f" Env {d['env']}." if d["env"] else ""),
            }
        )
    return rows
