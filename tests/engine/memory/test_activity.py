"""Activity per day and kind, and episode outcome counts: the aggregates the Overview and Episodes pages draw."""

from __future__ import annotations

from datetime import date

import pytest

from engine import InvalidInput

pytestmark = pytest.mark.both_stores


def by_key(rows):
    return {(r["day"], r["kind"]): r["count"] for r in rows}


def test_an_empty_store_has_no_activity(empty_engine):
    assert empty_engine.admin.activity() == []


def test_activity_counts_each_kind_per_utc_day_and_per_user(empty_engine):
    e = empty_engine
    e.sessions.add_message("ann", "s1", "user", "hello", created_at="2026-03-01T23:30:00+00:00")
    e.sessions.add_message("ann", "s1", "assistant", "hi", created_at="2026-03-01T23:59:59+00:00")
    e.sessions.add_message("ann", "s1", "user", "late", created_at="2026-03-02T00:00:01+00:00")
    e.sessions.add_message("bob", "s9", "user", "other user", created_at="2026-03-01T10:00:00+00:00")
    item = e.items.remember("ann", "Ann likes tea.", created_at="2026-03-02T08:00:00+02:00")  # 06:00 UTC
    e.forgetting.forget("ann", "semantic", [item.id], reason="test")
    counts = by_key(e.admin.activity("ann"))
    assert counts[(date(2026, 3, 1), "messages")] == 2
    assert counts[(date(2026, 3, 2), "messages")] == 1
    assert counts[(date(2026, 3, 2), "semantic items")] == 1, "archived items still count on the day written"
    assert sum(v for (_, kind), v in counts.items() if kind == "forget actions") == 1
    assert by_key(e.admin.activity())[(date(2026, 3, 1), "messages")] == 3, "all users together"
    rows = e.admin.activity("ann")
    assert rows == sorted(rows, key=lambda r: (r["day"], r["kind"]))


def test_activity_can_be_limited_to_a_time_window(empty_engine):
    e = empty_engine
    for day in ("2026-01-05", "2026-02-05", "2026-03-05"):
        e.sessions.add_message("ann", "s1", "user", f"on {day}", created_at=f"{day}T12:00:00+00:00")
    days = [r["day"] for r in e.admin.activity("ann", since="2026-02-01", until="2026-02-28T23:59:59+00:00")]
    assert days == [date(2026, 2, 5)]


@pytest.mark.parametrize("bad", ["ann' OR 1=1 --", "../x", "a\x00b", ""])
def test_a_hostile_user_id_is_refused(empty_engine, bad):
    with pytest.raises(InvalidInput):
        empty_engine.admin.activity(bad)
    with pytest.raises(InvalidInput):
        empty_engine.admin.episode_outcomes(bad)


def test_a_malformed_time_is_refused(empty_engine):
    with pytest.raises(InvalidInput):
        empty_engine.admin.activity("ann", since="last tuesday")


def test_episode_outcomes_count_active_episodes_most_frequent_first(empty_engine):
    e = empty_engine
    step = [{"observation": "o", "action": "a", "result": "r"}]
    for outcome in ("success", "failure", "success", None):
        e.episodes.record("ann", step, outcome=outcome)
    gone = e.episodes.record("ann", step, outcome="failure")
    e.forgetting.forget("ann", "episodic", [gone.id], reason="test")
    assert list(e.admin.episode_outcomes("ann").items()) == [("success", 2), ("", 1), ("failure", 1)]
    assert e.admin.episode_outcomes("nobody") == {}
