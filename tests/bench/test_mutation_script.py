"""bench/mutation.py on a tiny target: it lists the mutants it says it makes, a mutant the tests pin is killed, one
they do not is reported as a survivor with its file and line, and the repository itself is never changed."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "bench" / "mutation.py"
TARGET = ["--modules", "engine/retrieval/assembly.py", "--functions", "token_cost"]
PINNED = "tests/engine/retrieval/test_assembly_pins.py::test_token_cost_rounds_a_quarter_of_the_characters_up"
UNRELATED = "tests/engine/retrieval/test_assembly_pins.py::test_merge_orders_equal_scores_by_hop_not_by_arrival"

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]  # two runs of the script: ~10-20 s


def mutation(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def digest() -> str:
    return hashlib.sha256((ROOT / "engine" / "retrieval" / "assembly.py").read_bytes()).hexdigest()


def test_the_mutants_of_one_function_are_listed():
    out = mutation(*TARGET, "--list")
    # return math.ceil(len(text) / 4): the return, the division, the constant
    assert "`return x` -> `return None`" in out and "`/` -> `*`" in out and "`4` -> `5`" in out
    assert out.strip().endswith("3 mutants")
    assert all(line.startswith("engine/retrieval/assembly.py:") for line in out.splitlines()[:-1])


def test_a_pinned_function_has_its_mutants_killed_and_an_unpinned_one_survives():
    before = digest()
    killed = mutation(*TARGET, "--tests", PINNED, "--limit", "5")
    total = next(line.split() for line in killed.splitlines() if line.startswith("total"))
    assert total[1:5] == ["3", "3", "0", "0"]  # mutants, killed, survived, timeout
    assert "100.0%" in killed
    survived = mutation(*TARGET, "--tests", UNRELATED, "--limit", "2", "--seed", "1")
    total = next(line.split() for line in survived.splitlines() if line.startswith("total"))
    assert total[1:4] == ["2", "0", "2"] and "0.0%" in survived
    listed = [line.strip() for line in survived.split("survived:")[1].splitlines() if line.startswith("  ")]
    assert len(listed) == 2 and all(
        re.match(r"engine/retrieval/assembly\.py:\d+ token_cost: ", line) for line in listed
    )
    assert all(line.endswith("| return math.ceil(len(text) / 4)") for line in listed)
    assert digest() == before  # the mutants ran in a copy
