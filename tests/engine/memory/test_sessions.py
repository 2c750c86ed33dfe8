"""Short-term memory: sessions and messages, and the lifecycle pruning rules (memory-model.md §2, llmemory §1.6)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from engine import ROLES, InvalidInput, MemoryEngine, NotFound, Settings
from tests.support.storecheck import row_counts, snapshot

pytestmark = pytest.mark.both_stores

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def ago(**delta) -> datetime:
    return NOW - timedelta(**delta)


def add_session(engine: MemoryEngine, user: str, session: str, last: datetime, messages: int = 1) -> None:
    """A session whose last message (and so its last activity) is at ``last``."""
    for n in range(messages):
        engine.sessions.add_message(
            user, session, "user", f"message {n} of {session}", created_at=last - timedelta(seconds=messages - 1 - n)
        )


def add_untimed_session(engine: MemoryEngine, user: str, session: str) -> None:
    """A session row without timestamps, as llmemory stores without last_activity_at have. The API always stamps
    sessions, so the row is written with the engine's own connection."""
    with engine._b.db.write() as conn:
        conn.execute("INSERT INTO sessions VALUES (?, ?, NULL, NULL)", [user, session])


def session_ids(engine: MemoryEngine, user: str) -> set[str]:
    return {s.session_id for s in engine.sessions.list_sessions(user, limit=1000).rows}


# -- messages --------------------------------------------------------------------------------------------------------


def test_messages_get_consecutive_seq_numbers_in_the_order_they_were_added(empty_engine):
    for n, role in enumerate(["system", "user", "assistant", "tool", "tool_result", "user"]):
        empty_engine.sessions.add_message("u1", "s1", role, f"text {n}")
    page = empty_engine.sessions.messages("u1", "s1")
    assert [m.seq for m in page.rows] == [1, 2, 3, 4, 5, 6]
    assert [m.content for m in page.rows] == [f"text {n}" for n in range(6)]
    assert [m.role for m in page.rows] == ["system", "user", "assistant", "tool", "tool_result", "user"]
    assert page.total == 6


def test_every_documented_role_is_accepted():
    assert ROLES == ("user", "assistant", "system", "tool", "tool_result")


@pytest.mark.parametrize("role", ["admin", "User", "", "bot", "tool-result", None])
def test_an_unknown_role_is_refused_and_nothing_is_written(empty_engine, role):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput, match="role"):
        empty_engine.sessions.add_message("u1", "s1", role, "hello")
    assert snapshot(empty_engine) == before
    with pytest.raises(NotFound):
        empty_engine.sessions.get_session("u1", "s1")


def test_message_tokens_are_llmemorys_estimate_of_utf8_bytes_over_four_rounded_up(empty_engine):
    # role "user" is 4 bytes; "hello there" 11 bytes -> ceil(15/4) = 4
    assert empty_engine.sessions.add_message("u1", "s1", "user", "hello there").tokens == 4
    # role "assistant" 9 bytes; "€uro" is 3 + 3 = 6 bytes -> ceil(15/4) = 4
    assert empty_engine.sessions.add_message("u1", "s1", "assistant", "€uro").tokens == 4
    # role "tool_result" 11 bytes; 1000 x "é" (2 bytes each) -> ceil(2011/4) = 503
    assert empty_engine.sessions.add_message("u1", "s1", "tool_result", "é" * 1000).tokens == math.ceil(2011 / 4)
    info = empty_engine.sessions.get_session("u1", "s1")
    assert info.message_count == 3
    assert info.token_count == 4 + 4 + 503


def test_a_session_is_created_by_its_first_message_and_tracks_first_and_last_activity(empty_engine):
    empty_engine.sessions.add_message("u1", "s1", "user", "first", created_at=ago(hours=3))
    empty_engine.sessions.add_message("u1", "s1", "assistant", "second", created_at=ago(hours=1))
    info = empty_engine.sessions.get_session("u1", "s1")
    assert info.created_at == ago(hours=3)
    assert info.last_activity_at == ago(hours=1)


def test_messages_paginate_in_the_database_with_the_total(empty_engine):
    for n in range(7):
        empty_engine.sessions.add_message("u1", "s1", "user", f"m{n}")
    page = empty_engine.sessions.messages("u1", "s1", limit=3, offset=3)
    assert [m.content for m in page.rows] == ["m3", "m4", "m5"]
    assert (page.total, page.limit, page.offset) == (7, 3, 3)


def test_messages_of_an_unknown_session_are_not_found(empty_engine):
    with pytest.raises(NotFound):
        empty_engine.sessions.messages("u1", "nope")


def test_sessions_are_scoped_by_user(empty_engine):
    empty_engine.sessions.add_message("alice", "shared-id", "user", "alice's words")
    empty_engine.sessions.add_message("bob", "shared-id", "user", "bob's words")
    assert [m.content for m in empty_engine.sessions.messages("alice", "shared-id").rows] == ["alice's words"]
    assert [m.content for m in empty_engine.sessions.messages("bob", "shared-id").rows] == ["bob's words"]
    assert empty_engine.sessions.users() == ["alice", "bob"]


