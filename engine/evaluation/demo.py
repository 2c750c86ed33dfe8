"""The demo's expectation set (data/demo/expectations.json: the two-hop questions and some single-hop ones) and one
stored run of it, so the Evaluations page has something to show on a first start."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..config import DEMO_DIR
from ..errors import NotFound

if TYPE_CHECKING:
    from . import Evaluations

DEMO_FILE = DEMO_DIR / "expectations.json"


def demo_cases() -> tuple[str, str, list[dict[str, Any]]]:
    spec = json.loads(DEMO_FILE.read_text(encoding="utf-8"))
    cases = []
    for n, q in enumerate(json.loads((DEMO_DIR / spec["two_hop_file"]).read_text(encoding="utf-8")), 1):
        cases.append(
            {
                "case_id": f"demo-two-hop-{n}",
                "user_id": q["user_id"],
                "question": q["question"],
                "expected": [q["fact_a"], q["fact_b"]],
                "category": "two-hop",
                "now": spec["now"],
            }
        )
    for c in spec["single_hop"]:
        cases.append({**c, "category": "single-hop", "now": spec["now"]})
    return spec["set"], spec["description"], cases


def load_demo_evaluation(evals: Evaluations, run: bool = True) -> str | None:
    """Create the demo set (once) and, when it has no run yet, run it with the default settings; returns the run id
    (None when nothing was run)."""
    name, description, cases = demo_cases()
    try:
        existing = evals.get_set(name)
    except NotFound:
        existing = None
    if existing is None:
        evals.create_set(name, description)
        evals.add_cases(name, [{**c, "source": "manual"} for c in cases])
    if not run or (existing is not None and existing.runs):
        return None
    return evals.evaluate(name, label="demo · default settings").run_id
