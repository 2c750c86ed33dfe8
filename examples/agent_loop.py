"""A small scripted agent (no LLM) that writes its memory into a memlens store while you watch it in the dashboard.

    python examples/agent_loop.py --store data/store --iterations 50 --sleep 1
    streamlit run app.py        # in another terminal: the same store, rerun to see the agent's progress

Every iteration the agent reads its working memory (edits you make in the dashboard show up here), retrieves
before acting (a traced retrieval, visible in the Retrieval page), records the user's task and its answer as
messages, updates working memory, records an episode with its steps, reports the outcome of the skill it used and
labels the first memory it was given. It prints one JSON line per iteration and a final summary line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid

from engine import AgentMemory, MemlensError, MemoryEngine, Settings

# (task, skill name, skill body, a fact the agent learns while doing it)
TASKS = [
    (
        "Deploy the web service to staging",
        "deploy-service",
        "Build the image, push it, run the migration, then roll the deployment one pod at a time.",
        "Staging deploys need the migration to run before the new pods start.",
    ),
    (
        "Rotate the API keys of the billing service",
        "rotate-keys",
        "Create the new key, deploy it next to the old one, switch clients, then revoke the old key.",
        "The billing service caches keys for ten minutes, so wait before revoking the old key.",
    ),
    (
        "Investigate the slow search endpoint",
        "profile-endpoint",
        "Reproduce with the slow query, profile it, look for a missing index, compare query plans.",
        "The search endpoint was slow because the tags column had no index.",
    ),
    (
        "Write the weekly status report",
        "status-report",
        "Collect merged pull requests, closed incidents and open risks; one paragraph each.",
        "The status report goes to the team channel every Friday.",
    ),
]
OWN_SLOTS = {"current_task", "last_observation", "step", "iteration"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", help="store folder (default: $MEMLENS_STORE, else data/store)")
    p.add_argument("--user", default="agent-demo", help="user id the agent writes as (default agent-demo)")
    p.add_argument("--session", help="session id (default: a new run-<hex> session per run)")
    p.add_argument("--iterations", type=int, default=20, help="tasks to run; 0 runs until interrupted (default 20)")
    p.add_argument("--sleep", type=float, default=0.5, help="seconds between iterations (default 0.5)")
    p.add_argument("--seed", type=int, default=7, help="seed of the simulated successes (default 7)")
    return p.parse_args(argv)


def emit(record: dict) -> None:
    print(json.dumps(record, ensure_ascii=False, default=str), flush=True)


def run(args: argparse.Namespace) -> dict:
    settings = Settings.from_env(**({"store": args.store} if args.store else {}))
    engine = MemoryEngine.open(settings=settings)
    session = args.session or f"run-{uuid.uuid4().hex[:8]}"
    memory = AgentMemory(engine, args.user, session)
    rng = random.Random(args.seed)
    skills = {name: memory.skill(name, body, f"How to: {task.lower()}").id for task, name, body, _ in TASKS}
    counts = {"messages": 0, "episodes": 0, "outcomes": 0, "traces": 0, "feedback": 0, "items": 0}
    seen: dict = {}
    i = 0
    while args.iterations == 0 or i < args.iterations:
        task, skill_name, body, fact = TASKS[i % len(TASKS)]
        # What the researcher changed in the dashboard since the last step: the agent acts on what it reads now.
        seen = {k: v for k, v in memory.slots().items() if k not in OWN_SLOTS and v is not None}
        trace = memory.recall(task)
        counts["traces"] += 1
        memory.message("user", task)
        memory.working(current_task=task, step="act", iteration=i)
        counts["messages"] += 1
        success = rng.random() < 0.7
        steps = [
            {
                "observation": f"Task: {task}",
                "action": f"recall ({len(trace.context_ids)} memories)",
                "result": f"trace {trace.trace_id}",
            },
            {
                "observation": body,
                "action": f"apply skill {skill_name}",
                "result": "done" if success else "failed: a step did not complete",
            },
        ]
        answer = f"{'Done' if success else 'Could not finish'}: {task.lower()}."
        memory.message("assistant", answer)
        counts["messages"] += 1
        ep = memory.episode(
            steps,
            summary=f"{task} ({'success' if success else 'failure'})",
            outcome="success" if success else "failure",
        )
        counts["episodes"] += 1
        memory.skill_outcome(skills[skill_name], success, ep.id)
        counts["outcomes"] += 1
        if success and i < len(TASKS):
            memory.remember(fact, category="lessons", importance=0.6)
            counts["items"] += 1
        if success and trace.context_ids:
            memory.feedback(useful=trace.context_ids[:1], trace_id=trace.trace_id, note="agent_loop")
            counts["feedback"] += 1
        memory.working(step="done", last_observation=answer)
        emit(
            {
                "iteration": i,
                "session_id": session,
                "task": task,
                "success": success,
                "trace_id": trace.trace_id,
                "context_ids": list(trace.context_ids),
                "seen_slots": seen,
            }
        )
        i += 1
        if args.sleep > 0 and (args.iterations == 0 or i < args.iterations):
            time.sleep(args.sleep)
    return {
        "done": True,
        "user_id": args.user,
        "session_id": session,
        "iterations": i,
        "counts": counts,
        "seen_slots": seen,
        "final_slots": memory.slots(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.iterations < 0 or args.sleep < 0:
        print("error: --iterations and --sleep must be >= 0", file=sys.stderr)
        return 2
    try:
        emit(run(args))
    except MemlensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
