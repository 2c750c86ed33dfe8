"""The settings table of docs/settings.md, generated from ``Settings`` (engine/config.py), so it cannot drift:

    python -m engine.settings_doc                               # print the table
    python -m engine.settings_doc --write docs/settings.md      # rewrite it in place, between the markers

tests/test_docs.py fails when docs/settings.md's table differs from what this prints.
"""

from __future__ import annotations

from pathlib import Path

from .config import Settings
from .errors import InvalidInput

TABLE_START = (
    "<!-- settings table: generated from engine/config.py by python -m engine.settings_doc --write docs/settings.md -->"
)
TABLE_END = "<!-- end of the generated settings table -->"


def settings_markdown() -> str:
    """The settings table: name, default, environment variable, whether a retrieval call may override it, help (and
    the allowed values)."""
    rows = ["| setting | default | env | per call | what it does |", "|---|---|---|---|---|"]
    for d in Settings.describe():
        default = d["default"]
        meaning = (d["help"] + (f" ({' / '.join(d['choices'])})" if d["choices"] else "")).replace("|", "\\|")
        env = f"`{d['env']}`" if d["env"] else ""
        per_call = "yes" if d["retrieval"] else ""
        rows.append(f"| `{d['name']}` | `{default}` | {env} | {per_call} | {meaning} |")
    return "\n".join(rows)


def with_settings_table(document: str) -> str:
    """``document`` with the text between the settings-table markers replaced by :func:`settings_markdown`."""
    start, end = document.find(TABLE_START), document.find(TABLE_END)
    if start < 0 or end < start:
        raise InvalidInput("the document has no settings-table markers")
    return document[: start + len(TABLE_START)] + "\n" + settings_markdown() + "\n" + document[end:]


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Print the settings table, or rewrite it in a document between markers.")
    ap.add_argument("--write", type=Path, metavar="PATH", help="rewrite this file's settings table (docs/settings.md)")
    args = ap.parse_args()
    if args.write:
        args.write.write_text(with_settings_table(args.write.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(settings_markdown())
