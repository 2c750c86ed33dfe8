"""Where the test suite's CPU goes: runs ``pytest`` (any arguments after ``--`` are passed on) while sampling every
process's CPU from /proc, then prints a table by kind of process and the machine's busy time over the run.

    python bench/suite_cpu.py [--log PATH] [-- PYTEST ARGS...]

How: ``bench/process_sampler.py`` reads every process's CPU from /proc twice a second, so Chromium's renderers,
PostgreSQL and the processes the tests kill are counted too (``getrusage`` and ``/usr/bin/time`` miss them: in a
browser-tests-only run they reported 233 s of CPU while the machine was busy for 525 s). The machine's busy time
from /proc/stat is the total; run it on an otherwise idle machine. A ``sitecustomize`` module on PYTHONPATH also
makes every Python process of the run report, at exit, the test that started it: the list of processes that loaded
the model besides the workers.

Speed of the suite is a benchmark like any other: the issue's target (``.ci/run`` <= 8 min on 2 cores) needs the
suite's CPU well under 2 x 8 min, so this says which part to cut.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, table
from process_sampler import ProcessSampler

# The log's path is written into the hook itself: tests that start a process with an environment of their own
# (the CLI and MCP tests do) keep PYTHONPATH but not other variables.
HOOK = """
import atexit, json, os, resource, sys, time
LOG = {log!r}
_START = time.time()
def _report():
    try:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        heavy = [m for m in ("torch", "sentence_transformers", "lancedb", "streamlit") if m in sys.modules]
        record = {"pid": os.getpid(), "argv": " ".join(sys.argv)[:300], "cpu": me.ru_utime + me.ru_stime,
                  "children_cpu": kids.ru_utime + kids.ru_stime, "wall": time.time() - _START, "heavy": heavy,
                  "test": os.environ.get("PYTEST_CURRENT_TEST", "")[:200]}
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\\n")
    except Exception:
        pass
atexit.register(_report)
"""


def is_worker(record: dict) -> bool:
    """An xdist worker reports ``-c`` as its argv (execnet starts it with ``python -c``) and lives the whole run."""
    argv = record["argv"]
    return ("exec(eval(sys.stdin.readline()))" in argv or argv.endswith("-c")) and record["wall"] > 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, help="keep the per-process JSON lines here")
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        log = (args.log or Path(tmp, "processes.jsonl")).resolve()
        log.unlink(missing_ok=True)
        Path(tmp, "sitecustomize.py").write_text(HOOK.replace("{log!r}", repr(str(log))), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tmp, env.get("PYTHONPATH", "")) if p)
        sampler = ProcessSampler()
        sampler.start()
        start = time.monotonic()
        code = subprocess.call(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args], cwd=ROOT, env=env
        )
        wall = time.monotonic() - start
        sampler.stop()
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    busy = sampler.machine_busy_s
    kinds = sampler.by_kind()
    sampled = sum(k.cpu_s for k in kinds)
    rows = [[k.kind, k.processes, round(k.cpu_s), f"{100 * k.cpu_s / busy:.0f}%"] for k in kinds if k.cpu_s >= 0.5]
    rows.append(["not seen by the sampler (processes shorter than 0.5 s, kernel)", "", round(busy - sampled), ""])
    print()
    print(table(["process kind", "processes", "CPU s", "share of busy"], rows))
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"\npytest exit {code}; wall {wall:.0f} s; machine busy {busy:.0f} CPU s over {os.cpu_count()} cores "
        f"(average use {busy / wall:.2f} cores); getrusage of the run saw {children.ru_utime + children.ru_stime:.0f} s"
    )
    # A busy host slows this machine's cores down: the same tests took 965 to 1,480 s of busy time (steal included)
    # on different hours of one day here, so compare runs made back to back, and their steal.
    print(f"steal (core time the host took from this virtual machine): {sampler.machine_steal_s:.0f} s")
    model_loaders = sorted(
        (r for r in records if "torch" in r["heavy"] and not is_worker(r)),
        key=lambda r: -r["cpu"],
    )
    if model_loaders:
        print("\nprocesses that loaded the model, besides the workers (most CPU first):")
        print(
            table(
                ["CPU s", "wall s", "started by"],
                [[round(r["cpu"]), round(r["wall"]), r["test"] or r["argv"][:80]] for r in model_loaders[:15]],
            )
        )


if __name__ == "__main__":
    main()
