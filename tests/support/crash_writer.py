"""A process that writes and gets killed (kill -9) by tests/engine/store/test_crashes.py and test_three_processes.py.

Usage: python crash_writer.py MODE STORE FLAGS_DIR [ARG]
- ingest: ingest the JSONL file ARG in one call (touches FLAGS_DIR/started just before).
- working: multi-slot working-memory updates in a loop, each setting slots a, b, c and goals to the same counter.
- agent: remember + add_message + a multi-slot working update in a loop for ARG seconds (or until killed); each
  completed call is appended to FLAGS_DIR/committed.jsonl (flushed) *after* it returned, so every line there is
  a write the store must hold.

Run as a child of tests/support/fork_server.py (forked, so the model is not imported again for every writer).
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
    write(sys.argv[1:])


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
        engine.admin.ingest_lines(lines)
        committed({"ingested": len(lines)})
    elif mode == "working":
        i = 0
        while True:
            engine.working.update(USER, SESSION, {"a": i, "b": i, "c": i, "goals": [f"goal {i}"]})
            committed({"working": i})
            i += 1
    else:
        end = time.monotonic() + float(argv[3])
        i = 0
        while time.monotonic() < end:
            item = engine.items.remember(USER, f"crash writer observation {os.getpid()} {i}", category="crash")
            committed({"item": item.id})
            engine.sessions.add_message(USER, SESSION, "assistant", f"step {i}")
            committed({"message": i})
            engine.working.update(USER, f"{SESSION}-{os.getpid()}", {"a": i, "b": i, "c": i})
            committed({"working": i})
            i += 1
    engine.close()  # as a process that ends normally does (a forked writer leaves through os._exit)
    (flags / f"done-{os.getpid()}").write_text("done")


if __name__ == "__main__":
    main()
