"""The DuckDB SQL the memory modules write, adapted to PostgreSQL in one place.

The modules keep one SQL text per query, written for DuckDB with ``?`` placeholders. Most of it is portable; the
rest is a short, closed list of phrases rewritten here (table names and columns come from the code, never from user
text: values always travel as parameters):

- ``?`` placeholders become psycopg's ``%s``, numbered ``$1`` ones ``%(p1)s`` (and a literal ``%`` becomes ``%%``);
- ``unnest(?)`` of a Python list gets an explicit ``text[]`` type (PostgreSQL cannot infer it from a parameter);
- ``unnest(CAST(x AS VARCHAR[]))`` of a JSON array becomes ``json_array_elements_text(x)``;
- ``list_has_any(a, b)`` becomes the array overlap ``a && b``, ``list_contains(list, x)`` ``x = ANY(list)``;
- ``epoch_us(t)`` becomes the exact ``CAST(EXTRACT(EPOCH FROM t) * 1000000 AS BIGINT)``;
- ``strlen(x)`` becomes ``octet_length(x)``; ``ORDER BY rowid`` (insertion order) becomes ``ORDER BY ctid``, which
  is insertion order for the insert-only tables that use it;
- in migrations, ``DOUBLE`` becomes ``DOUBLE PRECISION`` and ``BLOB`` becomes ``BYTEA``.
"""

from __future__ import annotations

import re
from functools import lru_cache

_QUERY_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"unnest\(\s*CAST\(\s*([\w.]+)\s+AS\s+VARCHAR\[\]\s*\)\s*\)", re.I), r"json_array_elements_text(\1)"),
    (re.compile(r"unnest\(\s*\?\s*\)", re.I), "unnest(CAST(? AS TEXT[]))"),
    (re.compile(r"list_has_any\(\s*([\w.]+)\s*,\s*\?\s*::\s*VARCHAR\[\]\s*\)", re.I), r"(\1 && CAST(? AS VARCHAR[]))"),
    (
        re.compile(r"list_contains\(\s*(\$\d+|\?)\s*::\s*VARCHAR\[\]\s*,\s*([\w.]+)\s*\)", re.I),
        r"(\2 = ANY(CAST(\1 AS VARCHAR[])))",
    ),
    (re.compile(r"\bepoch_us\(\s*([\w.]+)\s*\)", re.I), r"CAST(EXTRACT(EPOCH FROM \1) * 1000000 AS BIGINT)"),
    (re.compile(r"\bstrlen\(", re.I), "octet_length("),
    (re.compile(r"\bORDER BY rowid\b", re.I), "ORDER BY ctid"),
)
_DDL_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bDOUBLE\b(?!\s+PRECISION)", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b", re.I), "BYTEA"),
)
_LEFT_UNTRANSLATED = re.compile(
    r"\bGROUP BY ALL\b|\bINSERT OR\b|\blist_\w+\(|\bunnest\(\s*CAST\(\s*[\w.]+\s+AS\s+VARCHAR", re.I
)


_NUMBERED = re.compile(r"\$(\d+)")


def is_numbered(sql: str) -> bool:
    """Whether a DuckDB query uses ``$1``-style parameters (psycopg then takes them as a mapping ``p1``, ...)."""
    return _NUMBERED.search(sql) is not None


class UntranslatableSQL(ValueError):
    """A DuckDB-only phrase the PostgreSQL store does not know: write it portably (see this module)."""


def _placeholders(sql: str) -> str:
    """``?`` -> ``%s``, ``$n`` -> ``%(pn)s`` and ``%`` -> ``%%`` outside quoted strings and identifiers (``%`` inside
    them too: psycopg reads the whole text as a format)."""
    out: list[str] = []
    quote = ""
    sql = _NUMBERED.sub(lambda m: "\0" + m.group(1) + "\0", sql)  # marked here, turned into %(pN)s below
    for ch in sql:
        if ch == "\0":
            out.append("\0")
            continue
        if ch == "%":
            out.append("%%")
            continue
        if quote:
            out.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        else:
            out.append(ch)
    return re.sub("\0(\\d+)\0", r"%(p\1)s", "".join(out))


@lru_cache(maxsize=4096)
def to_postgres(sql: str) -> str:
    """The PostgreSQL text of one DuckDB-style query (cached: the modules' texts are a closed set, so a few hundred)."""
    for pattern, replacement in _QUERY_REWRITES:
        sql = pattern.sub(replacement, sql)
    leftover = _LEFT_UNTRANSLATED.search(sql)
    if leftover:
        raise UntranslatableSQL(f"DuckDB-only SQL ({leftover.group(0)!r}) reached the PostgreSQL store: {sql[:120]}")
    return _placeholders(sql)


def ddl_to_postgres(sql: str) -> str:
    """A migration's DDL for PostgreSQL (types only; the statements are the same)."""
    for pattern, replacement in _DDL_REWRITES:
        sql = pattern.sub(replacement, sql)
    return sql
