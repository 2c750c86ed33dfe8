"""A writer of tests/engine/store/test_many_process_writes.py: every kind of write, through the public API, with the
store let go after every call (``db_linger_s=0``), so that several of these take the DuckDB file from one another
hundreds of times a second.

Usage: python churn_writer.py STORE INDEX READY_FILE GO_FILE ACKS_FILE SECONDS. It writes for SECONDS, and on
until it has written every kind at least once (at most MAX_FACTOR times SECONDS). Each acknowledged write (the call
returned) is appended at once to ACKS_FILE as one JSON line; a StoreBusy is counted (that write was refused, so it
is not acknowledged); any other error is logged as an ``error`` line and the writer goes on. The last line is
``done``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from twoproc_common import wait_for_start

ROOM = ("churn-room", "churn-room-session")  # one session every writer appends to
SKILL_BODY = "Plan the work, do it, check it."
MAX_FACTOR = 6  # a loaded machine may make every call slow: the run goes on until every kind is written, this long


def main() -> None:
    store, index, ready, go, acks_file, seconds = (
        sys.argv[1],
        int(sys.argv[2]),
        Path(sys.argv[3]),
        Path(sys.argv[4]),
        Path(sys.argv[5]),
        float(sys.argv[6]),
    )
    from engine import MemoryEngine, Settings
    from engine.errors import StoreBusy

    settings = Settings.from_env({}, store=store, lock_timeout_s=120, db_linger_s=0)
    engine = MemoryEngine.open(settings=settings)
    engine.embedder.embed(["load the model before the start signal"])
    user, session = f"churn-{index}", f"churn-{index}-run"
    log = acks_file.open("a", buffering=1)

    started = time.monotonic()

    def ack(entry: dict) -> None:
        log.write(json.dumps({**entry, "ms": round((time.monotonic() - started) * 1000)}) + "\n")

    rng = random.Random(index)
    skill = engine.skills.register(user, f"plan-{index}", SKILL_BODY)
    ack({"k": "skill", "u": user, "id": skill.id})
    live = []
    for n in range(2):  # so that the first forget has a memory to forget and feedback one left to label
        item = engine.items.remember(user, f"writer {index} starts with note {n} about the deploy", category="notes")
        ack({"k": "item", "u": user, "id": item.id})
        live.append(item.id)
    wait_for_start(ready, go)
    start = time.monotonic()
    step = 0
    busy = 0
    kinds = ["message", "room", "remember", "working", "episode", "outcome", "feedback", "retrieve", "forget"]
    # Mostly the cheapest write (a working-memory update: one short transaction), so the file changes hands as
    # often as it can: every hand-over is a chance for the race this test is about. Every kind comes early on.
    weighted = ["working"] * 24 + ["message"] * 3 + kinds
    done: set[str] = set()
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= seconds * MAX_FACTOR or (elapsed >= seconds and done >= set(kinds)):
            break
        step += 1
        started = time.monotonic()
        op = kinds[(step + index) % len(kinds)] if step <= len(kinds) else rng.choice(weighted)
        try:
            if op in ("message", "room"):
                u, s = (user, session) if op == "message" else ROOM
                text = f"writer {index} step {step}"
                m = engine.sessions.add_message(u, s, "assistant", text)
                ack({"k": "message", "u": u, "s": s, "seq": m.seq, "c": text})
            elif op == "remember":
                it = engine.items.remember(user, f"writer {index} noted step {step} of the deploy", category="notes")
                live.append(it.id)
                ack({"k": "item", "u": user, "id": it.id})
            elif op == "working":  # two slots in one transaction
                engine.working.update(user, session, {"step": step, "half": step})
                ack({"k": "working", "u": user, "s": session, "v": step})
            elif op == "episode":
                ep = engine.episodes.record(user, [{"action": f"step {step}", "result": "ok"}], outcome="success")
                ack({"k": "episode", "u": user, "id": ep.id})
            elif op == "outcome":
                engine.skills.report_outcome(user, skill.id, step % 3 != 0)
                ack({"k": "outcome", "u": user, "skill": skill.id})
            elif op == "feedback":
                ev = engine.feedback.label(user, rng.choice(live), "useful")
                ack({"k": "feedback", "u": user, "id": ev.id, "item": ev.item_id})
            elif op == "retrieve":
                trace = engine.retrieval.retrieve(
                    user, "What did the writer note about the deploy?", session_id=session
                )
                ack({"k": "trace", "u": user, "id": trace.trace_id})
            elif len(live) > 1:  # forget: soft or hard, never the last live memory (feedback needs one)
                victim = live.pop(rng.randrange(len(live)))
                mode = rng.choice(("soft", "hard"))
                engine.forgetting.forget(user, "semantic", [victim], f"churn {step}", mode=mode)
                ack({"k": "forget", "u": user, "id": victim, "mode": mode})
            done.add(op)
        except StoreBusy:
            busy += 1
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the test on any
            ack({"k": "error", "op": op, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    ack({"k": "done", "steps": step, "busy": busy})
    log.close()
    engine.close()


if __name__ == "__main__":
    main()
