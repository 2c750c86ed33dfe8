"""JSONL ingest is all or nothing (a bad line is named, nothing is written: no rows, no vectors) and export ->
ingest round-trips a user's memory exactly (issue 2 §8, §9)."""

from __future__ import annotations

import json

import pytest

from engine import InvalidInput, MemoryEngine, Settings
from engine.records import Extraction, FactSource, SourcedExtraction
from tests.support.storecheck import snapshot, vector_counts, written_rows

U = "ada"


def line(**record) -> str:
    return json.dumps(record)


def good_lines() -> list[str]:
    """One valid record of every kind, in an order that references only what came before."""
    return [
        line(kind="category", user_id=U, name="work", summary="Ada's job"),
        line(kind="item", user_id=U, id="it-1", category="work", content="Ada ships on Tuesdays", importance=0.8),
        line(kind="episode", user_id=U, id="ep-1", steps=[{"action": "ship", "result": "done"}], outcome="success"),
        line(kind="skill", user_id=U, id="sk-1", name="ship", body="run make ship", skill_kind="code"),
        line(kind="outcome", user_id=U, skill_id="sk-1", success=True, episode_id="ep-1"),
        line(
            kind="message",
            user_id=U,
            session_id="s1",
            role="user",
            content="ship it",
            created_at="2026-01-01T10:00:00Z",
        ),
        line(kind="feedback", user_id=U, item_id="it-1", label="useful"),
        line(kind="working", user_id=U, session_id="s1", slot="goals", value=["ship"]),
        line(kind="forget_log", user_id=U, memory_type="semantic", ids=["it-old"], mode="hard", reason="obsolete"),
    ]


def assert_nothing_written(engine: MemoryEngine) -> None:
    assert written_rows(engine) == 0
    assert sum(vector_counts(engine).values()) == 0


def test_a_valid_file_is_written_and_the_counts_per_kind_are_returned(empty_engine):
    counts = empty_engine.admin.ingest_lines(good_lines())
    assert counts == {
        "message": 1,
        "item": 1,
        "category": 1,
        "episode": 1,
        "skill": 1,
        "outcome": 1,
        "feedback": 1,
        "working": 1,
        "forget_log": 1,
        "entity": 0,
        "relation": 0,
        "mention": 0,
    }
    assert empty_engine.skills.get(U, "sk-1").success_count == 1
    assert empty_engine.working.get(U, "s1")["goals"] == ["ship"]
    assert vector_counts(empty_engine) == {
        "episodic__all-minilm-l6-v2": 1,
        "procedural__all-minilm-l6-v2": 1,
        "semantic__all-minilm-l6-v2": 1,
    }
    assert [h.id for h in empty_engine.retrieval.search(U, "Ada ships on Tuesdays", kind="semantic")] == ["it-1"]


def test_a_file_of_only_one_kind_is_written(empty_engine):
    assert empty_engine.admin.ingest_lines([line(kind="item", user_id=U, content="only items here")])["item"] == 1
    assert (
        empty_engine.admin.ingest_lines(
            [line(kind="message", user_id=U, session_id="s", role="user", content="only messages")]
        )["message"]
        == 1
    )


BAD_RECORDS = {
    "invalid JSON": '{"kind": "item", "user_id": "ada", "content": "unterminated}',
    "not an object": "[1, 2, 3]",
    "unknown kind": line(kind="memory", user_id=U, content="x"),
    "unknown field": line(kind="item", user_id=U, content="x", colour="blue"),
    "missing field": line(kind="item", user_id=U),
    "unknown role": line(kind="message", user_id=U, session_id="s", role="admin", content="x"),
    "hostile id": line(kind="item", user_id="' OR '1'='1", content="x"),
    "path id": line(kind="episode", user_id=U, id="../../etc", steps=[{"action": "x"}]),
    "NaN importance": '{"kind": "item", "user_id": "ada", "content": "x", "importance": NaN}',
    "empty content": line(kind="item", user_id=U, content="   "),
    "NUL in content": line(kind="item", user_id=U, content="a\x00b"),
    "unknown label": line(kind="feedback", user_id=U, item_id="it-1", label="meh"),
    "unknown forget mode": line(kind="forget_log", user_id=U, memory_type="semantic", ids=[], mode="x", reason="r"),
    "bad slot name": line(kind="working", user_id=U, session_id="s", slot="Bad Slot", value=1),
    "non-boolean outcome": line(kind="outcome", user_id=U, skill_id="sk-1", success="yes"),
    "unknown skill kind": line(kind="skill", user_id=U, name="n", body="b", skill_kind="macro"),
}


