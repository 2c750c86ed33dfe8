"""Feedback: an event log of useful/harmful labels with ``net`` derived from it (memory-model.md §9)."""

from __future__ import annotations

import pytest

from engine import FeedbackEvent, InvalidInput, MemoryEngine, NotFound, Settings
from tests.support.storecheck import snapshot

U = "ada"


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    """One memory of each kind and a stored retrieval trace; tests label distinct ids so they do not interfere."""
    path = tmp_path_factory.mktemp("feedback") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    items = [engine.items.remember(U, f"Fact number {n} about the refunds service") for n in range(8)]
    episode = engine.episodes.record(U, [{"action": "restart the refunds worker", "result": "queue drained"}])
    skill = engine.skills.register(U, "drain-queue", "restart the worker, watch the queue")
    trace = engine.retrieval.retrieve(U, "How do I drain the refunds queue?")
    return engine, [i.id for i in items], episode.id, skill.id, trace


def test_a_label_is_an_event_with_its_delta_note_and_time(store):
    engine, items, *_ = store
    event = engine.feedback.label(U, items[0], "useful", note="answered the question")
    assert isinstance(event, FeedbackEvent)
    assert (event.user_id, event.item_id, event.label, event.delta, event.note) == (
        U,
        items[0],
        "useful",
        1,
        "answered the question",
    )
    assert (event.trace_id, event.hop) == (None, None)
    assert engine.feedback.label(U, items[0], "harmful").delta == -1
    assert [e.label for e in engine.feedback.events(U, item_id=items[0])] == ["harmful", "useful"]


def test_net_counts_each_labellers_current_label_once_and_ids_without_events_are_absent(store):
    engine, items, *_ = store
    for label in ("useful", "useful", "harmful", "useful"):  # one labeller changing their mind: the last one counts
        engine.feedback.label(U, items[1], label)
    engine.feedback.label(U, items[1], "useful", labeller="grace")  # a second labeller counts on their own
    engine.feedback.label(U, items[2], "harmful")
    assert engine.feedback.net(U, [items[1], items[2], items[3]]) == {items[1]: 2, items[2]: -1}
    assert engine.feedback.net(U, []) == {}
    history = engine.feedback.events(U, item_id=items[1], labeller="api")
    assert [(e.label, e.delta, e.replaced_at is None) for e in history] == [
        ("useful", 1, True),  # the same label twice in a row is one label
        ("harmful", 0, False),
        ("useful", 0, False),
    ]


def test_every_kind_of_memory_can_be_labelled(store):
    engine, _, episode_id, skill_id, _ = store
    engine.feedback.label(U, episode_id, "useful")
    engine.feedback.label(U, skill_id, "harmful")
    assert engine.feedback.net(U, [episode_id, skill_id]) == {episode_id: 1, skill_id: -1}


def test_a_label_made_on_a_trace_points_back_to_the_trace_and_hop(store):
    engine, items, _, _, trace = store
    event = engine.feedback.label(U, items[4], "useful", trace_id=trace.trace_id, hop=1)
    assert (event.trace_id, event.hop) == (trace.trace_id, 1)
    assert [e.item_id for e in engine.feedback.events(U, trace_id=trace.trace_id)] == [items[4]]


def test_report_feedback_records_useful_and_harmful_ids_in_one_call(store):
    engine, items, *_ = store
    events = engine.feedback.report(U, useful=[items[5], items[6]], harmful=[items[7]], note="batch")
    assert [(e.item_id, e.delta) for e in events] == [(items[5], 1), (items[6], 1), (items[7], -1)]
    assert engine.feedback.net(U, items[5:8]) == {items[5]: 1, items[6]: 1, items[7]: -1}


