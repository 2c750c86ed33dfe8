"""Importing a Letta agent file (``engine.imports.letta``): core memory blocks become working slots of the agent's
session, archival passages semantic items (embedded by memlens, their origin in provenance), the conversation that
session's messages; tool calls, inner thoughts, notices and the system prompt are left out with their reasons. The
import is all or nothing and a second one writes nothing.

The fixture (tests/fixtures/interop/letta_memgpt_agent.af) is an excerpt of memgpt_agent_with_convo.af from
github.com/letta-ai/agent-file (Apache-2.0): the current AgentFileSchema form with its blocks and one tool, and 13
messages of the file's older version reshaped into that form; its two ``passages`` are ours, written by Letta's
Passage schema, because agent files do not carry passages yet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine import InvalidInput, MemoryEngine, NotFound, Settings, imported_origin, session_origin

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "letta_memgpt_agent.af"
USER = "brad"
SESSION = "letta:memgpt_agent"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    store = tmp_path_factory.mktemp("letta-import") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)


@pytest.fixture(scope="module")
def first(engine):
    """The fixture imported once for USER, after a dry run that must have written nothing."""
    dry = engine.imports.letta(FIXTURE, user_id=USER, dry_run=True)
    assert dry.dry_run and engine.sessions.list_sessions(USER).total == 0 and engine.items.list_items(USER).total == 0
    report = engine.imports.letta(FIXTURE, user_id=USER)
    assert dry.written == report.written  # the dry run said exactly what the import then wrote
    return report


def test_blocks_passages_and_the_conversation_are_mapped_and_the_rest_skipped_with_reasons(engine, first):
    assert first.origin == "letta" and dict(first.written) == {"item": 2, "message": 6, "working": 2}
    slots = engine.working.get(USER, SESSION)
    assert {k for k, v in slots.items() if v is not None} == {"human", "persona"} and "First name: Chad" in slots[
        "human"
    ]
    said = [(m.role, m.content) for m in engine.sessions.messages(USER, SESSION).rows]
    # the user's words unwrapped from Letta's JSON; the assistant's from send_message, not its inner monologue
    assert said[:3] == [
        ("assistant", "More human than human is our motto."),
        ("user", "my name is actually Brad "),
        ("user", said[2][1]),
    ]
    assert said[2][1].startswith("ok I changed your model to 4.5") and ("assistant", said[5][1]) == said[5]
    assert not any("I must correct my core memory" in text for _, text in said)
    reasons = {s.reason for s in first.skipped}
    assert "the system prompt: Letta's instructions, not conversation" in reasons
    assert "tool call(s) core_memory_replace: memlens keeps no tool calls" in reasons
    assert {"Letta's heartbeat notice, not said by the user", "Letta's login notice, not said by the user"} <= reasons
    assert any(s.kind == "tool" and s.source_id == "conversation_search" for s in first.skipped)
    assert session_origin(SESSION) == "Letta"


def test_passages_are_items_found_by_memlens_search_with_their_origin(engine, first):
    hits = engine.retrieval.search(USER, "where does Brad go sailing?")
    top = engine.items.get(USER, hits[0].id)
    assert top.content.startswith("Brad sails a small dinghy") and top.category == "archival"
    assert imported_origin(top.provenance) == ("Letta", "passage-0")
    assert top.provenance["origin"]["tags"] == ["hobbies"] and top.source == "import:letta"


def test_a_second_import_writes_nothing_and_says_what_was_already_there(engine, first):
    again = engine.imports.letta(FIXTURE, user_id=USER)
    assert dict(again.written) == {} and dict(again.already_present) == dict(first.written)
    assert engine.sessions.messages(USER, SESSION).total == 6 and engine.items.list_items(USER).total == 2


def test_a_hard_forgotten_passage_is_not_brought_back_by_importing_again(engine, first):
    passage = next(i for i in engine.items.list_items(USER).rows if "turning 30" in i.content)
    engine.forgetting.forget(USER, "semantic", [passage.id], "wrong", mode="hard")
    again = engine.imports.letta(FIXTURE, user_id=USER)
    assert again.total_written == 0 and [i.content for i in engine.items.list_items(USER).rows] == [
        "Brad sails a small dinghy on the Berkeley marina most Saturday mornings."
    ]


def test_a_bad_record_is_named_and_nothing_of_the_file_is_written(engine, tmp_path):
    data = json.loads(FIXTURE.read_text())
    data["passages"][1]["created_at"] = "the day after tomorrow"
    bad = tmp_path / "bad.af"
    bad.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match=r"letta item 'passage-1': .*created_at"):
        engine.imports.letta(bad, user_id="someone_else")
    assert engine.sessions.list_sessions("someone_else").total == 0
    assert engine.items.list_items("someone_else").total == 0
    with pytest.raises(NotFound):
        engine.imports.letta(tmp_path / "missing.af")
    (tmp_path / "not.af").write_text('{"name": "x"}')
    with pytest.raises(InvalidInput, match="not a Letta agent file"):
        engine.imports.letta(tmp_path / "not.af")


def test_the_older_single_agent_form_is_read_and_the_user_defaults_to_the_agent_name(engine, tmp_path):
    old = {
        "agent_type": "memgpt_agent",
        "name": "Old Sam",
        "core_memory": [{"label": "human", "value": "Name: Ada"}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": '{"type": "user_message", "message": "hi"}'}],
                "created_at": "2025-01-02T03:04:05+00:00",
            },  # fmt: skip
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Greet back."}],
                "tool_calls": [
                    {"id": "c1", "function": {"name": "send_message", "arguments": '{"message": "Hello!"}'}}
                ],
                "created_at": "2025-01-02T03:04:06+00:00",
            },  # fmt: skip
        ],
    }
    path = tmp_path / "old.af"
    path.write_text(json.dumps(old))
    report = engine.imports.letta(path)
    assert dict(report.written) == {"message": 2, "working": 1}
    rows = engine.sessions.messages("old_sam", "letta:old_sam").rows
    assert [(m.role, m.content) for m in rows] == [("user", "hi"), ("assistant", "Hello!")]


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda d: d.update(blocks={"id": "block-0"}), "blocks must be a list"),
        (lambda d: d["agents"][0].update(block_ids=7), "block_ids must be a list"),
        (lambda d: d["agents"][0].update(messages="hello"), "messages must be a list"),
        (lambda d: d.update(tools=5), "tools must be a list"),
        (lambda d: d["agents"][0]["messages"].append(["not", "an", "object"]), "message 15 is not an object"),
        (lambda d: d["passages"][0].pop("id"), "passage .* has no id"),
        (lambda d: d["blocks"][0].update(label="../../etc"), None),  # a label made a slot name: accepted
    ],
)
def test_hostile_agent_files_are_refused_with_a_reason_and_write_nothing(engine, tmp_path, change, refusal):
    data = json.loads(FIXTURE.read_text())
    change(data)
    path = tmp_path / "hostile.af"
    path.write_text(json.dumps(data))
    if refusal is None:
        report = engine.imports.letta(path, user_id="hostile_ok", dry_run=True)
        assert report.written["working"] == 2 and engine.sessions.list_sessions("hostile_ok").total == 0
        return
    with pytest.raises(InvalidInput, match=refusal):
        engine.imports.letta(path, user_id="hostile")
    assert engine.sessions.list_sessions("hostile").total == 0 and engine.items.list_items("hostile").total == 0


def test_text_nested_past_the_parser_depth_is_kept_as_text(engine, tmp_path):
    data = json.loads(FIXTURE.read_text())
    deep = "[" * 20_000  # under the message limit, far past the JSON parser's recursion depth
    user_message = next(m for m in data["agents"][0]["messages"] if m["role"] == "user")
    user_message["content"] = [{"type": "text", "text": deep}]
    path = tmp_path / "deep.af"
    path.write_text(json.dumps(data))
    report = engine.imports.letta(path, user_id="deep", dry_run=True)
    assert report.written["message"] >= 1


def test_passages_are_embedded_by_memlens_not_with_the_vectors_the_file_carries(engine, embedder, tmp_path):
    data = json.loads(FIXTURE.read_text())
    data["passages"] = [dict(data["passages"][0], id="passage-v", embedding=[1.0] * 384, embedding_config={})]
    path = tmp_path / "vectors.af"
    path.write_text(json.dumps(data))
    engine.imports.letta(path, user_id="vectors")
    (stored,) = engine.items.list_items("vectors").rows
    vector = engine._b.index.vectors_for("semantic", [stored.id])[stored.id]  # noqa: SLF001 - the stored vector
    expected = embedder.embed([stored.content])[0]
    assert float(np.dot(vector, expected) / (np.linalg.norm(vector) * np.linalg.norm(expected))) > 0.999
