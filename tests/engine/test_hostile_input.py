"""Hostile input at every API entry point: a clear InvalidInput/NotFound and nothing written (issue 2 §9).

Each test counts the rows of every DuckDB table and every LanceDB table before and after, so a half-written record,
an injected statement or a stray vector cannot hide.
"""

from __future__ import annotations

import pytest

from engine import InvalidInput, MemlensError, MemoryEngine, NotFound, Settings
from tests.support.storecheck import snapshot

U, S = "ada", "ada-s1"
HOSTILE_IDS = [
    "a'b",
    "' OR '1'='1",
    "x'; DROP TABLE items; --",
    "../x",
    "..",
    "a\x00b",
    "a b",
    "ada\n",
    "",
    "x" * 129,
    42,
]
MEGABYTE = "m" * 1_000_000
BAD_TEXTS = {"1 MB": MEGABYTE, "empty": "", "blank": " \n\t ", "NUL": "before\x00after", "not text": 12}
STEPS = [{"action": "look around"}]


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> tuple[MemoryEngine, dict[str, str]]:
    """A store with one memory of every kind, so an injected DELETE or UPDATE would show in the counts."""
    path = tmp_path_factory.mktemp("hostile") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    engine.sessions.add_message(U, S, "user", "hello")
    engine.working.update(U, S, {"goals": ["stay safe"]})
    item = engine.items.remember(U, "The victim fact that an injection would delete")
    episode = engine.episodes.record(U, STEPS, outcome="success")
    skill = engine.skills.register(U, "victim-skill", "a body")
    engine.skills.report_outcome(U, skill.id, True)
    engine.feedback.label(U, item.id, "useful")
    trace = engine.retrieval.retrieve(U, "victim fact")
    edit = engine.working.history(U, S)[0].id
    fact = engine.graph.add_fact(U, "Victim Person", "works_at", "Victim Corp")
    entity = engine.graph.resolve(U, "Victim Person").id
    return engine, {
        "item": item.id,
        "episode": episode.id,
        "skill": skill.id,
        "trace": trace.trace_id,
        "edit": edit,
        "relation": fact.relations_added[0],
        "entity": entity,
    }


def refused(engine: MemoryEngine, call, expected=(InvalidInput,)) -> MemlensError:
    """Run ``call``; it must raise one of ``expected`` with a readable message and leave the store unchanged."""
    with engine._b.db.hold():  # one DuckDB connection for the counts and the call: only to keep the suite fast
        before = snapshot(engine)
        with pytest.raises(expected) as err:
            call()
        after = snapshot(engine)
    message = str(err.value)
    assert message and len(message) < 1000 and "\x00" not in message
    assert not any(word in message for word in ("Traceback", "Binder Error", "Parser Error", "duckdb", "lance"))
    assert after == before
    return err.value


