"""A write's answer is exact: a call that commits and returns what it wrote reads that back inside its own
transaction, so it never waits for the store again after the commit. A StoreBusy raised by such a second wait told
the agent "not written" about a write already committed, and the agent's retry wrote it twice (bench/team.py saw it
with 8 agents on one embedded store: working-memory updates and skill outcomes stored twice after a retry)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from engine import MemoryEngine, Settings

U, S = "ada", "ada-run-1"


@pytest.fixture
def engine(tmp_path, embedder):
    # db_linger_s=0: the file is let go after every outermost block, so each time the engine needs the store again
    # it must open (and may wait for) the file once more: the events below show every such wait.
    settings = Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30, db_linger_s=0)
    eng = MemoryEngine.open(settings=settings, embedder=embedder)
    yield eng
    eng.close()


def record_store_events(engine: MemoryEngine, monkeypatch) -> list[str]:
    """``open`` each time the engine takes the DuckDB file (where another process can make it wait, and StoreBusy
    comes from) and ``committed`` when a write transaction has committed; the real database does the work."""
    db = engine._b.db
    events: list[str] = []
    real_open, real_write = db._open, db.write

    def spy_open():
        events.append("open")
        return real_open()

    @contextmanager
    def spy_write():
        with real_write() as conn:
            yield conn
        events.append("committed")

    monkeypatch.setattr(db, "_open", spy_open)
    monkeypatch.setattr(db, "write", spy_write)
    return events


def test_a_working_memory_update_returns_its_slots_without_taking_the_store_again_after_its_commit(engine, monkeypatch):
    engine.working.update(U, S, {"goals": ["ship"], "step": 1})
    events = record_store_events(engine, monkeypatch)
    slots = engine.working.update(U, S, {"step": 2, "half": 2}, source="agent")
    assert events == ["open", "committed"]
    assert slots["step"] == 2 and slots["half"] == 2 and slots["goals"] == ["ship"]
    assert engine.working.get(U, S) == slots
    assert [h.new_value for h in engine.working.history(U, S, "step")] == [2, 1]


def test_a_skill_outcome_returns_the_counted_skill_without_taking_the_store_again_after_its_commit(engine, monkeypatch):
    skill = engine.skills.register(U, "plan", "Plan, do, check.")
    events = record_store_events(engine, monkeypatch)
    counted = engine.skills.report_outcome(U, skill.id, True)
    assert events[-2:] == ["open", "committed"]  # the skill is looked up first (nothing written yet), then written
    assert "open" not in events[events.index("committed") :]
    assert (counted.success_count, counted.failure_count) == (1, 0)
    assert len(engine.skills.outcomes(U, skill.id)) == 1
    assert engine.skills.get(U, skill.id) == counted
