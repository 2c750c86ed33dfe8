"""The agent process: writes memories, messages, episodes and skill outcomes through the public API in a loop.

Usage: python agent_writer.py STORE READY_FILE GO_FILE RESULT_FILE SECONDS [PACE]. Any error (a lock error included)
ends the process with a traceback and a non-zero exit code; the result file lists exactly what was written. PACE
(seconds, default 0) is a pause after each round of writes, as an agent thinks between its calls: the run is then
mostly waiting instead of burning a shared machine's CPU for its whole length. It writes at least two rounds, however
slow the machine: the first memory is the beacon, the second the first "Agent observation" the dashboard may forget.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from twoproc_common import BEACON, SESSION, SKILL, USER, open_engine, wait_for_start, write_result


def main() -> None:
    store, ready, go, result_file, seconds = (
        sys.argv[1],
        Path(sys.argv[2]),
        Path(sys.argv[3]),
        Path(sys.argv[4]),
        float(sys.argv[5]),
    )
    pace = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    engine = open_engine(store)
    engine.admin.ingest_lines(
        [json.dumps({"kind": "skill", "user_id": USER, "id": SKILL, "name": "plan", "body": "plan first"})]
    )
    wait_for_start(ready, go)
    written = {
        "items": [],
        "messages": 0,
        "episodes": 0,
        "successes": 0,
        "failures": 0,
        "iterations": 0,
        "started_at": time.time(),
    }
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end or i < 2:
        text = f"The {BEACON} beacon was planted by the agent" if i == 0 else f"Agent observation number {i}"
        written["items"].append(engine.items.remember(USER, text, category="agent").id)
        engine.sessions.add_message(USER, SESSION, "assistant", f"working on step {i}")
        written["messages"] += 1
        success = i % 3 != 0
        engine.skills.report_outcome(USER, SKILL, success)
        written["successes" if success else "failures"] += 1
        if i % 4 == 0:
            engine.episodes.record(
                USER, [{"action": f"step {i}", "result": "ok"}], outcome="success", session_id=SESSION
            )
            written["episodes"] += 1
        i += 1
        written["iterations"] = i
        time.sleep(pace)
    written["finished_at"] = time.time()
    write_result(result_file, written)


if __name__ == "__main__":
    main()