@pytest.mark.parametrize("what", list(BAD_RECORDS))
def test_a_bad_line_is_named_by_its_number_and_nothing_is_written(empty_engine, what):
    lines = good_lines()
    lines.insert(4, BAD_RECORDS[what])  # becomes line 5
    with pytest.raises(InvalidInput, match=r"^line 5: "):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_a_bad_last_line_after_hundreds_of_good_ones_writes_nothing(empty_engine):
    lines = [line(kind="item", user_id=U, content=f"good fact number {n}") for n in range(300)]
    lines += [line(kind="message", user_id=U, session_id="s", role="user", content=f"m{n}") for n in range(50)]
    lines.append(line(kind="message", user_id=U, session_id="s", role="robot", content="the last line"))
    with pytest.raises(InvalidInput, match=r"^line 351: unknown role"):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_line_numbers_count_blank_lines(empty_engine):
    lines = ["", good_lines()[1], "   ", '{"kind": "nope"}']
    with pytest.raises(InvalidInput, match=r"^line 4: "):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_an_outcome_naming_an_unknown_skill_is_named_by_its_line_and_nothing_is_written(empty_engine):
    lines = good_lines()
    lines.append(line(kind="outcome", user_id=U, skill_id="sk-missing", success=False))
    with pytest.raises(InvalidInput, match=r"^line 10: outcome names unknown skill 'sk-missing'"):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_a_skill_of_another_user_is_unknown_to_an_outcome(empty_engine):
    lines = good_lines() + [line(kind="outcome", user_id="bo", skill_id="sk-1", success=True)]
    with pytest.raises(InvalidInput, match=r"^line 10: "):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_feedback_naming_an_unknown_memory_is_named_by_its_line_and_nothing_is_written(empty_engine):
    lines = good_lines()
    lines.insert(2, line(kind="feedback", user_id=U, item_id="it-ghost", label="harmful"))
    with pytest.raises(InvalidInput, match=r"^line 3: feedback names unknown memory 'it-ghost'"):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_references_may_point_forward_in_the_file_or_to_stored_memories(empty_engine):
    empty_engine.admin.ingest_lines([line(kind="skill", user_id=U, id="sk-stored", name="stored", body="b")])
    counts = empty_engine.admin.ingest_lines(
        [
            line(kind="outcome", user_id=U, skill_id="sk-later", success=True),
            line(kind="outcome", user_id=U, skill_id="sk-stored", success=False),
            line(kind="skill", user_id=U, id="sk-later", name="later", body="b"),
        ]
    )
    assert counts["outcome"] == 2
    assert empty_engine.skills.get(U, "sk-stored").failure_count == 1


def test_an_id_twice_in_one_file_is_named_by_its_second_line(empty_engine):
    lines = good_lines() + [line(kind="item", user_id=U, id="it-1", content="again")]
    with pytest.raises(InvalidInput, match=r"^line 10: item id 'it-1' appears twice \(first on line 2\)"):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_ingesting_the_same_file_twice_is_refused_and_leaves_the_first_copy_intact(empty_engine):
    empty_engine.admin.ingest_lines(good_lines())
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput, match=r"^line 2: item id 'it-1' already exists"):
        empty_engine.admin.ingest_lines(good_lines())
    assert snapshot(empty_engine) == before
    # the refused import must not have removed the stored memories' vectors
    assert [h.id for h in empty_engine.retrieval.search(U, "Ada ships on Tuesdays", kind="semantic")] == ["it-1"]
    assert [h.id for h in empty_engine.retrieval.search(U, "run make ship", kind="procedural")] == ["sk-1"]


# -- export -> ingest round trip -------------------------------------------------------------------------------------


def canonical(records) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records)


def fresh_engine(path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)