# Every entry point that takes an id, with the hostile id in each position (h = the hostile id, r = real ids).
ID_CALLS = {
    "add_message user": lambda e, h, r: e.sessions.add_message(h, S, "user", "hi"),
    "add_message session": lambda e, h, r: e.sessions.add_message(U, h, "user", "hi"),
    "list_sessions": lambda e, h, r: e.sessions.list_sessions(h),
    "get_session user": lambda e, h, r: e.sessions.get_session(h, S),
    "get_session session": lambda e, h, r: e.sessions.get_session(U, h),
    "messages": lambda e, h, r: e.sessions.messages(U, h),
    "prune_sessions": lambda e, h, r: e.sessions.prune(h, "stale", apply=True),
    "working_get": lambda e, h, r: e.working.get(U, h),
    "working_update user": lambda e, h, r: e.working.update(h, S, {"goals": 1}),
    "working_update session": lambda e, h, r: e.working.update(U, h, {"goals": 1}),
    "working_update slot": lambda e, h, r: e.working.update(U, S, {h: 1}),
    "working_set_json": lambda e, h, r: e.working.set_json(U, h, "goals", "1"),
    "working_history": lambda e, h, r: e.working.history(U, h),
    "working_restore": lambda e, h, r: e.working.restore(U, h, r["edit"]),
    "working_clear": lambda e, h, r: e.working.clear(U, h),
    "remember": lambda e, h, r: e.items.remember(h, "a fact"),
    "remember_many id": lambda e, h, r: e.items.remember_many([{"user_id": U, "content": "a fact", "id": h}]),
    "memorize": lambda e, h, r: e.items.memorize(h, "raw text"),
    "get_item": lambda e, h, r: e.items.get(U, h),
    "list_items": lambda e, h, r: e.items.list_items(h),
    "categories": lambda e, h, r: e.items.categories(h),
    "record_episode user": lambda e, h, r: e.episodes.record(h, STEPS),
    "record_episode session": lambda e, h, r: e.episodes.record(U, STEPS, session_id=h),
    "get_episode": lambda e, h, r: e.episodes.get(U, h),
    "list_episodes": lambda e, h, r: e.episodes.list_episodes(h),
    "list_episodes session": lambda e, h, r: e.episodes.list_episodes(U, session_id=h),
    "register_skill": lambda e, h, r: e.skills.register(h, "name", "body"),
    "report_outcome skill": lambda e, h, r: e.skills.report_outcome(U, h, True),
    "report_outcome episode": lambda e, h, r: e.skills.report_outcome(U, r["skill"], True, episode_id=h),
    "get_skill": lambda e, h, r: e.skills.get(U, h),
    "rank_skills": lambda e, h, r: e.skills.rank(h),
    "skill_outcomes": lambda e, h, r: e.skills.outcomes(U, skill_id=h),
    "label item": lambda e, h, r: e.feedback.label(U, h, "useful"),
    "label user": lambda e, h, r: e.feedback.label(h, r["item"], "useful"),
    "label trace": lambda e, h, r: e.feedback.label(U, r["item"], "useful", trace_id=h),
    "report_feedback": lambda e, h, r: e.feedback.report(U, useful=[r["item"]], harmful=[h]),
    "feedback_net": lambda e, h, r: e.feedback.net(U, [h]),
    "feedback_events": lambda e, h, r: e.feedback.events(U, item_id=h),
    "forget id": lambda e, h, r: e.forgetting.forget(U, "semantic", [r["item"], h], reason="r", mode="hard"),
    "forget user": lambda e, h, r: e.forgetting.forget(h, "semantic", [r["item"]], reason="r", mode="hard"),
    "forget_log": lambda e, h, r: e.forgetting.log(h),
    "search": lambda e, h, r: e.retrieval.search(h, "victim"),
    "retrieve user": lambda e, h, r: e.retrieval.retrieve(h, "victim"),
    "retrieve session": lambda e, h, r: e.retrieval.retrieve(U, "victim", session_id=h),
    "get_trace": lambda e, h, r: e.traces.get(h),
    "delete_trace": lambda e, h, r: e.traces.delete(h),
    "list_traces": lambda e, h, r: e.traces.list_traces(h),
    "replay": lambda e, h, r: e.retrieval.replay(h),
    "export": lambda e, h, r: list(e.admin.export(h)),
    "delete_user": lambda e, h, r: e.admin.delete_user(h),
    "reflect": lambda e, h, r: e.items.reflect(h),
    "usage": lambda e, h, r: e.admin.usage(h),
    "add_fact user": lambda e, h, r: e.graph.add_fact(h, "Ada", "likes", "tea"),
    "graph entity": lambda e, h, r: e.graph.entity(U, h),
    "graph entity user": lambda e, h, r: e.graph.entity(h, r["entity"]),
    "graph resolve user": lambda e, h, r: e.graph.resolve(h, "Victim Person"),
    "graph list_entities": lambda e, h, r: e.graph.list_entities(h),
    "graph relations user": lambda e, h, r: e.graph.relations(h),
    "graph relations entity": lambda e, h, r: e.graph.relations(U, h),
    "graph relation": lambda e, h, r: e.graph.relation(U, h),
    "graph timeline": lambda e, h, r: e.graph.timeline(U, h, "works_at"),
    "graph neighbourhood": lambda e, h, r: e.graph.neighbourhood(U, [r["entity"], h]),
    "graph mentions": lambda e, h, r: e.graph.mentions(U, [h]),
    "graph entities_of": lambda e, h, r: e.graph.entities_of(U, "semantic", [r["item"], h]),
    "graph stats": lambda e, h, r: e.graph.stats(h),
    "graph forget id": lambda e, h, r: e.graph.forget(U, [r["relation"], h], reason="r", mode="hard"),
    "graph forget user": lambda e, h, r: e.graph.forget(h, [r["relation"]], reason="r", mode="hard"),
    "forget kind graph id": lambda e, h, r: e.forgetting.forget(U, "graph", [r["entity"], h], reason="r", mode="hard"),
}


