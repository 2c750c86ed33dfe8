"""Which of a trace's memories were forgotten since (Forgetter.tombstones, what a replay and why-not report): soft
(archived, with the newest soft forget-log entry naming it), hard (no row, with the newest hard entry), nothing for
an id that was never forgotten or was written again after a hard forget. The lookup first asks whether the user has
anything forgotten at all (the replay's common case answers without matching ids), so both paths are pinned here."""

from __future__ import annotations

import pytest

from engine import MemoryEngine

pytestmark = pytest.mark.both_stores

U = "ada"


def remember(engine: MemoryEngine, memory_id: str, text: str, user: str = U) -> str:
    return engine.items.remember_many([{"user_id": user, "id": memory_id, "content": text}])[0].id


@pytest.fixture
def engine(empty_engine: MemoryEngine) -> MemoryEngine:
    remember(empty_engine, "m-tea", "Ada drinks green tea every morning.")
    remember(empty_engine, "m-bike", "Ada commutes by bicycle along the river.")
    remember(empty_engine, "m-cat", "Ada's cat is called Pixel.")
    return empty_engine


def test_a_user_with_nothing_forgotten_has_no_tombstones(engine: MemoryEngine):
    remember(engine, "b-tea", "Bo drinks black tea.", user="bo")
    engine.forgetting.forget("bo", "semantic", ["b-tea"], "Bo's own forget", mode="hard")
    assert engine.forgetting.tombstones(U, ["m-tea", "m-bike", "b-tea", "never-stored"]) == {}


def test_a_soft_forgotten_memory_carries_its_newest_soft_entry(engine: MemoryEngine):
    engine.forgetting.forget(U, "semantic", ["m-tea"], "outdated", mode="soft", actor="tester")
    found = engine.forgetting.tombstones(U, ["m-tea", "m-bike"])
    assert set(found) == {"m-tea"}
    tomb = found["m-tea"]
    assert tomb["mode"] == "soft" and tomb["reason"] == "outdated" and tomb["actor"] == "tester"
    assert tomb["forget_log_id"] == engine.forgetting.log(U)[0].id
    assert tomb["kind"] == "semantic"


def test_a_hard_forgotten_memory_carries_its_hard_entry_even_after_a_soft_one(engine: MemoryEngine):
    engine.forgetting.forget(U, "semantic", ["m-tea"], "first soft", mode="soft")
    engine.forgetting.forget(U, "semantic", ["m-tea", "m-cat"], "then hard", mode="hard")
    found = engine.forgetting.tombstones(U, ["m-tea", "m-bike", "m-cat"])
    assert set(found) == {"m-tea", "m-cat"}
    assert {t["mode"] for t in found.values()} == {"hard"}
    assert {t["reason"] for t in found.values()} == {"then hard"}


def test_an_id_written_again_after_a_hard_forget_is_not_forgotten(engine: MemoryEngine):
    engine.forgetting.forget(U, "semantic", ["m-tea"], "gone", mode="hard")
    assert set(engine.forgetting.tombstones(U, ["m-tea"])) == {"m-tea"}
    remember(engine, "m-tea", "Ada now drinks coffee.")
    assert engine.forgetting.tombstones(U, ["m-tea", "m-bike"]) == {}


def test_an_archived_row_without_a_forget_log_entry_is_soft_from_its_archive_time(engine: MemoryEngine):
    # A row archived by an earlier version or an ingest that brought no audit entry: set directly, as it was stored.
    with engine._b.db.write() as conn:
        conn.execute("UPDATE items SET archived_at = updated_at WHERE user_id=? AND id=?", [U, "m-bike"])
    found = engine.forgetting.tombstones(U, ["m-tea", "m-bike"])
    assert set(found) == {"m-bike"}
    assert found["m-bike"]["mode"] == "soft" and found["m-bike"]["forget_log_id"] is None
    assert found["m-bike"]["at"] == engine.items.get(U, "m-bike").archived_at.isoformat()


def test_a_user_with_forgets_elsewhere_gets_none_for_untouched_ids(engine: MemoryEngine):
    engine.forgetting.forget(U, "semantic", ["m-cat"], "gone", mode="hard")
    engine.forgetting.forget(U, "semantic", ["m-bike"], "hidden", mode="soft")
    assert engine.forgetting.tombstones(U, ["m-tea", "never-stored"]) == {}


def test_episodes_and_skills_are_looked_up_too(engine: MemoryEngine):
    episode = engine.episodes.record(U, [{"observation": "testing", "action": "ran the suite"}]).id
    skill = engine.skills.register(U, "brew-tea", "Boil water, steep three minutes.").id
    engine.forgetting.forget(U, "episodic", [episode], "old run", mode="soft")
    engine.forgetting.forget(U, "procedural", [skill], "wrong recipe", mode="hard")
    found = engine.forgetting.tombstones(U, [episode, skill, "m-tea"])
    assert {i: (t["mode"], t["kind"]) for i, t in found.items()} == {
        episode: ("soft", "episodic"),
        skill: ("hard", "procedural"),
    }
