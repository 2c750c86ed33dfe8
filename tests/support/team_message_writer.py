"""A writer process for the team-store test: appends messages to one shared session of a team store.

Usage: python team_message_writer.py DSN VECTORS WRITER_NO COUNT GO_FILE. Waits for GO_FILE, then adds COUNT
messages one call at a time; any error ends the process with a traceback and a non-zero exit code.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from engine import MemoryEngine, Settings  # noqa: E402


def main() -> None:
    dsn, vectors, writer, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=dsn, vectors=vectors, lock_timeout_s=30))
    while not go.exists():
        time.sleep(0.01)
    for n in range(count):
        engine.sessions.add_message("team", "shared", "user", f"writer {writer} message {n}")
        engine.working.update("team", "shared", {f"w{writer}": n})
    engine.close()


if __name__ == "__main__":
    main()
