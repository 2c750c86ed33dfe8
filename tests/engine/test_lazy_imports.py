"""A CLI command that never touches a vector imports neither LanceDB (~6 s of CPU on a small machine) nor the
embedding model's stack (torch, sentence-transformers: ~10 s more): one real process runs several such commands on
a copy of the demo store and looks at its own ``sys.modules`` after each; ``stats`` (which counts vectors) shows that
the probe sees LanceDB once something needs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.cli import ROOT, copy_store

pytestmark = pytest.mark.subprocess

HEAVY = ("lancedb", "torch", "sentence_transformers")
PROBE = """
import json, sys
from engine.cli import main
store, commands, heavy = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
seen = []
for argv in commands:
    with open("/dev/null", "w") as sink:
        code = main(["--store", store, "--json", *argv], environ={}, stdout=sink, stderr=sink)
    seen.append({"argv": argv, "code": code, "heavy": [m for m in heavy if m in sys.modules]})
print(json.dumps(seen))
"""

LIGHT = [
    ["users"],
    ["sessions", "--user", "ada"],
    ["messages", "--user", "ada", "--session", "ada-s01"],
    ["traces", "--user", "ada"],
    ["export", "--user", "mira"],
    ["working", "--user", "ada", "--session", "ada-s06"],
    ["working", "--user", "ada", "--session", "ada-s06", "--set", 'goals=["tea"]'],
    ["forget-log", "--user", "ada"],
    ["demo"],  # already loaded: nothing to embed
]


def test_commands_that_never_touch_a_vector_load_neither_lancedb_nor_the_model(demo_store_template, tmp_path):
    store = copy_store(demo_store_template, tmp_path / "store")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(store), json.dumps([*LIGHT, ["stats"]]), json.dumps(HEAVY)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert [s["code"] for s in seen] == [0] * len(seen), seen
    assert all(s["heavy"] == [] for s in seen[:-1]), seen
    assert seen[-1]["heavy"] == ["lancedb"]  # stats counts the vectors; still no model
