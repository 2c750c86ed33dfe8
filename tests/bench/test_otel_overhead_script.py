"""bench/otel_overhead.py on a tiny input: a real engine retrieves with the OpenTelemetry export off and on, the export
sending over OTLP/HTTP to the script's own sink process, and the script prints both rows, that every span was taken,
and the export worker's cost per trace. Speed is never asserted here (bench/ measures it); only the shape of the run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]  # the script and its sink: two processes, one loads the model


def test_otel_overhead_prints_off_and_on_and_the_workers_cost(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLENS_", "OTEL_"))}
    args = ["--items", "40", "--runs", "3", "--hops", "2", "--store", str(tmp_path / "store")]
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "otel_overhead.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    out = run.stdout
    assert "store: 40 items for one user; 3 queries x 2, 2 hops" in out
    rows = {line.split("  ")[0] for line in out.splitlines()}
    assert {"off", "on (OTLP/HTTP, batched)"} <= rows
    assert re.search(r"on \(OTLP/HTTP, batched\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[+-][\d.]+ %", out), out
    assert "exported spans all taken by the sink: True" in out
    assert re.search(r"CPU per retrieval, .*: off [\d.]+ ms, on [\d.]+ ms \([+-][\d.]+ %\)", out), out
    assert re.search(r"build span data \(otel_spans\)\s+[\d.]+", out) and "Attributes dict is full" not in run.stderr