# -- listing sessions ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def listed(tmp_path_factory, embedder) -> MemoryEngine:
    """Three users, sessions spread over days, for the listing tests (read only)."""
    path = tmp_path_factory.mktemp("sessions") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    for day in range(6):
        engine.sessions.add_message(
            "ada", f"ada-{day}", "user", f"day {day}: we discussed the refund flow", created_at=ago(days=day)
        )
    engine.sessions.add_message("ada", "ada-kyoto", "user", "Book a ryokan in Kyoto", created_at=ago(days=10))
    engine.sessions.add_message("bo", "bo-1", "user", "Kyoto temples for a rainy day", created_at=ago(days=2))
    engine.sessions.add_message("cy", "cy-1", "user", "100% sure: use_the_underscore", created_at=ago(days=1))
    return engine


def test_sessions_list_newest_first_with_message_and_token_counts(listed):
    page = listed.sessions.list_sessions("ada")
    assert [s.session_id for s in page.rows] == [f"ada-{d}" for d in range(6)] + ["ada-kyoto"]
    assert page.total == 7
    assert all(s.message_count == 1 and s.token_count > 0 for s in page.rows)


def test_sessions_paginate_in_the_database_and_report_the_full_total(listed):
    first = listed.sessions.list_sessions("ada", limit=3, offset=0)
    second = listed.sessions.list_sessions("ada", limit=3, offset=3)
    last = listed.sessions.list_sessions("ada", limit=3, offset=6)
    assert first.total == second.total == last.total == 7
    ids = [s.session_id for p in (first, second, last) for s in p.rows]
    assert ids == [s.session_id for s in listed.sessions.list_sessions("ada").rows]
    assert len(last.rows) == 1


def test_session_search_matches_message_text_across_users_unless_a_user_is_given(listed):
    assert {s.session_id for s in listed.sessions.list_sessions(search="kyoto").rows} == {"ada-kyoto", "bo-1"}
    assert [s.session_id for s in listed.sessions.list_sessions("bo", search="KYOTO").rows] == ["bo-1"]


def test_listing_sessions_of_a_blank_user_id_is_an_error_not_every_user(listed):
    with pytest.raises(InvalidInput, match="user id"):
        listed.sessions.list_sessions("")
    assert listed.sessions.list_sessions(None).total == listed.sessions.list_sessions().total == 9


def test_session_search_treats_like_wildcards_literally(listed):
    assert [s.session_id for s in listed.sessions.list_sessions(search="100%").rows] == ["cy-1"]
    assert [s.session_id for s in listed.sessions.list_sessions(search="use_the").rows] == ["cy-1"]
    assert listed.sessions.list_sessions(search="%%%").total == 0
    assert listed.sessions.list_sessions(search="us__the").total == 0


def test_session_date_filters_use_last_activity_inclusive(listed):
    page = listed.sessions.list_sessions("ada", since=ago(days=3), until=ago(days=1))
    assert [s.session_id for s in page.rows] == ["ada-1", "ada-2", "ada-3"]
    assert page.total == 3


@pytest.mark.parametrize("limit, offset", [(0, 0), (-1, 0), (10_001, 0), (10, -1), ("10", 0), (True, 0)])
def test_bad_pagination_values_are_refused(listed, limit, offset):
    with pytest.raises(InvalidInput):
        listed.sessions.list_sessions("ada", limit=limit, offset=offset)


# -- lifecycle pruning -----------------------------------------------------------------------------------------------


def test_idle_rule_selects_sessions_inactive_strictly_longer_than_60_minutes(empty_engine):
    add_session(empty_engine, "u", "active", ago(minutes=59))
    add_session(empty_engine, "u", "boundary", ago(minutes=60))
    add_session(empty_engine, "u", "idle", ago(minutes=61))
    add_session(empty_engine, "u", "old", ago(days=3), messages=3)
    add_untimed_session(empty_engine, "u", "untimed")
    plan = empty_engine.sessions.prune("u", "idle", apply=True, now=NOW)
    assert [s.session_id for s in plan.sessions] == ["old", "idle"]
    assert plan.message_count == 4
    assert plan.applied is True
    assert session_ids(empty_engine, "u") == {"active", "boundary", "untimed"}
    with pytest.raises(NotFound):
        empty_engine.sessions.messages("u", "old")


def test_stale_rule_selects_sessions_older_than_30_days_and_never_untimed_ones(empty_engine):
    add_session(empty_engine, "u", "recent", ago(days=29))
    add_session(empty_engine, "u", "boundary", ago(days=30))
    add_session(empty_engine, "u", "stale", ago(days=31))
    add_untimed_session(empty_engine, "u", "untimed")
    plan = empty_engine.sessions.prune("u", "stale", apply=True, now=NOW)
    assert [s.session_id for s in plan.sessions] == ["stale"]
    assert session_ids(empty_engine, "u") == {"recent", "boundary", "untimed"}


