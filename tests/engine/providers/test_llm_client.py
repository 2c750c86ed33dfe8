"""The LLM client through the real ``openai`` package against a local OpenAI-compatible server: what is sent,
retries with backoff on 5xx/429, timeouts, garbage bodies, the token usage ledger, and the key never shown."""

from __future__ import annotations

import json

import pytest

from engine import MemoryEngine, Settings, to_plain
from tests.support.openai_server import TEST_KEY, Reply


@pytest.fixture(scope="module")
def engine(llm_engine) -> MemoryEngine:
    return llm_engine


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    yield
    assert server.pending("chat") == 0, "a scripted reply was never requested"


def test_a_configured_key_makes_the_engine_use_the_openai_client(engine):
    assert engine.llm.available
    assert engine.llm.name == "openai:test-chat"
    assert engine.admin.stats().llm == "openai:test-chat"


def test_a_completion_sends_the_model_prompt_temperature_and_bearer_key(engine, server):
    server.script("chat", "hello back")
    result = engine.llm.complete("say hello", "test_op", "alice")
    assert result.ok and result.text == "hello back" and result.attempts == 1
    [req] = server.captured("chat")
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.body["model"] == "test-chat"
    assert req.body["messages"] == [{"role": "user", "content": "say hello"}]
    assert req.body["temperature"] == 0.3
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"


def test_a_500_is_retried_and_the_second_answer_used(engine, server):
    server.script("chat", Reply(status=500), "second time lucky")
    result = engine.llm.complete("q", "test_op", "alice")
    assert result.ok and result.text == "second time lucky"
    assert result.attempts == 2
    assert len(server.captured("chat")) == 2


def test_a_429_is_retried_with_backoff(engine, server):
    server.script("chat", Reply(status=429), Reply(status=429), "finally")
    result = engine.llm.complete("q", "test_op", "alice")
    assert result.ok and result.text == "finally" and result.attempts == 3
    assert len(server.captured("chat")) == 3


def test_persistent_5xx_gives_up_after_the_configured_retries_with_a_clear_error(engine, server):
    server.script("chat", Reply(status=503), Reply(status=502), Reply(status=500))
    result = engine.llm.complete("q", "test_op", "alice")
    assert not result.ok
    assert result.attempts == 3 and "gave up after 3 attempts" in result.error
    assert "InternalServerError" in result.error
    assert len(server.captured("chat")) == 3


def test_a_client_error_is_not_retried(engine, server):
    server.script("chat", Reply(status=400, body={"error": {"message": "bad request", "type": "invalid"}}))
    result = engine.llm.complete("q", "test_op", "alice")
    assert not result.ok and result.attempts == 1 and "BadRequest" in result.error
    assert len(server.captured("chat")) == 1


def test_a_reply_slower_than_the_timeout_counts_as_a_failed_attempt(engine, server):
    server.script("chat", Reply(delay_s=2.5, content="too late"), "in time")
    result = engine.llm.complete("q", "test_op", "alice")
    assert result.ok and result.text == "in time" and result.attempts == 2


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw=b"<html>not json</html>"),
        Reply(body={"choices": []}),
        Reply(body={"unexpected": "shape"}),
        Reply(body=["a", "list"]),
    ],
    ids=["garbage", "no-choices", "wrong-shape", "json-list"],
)
def test_a_malformed_response_body_is_a_failed_result_not_a_crash(engine, server, reply):
    server.script("chat", reply)
    result = engine.llm.complete("q", "test_op", "alice")
    assert not result.ok and result.error


def test_usage_fields_land_in_the_ledger_per_user_and_operation(engine, server):
    server.script("chat", "one two three", "four")
    a = engine.llm.complete("alpha beta", "ledger_a", "ledger_user")
    b = engine.llm.complete("gamma", "ledger_b", "ledger_user")
    rows = {r["operation"]: r for r in engine.admin.usage("ledger_user")}
    assert set(rows) == {"ledger_a", "ledger_b"}
    # The server counts words: prompt 2 words -> 2 input tokens, answer 3 words -> 3 output tokens.
    assert (rows["ledger_a"]["input_tokens"], rows["ledger_a"]["output_tokens"]) == (2, 3)
    assert (a.input_tokens, a.output_tokens, b.output_tokens) == (2, 3, 1)
    assert rows["ledger_a"]["calls"] == 1 and rows["ledger_a"]["model"] == "test-chat"
    assert rows["ledger_b"]["total_tokens"] == 2
    assert engine.admin.usage("nobody") == []


def test_failed_calls_record_no_usage(engine, server):
    server.script("chat", Reply(status=500), Reply(status=500), Reply(status=500))
    engine.llm.complete("q", "failing_op", "usage_fail_user")
    assert engine.admin.usage("usage_fail_user") == []


def test_the_api_key_never_appears_in_settings_descriptions_stats_or_traces(engine, server):
    described = json.dumps(Settings.describe(), default=str)
    assert TEST_KEY not in described
    key_row = next(d for d in Settings.describe() if d["name"] == "openai_api_key")
    assert key_row["default"] == ""
    assert TEST_KEY not in repr(engine.settings)
    assert TEST_KEY not in json.dumps(to_plain(engine.admin.stats()), default=str)
    engine.items.remember("keyuser", "The key test fact about teapots")
    trace = engine.retrieval.retrieve("keyuser", "teapots?")
    assert TEST_KEY not in json.dumps(trace.to_dict(), default=str)


def test_without_a_key_the_engine_is_offline_and_never_calls_the_server(server, tmp_path, embedder):
    settings = Settings.from_env({}, store=str(tmp_path / "s"), openai_base_url=server.base_url)
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    assert not engine.llm.available and engine.llm.name == "offline"
    engine.items.remember("u", "Offline fact about kettles")
    trace = engine.retrieval.retrieve("u", "kettles " * 30, hops=2)
    assert trace.strategies.query_generation == "offline:keywords"
    assert server.captured() == []


def test_settings_read_the_llm_environment_variables():
    s = Settings.from_env(
        {
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "MEMLENS_CHAT_MODEL": "llama3",
            "MEMLENS_EMBEDDING_MODEL": "nomic-embed",
            "MEMLENS_EMBEDDER": "openai",
            "MEMLENS_LLM_TIMEOUT": "5",
            "MEMLENS_LLM_RETRIES": "1",
            "MEMLENS_LLM_BACKOFF": "0.1",
        }
    )
    assert (s.openai_base_url, s.chat_model, s.embedding_model, s.embedder_choice) == (
        "http://127.0.0.1:9/v1",
        "llama3",
        "nomic-embed",
        "openai",
    )
    assert (s.llm_timeout_s, s.llm_retries, s.llm_backoff_s) == (5.0, 1, 0.1)
    assert s.llm_configured