# Optional listing filters where an empty string, like None, means "no filter" (a read of everything, by design).
EMPTY_MEANS_ALL = {"list_sessions", "list_episodes session"}


@pytest.mark.parametrize("entry", list(ID_CALLS))
def test_a_hostile_id_is_refused_with_a_clear_error_and_nothing_is_written(store, entry):
    engine, real = store
    for hostile in HOSTILE_IDS:
        if hostile == "" and entry in EMPTY_MEANS_ALL:
            continue
        err = refused(engine, lambda h=hostile: ID_CALLS[entry](engine, h, real))
        assert isinstance(err, InvalidInput), (entry, hostile)


# Every entry point that takes free text.
TEXT_CALLS = {
    "message content": lambda e, t, r: e.sessions.add_message(U, S, "user", t),
    "item content": lambda e, t, r: e.items.remember(U, t),
    "memorize text": lambda e, t, r: e.items.memorize(U, t),
    "episode summary": lambda e, t, r: e.episodes.record(U, STEPS, summary=t)
    if str(t).strip()
    else e.episodes.record(U, [{"action": t}]),
    "skill body": lambda e, t, r: e.skills.register(U, "name", t),
    "skill name": lambda e, t, r: e.skills.register(U, t, "body"),
    "search query": lambda e, t, r: e.retrieval.search(U, t),
    "retrieve question": lambda e, t, r: e.retrieval.retrieve(U, t),
    "forget reason": lambda e, t, r: e.forgetting.forget(U, "semantic", [r["item"]], reason=t, mode="hard"),
    "fact subject": lambda e, t, r: e.graph.add_fact(U, t, "likes", "tea"),
    "fact object": lambda e, t, r: e.graph.add_fact(U, "Ada", "likes", t),
    "fact predicate": lambda e, t, r: e.graph.add_fact(U, "Ada", t, "tea"),
    "entity name": lambda e, t, r: e.graph.resolve(U, t),
    "graph forget reason": lambda e, t, r: e.graph.forget(U, [r["relation"]], reason=t, mode="hard"),
}


@pytest.mark.parametrize("entry", list(TEXT_CALLS))
@pytest.mark.parametrize("what", list(BAD_TEXTS))
def test_oversized_empty_or_nul_text_is_refused_and_nothing_is_written(store, entry, what):
    engine, real = store
    refused(engine, lambda: TEXT_CALLS[entry](engine, BAD_TEXTS[what], real))


