"""A process of tests/engine/memory/test_maintenance_concurrency.py: applies a maintenance preview (pickled by the
test) or runs a consolidation of its own, at the same moment as the others.

Usage: python maintenance_applier.py STORE VECTORS MODE PREVIEW READY_FILE GO_FILE RESULT_FILE. VECTORS is "" for
an embedded store; MODE is "apply" (apply the pickled preview PREVIEW) or "consolidate" (plan and apply a run of its
own over the preview's user and session). The result file gets the applied changes per action and each step's error.
"""

from __future__ import annotations

import pickle
import sys
from collections import Counter
from pathlib import Path

from twoproc_common import wait_for_start, write_result


def main() -> None:
    store, vectors, mode, preview_file = sys.argv[1:5]
    ready, go, result = (Path(a) for a in sys.argv[5:8])
    from engine import MemoryEngine, Settings

    # A long lock timeout: the others hold the writer lock in turn, on a machine busy with all of them.
    extra = {"vectors": vectors} if vectors else {}
    settings = Settings.from_env({}, store=store, lock_timeout_s=120, graph_extraction="off", **extra)
    engine = MemoryEngine.open(settings=settings)
    engine.embedder.embed(["load the model before the start signal"])
    preview = pickle.loads(Path(preview_file).read_bytes())
    wait_for_start(ready, go)
    if mode == "apply":
        report = engine.maintenance.apply(preview, actor=f"applier-{result.stem}")
    else:
        session = preview.steps[0].changes[-1].detail["session_id"]
        report = engine.maintenance.consolidate(preview.user_id, session, apply=True, actor=f"run-{result.stem}")
    done = Counter(c.action for s in report.steps for c in s.changes)
    write_result(result, {"applied": dict(done), "errors": [s.error for s in report.steps if s.error]})
    engine.close()


if __name__ == "__main__":
    main()
