"""``memory_consolidate`` and ``memory_maintain`` as an MCP client sees them (issue 30): ``python -m engine --store S
mcp`` as a real subprocess over stdio, llmemory's argument names and answer lines (§8). Through MCP they apply, and
a second call changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.mcp_client import ok
from tests.support.store_snapshot import assert_unchanged, snapshot

pytestmark = pytest.mark.subprocess

USER = "mcp-cycle"
STEPS = [{"observation": "tests red", "action": "read the trace", "result": "found it"}, {"action": "add a guard"}]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp-maintenance") / "store"


def test_the_tools_publish_llmemorys_argument_names(client):
    schemas = {t.name: t.input_schema for t in client.tools()}
    assert set(schemas["memory_consolidate"]["properties"]) == {"user_id", "session_id", "clear_session"}
    assert set(schemas["memory_maintain"]["properties"]) == {
        "user_id",
        "reflect",
        "mine_skills",
        "expire",
        "reflection_window",
        "mining_window",
    }
    assert schemas["memory_maintain"]["required"] == ["user_id"]


def test_consolidate_turns_the_sessions_messages_into_memories_that_name_them_once(client, reader):
    ok(client, "memory_add_message", user_id=USER, session_id="chat", role="user", content="I teach maths in Porto.")
    ok(client, "memory_add_message", user_id=USER, session_id="chat", role="assistant", content="Noted: Porto.")

    text = ok(client, "memory_consolidate", user_id=USER, session_id="chat")

    assert text.startswith("Consolidated 2 messages from session 'chat' into long-term memory")
    items = {i.content: i for i in reader.items.list_items(USER).rows}
    assert items["I teach maths in Porto."].provenance["sources"] == [{"type": "message", "id": "chat#1"}]
    run_id = re.search(r"run (run_\w+)", text)[1]
    assert {e.actor for e in reader.maintenance.log(USER, run_id=run_id)} == {"mcp"}
    before = snapshot(reader)
    assert ok(client, "memory_consolidate", user_id=USER, session_id="chat") == (
        "No messages to consolidate in session 'chat'."
    )
    assert_unchanged(before, reader, "a second consolidate")


def test_consolidate_with_clear_session_empties_the_session(client, reader):
    ok(client, "memory_add_message", user_id=USER, session_id="tmp", role="user", content="My bike is blue.")
    text = ok(client, "memory_consolidate", user_id=USER, session_id="tmp", clear_session=True)
    assert text.startswith("Consolidated 1 messages") and text.endswith("Session cleared.")
    assert "tmp" not in {s.session_id for s in reader.sessions.list_sessions(USER).rows}


def test_maintain_answers_llmemorys_lines_and_a_second_call_changes_nothing(client, reader):
    for _ in range(2):
        ok(client, "memory_episode_record", user_id=USER, steps=STEPS, outcome="success")

    text = ok(client, "memory_maintain", user_id=USER, mine_skills=True)

    lines = text.splitlines()
    assert lines[:4] == [
        f"Cognitive pass for {USER}:",
        "insights: 2",
        "skills mined: 1",
        "expired: episodic=0 procedural=0",
    ]
    assert any(line.startswith("- [mine_skills] register skill read_the_trace_then_add_a_guard") for line in lines)
    assert reader.skills.rank(USER, None, None, 10)[0].skill.name == "read_the_trace_then_add_a_guard"
    before = snapshot(reader)
    again = ok(client, "memory_maintain", user_id=USER, mine_skills=True)
    assert again == f"Cognitive pass for {USER}:\ninsights: 0\nskills mined: 0\nexpired: episodic=0 procedural=0"
    assert_unchanged(before, reader, "a second maintain")


def test_maintain_refuses_bad_arguments_by_name_and_writes_nothing(client, reader):
    before = snapshot(reader)
    for args, name in (
        ({"user_id": USER, "reflection_window": 0}, "reflection_window"),
        ({"user_id": USER, "mining_window": "20"}, "mining_window"),
        ({"user_id": USER, "reflect": 1}, "reflect"),
        ({"user_id": "u'; DROP TABLE items; --"}, "user id"),
        ({"user_id": USER, "window": 5}, "window"),
    ):
        result = client.call("memory_maintain", args)
        assert result.is_error and name in result.text and "Traceback" not in result.text, (args, result.text)
    result = client.call("memory_consolidate", {"user_id": USER, "session_id": "../etc"})
    assert result.is_error and "session id" in result.text
    assert_unchanged(before, reader, "refused maintenance calls")
