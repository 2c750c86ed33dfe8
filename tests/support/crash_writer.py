"""A process that writes and gets killed (kill -9) by tests/engine/test_crashes.py and test_three_processes.py.

Usage: python crash_writer.py MODE STORE FLAGS_DIR [ARG]
- ingest: ingest the JSONL file ARG in one call (touches FLAGS_DIR/started just before).
- working: multi-slot working-memory updates in a loop, each setting slots a, b, c and goals to the same counter.
- agent: remember + add_message + a multi-slot working update in a loop for ARG seconds (or until killed); each
  completed call is appended to FLAGS_DIR/committed.jsonl (flushed) *after* it returned, so every line there is
  a write the store must hold.

Or: python crash_writer.py serve REQUESTS_DIR: a fork server for tests that kill many writers. It imports the engine
and LanceDB and loads the model's weights once (not running it: no thread pool exists yet to be forked), then for each
request file REQUESTS_DIR/*.json ({"argv": [MODE, STORE, FLAGS_DIR, ARG...]}) forks a writer that runs as above,
writes its pid to FLAGS_DIR/pid, and once the writer is gone FLAGS_DIR/exit-PID with its exit status (a kill -9
gives -9). Each writer is a real process of its own, killed by its pid; it only skips the seconds of imports
(sentence-transformers and torch, ~10 s of CPU here) that every writer would otherwise pay before writing a byte.
REQUESTS_DIR/stop ends the server.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from twoproc_common import open_engine

USER = "crash-user"
SESSION = "crash-s1"


def main() -> None:
    if sys.argv[1] == "serve":
        serve(Path(sys.argv[2]))
    else:
        write(sys.argv[1:])


def serve(requests: Path) -> None:
    import engine  # noqa: F401  (imported once here, inherited by every forked writer)
    from engine.providers.embedders import _load_minilm

    _load_minilm()  # the weights only: a forward pass would start thread pools that a fork does not carry over
    import lancedb  # noqa: F401  (imported, not connected: after _load_minilm has set LANCEDB_LOG)

    flags_of: dict[int, Path] = {}
    (requests / "ready").write_text("ready")
    while not (requests / "stop").exists():
        for request in sorted(requests.glob("*.json")):
            argv = json.loads(request.read_text(encoding="utf-8"))["argv"]
            request.unlink()
            pid = os.fork()
            if pid == 0:  # the writer
                code = 1
                try:
                    write(argv)
                    code = 0
                except BaseException:
                    import traceback

                    traceback.print_exc()
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            flags_of[pid] = Path(argv[2])
            tmp = flags_of[pid] / "pid.tmp"
            tmp.write_text(str(pid))
            tmp.replace(flags_of[pid] / "pid")
        while flags_of:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            (flags_of.pop(pid) / f"exit-{pid}").write_text(str(os.waitstatus_to_exitcode(status)))
        time.sleep(0.01)
    # The server holds no store and nothing to flush: skip the interpreter's teardown of torch and the model
    # (seconds of CPU that the module's last test would wait for).
    sys.stderr.flush()
    os._exit(0)


def write(argv: list[str]) -> None:
    mode, store, flags = argv[0], argv[1], Path(argv[2])
    engine = open_engine(store, load_model=mode != "working")  # working memory is never embedded
    log = open(flags / f"committed-{os.getpid()}.jsonl", "a", encoding="utf-8")

    def committed(record: dict) -> None:
        log.write(json.dumps(record) + "\n")
        log.flush()

    (flags / f"started-{os.getpid()}").write_text("started")
    if mode == "ingest":
        lines = Path(argv[3]).read_text(encoding="utf-8").splitlines()
        engine.ingest_lines(lines)
        committed({"ingested": len(lines)})
    elif mode == "working":
        i = 0
        while True:
            engine.working_update(USER, SESSION, {"a": i, "b": i, "c": i, "goals": [f"goal {i}"]})
            committed({"working": i})
            i += 1
    else:
        end = time.monotonic() + float(argv[3])
        i = 0
        while time.monotonic() < end:
            item = engine.remember(USER, f"crash writer observation {os.getpid()} {i}", category="crash")
            committed({"item": item.id})
            engine.add_message(USER, SESSION, "assistant", f"step {i}")
            committed({"message": i})
            engine.working_update(USER, f"{SESSION}-{os.getpid()}", {"a": i, "b": i, "c": i})
            committed({"working": i})
            i += 1
    engine.close()  # as a process that ends normally does (a forked writer leaves through os._exit)
    (flags / f"done-{os.getpid()}").write_text("done")


if __name__ == "__main__":
    main()