@pytest.mark.parametrize(
    "call",
    [
        lambda e, ids: e.feedback.label(U, "item_never_stored", "useful"),
        lambda e, ids: e.feedback.label("bo", ids[0], "useful"),
        lambda e, ids: e.feedback.report(U, useful=[ids[0]], harmful=["item_never_stored"]),
        lambda e, ids: e.feedback.label(U, ids[0], "useful", trace_id="tr_unknown"),
    ],
)
def test_feedback_on_an_unknown_memory_or_trace_is_not_found_and_nothing_is_written(store, call):
    engine, items, *_ = store
    before = snapshot(engine)
    with pytest.raises(NotFound):
        call(engine, items)
    assert snapshot(engine) == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": "meh"},
        {"label": "USEFUL"},
        {"label": ""},
        {"hop": 0},
        {"hop": "1"},
        {"note": "x" * 2001},
        {"note": "a\x00b"},
        {"trace_id": "' OR '1'='1"},
    ],
)
def test_an_unknown_label_or_bad_field_is_refused(store, kwargs):
    engine, items, *_ = store
    args = {"label": "useful", **kwargs}
    before = snapshot(engine)
    with pytest.raises(InvalidInput):
        engine.feedback.label(U, items[0], **args)
    assert snapshot(engine) == before


def test_report_feedback_without_ids_is_refused(store):
    engine, *_ = store
    with pytest.raises(InvalidInput):
        engine.feedback.report(U)


def test_retract_deletes_that_event_and_the_label_it_replaced_counts_again(store):
    engine, items, episode, skill, trace = store
    before = engine.feedback.net(U, [items[5]]).get(items[5], 0)
    earlier = [e.id for e in engine.feedback.events(U, item_id=items[5])]
    kept = engine.feedback.label(U, items[5], "useful", trace_id=trace.trace_id, hop=1)
    undone = engine.feedback.label(U, items[5], "harmful", trace_id=trace.trace_id, hop=1)
    assert engine.feedback.net(U, [items[5]]) == {items[5]: before - 1}  # harmful replaced useful
    assert engine.feedback.retract(U, undone.id) == undone
    assert engine.feedback.net(U, [items[5]]) == {items[5]: before + 1}  # the useful label it replaced is back
    assert [e.id for e in engine.feedback.events(U, item_id=items[5])] == [kept.id, *earlier]
    with pytest.raises(NotFound):
        engine.feedback.retract(U, undone.id)  # already gone
    with pytest.raises(NotFound):
        engine.feedback.retract("someone-else", kept.id)  # another user's event is not theirs to undo
    for bad in (0, -1, "1", True):
        with pytest.raises(InvalidInput):
            engine.feedback.retract(U, bad)
    assert engine.feedback.net(U, [items[5]]) == {items[5]: before + 1}


def test_memory_texts_of_every_kind_in_one_call(store):
    engine, items, episode, skill, _ = store
    texts = engine.feedback.memory_texts(U, [items[6], episode, skill, "no-such-id"])
    assert texts[items[6]] == "Fact number 6 about the refunds service"
    assert texts[episode] == engine.episodes.get(U, episode).summary
    assert texts[skill] == "drain-queue v1: restart the worker, watch the queue"
    assert "no-such-id" not in texts and engine.feedback.memory_texts(U, []) == {}


def test_events_come_newest_first_by_their_time_not_their_insertion_order(store):
    engine, items, *_ = store
    older = engine.feedback.record(
        [engine.feedback.prepare(U, items[7], "useful", created_at="2020-01-01T00:00:00+00:00")]
    )[0]
    newer = engine.feedback.label(U, items[7], "harmful")
    imported_late_but_old = engine.feedback.record(
        [engine.feedback.prepare(U, items[7], "useful", created_at="2019-06-01T00:00:00+00:00")]
    )[0]
    mine = {newer.id, older.id, imported_late_but_old.id}
    assert [e.id for e in engine.feedback.events(U, item_id=items[7]) if e.id in mine] == [
        newer.id,
        older.id,
        imported_late_but_old.id,
    ]
