"""Two OS processes on one store at once (issue 2 §10): an agent writing memories, messages, episodes and skill
outcomes while a dashboard reads, searches, edits working memory and forgets memories. Neither may see a lock error,
no write may be lost, and the dashboard must see the agent's LanceDB writes while both run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine import MemoryEngine, NotFound, Settings
from tests.support.twoproc_common import BEACON, SESSION, SKILL, USER

pytestmark = pytest.mark.subprocess

SUPPORT = Path(__file__).resolve().parent.parent / "support"
SECONDS = 7.0  # of concurrent activity, after both processes have loaded the model


def start(script: str, store: Path, flags: Path, name: str) -> subprocess.Popen:
    # One BLAS thread per process: three processes share two cores here, and oversubscription only slows them.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            str(SUPPORT / script),
            str(store),
            str(flags / f"{name}.ready"),
            str(flags / "go"),
            str(flags / f"{name}.json"),
            str(SECONDS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_ready(procs: dict[str, subprocess.Popen], flags: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not all((flags / f"{name}.ready").exists() for name in procs):
        for name, proc in procs.items():
            if proc.poll() is not None:
                pytest.fail(f"{name} exited before the start: {proc.communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail("the processes did not get ready in time")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def run(tmp_path_factory, embedder) -> dict:
    base = tmp_path_factory.mktemp("two-processes")
    store, flags = base / "store", base / "flags"
    flags.mkdir()
    MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)  # create the schema
    procs = {
        "agent": start("agent_writer.py", store, flags, "agent"),
        "dashboard": start("dashboard_reader.py", store, flags, "dashboard"),
    }
    try:
        wait_ready(procs, flags)
        (flags / "go").write_text("go")
        outcome = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=SECONDS + 240)
            outcome[name] = {"code": proc.returncode, "stderr": err, "stdout": out}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for name in procs:
        result = flags / f"{name}.json"
        outcome[name]["result"] = json.loads(result.read_text()) if result.exists() else None
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
    return {"engine": engine, **outcome}


@pytest.mark.slow
def test_neither_process_sees_a_lock_error_or_any_other_error(run):
    for name in ("agent", "dashboard"):
        assert run[name]["code"] == 0, f"{name} failed:\n{run[name]['stderr'][-4000:]}"
        assert "StoreBusy" not in run[name]["stderr"]
        assert run[name]["result"] is not None


@pytest.mark.slow
def test_the_two_processes_really_ran_at_the_same_time(run):
    agent, dash = run["agent"]["result"], run["dashboard"]["result"]
    assert agent is not None and dash is not None
    assert agent["iterations"] >= 1 and dash["edits"] >= 1
    # wall-clock times of one machine: some dashboard edits fell inside the agent's writing loop
    assert any(agent["started_at"] <= t <= agent["finished_at"] for t in dash["edit_times"])


def kept_items(run) -> set[str]:
    """The agent's memories minus the ones the dashboard hard-forgot meanwhile."""
    return set(run["agent"]["result"]["items"]) - set(run["dashboard"]["result"]["forgotten"])


@pytest.mark.slow
def test_every_row_the_agent_reported_writing_is_in_the_store(run):
    agent, engine = run["agent"]["result"], run["engine"]
    assert agent is not None, run["agent"]["stderr"][-4000:]
    items = engine.list_items(USER, limit=10_000)
    assert {i.id for i in items.rows} == kept_items(run)
    assert items.total == len(agent["items"]) - len(run["dashboard"]["result"]["forgotten"])
    assert engine.get_session(USER, SESSION).message_count == agent["messages"]
    assert [m.seq for m in engine.messages(USER, SESSION, limit=10_000).rows] == list(range(1, agent["messages"] + 1))
    assert engine.list_episodes(USER, limit=10_000).total == agent["episodes"]
    skill = engine.get_skill(USER, SKILL)
    assert (skill.success_count, skill.failure_count) == (agent["successes"], agent["failures"])
    assert len(engine.skill_outcomes(USER, SKILL)) == agent["successes"] + agent["failures"]


@pytest.mark.slow
def test_every_memory_the_agent_wrote_has_its_vector(run):
    agent, engine = run["agent"]["result"], run["engine"]
    assert agent is not None, run["agent"]["stderr"][-4000:]
    qvec = engine.embedder.embed(["Agent observation"])[0]
    vector_ids = {h.id for h in engine._b.index.vector_search("semantic", USER, qvec, 10_000)}
    assert vector_ids == kept_items(run)
    assert engine._b.index.count("semantic", USER) == len(kept_items(run))
    assert engine._b.index.count("episodic", USER) == agent["episodes"]
    assert engine.stats().warnings == ()


@pytest.mark.slow
def test_the_dashboards_hard_forgets_took_effect_in_both_stores_and_the_log(run):
    dash, engine = run["dashboard"]["result"], run["engine"]
    assert dash is not None, run["dashboard"]["stderr"][-4000:]
    assert len(dash["forgotten"]) >= 1
    for item_id in dash["forgotten"]:
        with pytest.raises(NotFound):
            engine.get_item(USER, item_id)
    log = engine.forget_log(USER)
    assert sorted(i for e in log for i in e.ids) == sorted(dash["forgotten"])
    assert {e.actor for e in log} == {"dashboard"}


@pytest.mark.slow
def test_every_working_memory_edit_of_the_dashboard_is_kept(run):
    dash, engine = run["dashboard"]["result"], run["engine"]
    assert dash is not None, run["dashboard"]["stderr"][-4000:]
    history = engine.working_history(USER, SESSION, slot="scratchpad", limit=100_000)
    assert len(history) == dash["edits"]
    assert all(h.source == "ui" for h in history)
    assert engine.working_get(USER, SESSION)["scratchpad"] == dash["last_edit"]


@pytest.mark.slow
def test_the_dashboard_sees_the_agents_writes_while_both_run(run):
    dash, agent = run["dashboard"]["result"], run["agent"]["result"]
    assert dash is not None and agent is not None
    assert dash["beacon_found_at_read"] is not None, "the dashboard never found the agent's first memory"
    assert dash["beacon_ids"] == [agent["items"][0]]
    assert dash["beacon_found_at"] <= agent["finished_at"], "found only after the agent had stopped writing"
    assert dash["max_items_seen"] >= 1
    assert BEACON in run["engine"].get_item(USER, agent["items"][0]).content