@pytest.mark.parametrize(
    "call",
    [
        lambda e, r: e.working.update(U, S, {"scratchpad": MEGABYTE}),
        lambda e, r: e.working.set_json(U, S, "scratchpad", '"' + MEGABYTE + '"'),
        lambda e, r: e.feedback.label(U, r["item"], "useful", note=MEGABYTE),
        lambda e, r: e.episodes.record(U, [{"observation": MEGABYTE, "action": "x"}]),
        lambda e, r: e.skills.register(U, "n", "b", description=MEGABYTE),
        lambda e, r: e.admin.ingest_lines(['{"kind": "item", "user_id": "ada", "content": "' + MEGABYTE + '"}']),
    ],
    ids=["slot value", "slot JSON", "label note", "episode observation", "skill description", "ingest"],
)
def test_a_megabyte_anywhere_else_is_refused_too(store, call):
    engine, real = store
    refused(engine, lambda: call(engine, real))


NAN = float("nan")


@pytest.mark.parametrize(
    "call",
    [
        lambda e, r: e.items.remember(U, "fact", importance=NAN),
        lambda e, r: e.items.remember(U, "fact", importance=float("inf")),
        lambda e, r: e.items.memorize(U, "text", importance=NAN),
        lambda e, r: e.episodes.record(U, STEPS, importance=NAN),
        lambda e, r: e.items.remember_many(
            [{"user_id": U, "content": "ok"}, {"user_id": U, "content": "x", "importance": NAN}]
        ),
        lambda e, r: e.working.update(U, S, {"goals": NAN}),
        lambda e, r: e.working.update(U, S, {"goals": ["fine"], "scratchpad": {"deep": [NAN]}}),
        lambda e, r: e.skills.report_outcome(U, r["skill"], NAN),
        lambda e, r: e.retrieval.retrieve(U, "victim", overrides={"bm25_weight": NAN}),
        lambda e, r: e.feedback.label(U, r["item"], "useful", hop=NAN),
    ],
    ids=[
        "remember",
        "remember inf",
        "memorize",
        "episode",
        "remember_many",
        "slot",
        "nested slot",
        "outcome",
        "retrieval override",
        "hop",
    ],
)
def test_nan_values_are_refused_and_nothing_is_written(store, call):
    engine, real = store
    refused(engine, lambda: call(engine, real))


@pytest.mark.parametrize(
    "call",
    [
        lambda e, r: e.sessions.add_message(U, S, "admin", "hi"),
        lambda e, r: e.forgetting.forget(U, "semantics", [r["item"]], reason="r"),
        lambda e, r: e.forgetting.forget(U, "semantic", [r["item"]], reason="r", mode="shred"),
        lambda e, r: e.retrieval.search(U, "victim", kind="working"),
        lambda e, r: e.skills.register(U, "n", "b", kind="macro"),
        lambda e, r: e.skills.rank(U, kind="macro"),
        lambda e, r: e.feedback.label(U, r["item"], "meh"),
        lambda e, r: e.feedback.report(U),
        lambda e, r: e.sessions.prune(U, "everything", apply=True),
        lambda e, r: e.working.update(U, S, {"goals": 1}, source="root"),
        lambda e, r: e.working.restore(U, S, r["edit"], which="oldest"),
        lambda e, r: e.retrieval.retrieve(U, "victim", overrides={"no_such_setting": 1}),
        lambda e, r: e.retrieval.retrieve(U, "victim", overrides={"store": "/tmp/elsewhere"}),
        lambda e, r: e.retrieval.retrieve(U, "victim", hops=99),
        lambda e, r: e.admin.ingest_lines(['{"kind": "spell", "user_id": "ada"}']),
        lambda e, r: e.forgetting.forget(U, "graphs", [r["relation"]], reason="r"),
        lambda e, r: e.graph.forget(U, [r["relation"]], reason="r", mode="shred"),
        lambda e, r: e.graph.neighbourhood(U, [r["entity"]], depth=99),
        lambda e, r: e.graph.add_fact(U, "Ada", "likes", "tea", confidence=float("nan")),
        lambda e, r: e.graph.relations(U, as_of="yesterday-ish"),
    ],
    ids=[
        "role",
        "forget kind",
        "forget mode",
        "search kind",
        "skill kind",
        "rank kind",
        "label",
        "no feedback ids",
        "prune rule",
        "edit source",
        "restore which",
        "unknown setting",
        "non-retrieval setting",
        "hops",
        "ingest kind",
        "graph forget kind",
        "graph forget mode",
        "graph depth",
        "graph confidence",
        "graph as of",
    ],
)
def test_unknown_kinds_roles_labels_and_modes_are_refused(store, call):
    engine, real = store
    refused(engine, lambda: call(engine, real))


