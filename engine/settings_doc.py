"""The README's settings table, generated from ``Settings`` (engine/config.py), so it cannot drift:

    python -m engine.settings_doc                      # print the table
    python -m engine.settings_doc --readme README.md   # rewrite it in place, between the markers

tests/test_docs.py fails when README.md's table differs from what this prints.
"""

from __future__ import annotations

from pathlib import Path

from .config import Settings
from .errors import InvalidInput

README_TABLE_START = (
    "<!-- settings table: generated from engine/config.py by python -m engine.settings_doc --readme README.md -->"
)
README_TABLE_END = "<!-- end of the generated settings table -->"


def settings_markdown() -> str:
    """The README's settings table: name, default, environment variable, whether a retrieval call may override it,
    help (and the allowed values)."""
    rows = ["| setting | default | env | per call | what it does |", "|---|---|---|---|---|"]
    for d in Settings.describe():
        default = d["default"]
        meaning = (d["help"] + (f" ({' / '.join(d['choices'])})" if d["choices"] else "")).replace("|", "\\|")
        env = f"`{d['env']}`" if d["env"] else ""
        per_call = "yes" if d["retrieval"] else ""
        rows.append(f"| `{d['name']}` | `{default}` | {env} | {per_call} | {meaning} |")
    return "\n".join(rows)


def readme_with_settings_table(readme: str) -> str:
    """``readme`` with the text between the settings-table markers replaced by :func:`settings_markdown`."""
    start, end = readme.find(README_TABLE_START), readme.find(README_TABLE_END)
    if start < 0 or end < start:
        raise InvalidInput("the README has no settings-table markers")
    return readme[: start + len(README_TABLE_START)] + "\n" + settings_markdown() + "\n" + readme[end:]


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Print the settings table, or rewrite it in a README between markers.")
    ap.add_argument("--readme", type=Path, help="rewrite this file's settings table in place")
    args = ap.parse_args()
    if args.readme:
        args.readme.write_text(readme_with_settings_table(args.readme.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(settings_markdown())
