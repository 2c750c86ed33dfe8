"""Graph extraction through the LLM (llmemory §3.7) with the real ``openai`` client against the local test server:
the structured-output request and its schema, the plain call when that is refused or unusable (first balanced
``{...}``), one retry when both lists come back empty for a text over 50 characters, llmemory's truncation and
normalisation, token usage in the ledger, and a malformed answer giving nothing (with a note) so the offline rules
run instead and say so."""

from __future__ import annotations

import json

import pytest

from engine import MemoryEngine, Settings
from engine.memory.graph_extraction import PROMPT, SCHEMA, LLMExtractor, first_json_object
from engine.providers.llm import NoLLM
from engine.records import Triple
from tests.support.openai_server import FakeOpenAI, Reply, llm_settings

U = "gx"
ANSWER = {
    "entities": [{"type": "Person", "name": "Alice"}, {"type": "", "name": "Acme Corp"}],
    "relations": [{"subject": "Alice", "predicate": " Works At ", "object": "Acme Corp"}],
}
EMPTY = '{"entities": [], "relations": []}'
LONG = "Alice told me today that she has joined Acme Corp as an engineer."  # over 50 characters


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="module")
def engine(server, tmp_path_factory, embedder) -> MemoryEngine:
    base = Settings.from_env({}, store=str(tmp_path_factory.mktemp("graph-llm") / "store"), lock_timeout_s=30)
    return MemoryEngine.open(settings=llm_settings(base, server, graph_extraction="llm"), embedder=embedder)


@pytest.fixture(autouse=True)
def fresh(server, engine):
    server.reset()
    yield
    engine.admin.delete_user(U)
    assert server.pending("chat") == 0, "a scripted reply was never requested"


def extractor(engine: MemoryEngine) -> LLMExtractor:
    return engine.items.graph_extraction.llm_extractor


def test_remember_asks_for_structured_output_and_writes_what_the_llm_found(engine, server):
    server.script("chat", json.dumps(ANSWER))
    item = engine.items.remember(U, LONG)
    (request,) = server.captured("chat")
    fmt = request.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert fmt["json_schema"]["strict"] is True
    assert LONG in request.prompt and '"User" as the subject' in request.prompt
    alice = engine.graph.resolve(U, "alice")
    (rel,) = engine.graph.relations(U, alice.id).rows
    assert (rel.subject, rel.predicate, rel.object, rel.method) == ("Alice", "works_at", "Acme Corp", "llm")
    assert {e.name: e.type for e in engine.graph.list_entities(U).rows} == {"Alice": "person", "Acme Corp": "concept"}
    assert {e.name for e in engine.graph.entities_of(U, "semantic", [item.id])[item.id]} == {"Alice", "Acme Corp"}
    usage = [r for r in engine.admin.usage(U) if r["operation"] == "graph_extraction"]
    assert usage and usage[0]["input_tokens"] > 0


def test_a_refused_structured_request_falls_back_to_a_plain_call_read_at_its_first_balanced_object(engine, server):
    server.script(
        "chat",
        Reply(status=400),
        'Sure! Here it is: {"entities": [{"type": "place", "name": "Oslo {old town}"}], '
        '"relations": [{"subject": "User", "predicate": "lives in", "object": "Oslo {old town}"}]} Anything else?',
    )
    found = extractor(engine).extract(LONG, U)
    first, plain = server.captured("chat")
    assert "response_format" in first.body and "response_format" not in plain.body
    assert found.triples == (Triple("User", "lives_in", "Oslo {old town}", "concept", "place"),)
    assert found.entities == (("Oslo {old town}", "place"),)
    assert any("plain call" in n for n in found.notes)


def test_both_lists_empty_for_a_long_text_retries_once_with_a_plain_call(engine, server):
    server.script("chat", EMPTY, json.dumps(ANSWER))
    found = extractor(engine).extract(LONG, U)
    assert len(server.captured("chat")) == 2
    assert [t.object for t in found.triples] == ["Acme Corp"]
    assert "both lists empty; retried once" in found.notes


def test_a_short_text_with_nothing_found_is_not_retried(engine, server):
    server.script("chat", EMPTY)
    found = extractor(engine).extract("Hello there.", U)
    assert len(server.captured("chat")) == 1 and found.entities == () and found.triples == ()


def test_a_malformed_answer_gives_nothing_with_a_note_and_the_write_falls_back_to_the_offline_rules(engine, server):
    server.script("chat", "not json at all", '{"entities": "nope"}')
    found = extractor(engine).extract(LONG, U)
    assert (found.entities, found.triples) == ((), ())
    assert found.notes[-1] == "LLM answer held no JSON object of the asked shape"
    server.script("chat", "not json at all", "still not json")
    engine.items.remember(U, "Alice works at Acme.")
    alice = engine.graph.resolve(U, "Alice")
    (rel,) = engine.graph.relations(U, alice.id).rows
    assert (rel.object, rel.method) == ("Acme", "offline")


def test_a_failing_llm_gives_nothing_with_a_note(engine, server):
    server.script("chat", *(Reply(status=500),) * 6)  # two calls, each with its two retries
    found = extractor(engine).extract(LONG, U)
    assert (found.entities, found.triples) == ((), ())
    assert found.notes[-1].startswith("LLM unavailable")
    assert LLMExtractor(NoLLM()).extract(LONG).notes == ("LLM unavailable: no LLM configured",)


def test_a_long_text_is_cut_to_2500_characters_with_a_marker(engine, server):
    server.script("chat", json.dumps(ANSWER))
    extractor(engine).extract("x" * 2400 + " Alice works at Acme " + "y" * 400, U)
    (request,) = server.captured("chat")
    sent = request.body["messages"][0]["content"]
    body = sent[len(PROMPT.format(text="")) :]
    assert len(body) == 2500 + len("\n[...]") and body.endswith("\n[...]")


def test_memorize_through_the_llm_extracts_the_graph_before_writing(engine, server):
    server.script(
        "chat",
        '[{"content": "Mina lives in Porto", "importance": 0.6}]',  # memorize: the facts
        "home life",  # their category
        "- lives in Porto",  # its summary
        json.dumps(
            {
                "entities": [{"type": "place", "name": "Porto"}],
                "relations": [{"subject": "Mina", "predicate": "lives_in", "object": "Porto"}],
            }
        ),  # fmt: skip
    )
    (item,) = engine.items.memorize(U, "Mina: I live in Porto now.")
    assert "response_format" in server.captured("chat")[-1].body
    mina = engine.graph.resolve(U, "Mina")
    (rel,) = engine.graph.relations(U, mina.id).rows
    assert (rel.object, rel.method, rel.sources[0].id) == ("Porto", "llm", item.id)


def test_first_json_object_skips_braces_inside_strings_and_unbalanced_openings():
    assert first_json_object('x { "a": "}" , "b": {"c": 1}} y {"z": 2}') == '{ "a": "}" , "b": {"c": 1}}'
    assert first_json_object("{ no end") is None
    assert first_json_object("none") is None
