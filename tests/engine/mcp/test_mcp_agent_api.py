"""``AgentMemory``: the Python API an agent loop uses, bound to one user and session, over the real engine."""

from __future__ import annotations

import pytest

from engine import AgentMemory, InvalidInput, MemoryEngine, NotFound


def test_an_agent_loop_records_everything_and_recalls_with_a_trace_id(empty_engine: MemoryEngine):
    memory = AgentMemory(empty_engine, "agent-1", "run-1")
    memory.message("user", "Deploy the service to staging")
    assert memory.working(current_task="deploy", step=1)["step"] == 1
    fact = memory.remember("Staging deploys need the migration first.", category="lessons")
    skill = memory.skill("deploy", "Build, push, migrate, roll.")
    ep = memory.episode([{"observation": "new release", "action": "deploy", "result": "ok"}], outcome="success")
    assert memory.skill_outcome(skill.id, True, ep.id).success_count == 1
    trace = memory.recall("How do I deploy to staging?")
    assert fact.id in trace.context_ids and "migration" in trace.context
    assert empty_engine.traces.get(trace.trace_id).session_id == "run-1"
    memory.feedback(useful=[fact.id], trace_id=trace.trace_id)
    assert empty_engine.feedback.net("agent-1", [fact.id]) == {fact.id: 1}
    assert [m.role for m in empty_engine.sessions.messages("agent-1", "run-1").rows] == ["user"]
    assert empty_engine.episodes.list_episodes("agent-1", session_id="run-1").total == 1


def test_the_agent_reads_working_memory_as_edited_elsewhere(empty_engine: MemoryEngine):
    memory = AgentMemory(empty_engine, "agent-1", "run-2")
    memory.working(current_task="plan")
    empty_engine.working.update("agent-1", "run-2", {"current_task": "replan", "note": "from the UI"}, source="ui")
    assert memory.slots()["current_task"] == "replan" and memory.slots()["note"] == "from the UI"
    assert "note" not in memory.working(note=None)


@pytest.mark.parametrize("user,session", [("../x", "s"), ("u", "a'; DROP TABLE sessions; --"), ("u", "")])
def test_hostile_ids_are_refused_when_the_agent_memory_is_made(empty_engine, user, session):
    with pytest.raises(InvalidInput):
        AgentMemory(empty_engine, user, session)


def test_reporting_an_unknown_skill_is_not_found(empty_engine):
    with pytest.raises(NotFound):
        AgentMemory(empty_engine, "agent-1").skill_outcome("skill_missing", True)


def test_the_agent_consolidates_its_session_and_runs_the_maintenance_cycle(empty_engine: MemoryEngine):
    memory = AgentMemory(empty_engine, "agent-1", "run-3")
    memory.message("user", "I moved to Lisbon last spring.")
    memory.message("assistant", "Lisbon suits you; the trams are lovely.")
    report = memory.consolidate()
    assert report.applied and report.actor == "agent" and report.change_count > 0
    items = {i.content: i for i in empty_engine.items.list_items("agent-1").rows}
    assert items["I moved to Lisbon last spring."].provenance["sources"] == [{"type": "message", "id": "run-3#1"}]
    assert empty_engine.maintenance.log("agent-1", run_id=report.run_id)[0].actor == "agent"
    assert memory.consolidate().change_count == 0  # those messages are consolidated already
    memory.episode([{"observation": "new release", "action": "deploy", "result": "ok"}], outcome="success")
    first = memory.maintain()
    assert first.applied and not first.errors
    assert [s.name for s in first.steps] == ["consolidate", "reflect", "mine_skills", "expire"]
    assert memory.maintain().change_count == 0  # idempotent