@pytest.mark.parametrize(
    "call",
    [
        lambda e, r: e.items.get(U, "item_not_there"),
        lambda e, r: e.items.get("bo", r["item"]),
        lambda e, r: e.episodes.get(U, r["item"]),
        lambda e, r: e.skills.get(U, r["episode"]),
        lambda e, r: e.sessions.get_session(U, "no-such-session"),
        lambda e, r: e.sessions.messages(U, "no-such-session"),
        lambda e, r: e.skills.report_outcome(U, "skill_not_there", True),
        lambda e, r: e.feedback.label(U, "item_not_there", "useful"),
        lambda e, r: e.traces.get("tr_not_there"),
        lambda e, r: e.traces.get(r["trace"], user_id="bo"),
        lambda e, r: e.traces.delete(r["trace"], user_id="bo"),
        lambda e, r: e.working.restore(U, S, 10**9),
        lambda e, r: e.graph.entity(U, "ent_not_there"),
        lambda e, r: e.graph.entity("bo", r["entity"]),
        lambda e, r: e.graph.relation(U, "rel_not_there"),
        lambda e, r: e.graph.relation(U, r["entity"]),
    ],
    ids=[
        "item",
        "foreign item",
        "item as episode",
        "episode as skill",
        "session",
        "messages",
        "outcome",
        "label",
        "trace",
        "foreign trace",
        "delete foreign trace",
        "edit",
        "entity",
        "foreign entity",
        "relation",
        "entity as relation",
    ],
)
def test_well_formed_but_unknown_ids_are_not_found_and_nothing_is_written(store, call):
    engine, real = store
    refused(engine, lambda: call(engine, real), expected=(NotFound,))


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.items.list_items(U, limit=-1),
        lambda e: e.items.list_items(U, offset=-1),
        lambda e: e.episodes.list_episodes(U, limit="ten"),
        lambda e: e.sessions.list_sessions(U, limit=-1),
        lambda e: e.sessions.messages(U, S, offset=-5),
        lambda e: e.feedback.events(U, limit=-1),
        lambda e: e.forgetting.log(U, limit=0),
        lambda e: e.working.history(U, S, limit="all"),
        lambda e: e.retrieval.search(U, "victim", limit=-1),
        lambda e: e.graph.list_entities(U, limit=-1),
        lambda e: e.graph.relations(U, offset=-1),
        lambda e: e.graph.neighbourhood(U, [], max_relations="many"),
    ],
    ids=[
        "items limit",
        "items offset",
        "episodes limit",
        "sessions limit",
        "messages offset",
        "feedback limit",
        "forget log limit",
        "history limit",
        "search limit",
        "entities limit",
        "relations offset",
        "neighbourhood cap",
    ],
)
def test_bad_limits_and_offsets_are_refused_with_a_clear_error(store, call):
    engine, _ = store
    refused(engine, lambda: call(engine))


def test_the_baseline_memories_survived_every_hostile_call(store):
    engine, real = store
    assert engine.items.get(U, real["item"]).archived_at is None
    assert engine.skills.get(U, real["skill"]).success_count == 1
    assert engine.working.get(U, S)["goals"] == ["stay safe"]
    assert real["item"] in {h.id for h in engine.retrieval.search(U, "The victim fact")}
    assert engine.forgetting.log(U) == []
    assert engine.graph.relation(U, real["relation"]).archived_at is None
    assert engine.graph.stats(U)["relations"] == 1
