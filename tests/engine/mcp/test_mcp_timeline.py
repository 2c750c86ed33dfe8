"""llmemory's timeline, skill-mining and info tools as an MCP client sees them: ``python -m engine --store S mcp`` as a
real subprocess over stdio. ``memory_timeline`` interleaves facts and messages of the last hours, each message at its
own time; ``memory_timeline_context`` shows the items written around one item or moment; ``memory_mine_skills``
proposes (or registers) skills from recent episodes; ``memory_info`` describes exactly the tools the server lists.
Bad input is a tool error naming the problem, and writes nothing."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings
from engine.clock import utcnow
from tests.support.mcp_client import SyncMcp, ok, refused, stdio_server
from tests.support.openai_server import TEST_KEY, FakeOpenAI
from tests.support.store_snapshot import assert_unchanged, snapshot

pytestmark = pytest.mark.subprocess

RECENT = "tl-recent"  # facts and messages around now
MANY = "tl-many"  # 25 facts in the last day
AROUND = "tl-around"  # facts at fixed times, for timeline context
MINER = "tl-miner"  # episodes that repeat an action sequence
T0 = datetime.fromisoformat("2025-03-01T09:00:00+00:00")
LONG = "A very long note about the kettle. " * 10  # 350 characters: cut at 120


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("mcp-timeline") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    now = utcnow()
    items = engine.items
    engine.items.add(
        [
            items.prepare(RECENT, "Ada moved to Lisbon.", "places", created_at=now - timedelta(hours=1), id="r-new"),
            items.prepare(RECENT, "Ada likes oolong.", "preferences", created_at=now - timedelta(hours=3), id="r-old"),
            items.prepare(RECENT, "Ada lived in Porto.", "places", created_at=now - timedelta(hours=30), id="r-out"),
            items.prepare(RECENT, "Forgotten fact.", "places", created_at=now - timedelta(hours=2), id="r-gone"),
        ]
        + [
            items.prepare(MANY, f"Fact {n:02d}.", "notes", created_at=now - timedelta(minutes=30 + n), id=f"m-{n:02d}")
            for n in range(25)
        ]
        + [
            items.prepare(AROUND, f"Event {n}.", "log", created_at=T0 + timedelta(hours=n), id=f"a-{n}")
            for n in range(8)
        ]
        + [items.prepare(AROUND, LONG, "log", created_at=T0 + timedelta(hours=8), id="a-long")]
    )
    engine.forgetting.forget(RECENT, "semantic", ["r-gone"], "test: forgotten facts never show", "soft")
    # One session: its old message is outside the window even though the session was updated two hours ago.
    engine.sessions.add_message(RECENT, "chat-1", "user", "Hello from last week.", created_at=now - timedelta(days=7))
    engine.sessions.add_message(RECENT, "chat-1", "assistant", "Welcome back!", created_at=now - timedelta(hours=2))
    engine.sessions.add_message(RECENT, "chat-2", "user", "Where do I live now?", created_at=now - timedelta(minutes=5))
    for outcome in ("success", "success", "failure"):
        engine.episodes.record(MINER, [{"action": "compare trains"}, {"action": "book the train"}], outcome=outcome)
    engine.close()
    return path


def test_the_new_tools_take_llmemorys_arguments_and_defaults(client):
    schemas = {t.name: t.input_schema for t in client.tools()}
    props = schemas["memory_timeline"]["properties"]
    assert schemas["memory_timeline"]["required"] == ["user_id"]
    assert (props["hours"]["default"], props["include_messages"]["default"]) == (24, True)
    props = schemas["memory_timeline_context"]["properties"]
    assert set(props) == {"user_id", "item_id", "timestamp", "before", "after"}
    assert (props["before"]["default"], props["after"]["default"]) == (5, 5)
    props = schemas["memory_mine_skills"]["properties"]
    assert (props["window"]["default"], props["auto_register"]["default"]) == (20, False)
    assert "outcomes" in props and schemas["memory_info"].get("properties", {}) == {}


def test_timeline_interleaves_facts_and_messages_of_the_window_newest_first(client):
    """Each message at its own time: the week-old message of a session updated two hours ago stays out, and the
    forgotten fact and the 30-hour-old one are not shown."""
    assert ok(client, "memory_timeline", user_id=RECENT).splitlines() == [
        f"Timeline of the last 24 hours for user {RECENT} (newest first):",
        "- [MSG chat-2] [user] Where do I live now?",
        "- [FACT] [places] Ada moved to Lisbon.",
        "- [MSG chat-1] [assistant] Welcome back!",
        "- [FACT] [preferences] Ada likes oolong.",
        "(Showing 4 of 4 entries)",
    ]


def test_timeline_without_messages_and_over_more_hours(client):
    assert ok(client, "memory_timeline", user_id=RECENT, hours=48, include_messages=False).splitlines()[1:] == [
        "- [FACT] [places] Ada moved to Lisbon.",
        "- [FACT] [preferences] Ada likes oolong.",
        "- [FACT] [places] Ada lived in Porto.",
        "(Showing 3 of 3 entries)",
    ]
    half_hour = ok(client, "memory_timeline", user_id=RECENT, hours=0.5)
    assert half_hour.splitlines()[1:] == ["- [MSG chat-2] [user] Where do I live now?", "(Showing 1 of 1 entries)"]


def test_timeline_shows_the_newest_20_and_counts_them_all(client):
    lines = ok(client, "memory_timeline", user_id=MANY).splitlines()
    assert lines[1:21] == [f"- [FACT] [notes] Fact {n:02d}." for n in range(20)]
    assert lines[21:] == ["(Showing 20 of 25 entries)"]


def test_timeline_of_a_user_with_nothing_says_so(client):
    assert ok(client, "memory_timeline", user_id="tl-nobody") == "No memories or messages in the last 24 hours."
    text = ok(client, "memory_timeline", user_id="tl-nobody", include_messages=False, hours=2)
    assert text == "No memories in the last 2 hours."


def test_timeline_context_around_an_item_has_before_target_and_after_in_creation_order(client):
    assert ok(client, "memory_timeline_context", user_id=AROUND, item_id="a-3", before=2, after=1).splitlines() == [
        "Timeline context around item a-3:",
        "BEFORE:",
        "    [2025-03-01 10:00] [log] Event 1.",
        "    [2025-03-01 11:00] [log] Event 2.",
        "TARGET:",
        ">>> [2025-03-01 12:00] [log] Event 3.",
        "AFTER:",
        "    [2025-03-01 13:00] [log] Event 4.",
    ]


def test_timeline_context_defaults_to_five_each_side_and_cuts_content_at_120(client):
    lines = ok(client, "memory_timeline_context", user_id=AROUND, item_id="a-long").splitlines()
    assert lines[1:7] == ["BEFORE:", *(f"    [2025-03-01 {9 + n}:00] [log] Event {n}." for n in range(3, 8))]
    target = lines[8]
    assert target.startswith(">>> [2025-03-01 17:00] [log] A very long note") and target.endswith("…")
    assert len(target) - len(">>> [2025-03-01 17:00] [log] ") == 120
    assert lines[9:] == ["AFTER:", "    (none)"]
    first = ok(client, "memory_timeline_context", user_id=AROUND, item_id="a-0").splitlines()
    assert first[1:5] == ["BEFORE:", "    (none)", "TARGET:", ">>> [2025-03-01 09:00] [log] Event 0."]
    assert len(first[6:]) == 5  # the five after it


def test_timeline_context_at_a_timestamp_anchors_on_the_first_item_at_or_after_it(client):
    lines = ok(client, "memory_timeline_context", user_id=AROUND, timestamp="2025-03-01T11:30:00Z", before=1, after=1)
    assert lines.splitlines() == [
        "Timeline context around 2025-03-01 11:30:",
        "BEFORE:",
        "    [2025-03-01 11:00] [log] Event 2.",
        "TARGET:",
        ">>> [2025-03-01 12:00] [log] Event 3.",
        "AFTER:",
        "    [2025-03-01 13:00] [log] Event 4.",
    ]
    late = ok(client, "memory_timeline_context", user_id=AROUND, timestamp="2030-01-01", before=1).splitlines()
    assert late[:2] == ["Timeline context around 2030-01-01 00:00:", "BEFORE:"]
    assert late[2].startswith("    [2025-03-01 17:00] [log] A very long note")
    assert late[3:] == ["TARGET:", "    (no memory at or after 2030-01-01 00:00)", "AFTER:", "    (none)"]
    assert ok(client, "memory_timeline_context", user_id="tl-nobody", timestamp="2025-01-01") == (
        "No memories for user tl-nobody around 2025-01-01 00:00."
    )


def test_timeline_context_refuses_neither_both_unknown_forgotten_and_bad_values(client):
    assert "exactly one of item_id and timestamp" in refused(client, "memory_timeline_context", user_id=AROUND)
    both = refused(client, "memory_timeline_context", user_id=AROUND, item_id="a-1", timestamp="2025-03-01")
    assert "exactly one of item_id and timestamp" in both
    assert "NotFound: no semantic item 'a-99'" in refused(
        client, "memory_timeline_context", user_id=AROUND, item_id="a-99"
    )
    assert "NotFound: semantic item 'r-gone' was forgotten" in refused(
        client, "memory_timeline_context", user_id=RECENT, item_id="r-gone"
    )
    assert "not an ISO-8601 time" in refused(client, "memory_timeline_context", user_id=AROUND, timestamp="soon")
    assert "before must be an integer from 0 to 100" in refused(
        client, "memory_timeline_context", user_id=AROUND, item_id="a-1", before=-1
    )
    assert "after must be an integer" in refused(
        client, "memory_timeline_context", user_id=AROUND, item_id="a-1", after=10**6
    )
    assert "hours must be a number" in refused(client, "memory_timeline", user_id=RECENT, hours=0)
    assert "hours must be a number" in refused(client, "memory_timeline", user_id=RECENT, hours=1e12)


def test_mine_skills_lists_proposals_and_stores_nothing(client, reader):
    text = ok(client, "memory_mine_skills", user_id=MINER)
    lines = text.splitlines()
    assert lines[0].startswith("Mined 1 skill proposal(s) from 3 episode(s) (skill_mining_offline)")
    assert lines[1] == (
        "1. compare_trains_then_book_the_train (prompt, confidence 1.00): "
        "Recurring action sequence in 2 successful episodes."
    )
    assert lines[2] == "   1. compare trains 2. book the train"
    assert reader.skills.list_skills(MINER).total == 0
    only_failures = ok(client, "memory_mine_skills", user_id=MINER, outcomes=["failure"], window=5)
    assert only_failures == "No skills mined from 1 episode(s) (skill_mining_offline)."
    assert ok(client, "memory_mine_skills", user_id="tl-nobody") == (
        "No skills mined from 0 episode(s) (none (no episodes))."
    )


def test_mine_skills_with_auto_register_registers_each_proposal_with_its_episodes(client, reader):
    text = ok(client, "memory_mine_skills", user_id=MINER, auto_register=True)
    match = re.fullmatch(r"Registered 1 mined skill\(s\): (\S+)", text)
    assert match, text
    skill = reader.skills.get(MINER, match[1])
    assert skill.name == "compare_trains_then_book_the_train" and skill.provenance["method"] == "skill_mining"
    successes = {e.id for e in reader.episodes.list_episodes(MINER, outcome="success").rows}
    assert len(successes) == 2 and {s["id"] for s in skill.provenance["sources"]} == successes


@pytest.fixture(scope="module")
def llm_client(tmp_path_factory, embedder):
    """A server whose LLM is a local OpenAI-compatible server (through the real openai client), and that server."""
    path = tmp_path_factory.mktemp("mcp-timeline-llm") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    for outcome in ("success", "success"):
        engine.episodes.record(MINER, [{"action": "open the runbook"}, {"action": "restart"}], outcome=outcome)
    engine.close()
    with FakeOpenAI() as llm:
        env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": llm.base_url, "MEMLENS_EMBEDDER": "local"}
        c = SyncMcp(stdio_server(path, MEMLENS_GRAPH_EXTRACTION="offline", **env))
        yield c, llm
        c.close()


PROPOSALS = (
    '[{"name": "Restart by the runbook", "kind": "template", "body": "Open the runbook, then restart.", '
    '"description": "When the service hangs.", "confidence": 0.8}, {"name": "", "body": "dropped"}]'
)


def test_mine_skills_through_the_llm_lists_then_registers_its_proposals(llm_client):
    client, llm = llm_client
    llm.script("chat", PROPOSALS, PROPOSALS)
    assert ok(client, "memory_mine_skills", user_id=MINER).splitlines() == [
        "Mined 1 skill proposal(s) from 2 episode(s) (skill_mining); nothing is stored until registered "
        "(auto_register=true, or the dashboard's Skills page):",
        "1. restart_by_the_runbook (template, confidence 0.80): When the service hangs.",
        "   Open the runbook, then restart.",
    ]
    assert "open the runbook" in llm.captured("chat")[-1].prompt
    text = ok(client, "memory_mine_skills", user_id=MINER, auto_register=True)
    skill_id = re.fullmatch(r"Registered 1 mined skill\(s\): (\S+)", text)[1]
    assert ok(client, "memory_skills", user_id=MINER).startswith(f"[{skill_id}] restart_by_the_runbook v1 (template)")


def test_info_describes_every_tool_the_server_lists_and_the_recommended_flow(client):
    tools = client.tools()
    text = ok(client, "memory_info")
    head, flow = text.split("\n\nRecommended flow:\n")
    lines = head.splitlines()
    assert lines[0] == f"memlens memory tools ({len(tools)}):"
    described = {re.match(r"- (\w+)\(", line)[1]: line for line in lines[1:]}
    assert set(described) == {t.name for t in tools}
    assert described["memory_timeline"].startswith(
        "- memory_timeline(user_id, hours=24, include_messages=true): Facts saved and"
    )
    assert described["memory_save"].endswith("Save one fact to semantic memory directly (no LLM).")
    steps = flow.splitlines()
    assert steps[0].startswith("1. At the start of a task: memory_retrieve")
    assert any(s.startswith("2. During the task: memory_add_message") for s in steps)
    named = set(re.findall(r"memory_\w+", flow))
    assert named <= set(described)  # the flow names only tools this server has


HOSTILE = ["../../etc/passwd", "u'; DROP TABLE items; --", "nul\x00byte", "", "x" * 300]


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_ids_are_refused_and_nothing_is_written(client, reader, bad):
    before = snapshot(reader)
    for tool, args in (
        ("memory_timeline", {"user_id": bad}),
        ("memory_timeline_context", {"user_id": bad, "item_id": "a-1"}),
        ("memory_timeline_context", {"user_id": AROUND, "item_id": bad}),
        ("memory_mine_skills", {"user_id": bad, "auto_register": True}),
    ):
        text = refused(client, tool, **args)
        assert "InvalidInput: invalid" in text or "must be" in text, (tool, text)
    assert_unchanged(before, reader, "a hostile id")


def test_hostile_text_and_values_are_refused_and_nothing_is_written(client, reader):
    before = snapshot(reader)
    for args, why in (
        ({"timestamp": "2025-03-01'; DROP TABLE items; --"}, "not an ISO-8601 time"),
        ({"timestamp": "9" * 5000}, "not an ISO-8601 time"),
        ({"timestamp": "0001-01-01"}, "InvalidInput"),
        ({"timestamp": 20250301}, "timestamp"),
        ({"item_id": "a-1", "before": True}, "before"),
        ({"item_id": "a-1", "after": 2.0}, "after"),
    ):
        assert why in refused(client, "memory_timeline_context", user_id=AROUND, **args), args
    for outcomes, why in (
        (["nul\x00label"], "outcome"),
        (["x" * 40_000], "outcome"),
        ([""], "outcome"),
        (["ok"] * 101, "number of outcomes"),
        ("success", "outcomes"),
    ):
        text = refused(client, "memory_mine_skills", user_id=MINER, outcomes=outcomes, auto_register=True)
        assert why in text, (outcomes, text)
    assert "window" in refused(client, "memory_mine_skills", user_id=MINER, window=0, auto_register=True)
    assert "include_messages" in refused(client, "memory_timeline", user_id=RECENT, include_messages="yes")
    assert "Extra inputs are not permitted" in refused(client, "memory_info", verbose=True)
    assert_unchanged(before, reader, "hostile values")
