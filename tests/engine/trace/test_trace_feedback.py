"""Feedback on traces, end to end: a label made on a trace points back to it, and the next retrieval reflects it
through the feedback factor 1 + 0.5 * clamp(net, -5, 5) / 5."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings
from engine.clock import utcnow

QUESTION = "What does Priya drink in the morning?"
FACTS = [
    "Priya drinks masala chai every morning.",
    "Each morning Priya has a cup of masala chai.",
    "Daniel drinks black coffee in the morning.",
    "The quarterly report is due on Friday.",
    "The dog is called Biscuit.",
    "Our cloud bill doubled in March.",
    "Build QX7781 failed on the linux runner.",
]
USERS = ("fb-label", "fb-harmful", "fb-useful", "fb-weight", "fb-errors", "fb-other")


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder):
    """Every test gets its own user with the same memories, so labels in one test cannot move another's ranks."""
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path_factory.mktemp("feedback")), lock_timeout_s=30),
        embedder=embedder,
    )
    t0 = utcnow()
    engine.items.remember_many(
        [{"user_id": u, "content": text, "created_at": t0 - timedelta(days=1)} for u in USERS for text in FACTS]
    )
    return engine, utcnow() + timedelta(minutes=1)


def retrieve(world, user):
    engine, now = world
    return engine.retrieval.retrieve(user, QUESTION, now=now)


def ranked(trace) -> dict[str, dict]:
    """id -> {rank, final, and the hop-1 candidate's scores}"""
    cands = {c.id: c for c in trace.hops[0].candidates}
    return {r.id: {"rank": r.rank, "final": r.final, **cands[r.id].scores.to_dict()} for r in trace.ranking}


def test_a_label_made_on_a_trace_points_to_the_trace_and_hop(world):
    engine, _ = world
    trace = retrieve(world, "fb-label")
    item = trace.context_ids[0]
    event = engine.feedback.label("fb-label", item, "harmful", trace_id=trace.trace_id, hop=1, note="not what I asked")
    assert (event.item_id, event.label, event.delta) == (item, "harmful", -1)
    assert (event.trace_id, event.hop, event.note) == (trace.trace_id, 1, "not what I asked")
    assert engine.feedback.events("fb-label", trace_id=trace.trace_id) == [event]
    assert engine.feedback.net("fb-label", [item]) == {item: -1}
    events = engine.feedback.report("fb-label", useful=[trace.context_ids[1]], trace_id=trace.trace_id)
    assert [(e.trace_id, e.delta, e.hop) for e in events] == [(trace.trace_id, 1, None)]


def test_harmful_labels_lower_the_memory_in_the_next_retrieval(world):
    engine, _ = world
    user = "fb-harmful"
    before = retrieve(world, user)
    top, second = before.ranking[0].id, before.ranking[1].id
    old = ranked(before)
    assert old[top]["final"] * 0.5 < old[second]["final"], "the two chai facts should score close to each other"
    for n in range(5):  # five labellers: one labeller's label on one trace counts once
        engine.feedback.label(user, top, "harmful", trace_id=before.trace_id, hop=1, labeller=f"reviewer {n}")
    after = ranked(retrieve(world, user))
    assert (after[top]["feedback_net"], after[top]["feedback_factor"]) == (-5, 0.5)
    assert after[top]["final"] == pytest.approx(old[top]["final"] * 0.5)
    assert after[top]["rank"] > old[top]["rank"]
    assert after[second]["rank"] == 1
    assert (after[second]["feedback_net"], after[second]["feedback_factor"]) == (0, 1.0)


def test_useful_labels_raise_the_memory_in_the_next_retrieval(world):
    engine, _ = world
    user = "fb-useful"
    before = retrieve(world, user)
    top, second = before.ranking[0].id, before.ranking[1].id
    old = ranked(before)
    for who in ("ana", "ben"):
        engine.feedback.report(user, useful=[second], trace_id=before.trace_id, labeller=who)
    after = ranked(retrieve(world, user))
    assert (after[second]["feedback_net"], after[second]["feedback_factor"]) == (2, pytest.approx(1.2))
    assert after[second]["final"] == pytest.approx(old[second]["final"] * 1.2)
    assert after[second]["rank"] == 1 and after[top]["rank"] == 2


def test_feedback_weight_0_ignores_labels(world):
    engine, now = world
    user = "fb-weight"
    before = retrieve(world, user)
    item = before.ranking[0].id
    for who in ("ana", "ben", "cy"):
        engine.feedback.report(user, harmful=[item], labeller=who)
    after = ranked(engine.retrieval.retrieve(user, QUESTION, now=now, overrides={"feedback_weight": 0}))
    assert (after[item]["feedback_net"], after[item]["feedback_factor"]) == (-3, 1.0)
    assert after[item]["final"] == pytest.approx(ranked(before)[item]["final"])


def test_feedback_on_an_unknown_memory_or_trace_is_not_found_and_writes_nothing(world):
    engine, now = world
    user = "fb-errors"
    trace = retrieve(world, user)
    item = trace.context_ids[0]
    theirs = engine.retrieval.retrieve("fb-other", QUESTION, now=now)
    other_item = theirs.context_ids[0]
    with pytest.raises(NotFound):
        engine.feedback.label(user, "item_does_not_exist", "useful", trace_id=trace.trace_id)
    with pytest.raises(NotFound):
        engine.feedback.label(user, item, "useful", trace_id="tr_0000000000000000")
    with pytest.raises(NotFound):
        engine.feedback.label(user, item, "useful", trace_id=theirs.trace_id)  # another user's trace
    with pytest.raises(NotFound):
        engine.feedback.label(user, other_item, "useful")  # another user's memory
    with pytest.raises(NotFound):
        engine.feedback.report(user, useful=[item], harmful=["item_does_not_exist"])
    assert engine.feedback.events(user) == []
    assert engine.feedback.net(user, [item]) == {}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": "meh"},
        {"hop": 0},
        {"hop": -1},
        {"hop": True},
        {"hop": "1"},
        {"trace_id": "../../etc/passwd"},
        {"trace_id": "x'; DROP TABLE feedback; --"},
        {"trace_id": "a\x00b"},
        {"item_id": "x' OR '1'='1"},
        {"item_id": ""},
        {"note": "x" * 5000},
    ],
)
def test_bad_labels_are_refused_and_write_nothing(world, kwargs):
    engine, _ = world
    user = "fb-errors"
    args = {"item_id": "placeholder", "label": "useful", **kwargs}
    if args["item_id"] == "placeholder":
        args["item_id"] = engine.items.list_items(user, limit=1).rows[0].id
    with pytest.raises(InvalidInput):
        engine.feedback.label(user, **args)
    assert engine.feedback.events(user) == []


def test_report_feedback_needs_at_least_one_id(world):
    engine, _ = world
    with pytest.raises(InvalidInput):
        engine.feedback.report("fb-errors")
