"""The MCP server as an MCP client sees it: ``python -m engine --store S mcp`` started as a real subprocess over stdio.
Every tool answers valid input with what it did, and refuses bad input (hostile ids, missing fields, unknown kinds)
with a tool error whose text says why, never a traceback, writing nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.mcp_client import SyncMcp, ok, refused
from tests.support.store_snapshot import assert_unchanged, snapshot

pytestmark = pytest.mark.subprocess

USER = "mcp-user"
TOOLS = {
    "memory_add_message",
    "memory_save",
    "memory_search",
    "memory_retrieve",
    "memory_feedback",
    "memory_working_get",
    "memory_working_set",
    "memory_episode_record",
    "memory_episodes",
    "memory_skill_register",
    "memory_skill_report",
    "memory_skills",
    "memory_forget",
    "memory_reflect",
    "memory_stats",
    "memory_consolidate",
    "memory_maintain",
    "memory_timeline",
    "memory_timeline_context",
    "memory_mine_skills",
    "memory_info",
    "memory_graph_entities",
    "memory_graph_relations",
    "memory_graph_traverse",
    "memory_graph_timeline",
}
HOSTILE_IDS = ["../../etc/passwd", "u'; DROP TABLE items; --", "nul\x00byte", "", "x" * 300]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp-stdio") / "store"


def test_lists_every_tool_with_a_description_and_an_input_schema(client):
    tools = {t.name: t for t in client.tools()}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
    assert "user_id" in tools["memory_retrieve"].input_schema["required"]
    assert tools["memory_add_message"].input_schema["properties"]["role"]["enum"] == [
        "user",
        "assistant",
        "system",
        "tool",
        "tool_result",
    ]


def test_retrieve_runs_under_a_named_preset_and_refuses_an_unknown_one(client, reader):
    from typing import get_args

    from engine import PRESETS
    from engine.mcp.server import Preset

    assert sorted(get_args(Preset)) == sorted(PRESETS)  # the schema's names are engine/presets.py's
    schema = {t.name: t for t in client.tools()}["memory_retrieve"].input_schema["properties"]["preset"]
    assert "deep" in str(schema) and "llmemory" in str(schema)
    ok(client, "memory_save", user_id=USER, content="Ada keeps the lapsang in the blue tin. It is from Fujian.")
    result = client.call("memory_retrieve", {"user_id": USER, "query": "Where is the lapsang kept?", "preset": "deep"})
    assert not result.is_error, result.text
    trace = reader.traces.get(result.structured["trace_id"])
    assert trace.settings.preset == "deep" and trace.settings.retrieval.memory_keys == "sentences"
    # hops given in the call win over the preset's 2
    one = client.call(
        "memory_retrieve", {"user_id": USER, "query": "Where is the lapsang?", "preset": "deep", "hops": 1}
    )
    assert reader.traces.get(one.structured["trace_id"]).settings.retrieval.hops == 1
    before = reader.traces.list_traces(USER, limit=1000).total
    text = refused(client, "memory_retrieve", user_id=USER, query="tea", preset="fast'; DROP TABLE traces; --")
    assert "preset" in text
    assert reader.traces.list_traces(USER, limit=1000).total == before  # nothing stored


def test_add_message_creates_the_session_the_dashboard_then_lists(client, reader):
    text = ok(
        client,
        "memory_add_message",
        user_id=USER,
        session_id="chat-1",
        role="user",
        content="I moved to Lisbon last spring.",
    )
    assert text.startswith("Message added to session 'chat-1'")
    rows = reader.sessions.messages(USER, "chat-1").rows
    assert [(m.role, m.content) for m in rows] == [("user", "I moved to Lisbon last spring.")]


def test_save_then_search_and_retrieve_find_the_fact_and_return_a_stored_trace(client, reader):
    text = ok(
        client,
        "memory_save",
        user_id=USER,
        content="Ada's favourite tea is smoked lapsang souchong.",
        category="preferences",
    )
    item_id = re.search(r"Memory saved: (\S+)", text).group(1)
    found = ok(client, "memory_search", user_id=USER, query="lapsang tea", kind="semantic")
    assert found.startswith("Found ") and item_id in found
    result = client.call("memory_retrieve", {"user_id": USER, "query": "Which tea does Ada like?"})
    assert not result.is_error, result.text
    data = result.structured
    assert "lapsang" in data["context"] and item_id in data["memory_ids"]
    assert reader.traces.get(data["trace_id"]).question == "Which tea does Ada like?"
    fb = ok(client, "memory_feedback", user_id=USER, useful=[item_id], trace_id=data["trace_id"])
    assert fb == "Feedback recorded: 1 useful, 0 harmful."
    assert reader.feedback.net(USER, [item_id]) == {item_id: 1}
    ok(client, "memory_feedback", user_id=USER, useful=[item_id], trace_id=data["trace_id"])  # reported again
    assert reader.feedback.net(USER, [item_id]) == {item_id: 1}  # one label per labeller, trace and memory
    assert {e.labeller for e in reader.feedback.events(USER, item_id=item_id)} == {"mcp"}


def test_save_keeps_the_text_a_fact_was_said_after(client, reader):
    text = ok(
        client,
        "memory_save",
        user_id=USER,
        content="Yes, twice: in 2019 and last May.",
        preceding_text="Have you ever been to Porto?",
    )
    item_id = re.search(r"Memory saved: (\S+)", text).group(1)
    assert reader.items.get(USER, item_id).preceding_text == "Have you ever been to Porto?"


def test_search_with_nothing_stored_says_so(client):
    assert (
        ok(client, "memory_search", user_id="nobody-here", query="anything") == "No memories found matching the query."
    )


def test_working_memory_set_and_get_round_trip_and_null_removes_a_slot(client, reader):
    ok(
        client,
        "memory_working_set",
        user_id=USER,
        session_id="chat-1",
        slots={"current_task": "book a flight", "budget": {"eur": 300}},
    )
    assert reader.working.get(USER, "chat-1")["budget"] == {"eur": 300}
    reader.working.update(USER, "chat-1", {"current_task": "book a train"}, source="ui")  # a dashboard edit
    got = ok(client, "memory_working_get", user_id=USER, session_id="chat-1")
    assert '"current_task": "book a train"' in got
    ok(client, "memory_working_set", user_id=USER, session_id="chat-1", slots={"budget": None})
    assert "budget" not in reader.working.get(USER, "chat-1")


def test_episode_record_and_listing(client, reader):
    text = ok(
        client,
        "memory_episode_record",
        user_id=USER,
        outcome="success",
        summary="Booked the train",
        steps=[
            {"observation": "prices up", "action": "compare trains", "result": "train is cheaper"},
            {"action": "book the train", "result": "booked"},
        ],
    )
    ep_id = re.search(r"Episode recorded: (\S+) \(2 steps\)", text).group(1)
    assert reader.episodes.get(USER, ep_id).steps[0].action == "compare trains"
    listing = ok(client, "memory_episodes", user_id=USER)
    assert f"[{ep_id}] (importance: " in listing and "outcome: success" in listing
    assert ok(client, "memory_episodes", user_id=USER, outcome="no-such-outcome") == "No episodes found."


def test_episode_record_refuses_missing_steps_and_unknown_step_fields(client):
    assert "steps" in refused(client, "memory_episode_record", user_id=USER)
    text = refused(client, "memory_episode_record", user_id=USER, steps=[{"action": "a", "evil": "b"}])
    assert "evil" in text


def test_skills_are_registered_reported_and_ranked_one_line_each(client):
    good = re.search(
        r"Skill registered: (\S+) \(plan-trip v1\)",
        ok(
            client,
            "memory_skill_register",
            user_id=USER,
            name="plan-trip",
            body="List options, compare cost and time, book.",
        ),
    ).group(1)
    bad = re.search(
        r"Skill registered: (\S+)",
        ok(client, "memory_skill_register", user_id=USER, name="guess-trip", body="Pick one.", kind="template"),
    ).group(1)
    for success in (True, True, False):
        ok(client, "memory_skill_report", user_id=USER, skill_id=good, success=success)
    report = ok(client, "memory_skill_report", user_id=USER, skill_id=bad, success=False)
    assert report == f"Outcome recorded for guess-trip ({bad}): success 0 / failure 1 (rate 0.00)"
    lines = ok(client, "memory_skills", user_id=USER).splitlines()
    assert lines == [
        f"[{good}] plan-trip v1 (prompt) — success rate 0.67 (2/3)",
        f"[{bad}] guess-trip v1 (template) — success rate 0.00 (0/1)",
    ]


def test_skill_tools_refuse_unknown_kinds_and_unknown_skills(client):
    assert "kind" in refused(client, "memory_skill_register", user_id=USER, name="x", body="y", kind="spell")
    assert "NotFound" in refused(client, "memory_skill_report", user_id=USER, skill_id="skill_missing", success=True)
    assert "success" in refused(client, "memory_skill_report", user_id=USER, skill_id="skill_missing")


def test_forget_archives_with_a_reason_and_retrieval_no_longer_returns_it(client, reader):
    item_id = re.search(
        r"Memory saved: (\S+)",
        ok(client, "memory_save", user_id=USER, content="The spare key is under the blue flowerpot."),
    ).group(1)
    assert "reason" in refused(client, "memory_forget", user_id=USER, kind="semantic", ids=[item_id])
    assert "kind" in refused(client, "memory_forget", user_id=USER, kind="dreams", ids=[item_id], reason="x")
    assert "mode" in refused(
        client, "memory_forget", user_id=USER, kind="semantic", ids=[item_id], reason="x", mode="shred"
    )
    text = ok(
        client,
        "memory_forget",
        user_id=USER,
        kind="semantic",
        ids=[item_id, "item_unknown"],
        reason="user asked",
        mode="soft",
    )
    assert text.startswith(f"Forgot 1 entries from semantic memory for user {USER} (soft).")
    assert "item_unknown" in text
    assert reader.forgetting.log(USER)[0].reason == "user asked"
    trace = client.call("memory_retrieve", {"user_id": USER, "query": "Where is the spare key?"}).structured
    assert item_id not in trace["memory_ids"]


def test_reflect_stores_insights_from_recent_episodes(client, reader):
    text = ok(client, "memory_reflect", user_id=USER, window=5)
    assert text.startswith("Reflection (")
    n = int(re.search(r"(\d+) insight", text).group(1))
    assert len(reader.items.list_items(USER, category="insights").rows) == n
    assert ok(client, "memory_reflect", user_id="no-episodes-user") == "Reflection (none (no episodes)): 0 insight(s)."


def test_stats_counts_the_store_and_one_user_with_their_graph(client, reader):
    whole = ok(client, "memory_stats")
    assert "Embedder: all-MiniLM-L6-v2" in whole and "Users: " in whole
    graph = reader.graph.stats()
    assert f"Graph: entities: {graph['entities']}; relations valid now: {graph['relations']};" in whole
    mine = ok(client, "memory_stats", user_id=USER)
    assert mine.startswith(f"User {USER}: sessions: ") and "messages: " in mine
    assert f"entities: {reader.graph.stats(USER)['entities']}, relations: " in mine


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_hostile_user_ids_are_refused_by_every_writing_tool_and_nothing_is_written(client, reader, bad):
    before = reader.admin.stats()
    calls = [
        ("memory_add_message", {"role": "user", "content": "hi"}),
        ("memory_save", {"content": "a fact"}),
        ("memory_working_set", {"slots": {"scratchpad": "x"}}),
        ("memory_episode_record", {"steps": [{"action": "a"}]}),
        ("memory_skill_register", {"name": "s", "body": "b"}),
        ("memory_retrieve", {"query": "q"}),
    ]
    for tool, args in calls:
        text = refused(client, tool, user_id=bad, **args)
        assert "InvalidInput: invalid user id" in text or "must be" in text, text
    after = reader.admin.stats()
    assert (after.messages, after.items, after.episodes, after.skills, after.traces, after.working_slots) == (
        before.messages,
        before.items,
        before.episodes,
        before.skills,
        before.traces,
        before.working_slots,
    )


def test_hostile_session_and_memory_ids_are_refused(client):
    assert "invalid session id" in refused(client, "memory_working_get", user_id=USER, session_id="../x")
    assert "invalid" in refused(client, "memory_feedback", user_id=USER, useful=["a'; DROP TABLE feedback"])
    assert "invalid" in refused(client, "memory_forget", user_id=USER, kind="semantic", ids=["../../x"], reason="r")
    assert "invalid trace id" in refused(client, "memory_feedback", user_id=USER, useful=["item_x"], trace_id="t'; --")
    assert "InvalidInput" in refused(client, "memory_working_set", user_id=USER, slots={"bad\x00slot": 1})


def test_missing_fields_wrong_types_and_unknown_values_are_schema_errors(client):
    assert "content" in refused(client, "memory_add_message", user_id=USER, role="user")
    assert "role" in refused(client, "memory_add_message", user_id=USER, role="wizard", content="hi")
    assert "query" in refused(client, "memory_retrieve", user_id=USER)
    assert "kind" in refused(client, "memory_search", user_id=USER, query="q", kind="everything")
    assert "slots" in refused(client, "memory_working_set", user_id=USER, slots="not an object")
    assert "at least one" in refused(client, "memory_feedback", user_id=USER)


def test_oversized_and_blank_text_and_bad_numbers_are_refused(client):
    assert "InvalidInput" in refused(client, "memory_save", user_id=USER, content="x" * 1_000_000)
    assert "InvalidInput" in refused(client, "memory_save", user_id=USER, content="   ")
    assert "InvalidInput" in refused(client, "memory_search", user_id=USER, query="q", max_results=0)
    assert "InvalidInput" in refused(client, "memory_save", user_id=USER, content="fact", importance=7.5)


def test_an_unknown_tool_is_a_tool_error(client):
    assert "memory_teleport" in refused(client, "memory_teleport", user_id=USER)


def valid_arguments(client: SyncMcp) -> dict[str, dict]:
    """For every tool, arguments it accepts (an item and a skill are stored first so feedback and reports have
    something to name)."""
    item_id = re.search(r"Memory saved: (\S+)", ok(client, "memory_save", user_id=USER, content="Ada likes oolong."))[1]
    skill = ok(client, "memory_skill_register", user_id=USER, name="steep-oolong", body="3 minutes at 90 C")
    skill_id = re.search(r"Skill registered: (\S+)", skill)[1]
    return {
        "memory_add_message": {"user_id": USER, "role": "user", "content": "hi"},
        "memory_save": {"user_id": USER, "content": "Ada drinks oolong on Sundays."},
        "memory_search": {"user_id": USER, "query": "oolong"},
        "memory_retrieve": {"user_id": USER, "query": "What does Ada drink?"},
        "memory_feedback": {"user_id": USER, "useful": [item_id]},
        "memory_working_get": {"user_id": USER},
        "memory_working_set": {"user_id": USER, "slots": {"kettle": "on"}},
        "memory_episode_record": {"user_id": USER, "steps": [{"action": "boil water"}]},
        "memory_episodes": {"user_id": USER},
        "memory_skill_register": {"user_id": USER, "name": "steep-oolong", "body": "4 minutes"},
        "memory_skill_report": {"user_id": USER, "skill_id": skill_id, "success": True},
        "memory_skills": {"user_id": USER},
        "memory_forget": {"user_id": USER, "kind": "semantic", "ids": [item_id], "reason": "test"},
        "memory_reflect": {"user_id": USER},
        "memory_stats": {},
        "memory_consolidate": {"user_id": USER, "session_id": "no-such-session"},
        "memory_maintain": {"user_id": USER, "reflect": False, "expire": False},
        "memory_timeline": {"user_id": USER},
        "memory_timeline_context": {"user_id": USER, "timestamp": "2020-01-01"},
        "memory_mine_skills": {"user_id": USER},
        "memory_info": {},
        "memory_graph_entities": {"user_id": USER},
        "memory_graph_relations": {"user_id": USER, "entity": "Ada"},
        "memory_graph_traverse": {"user_id": USER, "entity": "Ada"},
        "memory_graph_timeline": {"user_id": USER, "entity": "Ada", "predicate": "likes"},
    }


def test_every_tool_refuses_an_unknown_argument_by_name_and_writes_nothing(client, reader):
    """The library's argument model ignored names it did not know, so a misspelt ``importanc`` or an invented
    ``mode`` silently fell back to the default and the call went ahead. Now each tool refuses such a call, naming the
    argument, and its published schema says ``additionalProperties: false``."""
    schemas = {t.name: t.input_schema for t in client.tools()}
    reader.graph.add_fact(USER, "Ada", "named_by", "this test")  # an entity for the graph tools to name
    args = valid_arguments(client)
    assert set(args) == TOOLS
    before = snapshot(reader)
    for tool, given in args.items():
        assert schemas[tool].get("additionalProperties") is False, tool
        for extra in ({"bogus_arg": 1}, {"User_Id": USER}, {"importanc": 0.9}):
            text = refused(client, tool, **given, **extra)
            name = next(iter(extra))
            assert name in text and "Extra inputs are not permitted" in text, (tool, text)
    assert_unchanged(before, reader, "a call with an unknown argument")
    for tool, given in args.items():  # the same arguments without the stranger are accepted
        ok(client, tool, **given)
