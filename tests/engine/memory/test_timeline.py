"""``engine.timeline`` on both stores: recent facts and messages in one newest-first list, each message at its own
time, forgotten facts left out, the window's total counted; the items around an item (ties on time broken by id) or
the first item at or after a moment; bad values refused before anything is read."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engine import InvalidInput, MemoryEngine, NotFound

pytestmark = pytest.mark.both_stores

U = "tl-user"
NOW = datetime.fromisoformat("2026-06-01T12:00:00+00:00")


def at(hours_ago: float) -> datetime:
    return NOW - timedelta(hours=hours_ago)


def add(engine: MemoryEngine, *rows: tuple[str, float]) -> None:
    engine.items.add([engine.items.prepare(U, f"Fact {i}.", "notes", created_at=at(h), id=i) for i, h in rows])


def test_recent_interleaves_facts_and_messages_newest_first_and_counts_the_window(empty_engine: MemoryEngine):
    add(empty_engine, ("f-1", 1), ("f-5", 5), ("f-30", 30), ("f-gone", 2))
    empty_engine.forgetting.forget(U, "semantic", ["f-gone"], "test", "soft")
    for seq_hours, text in ((50, "old"), (3, "mid"), (0.5, "new")):
        empty_engine.sessions.add_message(U, "s1", "user", text, created_at=at(seq_hours))
    recent = empty_engine.timeline.recent(U, 24, now=NOW)
    assert recent.since == at(24) and recent.total == 4
    shown = [(e.item.id if e.item else e.message.content) for e in recent.entries]
    assert shown == ["new", "f-1", "mid", "f-5"]
    assert [e.at for e in recent.entries] == [at(0.5), at(1), at(3), at(5)]
    two = empty_engine.timeline.recent(U, 24, include_messages=False, limit=1, now=NOW)
    assert [e.item.id for e in two.entries] == ["f-1"] and two.total == 2


def test_recent_puts_a_fact_before_a_message_of_the_same_instant(empty_engine: MemoryEngine):
    add(empty_engine, ("f-same", 1))
    empty_engine.sessions.add_message(U, "s1", "user", "same time", created_at=at(1))
    entries = empty_engine.timeline.recent(U, now=NOW).entries
    assert [e.item is not None for e in entries] == [True, False]


def test_around_an_item_orders_by_time_then_id(empty_engine: MemoryEngine):
    add(empty_engine, ("a", 4), ("b", 3), ("c", 3), ("d", 3), ("e", 1), ("gone", 2))
    empty_engine.forgetting.forget(U, "semantic", ["gone"], "test", "soft")
    around = empty_engine.timeline.around(U, item_id="c", before=2, after=2)
    assert around.target.id == "c" and around.anchor == at(3)
    assert [i.id for i in around.before] == ["a", "b"] and [i.id for i in around.after] == ["d", "e"]
    none = empty_engine.timeline.around(U, item_id="c", before=0, after=0)
    assert (none.before, none.after) == ((), ())


def test_around_a_moment_anchors_on_the_first_item_at_or_after_it(empty_engine: MemoryEngine):
    add(empty_engine, ("a", 4), ("b", 3), ("c", 1))
    around = empty_engine.timeline.around(U, timestamp=at(2).isoformat(), before=5, after=5)
    assert around.target.id == "c" and [i.id for i in around.before] == ["a", "b"] and around.after == ()
    past = empty_engine.timeline.around(U, timestamp=NOW, before=1)
    assert past.target is None and [i.id for i in past.before] == ["c"] and past.after == ()
    assert empty_engine.timeline.around("tl-nobody", timestamp=NOW).before == ()


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda t: t.around(U), "exactly one of item_id and timestamp"),
        (lambda t: t.around(U, item_id="a", timestamp=NOW), "exactly one of item_id and timestamp"),
        (lambda t: t.around(U, item_id="a'; DROP TABLE items; --"), "invalid item id"),
        (lambda t: t.around(U, item_id="a", before=-1), "before must be an integer from 0 to 100"),
        (lambda t: t.around(U, item_id="a", after=True), "after must be an integer"),
        (lambda t: t.around(U, timestamp="not a time"), "not an ISO-8601 time"),
        (lambda t: t.around("../x", timestamp=NOW), "invalid user id"),
        (lambda t: t.recent(U, float("nan")), "hours must be a number"),
        (lambda t: t.recent(U, 0), "hours must be a number"),
        (lambda t: t.recent(U, 10**400), "hours must be a number"),
        (lambda t: t.recent(U, include_messages="yes"), "include_messages must be true or false"),
        (lambda t: t.recent(U, limit=0), "limit must be an integer from 1 to 1,000"),
        (lambda t: t.recent(U, now="0001-01-01"), "now"),
    ],
)
def test_bad_values_are_refused_naming_them(empty_engine: MemoryEngine, call, message):
    with pytest.raises(InvalidInput, match=message):
        call(empty_engine.timeline)


def test_an_unknown_or_forgotten_item_is_not_found(empty_engine: MemoryEngine):
    add(empty_engine, ("gone", 1))
    empty_engine.forgetting.forget(U, "semantic", ["gone"], "test", "soft")
    with pytest.raises(NotFound, match="was forgotten"):
        empty_engine.timeline.around(U, item_id="gone")
    with pytest.raises(NotFound, match="no semantic item 'nope'"):
        empty_engine.timeline.around(U, item_id="nope")


def test_a_century_of_hours_reaches_back_no_further_than_the_earliest_valid_time(empty_engine: MemoryEngine):
    add(empty_engine, ("f", 1))
    recent = empty_engine.timeline.recent(U, 876_000, now="1950-01-01T00:00:00Z")
    assert recent.since.year == 1900 and recent.entries == ()
