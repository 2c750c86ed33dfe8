"""Every setting and every dashboard page is documented in the README (as datasette's docs tests do)."""

from __future__ import annotations

import re
from pathlib import Path

from engine import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented_in_the_readme():
    missing = [s["name"] for s in Settings.describe() if f"`{s['name']}`" not in README]
    assert not missing, f"settings missing from README.md: {missing}"


def test_every_dashboard_page_is_documented_in_the_readme():
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    titles = re.findall(r'st\.Page\([^\n]*?title="([^"]+)"', app)
    assert titles, "no pages found in app.py"
    missing = [t for t in titles if t not in README]
    assert not missing, f"pages missing from README.md: {missing}"


def test_the_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "pip install -r requirements-dev.txt && pytest"
    assert command in README and command in ci


def test_torch_is_pinned_exactly():
    reqs = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==2\.13\.0$", reqs, re.M)
