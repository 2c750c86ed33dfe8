"""Every process's CPU during a run, read from /proc (Linux): what per-process exit hooks and ``getrusage`` miss.

``getrusage(RUSAGE_CHILDREN)`` counts only descendants that were waited for, and an exit hook never runs in a
process that is killed. In the test suite that leaves out Chromium's renderers (its zygote re-parents them), the
Streamlit servers and forked children the tests kill, and PostgreSQL (``pg_ctl`` starts it as a daemon). This
sampler reads ``/proc/<pid>/stat`` of every process each ``interval_s`` and keeps each process's last CPU time, so
a process is missed only if it lives less than one interval, and loses at most one interval of its CPU at the end.
The machine's busy time from ``/proc/stat`` over the same span is the total that nothing can hide from.
"""

from __future__ import annotations

import os
import re
import threading
from collections import defaultdict
from dataclasses import dataclass

TICKS = os.sysconf("SC_CLK_TCK")


def _cmdline(pid: str) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def _cpu_and_start(pid: str) -> tuple[float, int]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS, int(fields[19])  # utime + stime, starttime


def machine_times_s() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine since boot, every core. Busy excludes idle, I/O wait and steal:
    steal is time a virtual machine's cores waited for the host, capacity lost rather than work done."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq) / TICKS, steal / TICKS


def process_kind(cmdline: str) -> str:
    """What a process of the test suite is, from its command line."""
    argv0 = cmdline.split(" ", 1)[0]
    if "chromium" in argv0 or "chrome" in argv0:
        for kind in ("renderer", "gpu-process", "utility", "zygote"):
            if f"--type={kind}" in cmdline:
                return f"Chromium {kind}"
        return "Chromium browser process"
    if "playwright" in cmdline and ("node" in argv0 or "driver" in cmdline):
        return "Playwright driver (node)"
    if "postgres" in argv0 or cmdline.startswith("postgres:"):
        return "PostgreSQL"
    if not cmdline.strip():
        return "kernel threads"
    if "python" not in argv0 and "pytest" not in argv0:
        return "other (not Python)"
    if "app.py" in cmdline:
        return "Streamlit server"
    if "moto" in cmdline:
        return "moto (S3) server"
    if "exec(eval(sys.stdin.readline()))" in cmdline or cmdline.rstrip().endswith(" -c"):
        return "xdist worker"
    if re.search(r"(^|/)pytest( |$)|-m pytest|pytest/__main__", cmdline):  # not a store under /tmp/pytest-of-*
        return "pytest controller"
    if "engine/__main__.py" in cmdline or " -m engine" in cmdline or "agent_loop.py" in cmdline:
        return "CLI / MCP subprocess"
    if "fork_server" in cmdline or "tests/support/" in cmdline:
        return "test helper process (incl. forked children)"
    return "other Python"


@dataclass(frozen=True)
class ProcessCpu:
    kind: str
    processes: int
    cpu_s: float


class ProcessSampler:
    """``start()``, run something, ``stop()``; then ``by_kind()``, ``machine_busy_s`` and ``machine_steal_s``.
    Processes alive at ``start()`` (and this one) are left out: they are not the run's."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self._seen: dict[tuple[str, int], tuple[str, float]] = {}  # (pid, start tick) -> (kind, last CPU seen)
        self._before: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="process-sampler", daemon=True)
        self._times_at_start = (0.0, 0.0)
        self.machine_busy_s = 0.0
        self.machine_steal_s = 0.0

    def start(self) -> None:
        self._before = set(self._scan(record=False))
        self._times_at_start = machine_times_s()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._scan(record=True)
        busy, steal = machine_times_s()
        self.machine_busy_s = busy - self._times_at_start[0]
        self.machine_steal_s = steal - self._times_at_start[1]

    def by_kind(self) -> list[ProcessCpu]:
        totals: dict[str, list[float]] = defaultdict(list)
        for kind, cpu in self._seen.values():
            totals[kind].append(cpu)
        rows = [ProcessCpu(k, len(v), sum(v)) for k, v in totals.items()]
        return sorted(rows, key=lambda r: -r.cpu_s)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._scan(record=True)

    def _scan(self, record: bool) -> list[tuple[str, int]]:
        me = str(os.getpid())
        keys = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            try:
                cpu, started = _cpu_and_start(pid)
                key = (pid, started)
                keys.append(key)
                if not record or key in self._before:
                    continue
                kind = self._seen[key][0] if key in self._seen else process_kind(_cmdline(pid))
            except (OSError, IndexError, ValueError):  # gone between listing and reading
                continue
            self._seen[key] = (kind, cpu)
        return keys
