"""bench/peer_mem0.py on a tiny input: real mem0 and real memlens, each in its own worker process, grow to two sizes
(mem0's store filled past the first) and the script prints one row per system and size, with numbers where numbers
belong. Speed is never asserted here (bench/ measures it); only the shape of the run and that both systems searched."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "bench" / "peer_mem0.py"
TINY = "--sizes 24,48 --users 3 --queries 4 --batch 10 --mem0-fill-above 24"
MORE = "--sizes 60 --users 3 --queries 2 --batch 10"  # the same stores grown on by a second run

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]  # three processes, two of them load the model: ~30-60 s


def last_table(text: str) -> list[dict[str, str]]:
    """The last table the script printed (bench/_common.table: header, dashes, rows up to a blank line)."""
    lines = text.splitlines()
    dashes = [n for n, line in enumerate(lines) if re.fullmatch(r"-+(  -+)*", line)]
    assert dashes, text[-2000:]
    n = dashes[-1]
    starts = [m.start() for m in re.finditer(r"-+", lines[n])]
    ends = [*starts[1:], None]

    def cut(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]

    headers = cut(lines[n - 1])
    rows = []
    for line in lines[n + 1 :]:
        if not line.strip():
            break
        rows.append(dict(zip(headers, cut(line), strict=True)))
    return rows


def test_both_systems_are_measured_at_every_size_and_mem0_is_filled_past_the_threshold(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY.split(), "--workdir", str(tmp_path / "stores")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = last_table(done.stdout)
    assert [(r["memories"], r["system"]) for r in rows] == [
        ("24", "mem0"),
        ("24", "memlens"),
        ("48", "mem0"),
        ("48", "memlens"),
    ]
    assert rows[2]["adds/s (this step)"] == "filled"
    for row in rows:
        numeric = [row[h] for h in ("search p50 ms", "search p95 ms", "RSS MB", "disk MB")]
        assert all(float(v) > 0 for v in numeric), row
        assert float(row["search p95 ms"]) >= float(row["search p50 ms"])
        if row["adds/s (this step)"] != "filled":
            assert float(row["adds/s (this step)"]) > 0
    # the two systems found the same memories for most queries (same model, same texts): both really searched
    overlaps = [float(m) for m in re.findall(r"overlap (\d\.\d\d) on average", done.stdout)]
    assert len(overlaps) == 2 and all(o > 0.5 for o in overlaps), done.stdout
    # mem0's history holds the 24 memories added through Memory.add, and none of the 24 filled past the threshold
    with sqlite3.connect(tmp_path / "stores" / "mem0" / "history.db") as history:
        assert history.execute("SELECT event, count(*) FROM history GROUP BY event").fetchall() == [("ADD", 24)]
    # the same stores, grown on to 60 by a second run (a long run continued in steps)
    more = subprocess.run(
        [sys.executable, str(SCRIPT), *MORE.split(), "--workdir", str(tmp_path / "stores")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert more.returncode == 0, more.stderr[-3000:]
    assert [(r["memories"], r["system"], r["adds/s (this step)"] != "filled") for r in last_table(more.stdout)] == [
        ("60", "mem0", True),
        ("60", "memlens", True),
    ]
    with sqlite3.connect(tmp_path / "stores" / "mem0" / "history.db") as history:
        assert history.execute("SELECT count(*) FROM history").fetchone() == (24 + 12,)
