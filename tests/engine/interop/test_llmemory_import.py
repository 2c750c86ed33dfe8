"""Importing an llmemory 0.2.x store (``engine.imports.llmemory``): facts with their categories and provenance,
category summaries, episodes, every version of a skill with its outcomes, the graph with an archived edge, the
short-term sessions and their working memory; resources, daily logs, id counters and llmemory's own pseudo-sessions
left out with their reasons. All or nothing, idempotent, a dry run writes nothing, a user filter.

The fixture (tests/fixtures/interop/llmemory_store/) is written from ../shared/docs/llmemory-reference.md: the file
layout of §3.2 (``<user>/items/item_N.json``, ``categories/<name>.md``, ``episodes/ep_N.json``,
``skills/skill_N.json``, ``resources/res_N.json``, ``memory/YYYY-MM-DD.md``, ``meta.json``), the graph's node and
edge dict forms of §3.6 in ``graph.json`` and the short-term store's keys of §1.1/§2 in ``short_term.json``. Those
two files are the importer's own formats: llmemory 0.2.x has no file backend for either (engine/interop/
llmemory_import.py lists what the reference leaves open)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings, imported_origin, session_origin

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "llmemory_store"
USER = "brad"
SESSION = "llmemory:s1"
WRITTEN = {
    "category": 2,
    "entity": 4,  # five nodes: "acme" (a concept) joins "Acme" (a company): one entity per name
    "episode": 1,
    "item": 3,
    "message": 3,
    "outcome": 4,  # skill_1: 2 successes and 1 failure; skill_2: 1 success
    "relation": 3,
    "skill": 2,
    "working": 3,
}


def copy_store(tmp_path: Path, user: str, short_user: str | None = None) -> Path:
    """The fixture store with brad's folder and short-term keys renamed to ``user`` (``short_user`` for the keys)."""
    root = tmp_path / f"llmemory-{user}"
    shutil.copytree(FIXTURE, root)
    (root / USER).rename(root / user)
    short = json.loads((root / "short_term.json").read_text())
    renamed = {f"{short_user or user}:{k.partition(':')[2]}": v for k, v in short.items()}
    (root / "short_term.json").write_text(json.dumps(renamed))
    return root


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    store = tmp_path_factory.mktemp("llmemory-import") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)


@pytest.fixture(scope="module")
def first(engine):
    """The fixture imported once, after a dry run that must have written nothing."""
    dry = engine.imports.llmemory(FIXTURE, dry_run=True)
    assert dry.dry_run and engine.admin.users() == []
    report = engine.imports.llmemory(FIXTURE)
    assert dict(dry.written) == dict(report.written)  # the dry run said exactly what the import then wrote
    return report


def test_every_part_of_the_store_is_mapped_and_the_rest_skipped_with_reasons(first):
    assert first.origin == "llmemory" and not first.dry_run
    assert dict(first.written) == WRITTEN and dict(first.mapped) == WRITTEN
    assert first.already_present == {}
    skipped = {(s.kind, s.source_id): s.reason for s in first.skipped}
    assert set(skipped) == {
        ("resource", "brad/res_1"),
        ("daily_log", "brad/2026-05-02"),
        ("meta", "brad/meta.json"),
        ("pseudo_session", "brad:__forget_log__"),
        ("pseudo_session", "brad:__llm_usage__"),
    }
    assert all(reason.strip() for reason in skipped.values())
    assert any("node_5" in n and "joined" in n for n in first.notes)


def test_facts_keep_category_importance_and_provenance_with_their_origin(engine, first):
    items = {i.content: i for i in engine.items.list_items(USER).rows}
    tea = items["Brad prefers tea to coffee"]
    assert tea.category == "preferences" and tea.importance == pytest.approx(0.9)
    assert imported_origin(tea.provenance) == ("llmemory", "item_2") and tea.source == "import:llmemory"
    assert tea.provenance["method"] == "fact_extraction" and tea.provenance["confidence"] == pytest.approx(0.9)
    assert tea.provenance["sources"] == [{"type": "resource", "id": "res_1"}]
    assert tea.created_at.isoformat().startswith("2026-05-02T09:14:05")
    reflected = items["Brad's weekend plans usually revolve around the weather"]
    assert reflected.category == "insights" and reflected.provenance["method"] == "reflection"
    summaries = {c.name: c.summary for c in engine.items.categories(USER)}
    assert summaries["preferences"] == "# Preferences\n\n- Prefers tea to coffee\n"
    assert "Berkeley marina" in summaries["hobbies"]


