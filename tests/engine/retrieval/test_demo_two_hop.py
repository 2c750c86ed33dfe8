"""The demo's two-hop questions (data/demo/two_hop.json, listed in data/demo/README.md) are answered by two hops
with the offline reasoner. Under llmemory's rules (the `llmemory` preset: 20 candidates per source) the bridging fact
B reaches the context on hop 2 and not on hop 1; under the default preset both facts reach the context with 2 hops."""

from __future__ import annotations

import json
import shutil

import pytest

from engine import MemoryEngine, Settings
from engine.config import DEMO_DIR

QUESTIONS_FILE = DEMO_DIR / "two_hop.json"
QUESTIONS = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8")) if QUESTIONS_FILE.exists() else []


def test_the_demo_has_two_hop_questions_and_the_readme_lists_them():
    assert QUESTIONS_FILE.exists(), f"{QUESTIONS_FILE} is missing"
    assert len(QUESTIONS) >= 5
    readme = (DEMO_DIR / "README.md").read_text(encoding="utf-8")
    for q in QUESTIONS:
        assert {"user_id", "question", "fact_a", "bridge", "fact_b", "answer"} <= set(q)
        assert q["question"] in readme


@pytest.mark.parametrize("case", QUESTIONS, ids=[f"{q['user_id']}:{q['bridge']}" for q in QUESTIONS])
def test_the_bridging_fact_enters_the_context_on_hop_two_and_not_on_hop_one(demo, case):
    trace = demo.retrieval.retrieve(case["user_id"], case["question"], hops=2, preset="llmemory")
    assert trace.strategies.reasoner == "offline:bridge_entities"
    assert len(trace.hops) == 2, f"stopped after hop 1: {trace.stop_reason}"
    hop1 = {c.id: c for c in trace.hops[0].candidates}
    hop2 = {c.id: c for c in trace.hops[1].candidates}
    top1 = [(c.id, c.text[:60]) for c in trace.hops[0].candidates[:5]]
    where = f"hop-2 query {trace.hops[1].query!r}; hop-1 top {top1}"
    assert trace.hops[1].proposed_by == "offline:bridge_entities"

    assert case["fact_b"] not in hop1 or not hop1[case["fact_b"]].in_context, where
    assert case["fact_b"] in hop2, f"fact B not found on hop 2: {where}"
    assert hop2[case["fact_b"]].in_context, f"fact B {hop2[case['fact_b']].context_reason} on hop 2: {where}"
    assert case["fact_a"] in trace.context_ids, where
    assert case["fact_b"] in trace.context_ids


@pytest.mark.parametrize("case", QUESTIONS[:1], ids=["first"])
def test_one_hop_alone_does_not_bring_the_bridging_fact(demo, case):
    trace = demo.retrieval.retrieve(case["user_id"], case["question"], save=False, preset="llmemory")
    assert case["fact_a"] in trace.context_ids
    assert case["fact_b"] not in trace.context_ids


@pytest.mark.parametrize("case", QUESTIONS, ids=[f"{q['user_id']}:{q['bridge']}" for q in QUESTIONS])
def test_the_default_preset_brings_both_facts_into_the_context_with_two_hops(demo, case):
    trace = demo.retrieval.retrieve(case["user_id"], case["question"], hops=2, save=False)
    assert trace.settings.preset == "default"
    assert case["fact_a"] in trace.context_ids and case["fact_b"] in trace.context_ids


def test_the_trace_says_when_a_later_hop_searched_differently(demo_store_template, tmp_path, embedder):
    """A fresh process meets each small table's version for the first time on hop 1 (LanceDB, exact) and for the
    second time on hop 2, which loads it into memory: the trace must say so per hop, not only for hop 1."""
    shutil.copytree(demo_store_template, tmp_path / "store")
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)
    case = QUESTIONS[0]
    first = engine.retrieval.retrieve(case["user_id"], case["question"], hops=2)
    in_memory = "semantic: in memory (exact), episodic: in memory (exact), procedural: in memory (exact)"
    assert first.strategies.vector_search == "semantic: exact, episodic: exact, procedural: exact"
    assert first.strategies.per_hop["vector_search_hop2"] == in_memory
    again = engine.retrieval.retrieve(case["user_id"], case["question"], hops=2)
    assert again.strategies.vector_search == in_memory and "vector_search_hop2" not in again.strategies.per_hop
    assert again.strategies.full_text_search == (
        "semantic: in memory (BM25), episodic: in memory (BM25), procedural: in memory (BM25)"
    )
    assert "full_text_search_hop2" not in again.strategies.per_hop
