"""Plain DuckDB, no memlens code: do processes that take turns on one file lose committed rows (issue 29)?

Each of ``--procs`` processes repeats, for ``--seconds``: connect (retrying while another process holds the file,
5-50 ms apart, as ``engine/store/sql/database.py`` did) -> insert one row naming (process, sequence) -> commit ->
close (which checkpoints). A row is *acknowledged* once its COMMIT returned; the process writes it to its own log
line at once. At the end the parent opens the file and counts the acknowledged rows that are not in it.

Modes (``--modes``):

- ``plain``: exactly that. DuckDB 2.0.1's ``connect()`` reads the database header before it takes its file lock
  (``--strace`` shows the ``pread64`` at offset 0 before the ``fcntl(F_SETLK)``), so a connect that overlaps another
  process's close-time checkpoint keeps the old header once it gets the lock, and its own checkpoint later writes
  over blocks that hold the other's last commits.
- ``flock``: the same, but each process holds an exclusive ``flock`` on ``<db>.lock`` from before ``connect()``
  until after ``close()``, so no connect can read the header while another process is still writing it.

The race needs a connect to be held up between its header read and its lock; a busy machine's scheduler does that
now and then (``--burn N`` adds N spinning processes), ``--delay-lock-ms MS`` does it every time: strace's fault
injection delays each ``fcntl`` call of the writers (DuckDB's lock call) by MS.

    python bench/duckdb_handover.py [--procs 4] [--seconds 10] [--runs 1] [--modes plain,flock] [--burn 0]
                                    [--delay-lock-ms 0] [--dir /dev/shm] [--strace]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import table

LOCK_MARKERS = ("could not set lock", "conflicting lock", "resource temporarily unavailable")


def child(db: Path, name: str, seconds: float, mode: str, go: Path) -> None:
    import duckdb

    log = open(db.parent / f"{name}.acks", "a", buffering=1)  # noqa: SIM115 - open for the whole run
    lock_path = db.with_name(db.name + ".lock")
    (db.parent / f"{name}.ready").touch()
    while not go.exists():
        time.sleep(0.005)
    end = time.monotonic() + seconds
    seq = 0
    retries = 0
    while time.monotonic() < end:
        lock_fd = None
        delay = 0.005
        while True:
            if mode == "flock":
                lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(lock_fd)
                    lock_fd = None
                    retries += 1
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.05)
                    continue
            try:
                conn = duckdb.connect(str(db))
                break
            except duckdb.IOException as exc:
                if lock_fd is not None:
                    os.close(lock_fd)
                    lock_fd = None
                if not any(m in str(exc).lower() for m in LOCK_MARKERS):
                    raise
                retries += 1
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.05)
        seq += 1
        conn.execute("BEGIN TRANSACTION")
        conn.execute("INSERT INTO t VALUES (?, ?)", [name, seq])
        conn.execute("COMMIT")
        log.write(f"{seq}\n")  # acknowledged: the commit returned
        conn.close()
        if lock_fd is not None:
            os.close(lock_fd)  # releases the flock only after close() has checkpointed
    (db.parent / f"{name}.done").write_text(json.dumps({"retries": retries}))


def run(mode: str, procs: int, seconds: float, burn: int, use_strace: bool, folder: str | None, delay_ms: int) -> dict:
    import duckdb

    work = Path(tempfile.mkdtemp(prefix=f"handover-{mode}-", dir=folder))
    try:
        db = work / "t.duckdb"
        with duckdb.connect(str(db)) as conn:
            conn.execute("CREATE TABLE t (who VARCHAR, seq INTEGER)")
        go = work / "go"
        children = []
        for i in range(procs):
            cmd = [sys.executable, __file__, "--child", str(db), f"p{i}", str(seconds), mode, str(go)]
            if use_strace and i == 0:
                trace = ["strace", "-f", "-e", "trace=openat,pread64,pwrite64,fcntl,flock,fdatasync,unlink,close"]
                cmd = [*trace, "-o", str(work.parent / f"handover-{mode}.strace"), *cmd]
            children.append(subprocess.Popen(cmd))
        # A busy machine (agents embedding text) is what makes the race common: a connect that is preempted between
        # reading the header and taking the lock. Spinners keep every core busy for the run.
        spin = f"import time\nend = time.monotonic() + {seconds + 1.5}\nwhile time.monotonic() < end: pass"
        spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(burn)]
        while not all((work / f"p{i}.ready").exists() for i in range(procs)):
            time.sleep(0.05)
        tracers: list[subprocess.Popen] = []
        if delay_ms:
            # Each connect is held up between its header read and its lock (DuckDB's fcntl(F_SETLK) is delayed), as a
            # busy machine's scheduler sometimes does: the race becomes a matter of course instead of luck.
            cmd = f"strace -f -o /dev/null -e trace=fcntl -e inject=fcntl:delay_enter={delay_ms}ms -p".split()
            tracers = [subprocess.Popen([*cmd, str(c.pid)], stderr=subprocess.DEVNULL) for c in children]
            time.sleep(1.0)  # attached
        go.touch()
        for c in children:
            if c.wait(timeout=seconds + 120) != 0:
                raise SystemExit(f"a {mode} child failed")
        for s in spinners:
            s.wait()
        for t in tracers:
            t.wait(timeout=30)
        acked = {(f"p{i}", int(s)) for i in range(procs) for s in (work / f"p{i}.acks").read_text().split()}
        with duckdb.connect(str(db), read_only=True) as conn:
            stored = {(w, int(s)) for w, s in conn.execute("SELECT who, seq FROM t").fetchall()}
        retries = sum(json.loads((work / f"p{i}.done").read_text())["retries"] for i in range(procs))
        return {"acked": len(acked), "lost": len(acked - stored), "retries": retries}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, db, name, seconds, mode, go = sys.argv
        child(Path(db), name, float(seconds), mode, Path(go))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--modes", default="plain,flock")
    parser.add_argument("--dir", help="where the database goes (default: the temp folder); /dev/shm: no fsync cost")
    parser.add_argument("--delay-lock-ms", type=int, default=0, help="hold each fcntl call up this long (strace)")
    parser.add_argument("--burn", type=int, default=0, help="CPU-spinning processes beside the writers")
    parser.add_argument("--strace", action="store_true", help="strace the first child (file in the temp folder)")
    args = parser.parse_args()
    rows = []
    for mode in args.modes.split(","):
        for r in range(args.runs):
            res = run(mode, args.procs, args.seconds, args.burn, args.strace, args.dir, args.delay_lock_ms)
            rows.append([mode, r + 1, args.procs, res["acked"], res["lost"], res["retries"]])
            print(f"{mode} run {r + 1}: {res}", flush=True)
    print(table(["mode", "run", "procs", "committed", "lost", "connect retries"], rows))


if __name__ == "__main__":
    main()
