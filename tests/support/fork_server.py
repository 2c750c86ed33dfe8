"""A fork server for tests that start many processes which all load the model: ``python fork_server.py REQUESTS``
imports the engine and LanceDB and loads the model's weights once (not running it: no thread pool exists yet to be
forked), then forks one child per request. Each child is a real process of its own (its own pid, killed by it,
its own store handles) that runs one of this folder's scripts as ``__main__``; it only skips the seconds of imports
(sentence-transformers and torch, ~10 s of CPU here) that it would otherwise pay before doing anything.

Tests use :class:`ForkServer` (one per module): ``server.start("agent_writer.py", arg, ...)`` returns a
:class:`Forked` with ``pid``, ``poll()``, ``wait()``, ``kill()`` and the child's ``stderr()``.

Protocol (files, so that the server needs no thread): a request is REQUESTS/NNNNNN.json
``{"script": ..., "argv": [...], "handle": DIR}``; the server writes DIR/pid when the child exists and DIR/exit (its
exit status; a kill -9 gives -9) once it is gone; the child's stdout and stderr go to DIR/stdout.txt and
DIR/stderr.txt. REQUESTS/stop ends the server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
START_TIMEOUT_S = 300  # the server loads the model first; slow on a loaded machine


def serve(requests: Path) -> None:
    import engine  # noqa: F401  (imported once here, inherited by every child)
    from engine.providers.embedders import _load_minilm

    _load_minilm()  # the weights only: a forward pass would start thread pools that a fork does not carry over
    import lancedb  # noqa: F401  (imported, not connected: after _load_minilm has set LANCEDB_LOG)

    handles: dict[int, Path] = {}
    (requests / "ready").write_text("ready")
    while not (requests / "stop").exists():
        for request in sorted(requests.glob("*.json")):
            spec = json.loads(request.read_text(encoding="utf-8"))
            request.unlink()
            handle = Path(spec["handle"])
            pid = os.fork()
            if pid == 0:
                run_child(spec["script"], spec["argv"], handle)
            handles[pid] = handle
            (handle / "pid.tmp").write_text(str(pid))
            (handle / "pid.tmp").replace(handle / "pid")
        while handles:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            handle = handles.pop(pid)
            (handle / "exit.tmp").write_text(str(os.waitstatus_to_exitcode(status)))
            (handle / "exit.tmp").replace(handle / "exit")
        time.sleep(0.01)
    # The server holds no store and nothing to flush: skip the interpreter's teardown of torch and the model
    # (seconds of CPU that the module's last test would wait for).
    sys.stderr.flush()
    os._exit(0)


def run_child(script: str, argv: list[str], handle: Path) -> None:
    """In the forked child: run ``script`` as ``__main__`` with ``argv``, then leave with its exit status."""
    import runpy
    import traceback

    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        out = os.open(handle / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    code = 1
    try:
        sys.argv = [str(SUPPORT / script), *argv]
        runpy.run_path(str(SUPPORT / script), run_name="__main__")
        code = 0
    except SystemExit as exc:  # as the interpreter would: None is 0, a message goes to stderr with status 1
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class Forked:
    """A child of the fork server, as a test sees it (the parts of ``subprocess.Popen`` the tests use)."""

    def __init__(self, handle: Path, server: subprocess.Popen) -> None:
        self.handle, self._server = handle, server
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (handle / "pid").exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fork server started no child for {handle}")
            time.sleep(0.01)
        self.pid = int((handle / "pid").read_text())

    def poll(self) -> int | None:
        done = self.handle / "exit"
        return int(done.read_text()) if done.exists() else None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"pid {self.pid} still runs after {timeout} s")
            time.sleep(0.01)
        return code

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:  # already gone (the server reaps it)
            pass

    def stderr(self) -> str:
        path = self.handle / "stderr.txt"
        return path.read_text(errors="replace") if path.exists() else ""


class ForkServer:
    """One fork server process, its requests in ``base``; ``stop()`` ends it (its children must be gone first)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.requests = base / "requests"
        self.requests.mkdir(parents=True)
        self._errors = base / "server-stderr.txt"
        self._count = 0
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        with self._errors.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(SUPPORT / "fork_server.py"), str(self.requests)],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (self.requests / "ready").exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"the fork server did not start: {self.server_errors()}")
            time.sleep(0.05)

    def start(self, script: str, *argv: str | Path | float) -> Forked:
        self._count += 1
        handle = self.base / f"child-{self._count:06d}"
        handle.mkdir()
        request = self.requests / f"{self._count:06d}"
        spec = {"script": script, "argv": [str(a) for a in argv], "handle": str(handle)}
        request.with_suffix(".tmp").write_text(json.dumps(spec))
        request.with_suffix(".tmp").replace(request.with_suffix(".json"))
        return Forked(handle, self.process)

    def server_errors(self) -> str:
        return self._errors.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        (self.requests / "stop").write_text("stop")
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
