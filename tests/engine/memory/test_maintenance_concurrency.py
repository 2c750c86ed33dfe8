"""Maintenance applied by several processes at the same moment, on an embedded store and on a team store: two
processes apply the same preview while a third runs a consolidation of its own over the same session. Whatever the
interleaving, each message is consolidated exactly once (one memory per message, one ``consolidated`` mark naming
it), each memory has exactly one vector, and every applied change has its one audit row: the "still to do" check
runs inside the writing transaction, under the store's write lock (engine/memory/maintenance_apply.py).

The processes are real (tests/support/maintenance_applier.py), each with its own engine, released together once all
have loaded the model. They are forked from one server that loaded the model (tests/support/fork_server.py): real
processes, each with its own pid and store handles, that skip ~10 s of imports each. Assertions are on the store's
state, never on timing."""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from engine import MemoryEngine, Settings
from tests.support.fork_server import ForkServer

pytestmark = [pytest.mark.both_stores, pytest.mark.subprocess, pytest.mark.slow]

U = "dana"
SESSION = "s-race"
# Long messages, so the session is consolidated in several chunks: several units, each its own transaction.
TOPICS = ["Lisbon", "the bakery", "the marathon", "her sister", "the garden", "the new job", "chess", "the boat"]
MODES = {"a": "apply", "b": "apply", "c": "consolidate"}


def store_args(settings: Settings) -> list[str]:
    return [settings.store, settings.vectors or ""]


@pytest.fixture(scope="module")
def race(module_settings: Settings, embedder, tmp_path_factory) -> Iterator[dict]:
    settings = module_settings.with_overrides({"graph_extraction": "off"})
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    for n in range(24):
        topic = TOPICS[n % len(TOPICS)]
        filler = f" Dana talked about {topic} again, turn {n}, with every detail she remembered." * 12
        engine.sessions.add_message(U, SESSION, "user" if n % 2 == 0 else "assistant", f"Turn {n}: {topic}.{filler}")
    preview = engine.maintenance.consolidate(U, SESSION)
    assert preview.change_count > 3 and not preview.errors
    flags = tmp_path_factory.mktemp("maintenance-race")
    (flags / "preview.pkl").write_bytes(pickle.dumps(preview))
    # Started here, after the team store's servers set the environment its children inherit (the S3 variables).
    server = ForkServer(flags / "fork-server")
    procs = {
        name: server.start(
            "maintenance_applier.py",
            *store_args(settings),
            mode,
            *(flags / p for p in ("preview.pkl", f"{name}.ready", "go", f"{name}.json")),
        )
        for name, mode in MODES.items()
    }
    try:
        deadline = time.monotonic() + 300
        while not all((flags / f"{name}.ready").exists() for name in procs):
            for name, p in procs.items():
                if p.poll() is not None:
                    pytest.fail(f"process {name} exited before the start: {p.stderr()[-3000:]}")
            assert time.monotonic() < deadline, "the processes did not get ready in time"
            time.sleep(0.05)
        (flags / "go").write_text("go")
        codes = {name: p.wait(timeout=600) for name, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        server.stop()
    assert codes == dict.fromkeys(MODES, 0), {n: procs[n].stderr()[-3000:] for n in MODES if codes[n]}
    results = {name: json.loads((flags / f"{name}.json").read_text()) for name in MODES}
    yield {"engine": engine, "preview": preview, "results": results}
    engine.close()


def test_every_process_finished_without_an_error(race):
    assert {name: r["errors"] for name, r in race["results"].items()} == dict.fromkeys(MODES, [])


def test_each_message_is_consolidated_exactly_once(race):
    engine: MemoryEngine = race["engine"]
    keys = [f"{SESSION}#{m.seq}" for m in engine.sessions.messages(U, SESSION, limit=1000).rows]
    marks = Counter(k for e in engine.maintenance.log(U) if e.action == "consolidated" for k in e.target_ids)
    assert marks == Counter(keys)
    items = engine.items.list_items(U, limit=1000).rows
    sources = Counter(s["id"] for i in items for s in i.provenance["sources"])
    assert sources == Counter(keys)  # offline consolidation: one memory per user or assistant message
    memorized = sum(r["applied"].get("memorize", 0) for r in race["results"].values())
    assert memorized == len(items)  # what the processes reported applying is what the store holds


def test_each_memory_has_one_vector_and_one_audit_row(race):
    engine: MemoryEngine = race["engine"]
    items = {i.id for i in engine.items.list_items(U, limit=1000).rows}
    vectors = Counter(engine._b.index.ids("semantic"))
    assert {i: vectors[i] for i in items} == dict.fromkeys(items, 1) and set(vectors) == items
    logged = Counter(e.target_ids[0] for e in engine.maintenance.log(U) if e.action == "memorize")
    assert logged == Counter(items)


def test_a_later_run_finds_nothing_left_to_do(race):
    engine: MemoryEngine = race["engine"]
    assert engine.maintenance.consolidate(U, SESSION).change_count == 0
    assert engine.maintenance.apply(race["preview"]).change_count == 0