def test_export_then_ingest_into_a_fresh_store_gives_an_identical_export(empty_engine, tmp_path, embedder):
    e = empty_engine
    e.admin.ingest_lines(good_lines())
    e.items.remember(
        U,
        "Soft-forgotten but exported",
        category="work",
        provenance={"sources": [{"type": "message", "id": "s1#1"}], "method": "extraction", "confidence": 0.4},
    )
    gone = e.items.list_items(U, query="Soft-forgotten").rows[0].id
    e.forgetting.forget(U, "semantic", [gone], reason="archived on purpose")
    v2 = e.skills.register(U, "ship", "run make ship-safely", description="v2")
    e.skills.report_outcome(U, v2.id, False, episode_id="ep-1")
    trace = e.retrieval.retrieve(U, "When does Ada ship?")
    e.feedback.label(U, "ep-1", "harmful", trace_id=trace.trace_id, hop=1, note="wrong episode")
    e.working.update(U, "s1", {"scratchpad": {"n": 1, "nested": [True, None, 2.5]}, "custom_slot": "é"})
    e.sessions.add_message(U, "s2", "assistant", "second session", created_at="2026-01-02T00:00:00Z")
    e.graph.add_fact(U, "Ada", "works_at", "Acme", sources=[FactSource("semantic", "it-1")])
    with e._b.db.write() as conn:  # it-1's mention of Ada, as the extraction hook writes it
        e.graph.write(conn, U, [mentioning("it-1", "Ada")])
    first = list(e.admin.export(U))
    assert {r["kind"] for r in first} == {
        "entity",
        "relation",
        "mention",
        "category",
        "item",
        "episode",
        "skill",
        "outcome",
        "message",
        "feedback",
        "working",
        "forget_log",
    }

    fresh = fresh_engine(tmp_path / "copy", embedder)
    fresh.admin.ingest_lines(json.dumps(r) for r in first)
    assert canonical(fresh.admin.export(U)) == canonical(first)
    assert fresh.items.get(U, gone).archived_at is not None
    assert gone not in {h.id for h in fresh.retrieval.search(U, "Soft-forgotten but exported")}
    assert [s.version for s in fresh.skills.versions(U, "ship")] == [1, 2]


def test_the_demo_round_trips_for_every_user(demo_engine, tmp_path, embedder):
    users = demo_engine.sessions.users()
    assert len(users) >= 3
    fresh = fresh_engine(tmp_path / "copy", embedder)
    exported = {u: list(demo_engine.admin.export(u)) for u in users}
    fresh.admin.ingest_lines(json.dumps(r) for u in users for r in exported[u])
    for u in users:
        assert canonical(fresh.admin.export(u)) == canonical(exported[u]), u
    assert fresh.admin.stats().items == demo_engine.admin.stats().items


def test_ingest_reports_progress_every_few_records_not_once_per_large_batch(tmp_path, embedder):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)
    lines = [
        line(kind="item", user_id=U, id=f"it-{n}", category="work", content=f"fact number {n}") for n in range(100)
    ]
    seen: list[tuple[str, int, int]] = []
    engine.admin.ingest_lines(lines, progress=lambda kind, done, total: seen.append((kind, done, total)))
    assert seen == [("semantic", 32, 100), ("semantic", 64, 100), ("semantic", 96, 100), ("semantic", 100, 100)]
    assert engine.items.list_items(U, limit=1).total == 100
    hits = engine.retrieval.search(U, "fact number 77", limit=1)
    assert hits and hits[0].id == "it-77"  # every vector landed with its own record


# -- records without ids, ingested again (issue 29) ------------------------------------------------------------------


def idless_lines() -> list[str]:
    """Records that carry no id: messages (one said twice, one without a time), an item, an outcome, a label."""
    return [
        line(kind="skill", user_id=U, id="sk-9", name="tea", body="boil water"),
        line(kind="message", user_id=U, session_id="s1", role="user", content="yes", created_at="2026-01-01T10:00:00Z"),
        line(kind="message", user_id=U, session_id="s1", role="user", content="yes", created_at="2026-01-01T10:00:00Z"),
        line(kind="message", user_id=U, session_id="s1", role="assistant", content="no time given"),
        line(kind="item", user_id=U, category="home", content="The kettle is in the left cupboard"),
        line(kind="outcome", user_id=U, skill_id="sk-9", success=True, at="2026-01-02T00:00:00Z"),
        line(kind="feedback", user_id=U, item_id="sk-9", label="useful", created_at="2026-01-02T00:00:00Z"),
        line(
            kind="forget_log",
            user_id=U,
            memory_type="semantic",
            ids=["x-1"],
            mode="hard",
            reason="old",
            at="2026-01-03",
        ),
    ]