def test_a_preview_shows_sessions_and_message_counts_and_deletes_nothing(empty_engine):
    add_session(empty_engine, "u", "idle", ago(hours=2), messages=4)
    before = row_counts(empty_engine)
    plan = empty_engine.sessions.prune("u", "idle", now=NOW)
    assert [s.session_id for s in plan.sessions] == ["idle"]
    assert plan.message_count == 4
    assert plan.applied is False
    assert row_counts(empty_engine) == before


def test_pruning_one_user_leaves_other_users_sessions_alone(empty_engine):
    add_session(empty_engine, "u", "idle", ago(hours=2))
    add_session(empty_engine, "other", "idle", ago(hours=2))
    empty_engine.sessions.prune("u", "idle", apply=True, now=NOW)
    assert session_ids(empty_engine, "other") == {"idle"}
    assert session_ids(empty_engine, "u") == set()


def test_max_rule_evicts_the_oldest_beyond_the_limit_untimed_first(settings, embedder):
    engine = MemoryEngine.open(settings=settings.with_overrides({"session_max_per_user": 3}), embedder=embedder)
    for n in range(1, 5):  # s1 oldest ... s4 newest
        add_session(engine, "u", f"s{n}", ago(days=10 - n))
    add_untimed_session(engine, "u", "untimed")
    add_session(engine, "other", "x", ago(days=100))
    preview = engine.sessions.prune("u", "max", now=NOW)
    assert [s.session_id for s in preview.sessions] == ["untimed", "s1"]
    plan = engine.sessions.prune("u", "max", apply=True, now=NOW)
    assert [s.session_id for s in plan.sessions] == ["untimed", "s1"]
    assert session_ids(engine, "u") == {"s2", "s3", "s4"}
    assert session_ids(engine, "other") == {"x"}
    assert engine.sessions.prune("u", "max", now=NOW).sessions == ()


def test_max_rule_default_is_500_sessions_per_user(empty_engine):
    assert empty_engine.settings.session_max_per_user == 500
    assert empty_engine.settings.session_idle_minutes == 60
    assert empty_engine.settings.session_stale_days == 30
    add_session(empty_engine, "u", "s1", ago(days=400))
    assert empty_engine.sessions.prune("u", "max", now=NOW).sessions == ()


def test_pruning_never_touches_working_memory_feedback_forget_log_or_traces(empty_engine):
    e = empty_engine
    add_session(e, "u", "old", ago(days=40), messages=2)
    e.working.update("u", "old", {"goals": ["ship it"], "notes": {"k": 1}})
    item = e.items.remember("u", "The deploy window is Tuesday at 10:00")
    gone = e.items.remember("u", "An obsolete fact about the old office")
    e.feedback.label("u", item.id, "useful", note="from session old")
    e.forgetting.forget("u", "semantic", [gone.id], reason="obsolete")
    e.retrieval.retrieve("u", "When is the deploy window?", session_id="old", now=NOW)
    keep = ("working_slots", "working_history", "feedback", "forget_log", "traces", "items", "llm_usage")
    before = {t: n for t, n in row_counts(e).items() if t in keep}
    for rule in ("idle", "stale"):
        e.sessions.prune("u", rule, apply=True, now=NOW)
    assert session_ids(e, "u") == set()
    assert {t: n for t, n in row_counts(e).items() if t in keep} == before
    assert e.working.get("u", "old")["goals"] == ["ship it"]
    assert e.traces.list_traces("u").total == 1
    assert e.feedback.net("u", [item.id]) == {item.id: 1}
    assert len(e.forgetting.log("u")) == 1


def test_working_memory_alone_keeps_no_session_for_the_max_rule(settings, embedder):
    engine = MemoryEngine.open(settings=settings.with_overrides({"session_max_per_user": 1}), embedder=embedder)
    engine.working.update("u", "wm-only-1", {"goals": "a"})
    engine.working.update("u", "wm-only-2", {"goals": "b"})
    add_session(engine, "u", "real", ago(days=1))
    assert engine.sessions.prune("u", "max", now=NOW).sessions == ()


@pytest.mark.parametrize("rule", ["all", "IDLE", "", "max; DROP TABLE sessions"])
def test_an_unknown_prune_rule_is_refused(empty_engine, rule):
    add_session(empty_engine, "u", "idle", ago(hours=2))
    with pytest.raises(InvalidInput, match="rule"):
        empty_engine.sessions.prune("u", rule, apply=True, now=NOW)
    assert session_ids(empty_engine, "u") == {"idle"}


def test_a_user_with_only_a_graph_is_a_user(empty_engine):
    empty_engine.graph.add_fact("graph-only", "Ada", "works_at", "Acme")
    assert empty_engine.sessions.users() == ["graph-only"]