def test_imported_facts_are_embedded_by_memlens_and_found_by_its_search(engine, first):
    hits = engine.retrieval.search(USER, "what does Brad like to drink?", kind="semantic", mode="vector")
    assert engine.items.get(USER, hits[0].id).content == "Brad prefers tea to coffee"


def test_episodes_and_every_skill_version_with_its_outcomes(engine, first):
    (episode,) = engine.episodes.list_episodes(USER).rows
    assert episode.outcome == "success" and [s.action for s in episode.steps] == [
        "check_forecast",
        "suggest_reschedule",
    ]
    assert episode.steps[0].timestamp is not None and imported_origin(episode.provenance) == ("llmemory", "ep_1")
    versions = {s.version: s for s in engine.skills.versions(USER, "check_wind_before_sailing")}
    assert sorted(versions) == [1, 2]
    assert (versions[1].success_count, versions[1].failure_count) == (2, 1)
    assert (versions[2].success_count, versions[2].failure_count) == (1, 0)
    assert versions[2].provenance["method"] == "skill_mining" and imported_origin(versions[2].provenance) == (
        "llmemory",
        "skill_2",
    )
    outcomes = engine.skills.outcomes(USER, versions[1].id)
    assert sorted(o.success for o in outcomes) == [False, True, True]


def test_the_graph_keeps_its_archived_edge_and_the_current_one(engine, first):
    history = engine.graph.relations(USER, predicate="works_at", include_history=True, include_archived=True).rows
    by_object = {r.object: r for r in history}
    assert set(by_object) == {"Acme", "Initech"}
    old, new = by_object["Acme"], by_object["Initech"]
    assert old.archived_at is not None and old.valid_to is not None and old.archive_reason == "replaced by Initech"
    assert new.archived_at is None and new.valid_to is None and new.subject == "User"
    assert {"type": "llmemory", "id": "edge_2"} in [{"type": s.type, "id": s.id} for s in new.sources]
    now = {(r.subject, r.predicate, r.object) for r in engine.graph.relations(USER).rows}
    assert now == {("User", "works_at", "Initech"), ("User", "lives_in", "Berkeley")}
    acme = engine.graph.resolve(USER, "acme")
    assert acme is not None and acme.type == "company" and imported_origin(acme.provenance) == ("llmemory", "node_2")


def test_short_term_sessions_and_their_working_memory(engine, first):
    said = [(m.role, m.content) for m in engine.sessions.messages(USER, SESSION).rows]
    assert said == [
        ("user", "I moved to Berkeley last spring and I sail on Saturdays."),
        ("assistant", "Lovely! Where do you sail?"),
        ("user", "At the marina, in a small dinghy. Oh and I prefer tea to coffee."),
    ]
    assert session_origin(SESSION) == "llmemory"
    slots = engine.working.get(USER, SESSION)
    assert slots["goals"] == ["plan Saturday's sail"] and slots["current_task"] == "check the forecast"
    assert slots["boat"] == "dinghy"
    sessions = {s.session_id for s in engine.sessions.list_sessions(USER).rows}
    assert sessions == {SESSION}  # the pseudo-sessions are not sessions


def test_a_second_import_writes_nothing_and_says_what_was_already_there(engine, first):
    again = engine.imports.llmemory(FIXTURE)
    assert again.written == {} and dict(again.already_present) == WRITTEN
    assert engine.sessions.messages(USER, SESSION).total == 3 and engine.items.list_items(USER).total == 3
    assert len(engine.skills.outcomes(USER)) == 4


def test_a_conversation_that_went_on_adds_only_its_new_messages(engine, tmp_path):
    """llmemory stamps no time on a message: the importer uses the session's last activity, which moves when the
    conversation goes on; a re-import must still recognise the messages it already holds."""
    root = copy_store(tmp_path, "erin")
    engine.imports.llmemory(root)
    short = json.loads((root / "short_term.json").read_text())
    short["erin:s1"]["messages"].append({"role": "assistant", "content": "Tea it is."})
    short["erin:s1"]["last_activity_at"] = "2026-05-03T10:00:00Z"
    (root / "short_term.json").write_text(json.dumps(short))
    again = engine.imports.llmemory(root)
    assert again.written == {"message": 1} and again.already_present["message"] == 3
    assert [m.content for m in engine.sessions.messages("erin", SESSION).rows][-1] == "Tea it is."
    assert engine.sessions.messages("erin", SESSION).total == 4


