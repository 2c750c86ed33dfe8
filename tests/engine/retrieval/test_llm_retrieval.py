"""Retrieval with an LLM behind the real ``openai`` client: query generation for long messages, the multi-hop LLM
reasoner, the relevance judge, and the clean offline fallback recorded in the trace when the server fails."""

from __future__ import annotations

import pytest

from engine import MemoryEngine
from tests.support.openai_server import Reply

U = "rita"
FACTS = [
    "Rita's sister Mara lives in Lyon and works as a luthier.",
    "The Lyon workshop repairs violins and cellos for the conservatory.",
    "Rita prefers green tea in the afternoon.",
    "Rita's team ships the billing service every Tuesday.",
]
LONG = (
    "I was thinking about the family trip we discussed last week, and I would like to know where exactly my "
    "sister lives these days, because I want to plan a visit."
)


@pytest.fixture(scope="module")
def engine(llm_engine) -> MemoryEngine:
    e = llm_engine
    e.items.remember_many([{"user_id": U, "content": f} for f in FACTS])
    return e


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    yield
    assert server.pending("chat") == 0, "a scripted reply was never requested"


def test_a_long_question_is_condensed_by_the_llm_and_the_trace_says_so(engine, server):
    server.script("chat", "where does Rita's sister live")
    trace = engine.retrieval.retrieve(U, LONG)
    [req] = server.captured("chat")
    assert LONG in req.prompt
    assert trace.strategies.query_generation == "llm:query"
    assert trace.hops[0].query == "where does Rita's sister live"
    assert trace.hops[0].proposed_by == "llm:query"
    assert trace.hops[0].proposal.strategy == "llm"
    assert engine.admin.usage(U)[0]["operation"] == "query_generation"


def test_a_short_question_is_used_as_is_without_an_llm_call(engine, server):
    trace = engine.retrieval.retrieve(U, "Rita's tea?")
    assert trace.strategies.query_generation == "question"
    assert server.captured("chat") == []


def test_a_failing_server_falls_back_to_offline_keywords_recorded_in_the_trace(engine, server):
    server.script("chat", Reply(status=500), Reply(status=502), Reply(status=503))
    trace = engine.retrieval.retrieve(U, LONG)
    assert len(server.captured("chat")) == 3
    assert trace.strategies.query_generation == "offline:keywords"
    assert trace.hops[0].proposal.strategy == "offline"
    assert "gave up after 3 attempts" in trace.hops[0].proposal.fallback
    assert trace.context  # retrieval still produced a context


def test_a_timeout_falls_back_cleanly_too(engine, server):
    server.script("chat", *[Reply(delay_s=1.6, content="late")] * 3)
    trace = engine.retrieval.retrieve(U, LONG)
    assert trace.strategies.query_generation == "offline:keywords"
    assert "APITimeoutError" in trace.hops[0].proposal.fallback


def test_the_llm_reasoner_proposes_a_follow_up_hop_then_stops_on_done(engine, server):
    server.script("chat", "Lyon workshop instruments", "DONE")
    trace = engine.retrieval.retrieve(U, "Where does Mara live?", hops=3)
    assert trace.strategies.reasoner == "llm:reasoner"
    assert [h.query for h in trace.hops] == ["Where does Mara live?", "Lyon workshop instruments"]
    assert trace.hops[1].proposed_by == "llm:reasoner"
    assert trace.hops[1].proposal.raw == "Lyon workshop instruments"
    assert trace.stop_reason == "done"
    prompts = [r.prompt for r in server.captured("chat")]
    assert len(prompts) == 2 and "Where does Mara live?" in prompts[0]
    assert "Mara lives in Lyon" in prompts[0]  # the reasoner sees the memories found so far
    assert any("violins" in t for t in (c.text for h in trace.hops for c in h.candidates))


def test_a_failing_reasoner_stops_the_hops_and_says_why(engine, server):
    server.script("chat", Reply(status=500), Reply(status=500), Reply(status=500))
    trace = engine.retrieval.retrieve(U, "Where does Mara live?", hops=3)
    assert len(trace.hops) == 1
    assert trace.stop_reason == "done"
    assert "LLM error" in trace.stop_details["fallback"]


def test_the_llm_judge_scores_drive_the_relevance_filter(engine, server):
    server.script("chat", "[0.9, 0.1, 0.2, 0.05]")
    trace = engine.retrieval.retrieve(
        U, "Where does Mara live?", overrides={"relevance_filter": "llm", "relevance_keep_all_max": 0}
    )
    assert trace.strategies.per_hop["relevance_hop1"] == "llm_judge"
    judged = {c.text: c.scores.llm_relevance for c in trace.hops[0].candidates}
    assert sorted(judged.values()) == [0.05, 0.1, 0.2, 0.9]
    kept = [c for c in trace.hops[0].candidates if c.verdicts.relevance == "kept"]
    assert len(kept) == 1 and kept[0].scores.llm_relevance == 0.9


def test_the_llm_judge_reads_a_memorys_preceding_text_beside_it(engine, server):
    reply = engine.items.remember(
        U, "Me, on the first Monday of each month.", preceding_text="Who defrosts the workshop freezer?"
    )
    try:
        server.script("chat", "[0.9, 0.1, 0.2, 0.05, 0.1]")
        trace = engine.retrieval.retrieve(
            U, "Who defrosts the freezer?", overrides={"relevance_filter": "llm", "relevance_keep_all_max": 0}
        )
        assert reply.id in {c.id for c in trace.hops[0].candidates}
        prompt = server.captured("chat")[-1].prompt
        assert "Me, on the first Monday of each month. (said right after: Who defrosts the workshop freezer?)" in prompt
    finally:  # the module's other tests count this user's memories
        engine.forgetting.forget(U, "semantic", [reply.id], reason="test cleanup", mode="hard")


@pytest.mark.parametrize(
    "answer",
    ["not json at all", "[0.9, 0.1]", "[2, 0.1, 0.2, 0.3]", '["a","b","c","d"]'],
    ids=["garbage", "wrong-length", "out-of-range", "not-numbers"],
)
def test_malformed_judge_output_falls_back_to_the_heuristic(engine, server, answer):
    server.script("chat", answer)
    trace = engine.retrieval.retrieve(U, "Where does Mara live?", overrides={"relevance_filter": "llm"})
    assert trace.strategies.per_hop["relevance_hop1"].startswith("heuristic (LLM judge failed")
    assert all(c.scores.llm_relevance is None for c in trace.hops[0].candidates)
    assert trace.context
