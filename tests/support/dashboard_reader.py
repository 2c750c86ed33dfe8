"""The dashboard process: reads stats and lists, searches, edits the agent's working memory and hard-forgets two of
its memories, in a loop.

Usage: python dashboard_reader.py STORE READY_FILE GO_FILE RESULT_FILE SECONDS [PACE]. Any error ends the process with
a traceback and a non-zero exit code; the result file says what it saw and how many edits it made. PACE (seconds,
default 0) is a pause after each round, as a person looks at a page before the next click.

The run lasts SECONDS, and then, if it has not hard-forgotten a memory yet, goes on until it has, for at most
``FORGET_GRACE_S`` more: a round forgets only when the listing it read holds an "Agent observation", and on a loaded
machine a round can take many seconds (seen: 2 rounds in 60 s, neither listing one yet). A forget that never takes
effect still shows: the result then lists nothing forgotten (or what the store still holds), and the test fails.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from twoproc_common import BEACON, SESSION, USER, open_engine, wait_for_start, write_result

FORGET_GRACE_S = 240.0  # how long the dashboard may go on after SECONDS until it has forgotten a memory


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
    wait_for_start(ready, go)
    seen = {
        "reads": 0,
        "edits": 0,
        "last_edit": None,
        "max_items_seen": 0,
        "beacon_ids": [],
        "beacon_found_at_read": None,
        "beacon_found_at": None,
        "edit_times": [],
        "forgotten": [],
    }
    end = time.monotonic() + seconds
    give_up = end + FORGET_GRACE_S
    while time.monotonic() < end or (not seen["forgotten"] and time.monotonic() < give_up):
        stats = engine.admin.stats()
        items = engine.items.list_items(USER, limit=20)
        engine.sessions.list_sessions(USER)
        engine.skills.rank(USER)
        seen["reads"] += 1
        seen["max_items_seen"] = max(seen["max_items_seen"], stats.items, items.total)
        if seen["beacon_found_at_read"] is None:
            hits = [h.id for h in engine.retrieval.search(USER, BEACON, kind="semantic") if BEACON in h.text]
            if hits:
                seen["beacon_ids"] = hits
                seen["beacon_found_at_read"] = seen["reads"]
                seen["beacon_found_at"] = time.time()
        if len(seen["forgotten"]) < 2:  # a researcher deletes a memory while the agent keeps writing
            doomed = [i.id for i in items.rows if i.content.startswith("Agent observation")]
            if doomed:
                result = engine.forgetting.forget(
                    USER, "semantic", doomed[:1], reason="dashboard cleanup", mode="hard", actor="dashboard"
                )
                seen["forgotten"] += list(result.forgotten)
        value = {"edited_by": "dashboard", "n": seen["edits"]}
        engine.working.update(USER, SESSION, {"scratchpad": value}, source="ui")
        seen["edits"] += 1
        seen["last_edit"] = value
        seen["edit_times"].append(time.time())
        time.sleep(pace)
    write_result(result_file, seen)


if __name__ == "__main__":
    main()
