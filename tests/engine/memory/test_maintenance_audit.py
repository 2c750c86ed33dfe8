"""Maintenance's audit log can be trusted, on an embedded store and on a team store: an applied change and its
``maintenance_log`` row commit together (a change whose row cannot be written is not made), and a hard forget takes
the forgotten memories' texts out of the log in its own transaction, leaving ids, actions and times (a soft forget
keeps them, as it keeps the memory). Concurrent applies: test_maintenance_concurrency.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest

from engine import MaintenanceReport, MemoryEngine, Settings
from engine.clock import utcnow
from engine.memory.maintenance_redact import FORGOTTEN

pytestmark = pytest.mark.both_stores

STEPS = [
    {"observation": "build failed", "action": "read the log", "result": "missing dep"},
    {"observation": "missing dep", "action": "pin the version", "result": "build green"},
]
MOVED = "I moved to Lisbon last spring."
TRAMS = "Lisbon suits you; the trams are lovely."


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> Iterator[MemoryEngine]:
    """One store for the module, each test with users of its own. Only this process uses it, so a hard forget's
    purge may run soon (the teardown waits for them), not after the default 10 s."""
    overrides = {
        "graph_extraction": "off",
        "episodic_ttl_days": 30.0,
        "skill_mining_enabled": True,
        "forget_purge_grace_s": 0.5,
    }
    e = MemoryEngine.open(settings=module_settings.with_overrides(overrides), embedder=embedder)
    yield e
    e.admin.purges.wait(60)  # the hard forgets' vector purges, before the team store's servers go
    e.close()


def chat(e: MemoryEngine, user: str) -> None:
    e.sessions.add_message(user, "s1", "user", MOVED)
    e.sessions.add_message(user, "s1", "assistant", TRAMS)


def poisoned(report: MaintenanceReport, action: str) -> MaintenanceReport:
    """The report with one ``action`` change carrying a value the audit log refuses (NaN is not JSON): the write
    itself is sound, only its audit row fails, inside the same transaction."""
    steps = []
    for s in report.steps:
        changes = list(s.changes)
        for n, c in enumerate(changes):
            if c.action == action:
                changes[n] = dataclasses.replace(c, detail={**c.detail, "note": float("nan")})
                break
        steps.append(dataclasses.replace(s, changes=tuple(changes)))
    return dataclasses.replace(report, steps=tuple(steps))


def raw_log(e: MemoryEngine, user: str) -> str:
    """Every stored maintenance_log detail of the user, as the database holds it."""
    with e._b.db.read() as conn:
        rows = conn.execute(
            "SELECT CAST(detail AS VARCHAR) FROM maintenance_log WHERE user_id=? ORDER BY id", [user]
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def logged(e: MemoryEngine, user: str, action: str) -> dict[str, dict]:
    return {x.target_ids[0]: x.detail for x in e.maintenance.log(user) if x.action == action}


# -- an applied change and its audit row: one transaction ----------------------------------------------------------
def test_memories_whose_audit_row_cannot_be_written_are_not_made(engine):
    user = "audit-consolidate"
    chat(engine, user)
    preview = engine.maintenance.consolidate(user, "s1")

    failed = engine.maintenance.apply(poisoned(preview, "memorize"))

    assert "NaN" in (failed.steps[0].error or "") and failed.change_count == 0
    assert engine.items.list_items(user, include_archived=True).total == 0
    assert engine._b.index.count("semantic", user) == 0  # the vectors went with the rows
    assert engine.maintenance.log(user) == []
    assert engine.maintenance.consolidate(user, "s1").change_count == preview.change_count  # still to do

    applied = engine.maintenance.apply(preview)

    assert applied.change_count == preview.change_count and not applied.errors
    assert len(engine.maintenance.log(user)) == preview.change_count
    assert engine._b.index.count("semantic", user) == 2


def test_an_expiry_whose_audit_row_cannot_be_written_forgets_nothing(engine):
    user = "audit-expire"
    old = engine.episodes.record(user, STEPS, "fixed the build", "success", created_at=utcnow() - timedelta(days=40))
    preview = engine.maintenance.maintain(user, consolidate=False, reflect=False, mine_skills=False)
    assert [c.action for c in preview.step("expire").changes] == ["expire"]  # type: ignore[union-attr]

    failed = engine.maintenance.apply(poisoned(preview, "expire"))

    assert failed.step("expire").error and failed.change_count == 0  # type: ignore[union-attr]
    assert engine.episodes.get(user, old.id).archived_at is None
    assert engine.forgetting.log(user) == [] and engine.maintenance.log(user) == []

    engine.maintenance.apply(preview)

    assert engine.episodes.get(user, old.id).archived_at is not None
    assert [e.ids for e in engine.forgetting.log(user)] == [(old.id,)]
    assert [e.target_ids for e in engine.maintenance.log(user)] == [(old.id,)]


def test_a_skill_whose_audit_row_cannot_be_written_is_not_registered(engine):
    user = "audit-skill"
    for i in range(3):
        engine.episodes.record(user, STEPS, f"fixed build {i}", "success")
    preview = engine.maintenance.maintain(user, consolidate=False, reflect=False, expire=False, mine_skills=True)
    assert [c.action for c in preview.step("mine_skills").changes] == ["register_skill"]  # type: ignore[union-attr]

    engine.maintenance.apply(poisoned(preview, "register_skill"))

    assert engine.skills.list_skills(user, include_archived=True).total == 0
    assert engine._b.index.count("procedural", user) == 0 and engine.maintenance.log(user) == []


# -- a hard forget leaves no text in the log ------------------------------------------------------------------------
@pytest.fixture
def maintained(engine, request) -> tuple[str, MaintenanceReport]:
    user = f"redact-{request.node.name.split('[')[0][-20:]}"
    chat(engine, user)
    for i in range(3):
        engine.episodes.record(user, STEPS, f"fixed build {i}", "success")
    report = engine.maintenance.maintain(user, apply=True, expire=False)
    assert not report.errors
    return user, report


def test_a_hard_forgotten_memorys_text_leaves_the_log_and_its_ids_stay(engine, maintained):
    user, report = maintained
    memorized = logged(engine, user, "memorize")
    moved = next(i for i, d in memorized.items() if d["content"] == MOVED)
    trams = next(i for i, d in memorized.items() if d["content"] == TRAMS)
    marks_before = [x.detail for x in engine.maintenance.log(user) if x.action == "consolidated"]

    engine.forgetting.forget(user, "semantic", [moved], "user asked", mode="hard")

    after = logged(engine, user, "memorize")
    assert after[moved]["content"] == FORGOTTEN and after[moved]["messages"] == memorized[moved]["messages"]
    assert after[trams]["content"] == TRAMS and after[trams]["preceding_text"] == FORGOTTEN  # it quoted MOVED
    assert MOVED not in raw_log(engine, user)
    assert [x.detail for x in engine.maintenance.log(user) if x.action == "consolidated"] == marks_before
    assert len(engine.maintenance.log(user)) == report.change_count  # no row lost, none added
    assert engine.maintenance.consolidate(user, "s1").change_count == 0  # not made again from its message


def test_forgetting_a_memory_leaves_the_text_it_followed(engine, maintained):
    user, _ = maintained
    memorized = logged(engine, user, "memorize")
    trams = next(i for i, d in memorized.items() if d["content"] == TRAMS)

    engine.forgetting.forget(user, "semantic", [trams], "user asked", mode="hard")

    after = logged(engine, user, "memorize")
    assert (after[trams]["content"], after[trams]["preceding_text"]) == (FORGOTTEN, FORGOTTEN)
    assert MOVED in [d["content"] for d in after.values()]  # the memory before it is not forgotten


def test_a_soft_forget_keeps_the_text_in_the_log(engine, maintained):
    user, _ = maintained
    memorized = logged(engine, user, "memorize")
    moved = next(i for i, d in memorized.items() if d["content"] == MOVED)

    engine.forgetting.forget(user, "semantic", [moved], "user asked", mode="soft")

    assert logged(engine, user, "memorize") == memorized


def test_hard_forgotten_insights_and_skills_leave_the_log(engine, maintained):
    user, _ = maintained
    insights = logged(engine, user, "insight")
    skills = logged(engine, user, "register_skill")
    assert insights and skills
    insight_id, insight = next(iter(insights.items()))
    skill_id, skill = next(iter(skills.items()))

    engine.forgetting.forget(user, "semantic", [insight_id], "wrong", mode="hard")
    engine.forgetting.forget(user, "procedural", [skill_id], "wrong", mode="hard")

    assert logged(engine, user, "insight")[insight_id]["content"] == FORGOTTEN
    after = logged(engine, user, "register_skill")[skill_id]
    assert (after["name"], after["body"]) == (FORGOTTEN, FORGOTTEN)
    assert after["episodes"] == skill["episodes"] and after["confidence"] == skill["confidence"]
    text = raw_log(engine, user)
    assert insight["content"] not in text and skill["body"] not in text
    assert json.dumps(MOVED)[1:-1] in text  # what was not forgotten stays


def test_a_hard_forget_leaves_other_users_logs_alone(engine, maintained):
    user, _ = maintained
    other = "redact-other-user"
    chat(engine, other)
    engine.maintenance.consolidate(other, "s1", apply=True)
    before = raw_log(engine, other)
    moved = next(i for i, d in logged(engine, user, "memorize").items() if d["content"] == MOVED)

    engine.forgetting.forget(user, "semantic", [moved], "user asked", mode="hard")

    assert raw_log(engine, other) == before and MOVED in before


def test_a_hard_forgotten_relations_sentence_leaves_the_log(engine):
    user = "redact-graph"
    engine.sessions.add_message(user, "s1", "user", "Mia likes green tea")
    engine.sessions.add_message(user, "s1", "user", "Mia likes skiing in March")
    engine.maintenance.consolidate(user, "s1", apply=True)
    engine.graph.add_fact(user, "Mia", "likes", "green tea")
    engine.graph.add_fact(user, "Mia", "likes", "skiing")
    tea, skiing = (
        next(r for r in engine.graph.relations(user).rows if r.object == name) for name in ("green tea", "skiing")
    )
    engine.graph.forget(user, [skiing.id], "soft only")
    assert "Mia likes skiing in March" in raw_log(engine, user)

    engine.graph.forget(user, [tea.id], "private", mode="hard")

    contents = sorted(d["content"] for d in logged(engine, user, "memorize").values())
    assert contents == sorted([FORGOTTEN, "Mia likes skiing in March"])  # the sentence, where the log quotes it
