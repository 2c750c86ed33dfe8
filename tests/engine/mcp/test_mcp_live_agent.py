"""Live inspection with two real processes: ``examples/agent_loop.py`` writes its memory while this process, as the
dashboard would, reads the same store and edits it. The dashboard sees the agent's new rows without reopening; the
agent sees the dashboard's working-memory edit and forgetting on its next call; no lock error reaches either side;
afterwards every count matches what the agent reported."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import datetime

import pytest

from engine import MemoryEngine, Settings
from tests.support.mcp_client import ROOT, clean_env

pytestmark = pytest.mark.subprocess

USER, SESSION = "live-agent", "live-1"
ITERATIONS = 8
NOTE = "focus on the staging deploy"


def wait_until(condition, what: str, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None and not condition():
            pytest.fail(f"the agent exited with {proc.returncode} before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def live(tmp_path_factory, embedder) -> dict:
    base = tmp_path_factory.mktemp("live-agent")
    store, errlog = base / "store", (base / "agent.stderr").open("w+")
    dashboard = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(store), lock_timeout_s=30), embedder=embedder
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "examples" / "agent_loop.py"),
            "--store",
            str(store),
            "--user",
            USER,
            "--session",
            SESSION,
            "--iterations",
            str(ITERATIONS),
            "--sleep",
            "1",
        ],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
    )
    lines: list[dict] = []

    def read() -> None:
        for line in proc.stdout:
            if line.startswith("{"):  # the agent's JSON lines; anything else a library printed is not ours
                lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen_counts: list[int] = []
    try:
        wait_until(lambda: len(lines) >= 1, "its first iteration", proc)
        # The dashboard's view while the agent runs, through its own engine opened before the agent wrote anything.
        sessions = [s.session_id for s in dashboard.sessions.list_sessions(USER).rows]
        seen_counts.append(dashboard.sessions.messages(USER, SESSION).total)
        dashboard.working.update(USER, SESSION, {"operator_note": NOTE}, source="ui")
        edited_at = len(lines)
        forgotten = dashboard.episodes.list_episodes(USER).rows[-1].id
        dashboard.forgetting.forget(USER, "episodic", [forgotten], "wrong trajectory", actor="ui")
        forgot_at = len(lines)
        label = dashboard.feedback.label(USER, lines[0]["context_ids"][0], "harmful", trace_id=lines[0]["trace_id"])
        wait_until(lambda: len(lines) >= edited_at + 2, "two more iterations", proc)
        seen_counts.append(dashboard.sessions.messages(USER, SESSION).total)
        traces_while_running = dashboard.traces.list_traces(USER).total
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    reader.join(30)
    errlog.seek(0)
    err = errlog.read()
    return {
        "dashboard": dashboard,
        "code": proc.returncode,
        "stderr": err,
        "lines": lines,
        "sessions": sessions,
        "seen_counts": seen_counts,
        "edited_at": edited_at,
        "forgotten": forgotten,
        "forgot_at": forgot_at,
        "label": label,
        "traces_while_running": traces_while_running,
    }


def test_the_agent_finishes_cleanly_without_a_lock_error(live):
    assert live["code"] == 0, live["stderr"][-3000:]
    assert "lock" not in live["stderr"].lower() and "Traceback" not in live["stderr"]
    assert live["lines"][-1]["done"] is True and live["lines"][-1]["iterations"] == ITERATIONS


def test_the_dashboard_sees_new_sessions_and_messages_without_reopening(live):
    assert SESSION in live["sessions"]
    first, later = live["seen_counts"]
    assert first >= 2 and later > first
    assert live["traces_while_running"] >= live["edited_at"] + 2


def test_the_agent_sees_the_dashboards_working_memory_edit_on_its_next_call(live):
    after = [line for line in live["lines"][live["edited_at"] + 1 : -1]]
    assert after and all(line["seen_slots"].get("operator_note") == NOTE for line in after)
    assert live["lines"][-1]["final_slots"]["operator_note"] == NOTE


def test_an_episode_forgotten_in_the_dashboard_is_no_longer_retrieved_by_the_agent(live):
    later = live["lines"][live["forgot_at"] + 1 : -1]
    assert later and all(live["forgotten"] not in line["context_ids"] for line in later)


def test_nothing_is_lost_every_count_matches_what_the_agent_reported(live):
    d: MemoryEngine = live["dashboard"]
    counts = live["lines"][-1]["counts"]
    assert d.sessions.messages(USER, SESSION).total == counts["messages"] == 2 * ITERATIONS
    assert d.episodes.list_episodes(USER, session_id=SESSION, include_archived=True).total == counts["episodes"]
    assert d.traces.list_traces(USER).total == counts["traces"] == ITERATIONS
    assert len(d.skills.outcomes(USER)) == counts["outcomes"] == ITERATIONS
    agent_labels = [e for e in d.feedback.events(USER) if e.note == "agent_loop"]
    assert len(agent_labels) == counts["feedback"]
    assert live["label"].id in {e.id for e in d.feedback.events(USER)}
    assert d.items.list_items(USER, category="lessons").total == counts["items"]


def test_a_label_given_in_the_dashboard_weighs_in_the_agents_next_retrievals(live):
    d: MemoryEngine = live["dashboard"]
    labelled = live["label"].item_id
    events = d.feedback.events(USER, item_id=labelled)
    checked = 0
    for line in live["lines"][live["forgot_at"] + 1 : -1]:  # iterations that started after the label
        trace = d.traces.get(line["trace_id"])
        at = datetime.fromisoformat(trace.created_at)
        agents_own = sum(e.delta for e in events if e.note == "agent_loop" and e.created_at <= at)
        for cand in (c for h in trace.hops for c in h.candidates if c.id == labelled):
            assert cand.scores.feedback_net == agents_own - 1  # the dashboard's harmful label counts
            checked += 1
    assert checked, "the labelled memory never came back as a candidate"