@pytest.mark.both_stores
def test_records_without_ids_ingested_again_are_reported_and_skipped_on_request(empty_engine):
    e = empty_engine
    first = e.admin.ingest_lines(idless_lines())
    assert "already_stored" not in first and first["message"] == 3
    # the same file again, minus the skill (its id is taken): before issue 29 every record doubled silently
    again = idless_lines()[1:]
    before = snapshot(e)
    assert e.admin.ingest_lines(again, skip_existing=True) == {
        "message": 0,
        "item": 0,
        "category": 0,
        "episode": 0,
        "skill": 0,
        "outcome": 0,
        "feedback": 0,
        "working": 0,
        "forget_log": 0,
        "entity": 0,
        "relation": 0,
        "mention": 0,
        "skipped": 7,
    }
    assert snapshot(e) == before
    # a third "yes" is new (two are stored); without the flag the repeats are written and counted
    counts = e.admin.ingest_lines(again + [idless_lines()[1]])
    assert counts["already_stored"] == 7 and counts["message"] == 4
    assert e.sessions.messages(U, "s1", limit=100).total == 7
    assert e.items.list_items(U).total == 2


def test_cli_ingest_reports_repeated_records_and_skip_existing_leaves_them_out(tmp_path):
    from tests.support.cli import cli

    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(idless_lines()) + "\n", encoding="utf-8")
    store = tmp_path / "s"
    assert cli(store, "ingest", str(path)).code == 0
    path.write_text("\n".join(idless_lines()[1:]) + "\n", encoding="utf-8")
    run = cli(store, "ingest", "--skip-existing", str(path))
    assert run.code == 0, run.err
    assert "7 records already in the store (skipped)" in run.out
    run = cli(store, "--json", "ingest", str(path))
    assert run.json()["counts"]["already_stored"] == 7


def test_every_table_the_registry_says_export_carries_round_trips_row_for_row(empty_engine, tmp_path, embedder):
    """The registry (engine/store/schema.py) names the record kind that carries each table; a table declared as
    exported must come back with the same rows of the user after export -> ingest."""
    from engine.store.schema import TABLES

    e = empty_engine
    e.admin.ingest_lines(good_lines())
    e.working.update(U, "s1", {"scratchpad": "x"})
    e.items.remember(U, "Ada keeps a spare kettle", category="home")
    e.forgetting.forget(U, "semantic", ["it-1"], reason="gone", mode="hard")
    e.graph.add_fact(U, "Ada", "lives_in", "Leeds", valid_from="2024-01-01T00:00:00Z")
    e.graph.add_fact(U, "Ada", "lives_in", "York", valid_from="2025-01-01T00:00:00Z")
    kettle = e.items.list_items(U, query="kettle").rows[0].id
    with e._b.db.write() as conn:  # a mention, as the extraction hook writes it
        e.graph.write(conn, U, [mentioning(kettle, "Ada")])
    exported = list(e.admin.export(U))
    fresh = fresh_engine(tmp_path / "copy", embedder)
    fresh.admin.ingest_lines(json.dumps(r) for r in exported)
    kinds = {r["kind"] for r in exported}
    carried = [t for t in TABLES if t.exported_as]
    assert {t.exported_as for t in carried} <= kinds
    columns = {
        "sessions": "session_id",
        "messages": "session_id, seq, role, content, created_at",
        "working_slots": "session_id, slot, value",
        "items": "id, category, content, archived_at",
        "categories": "name, summary",
        "episodes": "id, summary, outcome, archived_at",
        "skills": "id, name, version, body, success_count, failure_count",
        "skill_outcomes": "skill_id, success, episode_id, occurred_at",
        "feedback": "item_id, label, trace_id, hop, note, created_at",
        "forget_log": "memory_type, ids, count, mode, reason, actor, occurred_at",
        "entities": "id, name, name_key, type, CAST(aliases AS VARCHAR), created_at, updated_at, archived_at",
        "relations": "id, subject_id, predicate, object_id, valid_from, valid_to, superseded_by, method, archived_at",
        "entity_mentions": "entity_id, kind, memory_id, method, created_at",
    }
    assert set(columns) == {t.name for t in carried}, "a table export carries needs its columns compared here"
    for t in carried:
        order = ", ".join(str(n + 1) for n in range(columns[t.name].count(",") + 1))
        sql = f"SELECT {columns[t.name]} FROM {t.name} WHERE user_id=? ORDER BY {order}"
        with e._b.db.read() as a, fresh._b.db.read() as b:
            assert a.execute(sql, [U]).fetchall() == b.execute(sql, [U]).fetchall(), t.name