def test_a_bad_record_is_named_and_nothing_of_the_store_is_written(engine, tmp_path):
    root = copy_store(tmp_path, "carol")
    item = json.loads((root / "carol" / "items" / "item_2.json").read_text())
    item["importance"] = "very"
    (root / "carol" / "items" / "item_2.json").write_text(json.dumps(item))
    with pytest.raises(InvalidInput, match=r"llmemory item 'item_2': .*importance"):
        engine.imports.llmemory(root)
    with pytest.raises(InvalidInput, match=r"llmemory item 'item_2'"):
        engine.imports.llmemory(root, dry_run=True)
    assert "carol" not in engine.admin.users()
    assert engine.items.list_items("carol").total == 0 and engine.sessions.list_sessions("carol").total == 0
    assert engine.graph.relations("carol", include_history=True, include_archived=True).total == 0
    assert engine.working.get("carol", SESSION) == {} or not any(engine.working.get("carol", SESSION).values())


def test_hostile_files_are_refused_with_their_names(engine, tmp_path):
    root = copy_store(tmp_path, "mallory")
    (root / "mallory" / "categories" / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(InvalidInput, match="bad.md.*not UTF-8"):
        engine.imports.llmemory(root)
    (root / "mallory" / "categories" / "bad.md").unlink()
    (root / "mallory" / "graph.json").write_text('{"nodes": [], "edges": [{"id": "edge_9", "subject_id": "x"}]}')
    with pytest.raises(InvalidInput, match="edge_9"):
        engine.imports.llmemory(root)
    (root / "mallory" / "graph.json").write_text("[" * 100_000)
    with pytest.raises(InvalidInput, match="not JSON"):
        engine.imports.llmemory(root)
    (root / "mallory" / "graph.json").unlink()
    (root / "short_term.json").write_text('{"no-colon": {"messages": []}}')
    with pytest.raises(InvalidInput, match="no-colon.*<user>:<session>"):
        engine.imports.llmemory(root)
    assert engine.items.list_items("mallory").total == 0
    with pytest.raises(NotFound):
        engine.imports.llmemory(tmp_path / "missing")


def test_the_user_filter_reads_only_the_users_named(engine, tmp_path):
    root = copy_store(tmp_path, "frank")
    shutil.copytree(root / "frank", root / "gina")
    (root / "notes").mkdir()  # a folder that is no llmemory user: left out, not a user
    report = engine.imports.llmemory(root, user_ids=["gina"])
    assert report.written["item"] == 3 and "message" not in report.written  # the short-term store is frank's
    assert engine.items.list_items("gina").total == 3 and engine.items.list_items("frank").total == 0
    assert ("folder", "notes") in {(s.kind, s.source_id) for s in report.skipped}
    assert engine.imports.llmemory(root, user_ids="gina").written == {}  # one user as a string, not its letters
    with pytest.raises(NotFound, match="nobody"):
        engine.imports.llmemory(root, user_ids=["nobody"])


def test_a_user_id_the_folder_name_changed_comes_back_from_the_short_term_store(engine, tmp_path):
    root = copy_store(tmp_path, "hal_x.io", short_user="hal@x.io")
    report = engine.imports.llmemory(root, user_ids=["hal@x.io"])
    assert report.written["item"] == 3 and report.written["message"] == 3
    assert engine.items.list_items("hal@x.io").total == 3 and "hal_x.io" not in engine.admin.users()


def test_an_entity_the_user_already_has_is_joined_not_refused(engine, tmp_path):
    """memlens keeps one active entity per name: an llmemory node named like a stored entity points to it."""
    engine.admin.ingest_lines(
        [json.dumps({"kind": "entity", "user_id": "ivan", "id": "ent_berkeley", "name": "Berkeley", "type": "place"})]
    )
    report = engine.imports.llmemory(copy_store(tmp_path, "ivan"))
    assert report.written["entity"] == 3 and report.already_present["entity"] == 1
    assert any("'Berkeley'" in n and "ent_berkeley" in n for n in report.notes)
    (lives,) = engine.graph.relations("ivan", predicate="lives_in").rows
    assert lives.object_id == "ent_berkeley"


def test_slot_names_are_made_snake_case_and_a_session_without_messages_is_left_out(engine, tmp_path):
    root = copy_store(tmp_path, "judy")
    short = json.loads((root / "short_term.json").read_text())
    short["judy:s1:working_memory"] = {"Next Step": "rig the jib", "42": "no letters"}
    short["judy:s2"] = {"last_activity_at": "2026-05-04T10:00:00Z"}
    (root / "short_term.json").write_text(json.dumps(short))
    report = engine.imports.llmemory(root, dry_run=True)
    assert report.written["working"] == 1 and report.written["message"] == 3
    assert {(s.kind, s.source_id) for s in report.skipped} >= {("working", "judy:s1:working_memory 42"),
                                                                ("session", "judy:s2")}  # fmt: skip
    assert any("'Next Step'" in n and "'next_step'" in n for n in report.notes)
