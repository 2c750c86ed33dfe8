"""The maintenance cycle (issue 30, llmemory §7.6): consolidate -> reflect -> mine skills -> TTL expiry, previewed
without a write, applied exactly as previewed, idempotent, isolated per step, and audited in ``maintenance_log``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine import InvalidInput, MaintenanceReport, MemoryEngine, Settings
from engine.clock import utcnow
from engine.memory.memorize import CLASSIFY_PROMPT, EXTRACT_PROMPT, SUMMARY_PROMPT
from tests.support.openai_server import llm_settings
from tests.support.store_snapshot import assert_unchanged, snapshot

U = "maya"
MEMORIZE_PROMPTS = tuple(p.split("{")[0][:40] for p in (EXTRACT_PROMPT, CLASSIFY_PROMPT, SUMMARY_PROMPT))
STEPS = [
    {"observation": "build failed", "action": "read the log", "result": "missing dep"},
    {"observation": "missing dep", "action": "pin the version", "result": "build green"},
]


def open_engine(tmp_path, embedder, **overrides) -> MemoryEngine:
    settings = Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30, **overrides)
    return MemoryEngine.open(settings=settings, embedder=embedder)


def chat(e: MemoryEngine, session: str = "s1") -> None:
    e.sessions.add_message(U, session, "user", "I moved to Lisbon last spring.")
    e.sessions.add_message(U, session, "assistant", "Lisbon suits you; the trams are lovely.")
    e.sessions.add_message(U, session, "system", "tool budget: 3 calls")


def episodes(e: MemoryEngine, n: int = 3, old: int = 0) -> list[str]:
    out = []
    for i in range(n):
        at = utcnow() - timedelta(days=40) if i < old else None
        out.append(e.episodes.record(U, STEPS, f"fixed build {i}", "success", created_at=at).id)
    return out


def actions(report: MaintenanceReport) -> list[tuple[str, str, str]]:
    return [(s.name, c.action, c.target_kind) for s in report.steps for c in s.changes]


@pytest.fixture
def engine(tmp_path, embedder) -> MemoryEngine:
    return open_engine(tmp_path, embedder, episodic_ttl_days=30.0, skill_mining_enabled=True)


def test_a_preview_plans_every_step_in_llmemorys_order_and_writes_nothing(engine):
    chat(engine)
    episodes(engine, 3, old=1)
    before = snapshot(engine)

    report = engine.maintenance.maintain(U)

    assert_unchanged(before, engine, "a preview")
    assert not report.applied and [s.name for s in report.steps] == ["consolidate", "reflect", "mine_skills", "expire"]
    assert actions(report) == [
        ("consolidate", "memorize", "semantic"),
        ("consolidate", "memorize", "semantic"),
        ("consolidate", "consolidated", "message"),
        ("reflect", "insight", "semantic"),
        ("reflect", "insight", "semantic"),
        ("mine_skills", "register_skill", "procedural"),
        ("expire", "expire", "episodic"),
    ]
    assert engine.maintenance.log(U) == []


def test_applying_the_preview_writes_exactly_what_it_showed_and_audits_each_change(engine):
    chat(engine)
    ids = episodes(engine, 3, old=1)
    preview = engine.maintenance.maintain(U, actor="tester")

    applied = engine.maintenance.apply(preview)

    assert applied.applied and applied.run_id == preview.run_id and actions(applied) == actions(preview)
    planned = [c for s in preview.steps for c in s.changes]
    memories = {c.target_ids[0]: c.detail for c in planned if c.action in ("memorize", "insight")}
    for item_id, detail in memories.items():  # the previewed ids, texts and categories, as shown
        item = engine.items.get(U, item_id)
        assert (item.content, item.archived_at) == (detail["content"], None)
    skill_id = next(c.target_ids[0] for c in planned if c.action == "register_skill")
    assert engine.skills.get(U, skill_id).provenance["method"] == "skill_mining"
    assert engine.episodes.get(U, ids[0]).archived_at is not None  # 40 days old, TTL 30: expired
    assert engine.episodes.get(U, ids[1]).archived_at is None
    log = engine.maintenance.log(U)
    assert (
        len(log) == len(planned)
        and {e.run_id for e in log} == {preview.run_id}
        and {e.actor for e in log} == {"tester"}
    )
    assert sorted((e.step, e.action) for e in log) == sorted((s, a) for s, a, _ in actions(preview))
    assert engine.maintenance.log(U, run_id=preview.run_id, limit=1)[0].occurred_at == log[0].occurred_at


def test_consolidated_memories_name_the_messages_they_came_from(engine):
    chat(engine)
    report = engine.maintenance.consolidate(U, "s1", apply=True)

    by_text = {i.content: i for i in engine.items.list_items(U).rows}
    assert set(by_text) == {"I moved to Lisbon last spring.", "Lisbon suits you; the trams are lovely."}
    assert by_text["I moved to Lisbon last spring."].provenance["sources"] == [{"type": "message", "id": "s1#1"}]
    assert by_text["Lisbon suits you; the trams are lovely."].provenance["sources"] == [
        {"type": "message", "id": "s1#2"}
    ]
    assert by_text["Lisbon suits you; the trams are lovely."].preceding_text == "I moved to Lisbon last spring."
    marked = report.steps[0].changes[-1]
    assert marked.action == "consolidated" and marked.target_ids == ("s1#1", "s1#2", "s1#3")  # the system one too


def test_a_second_run_changes_nothing(engine):
    chat(engine)
    episodes(engine, 3, old=1)
    first = engine.maintenance.maintain(U, apply=True)
    assert first.change_count == 7 and not first.errors
    before = snapshot(engine)

    second = engine.maintenance.maintain(U, apply=True)

    assert second.change_count == 0 and not second.errors
    assert_unchanged(before, engine, "a second maintain")
    assert engine.maintenance.maintain(U).change_count == 0  # and its preview says so


def test_applying_one_preview_twice_changes_nothing_the_second_time(engine):
    chat(engine)
    episodes(engine, 2)
    preview = engine.maintenance.maintain(U)
    engine.maintenance.apply(preview)
    before = snapshot(engine)

    again = engine.maintenance.apply(preview)

    assert again.change_count == 0
    assert_unchanged(before, engine, "a stale preview applied again")
    with pytest.raises(InvalidInput, match="applied already"):
        engine.maintenance.apply(again)


def test_new_messages_after_a_run_are_consolidated_and_old_ones_are_not_again(engine):
    chat(engine)
    engine.maintenance.consolidate(U, "s1", apply=True)
    engine.sessions.add_message(U, "s1", "user", "My sister visits in May.")

    report = engine.maintenance.consolidate(U, "s1", apply=True)

    assert [c.detail.get("messages") for c in report.steps[0].changes if c.action == "memorize"] == [["s1#4"]]


def test_a_forgotten_consolidated_memory_is_not_made_again_from_its_message(engine):
    chat(engine)
    report = engine.maintenance.consolidate(U, "s1", apply=True)
    ids = [c.target_ids[0] for c in report.steps[0].changes if c.action == "memorize"]
    engine.forgetting.forget(U, "semantic", ids, "user asked", mode="hard")

    assert engine.maintenance.maintain(U, apply=True).step("consolidate").changes == ()  # type: ignore[union-attr]


def test_clear_session_deletes_its_messages_and_a_restarted_session_is_consolidated_again(engine):
    chat(engine)
    report = engine.maintenance.consolidate(U, "s1", apply=True, clear_session=True)
    assert report.steps[0].changes[-1].action == "clear_session"
    assert engine.sessions.list_sessions(U).total == 0
    # The session starts again at seq 1: its new messages are new, though their ids repeat the cleared ones'.
    engine.sessions.add_message(U, "s1", "user", "I adopted a cat called Miso.")

    again = engine.maintenance.consolidate(U, "s1", apply=True)

    assert [c.detail["content"] for c in again.steps[0].changes if c.action == "memorize"] == [
        "I adopted a cat called Miso."
    ]


def test_maintain_consolidates_every_session_with_unconsolidated_messages(engine):
    chat(engine, "s1")
    chat(engine, "s2")
    engine.maintenance.consolidate(U, "s1", apply=True)

    report = engine.maintenance.maintain(U, reflect=False, expire=False)

    marked = [c for c in report.steps[0].changes if c.action == "consolidated"]
    assert [c.detail["session_id"] for c in marked] == ["s2"]
    assert report.step("reflect").note == report.step("expire").note == "skipped"  # type: ignore[union-attr]


def test_ttl_expiry_follows_the_settings_and_soft_forgets_with_reason_ttl_expired(tmp_path, embedder):
    e = open_engine(tmp_path, embedder, episodic_ttl_days=30.0, procedural_ttl_days=0.0)
    old, new = episodes(e, 2, old=1)
    skill = e.skills.register(U, "pin_deps", "pin the version")

    report = e.maintenance.maintain(U, consolidate=False, reflect=False, apply=True)

    assert report.step("expire").changes[0].target_ids == (old,)  # type: ignore[union-attr]
    assert e.episodes.get(U, old).archived_at is not None and e.episodes.get(U, new).archived_at is None
    assert e.skills.get(U, skill.id).archived_at is None  # procedural TTL 0: never
    entry = e.forgetting.log(U)[0]
    assert (entry.memory_type, entry.ids, entry.mode, entry.reason) == ("episodic", (old,), "soft", "ttl_expired")


def test_skills_expire_by_their_last_update(tmp_path, embedder):
    e = open_engine(tmp_path, embedder, procedural_ttl_days=0.5)
    skill = e.skills.add([e.skills.prepare(U, "old_trick", "do it", created_at=utcnow() - timedelta(days=2))])[0]

    report = e.maintenance.maintain(U, consolidate=False, reflect=False, mine_skills=False, apply=True)

    assert report.step("expire").changes[0].target_ids == (skill.id,)  # type: ignore[union-attr]
    assert e.skills.get(U, skill.id).archived_at is not None


def test_an_error_in_one_step_is_reported_there_and_the_others_still_run(engine, monkeypatch):
    chat(engine)
    episodes(engine, 2, old=1)

    def broken(user_id, window):
        raise RuntimeError("reflection blew up")

    monkeypatch.setattr(engine.maintenance.planner, "reflect", broken)
    report = engine.maintenance.maintain(U, apply=True)

    assert report.errors == {"reflect": "RuntimeError: reflection blew up"}
    assert report.step("consolidate").changes and report.step("expire").changes  # type: ignore[union-attr]
    assert report.step("mine_skills").error is None  # type: ignore[union-attr]


def test_mining_does_not_register_a_skill_the_user_already_has(engine):
    episodes(engine, 2)
    proposal = engine.skills.mine(U).proposals[0]
    engine.skills.accept_proposal(U, proposal)
    engine.episodes.record(U, [{"action": "ask for help"}], outcome="failure")  # a window not yet mined

    report = engine.maintenance.maintain(U, consolidate=False, reflect=False, expire=False, mine_skills=True)

    assert report.step("mine_skills").changes == ()  # type: ignore[union-attr]


def test_mine_skills_defaults_to_the_setting(tmp_path, embedder):
    e = open_engine(tmp_path, embedder)  # skill_mining_enabled is off by default
    episodes(e, 2)
    assert e.maintenance.maintain(U).step("mine_skills").note == "skipped"  # type: ignore[union-attr]
    assert e.maintenance.maintain(U, mine_skills=True).step("mine_skills").changes  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.maintain("bad user!"),
        lambda m: m.maintain(U, apply="yes"),
        lambda m: m.maintain(U, reflection_window=0),
        lambda m: m.maintain(U, mining_window=True),
        lambda m: m.maintain(U, actor="\x00"),
        lambda m: m.consolidate(U, "s 1"),
        lambda m: m.consolidate(U, "s1", clear_session=1),
        lambda m: m.log(run_id="x'; DROP TABLE items; --"),
        lambda m: m.log(limit=0),
        lambda m: m.apply({"run_id": "r"}),
    ],
)
def test_bad_input_is_refused_by_name_and_nothing_is_written(engine, call):
    chat(engine)
    before = snapshot(engine)
    with pytest.raises(InvalidInput):
        call(engine.maintenance)
    assert_unchanged(before, engine, "a refused call")


def test_an_empty_store_has_nothing_to_maintain(engine):
    report = engine.maintenance.maintain("nobody", apply=True)
    assert report.change_count == 0 and not report.errors
    assert engine.maintenance.consolidate("nobody", "s1").steps[0].note.startswith("no messages to consolidate")


# -- through the LLM (the real openai client against tests/support/openai_server.py) -------------------------------
@pytest.fixture
def llm(server, tmp_path, embedder):
    server.reset()
    base = Settings.from_env({}, store=str(tmp_path / "llm-store"), lock_timeout_s=30)
    yield MemoryEngine.open(settings=llm_settings(base, server), embedder=embedder)
    assert server.pending("chat") == 0, "a scripted reply was never requested"


def test_llm_consolidation_extracts_facts_from_the_transcript_and_apply_reuses_the_previewed_answers(llm, server):
    chat(llm)
    server.script(
        "chat",
        '[{"content": "Maya lives in Lisbon", "importance": 0.9}]',  # extraction
        "places",  # classification
        "- Maya lives in Lisbon",  # the category's summary
    )
    before = snapshot(llm)
    preview = llm.maintenance.consolidate(U, "s1")
    assert [d.split(".")[1].split(":")[0] for d in before.diff(snapshot(llm))] == ["llm_usage"]  # tokens only
    prompts = [r.prompt for r in server.captured("chat")]
    assert "user: I moved to Lisbon last spring." in prompts[0] and "assistant: Lisbon suits you" in prompts[0]

    applied = llm.maintenance.apply(preview)

    asked_again = [r.prompt for r in server.captured("chat")[3:]]  # the graph's own extraction may ask (part A)
    assert not [p for p in asked_again if p.startswith(MEMORIZE_PROMPTS)], "the preview's answers were reused"
    item_id = applied.steps[0].changes[0].target_ids[0]
    item = llm.items.get(U, item_id)
    assert (item.content, item.category, item.provenance["method"]) == (
        "Maya lives in Lisbon",
        "places",
        "fact_extraction",
    )
    assert item.provenance["sources"] == [{"type": "message", "id": f"s1#{n}"} for n in (1, 2, 3)]
    assert {c.name: c.summary for c in llm.items.categories(U)}["places"] == "- Maya lives in Lisbon"
    assert llm.maintenance.apply(preview).change_count == 0  # the summary too: it is the category's already


def test_llm_reflection_in_maintain_is_asked_once_per_new_window(llm, server):
    episodes(llm, 2)
    server.script("chat", '[{"content": "Pinning versions fixes broken builds", "confidence": 0.8}]')

    first = llm.maintenance.maintain(U, apply=True)
    second = llm.maintenance.maintain(U, apply=True)

    assert [c.detail["content"] for c in first.step("reflect").changes] == [  # type: ignore[union-attr]
        "Pinning versions fixes broken builds"
    ]
    assert second.change_count == 0
    assert len([r for r in server.captured("chat") if r.prompt.startswith("You are reflecting")]) == 1


def test_llm_mining_in_maintain_registers_the_models_skill_once(llm, server):
    episodes(llm, 2)
    server.script(
        "chat",
        '[{"name": "pin_versions", "kind": "prompt", "body": "Pin the failing dependency.", "confidence": 0.7}]',
    )

    first = llm.maintenance.maintain(U, consolidate=False, reflect=False, mine_skills=True, apply=True)
    second = llm.maintenance.maintain(U, consolidate=False, reflect=False, mine_skills=True, apply=True)

    skill_id = first.step("mine_skills").changes[0].target_ids[0]  # type: ignore[union-attr]
    assert llm.skills.get(U, skill_id).name == "pin_versions"
    assert second.change_count == 0 and second.step("mine_skills").note == "no episodes since the last mining"  # type: ignore[union-attr]
    assert len([r for r in server.captured("chat") if r.prompt.startswith("You are mining")]) == 1


# -- on the team store too (PostgreSQL + S3) -------------------------------------------------------------------------
@pytest.mark.both_stores
def test_a_maintain_round_trip_on_either_store(empty_engine):
    e = empty_engine
    chat(e)
    episodes(e, 2)
    preview = e.maintenance.maintain(U, mine_skills=True)
    applied = e.maintenance.apply(preview)
    assert applied.change_count == preview.change_count > 0 and not applied.errors
    assert e.maintenance.maintain(U, mine_skills=True, apply=True).change_count == 0
    assert len(e.maintenance.log(U)) == applied.change_count
    assert {i.content for i in e.items.list_items(U, category="general").rows} >= {"I moved to Lisbon last spring."}


def test_a_long_session_is_consolidated_chunk_by_chunk_each_chunk_marked_after_its_memories(engine):
    rows = [(U, "long", "user", f"Note {n}: the greenhouse needs {n} litres of water today.", None) for n in range(400)]
    engine.sessions.add_messages(rows)

    report = engine.maintenance.consolidate(U, "long", apply=True)

    changes = report.steps[0].changes
    marks = [n for n, c in enumerate(changes) if c.action == "consolidated"]
    assert len(marks) >= 2 and marks[-1] == len(changes) - 1  # more than one chunk; each mark after its memories
    assert sum(len(changes[n].target_ids) for n in marks) == 400
    assert len({k for n in marks for k in changes[n].target_ids}) == 400  # no message marked twice
    assert engine.items.list_items(U).total == 400 and len(engine.maintenance.log(U, limit=1000)) == len(changes)
    assert engine.maintenance.consolidate(U, "long").change_count == 0