# -- the graph: entities, relations, mentions ------------------------------------------------------------------------
def mentioning(item_id: str, *names: str, at: str = "2024-06-01T00:00:00Z") -> SourcedExtraction:
    """An item's extraction naming ``names`` (no relations): what the extraction hook writes as mentions."""
    from engine.clock import parse_time

    return SourcedExtraction(
        Extraction(tuple((n, "person") for n in names), (), "offline"),
        parse_time(at),
        ("semantic", item_id),
        (FactSource("semantic", item_id),),
    )


def graph_lines() -> list[str]:
    """A hand-made graph: a timeline of two versions (the first superseded), an archived relation, a mention."""
    return [
        line(kind="entity", user_id=U, id="ent-ada", name="Ada", type="person", aliases=["A. L."]),
        line(kind="entity", user_id=U, id="ent-leeds", name="Leeds", type="place"),
        line(kind="entity", user_id=U, id="ent-york", name="York", type="place"),
        line(
            kind="relation",
            user_id=U,
            id="rel-1",
            subject_id="ent-ada",
            predicate="lives_in",
            object_id="ent-leeds",
            valid_from="2023-01-01T00:00:00Z",
            valid_to="2024-01-01T00:00:00Z",
            superseded_by="rel-2",
            sources=[{"type": "message", "id": "s1#2"}],
            method="offline",
        ),
        line(
            kind="relation",
            user_id=U,
            id="rel-2",
            subject_id="ent-ada",
            predicate="lives_in",
            object_id="ent-york",
            valid_from="2024-01-01T00:00:00Z",
            sources=[{"type": "semantic", "id": "it-1"}],
            method="llm",
            confidence=0.9,
        ),
        line(
            kind="relation",
            user_id=U,
            id="rel-3",
            subject_id="ent-york",
            predicate="located_in",
            object_id="ent-leeds",
            valid_from="2024-01-01T00:00:00Z",
            archived_at="2025-01-01T00:00:00Z",
            archive_reason="wrong",
        ),
        line(kind="mention", user_id=U, entity_id="ent-ada", memory_kind="semantic", memory_id="it-1"),
    ]


@pytest.mark.both_stores
def test_a_graph_round_trips_with_its_validity_supersession_and_mentions(empty_engine, tmp_path, embedder):
    e = empty_engine
    counts = e.admin.ingest_lines(good_lines() + graph_lines())
    assert (counts["entity"], counts["relation"], counts["mention"]) == (3, 3, 1)
    ada = e.graph.resolve(U, "a. l.") or e.graph.resolve(U, "Ada")
    assert ada.id == "ent-ada" and ada.aliases == ("A. L.",)
    timeline = e.graph.timeline(U, "ent-ada", "lives_in")
    assert [(r.id, r.object, r.valid_to is not None, r.superseded_by) for r in timeline] == [
        ("rel-1", "Leeds", True, "rel-2"),
        ("rel-2", "York", False, None),
    ]
    assert [r.object for r in e.graph.relations(U, "ent-ada", as_of="2023-06-01T00:00:00Z").rows] == ["Leeds"]
    assert e.graph.relation(U, "rel-3").archive_reason == "wrong"
    assert e.graph.mentions(U, ["ent-ada"]) == {"ent-ada": [("semantic", "it-1")]}
    # A new value after the import supersedes the imported current one, as if it had been written here
    e.graph.add_fact(U, "Ada", "lives_in", "Hull", valid_from="2025-06-01T00:00:00Z")
    assert e.graph.relation(U, "rel-2").superseded_by is not None
    exported = list(e.admin.export(U))
    fresh = fresh_engine(tmp_path / "copy", embedder)
    fresh.admin.ingest_lines(json.dumps(r) for r in exported)
    assert canonical(fresh.admin.export(U)) == canonical(exported)
    assert [
        (r.id, r.object, r.valid_from, r.valid_to, r.superseded_by, r.sources, r.method, r.confidence)
        for r in fresh.graph.timeline(U, "ent-ada", "lives_in")
    ] == [
        (r.id, r.object, r.valid_from, r.valid_to, r.superseded_by, r.sources, r.method, r.confidence)
        for r in e.graph.timeline(U, "ent-ada", "lives_in")
    ]
    # The export's items were not extracted again in the fresh store: the graph is exactly the exported one
    assert fresh.graph.stats(U) == e.graph.stats(U)


