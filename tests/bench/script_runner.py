"""Runs bench scripts as ``__main__``, each in a process of its own forked from this one, which has the local
embedding model loaded already: started once per test module by tests/bench/test_bench_scripts.py.

Why: most bench scripts load the model first (~8 s of CPU: torch, transformers and the weights), which would be most
of each smoke test's time. Each script still runs as ``python bench/x.py`` would run it: its own process (own exit
code, stdout, stderr, process group), ``__main__`` with its own ``sys.argv``, the same import path (this file's
folder first, as a script's is, and ``bench/`` on PYTHONPATH for its ``_common`` and siblings: given by the test),
its own imports; only the interpreter's start and the model's weights come from the parent.

Protocol (one JSON object a line): read ``{"script", "args", "stdout", "stderr", "timeout"}`` from stdin, write
``{"rc", "seconds"}`` (``rc`` -9 on a timeout) to stdout; the parent's stdout carries nothing else.

    python tests/bench/script_runner.py   (the test starts it with cwd = the repository, PYTHONPATH = bench)
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import signal
import sys
import time
import traceback


def run_child(script: str, args: list[str], stdout: str, stderr: str) -> None:
    """In the forked child: become ``python script args`` and exit with its code; never returns."""
    os.setpgid(0, 0)  # its own group, so a timeout ends the script and every process it started
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the protocol's pipe is the parent's
    sys.argv = [script, *args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:  # SystemExit("message"): printed to stderr, exit code 1, as the interpreter does
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()  # what the interpreter runs on the way out (temporary folders, servers' cleanup)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_one(request: dict) -> dict:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        run_child(request["script"], request["args"], request["stdout"], request["stderr"])
    deadline = start + float(request["timeout"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"rc": os.waitstatus_to_exitcode(status), "seconds": round(time.monotonic() - start, 2)}
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"rc": -9, "seconds": round(time.monotonic() - start, 2)}
        time.sleep(0.05)


def main() -> None:
    from engine.providers.embedders import _load_minilm

    # The weights only: no text is embedded here, so no thread pool exists yet when the children are forked.
    _load_minilm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(run_one(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