def test_ingesting_a_graph_again_changes_nothing(empty_engine):
    e = empty_engine
    e.admin.ingest_lines(graph_lines())
    before = snapshot(e)
    again = e.admin.ingest_lines(graph_lines())
    assert (again["entity"], again["relation"]) == (0, 0)
    assert snapshot(e) == before


def relation_line(**changes) -> str:
    """A valid relation record of Ada (knows herself) with ``changes``; a change to None leaves the field out."""
    record = {
        "kind": "relation",
        "user_id": U,
        "id": "rel-x",
        "subject_id": "ent-ada",
        "predicate": "knows",
        "object_id": "ent-ada",
        "valid_from": "2024-01-01T00:00:00Z",
    }
    record.update(changes)
    return line(**{k: v for k, v in record.items() if v is not None})


BAD_GRAPH_RECORDS = {
    "entity without a name": line(kind="entity", user_id=U, id="ent-x"),
    "blank entity name": line(kind="entity", user_id=U, id="ent-x", name="  "),
    "hostile entity id": line(kind="entity", user_id=U, id="x' OR '1'='1", name="X"),
    "path entity id": line(kind="entity", user_id=U, id="../../etc/passwd", name="X"),
    "huge entity name": line(kind="entity", user_id=U, id="ent-x", name="x" * 201),
    "NUL in a name": line(kind="entity", user_id=U, id="ent-x", name="a\x00b"),
    "aliases not a list": line(kind="entity", user_id=U, id="ent-x", name="X", aliases="A"),
    "unknown entity field": line(kind="entity", user_id=U, id="ent-x", name="X", colour="red"),
    "relation to an unknown entity": relation_line(object_id="ent-nobody"),
    "relation superseded by an unknown one": relation_line(superseded_by="rel-nowhere"),
    "blank predicate": relation_line(predicate=" "),
    "validity backwards": relation_line(valid_to="2023-01-01T00:00:00Z"),
    "no valid_from": relation_line(valid_from=None),
    "confidence above 1": relation_line(confidence=7),
    "malformed sources": relation_line(sources=[{"type": "semantic"}]),
    "mention of an unknown entity": line(
        kind="mention", user_id=U, entity_id="ent-nobody", memory_kind="semantic", memory_id="it-1"
    ),
    "mention of an unknown kind": line(
        kind="mention", user_id=U, entity_id="ent-ada", memory_kind="graph", memory_id="it-1"
    ),
    "a second entity of one name": line(kind="entity", user_id=U, id="ent-ada-2", name="the ADA"),
    "an entity id twice": line(kind="entity", user_id=U, id="ent-ada", name="Ada Again"),
}


@pytest.mark.parametrize("what", list(BAD_GRAPH_RECORDS))
def test_a_bad_graph_record_is_named_by_its_line_and_nothing_is_written(empty_engine, what):
    lines = good_lines() + graph_lines() + [BAD_GRAPH_RECORDS[what]]
    with pytest.raises(InvalidInput, match=rf"^line {len(lines)}: "):
        empty_engine.admin.ingest_lines(lines)
    assert_nothing_written(empty_engine)


def test_an_id_of_another_users_graph_or_a_name_the_store_has_is_refused(empty_engine):
    e = empty_engine
    e.admin.ingest_lines(graph_lines())
    before = snapshot(e)
    theirs = line(kind="entity", user_id="bob", id="ent-ada", name="Ada")
    with pytest.raises(InvalidInput, match=r"^line 1: entity id 'ent-ada' already exists in the store for another"):
        e.admin.ingest_lines([theirs])
    twin = line(kind="entity", user_id=U, id="ent-ada-twin", name="ada")
    with pytest.raises(InvalidInput, match=r"^line 1: user 'ada' already has an entity named 'ada' \(ent-ada\)"):
        e.admin.ingest_lines([twin])
    assert snapshot(e) == before
