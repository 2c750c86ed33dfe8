"""The traced retrieval pipeline through the real engine (DuckDB + LanceDB + the local embedding model): candidates,
recorded scores and settings, per-call overrides, query generation, and the trace's life cycle through the API."""

from __future__ import annotations

import json
import math
import re
import statistics
from datetime import timedelta

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, RetrievalTrace, Settings
from engine.clock import utcnow
from engine.retrieval.text import condense_offline
from engine.trace.traces import Traces

pytestmark = pytest.mark.both_stores

USER = "rt-user"
OTHER = "rt-other"
FACTS = {
    "chai": ("Priya drinks masala chai every morning before standup.", 2),
    "cardamom": ("Tea with cardamom is her favourite breakfast beverage.", 5),
    "build": ("Build QX7781 failed on the linux runner.", 1),
    "report": ("The quarterly report is due on Friday.", 10),
    "espresso": ("The Bangalore office has a new espresso machine.", 20),
    "dog": ("The dog is called Biscuit.", 40),
    "cloud": ("Our cloud bill doubled in March.", 60),
    "seats": ("Daniel prefers window seats on flights.", 3),
}
QUESTION = "What does Priya drink in the morning?"
ALL_SCORES = {
    "vector_similarity",
    "fts_score",
    "bm25_raw",
    "bm25_norm",
    "hybrid",
    "age_days",
    "decay",
    "importance",
    "importance_factor",
    "temporal",
    "feedback_net",
    "feedback_factor",
    "final",
    "llm_relevance",
}
# None when the full-text index did not return the memory (fts_score) or no LLM judge ran (llm_relevance)
OPTIONAL_SCORES = {"fts_score", "llm_relevance"}
REASONS = {"context", "budget", "budget_stop", "cap", "filtered", "merged"}
HOSTILE_IDS = ["../../etc/passwd", "x'; DROP TABLE traces; --", "bad\x00id", "", " ", "a" * 200, "tr/1", "..", 7]


@pytest.fixture(scope="module")
def world(module_settings, embedder):
    """One store for the module: a user with items of known ages, an episode, a skill, and another user."""
    engine = MemoryEngine.open(settings=module_settings, embedder=embedder)
    t0 = utcnow()
    items = engine.items.remember_many(
        [{"user_id": USER, "content": text, "created_at": t0 - timedelta(days=age)} for text, age in FACTS.values()]
    )
    ids = dict(zip(FACTS, (i.id for i in items), strict=True))
    ids["other"] = engine.items.remember(OTHER, "Priya drinks masala chai every morning before standup.").id
    ids["episode"] = engine.episodes.record(
        USER,
        [{"observation": "asked what to drink", "action": "suggested chai", "result": "Priya was happy"}],
        summary="Recommended masala chai to Priya for the morning",
    ).id
    ids["skill"] = engine.skills.register(
        USER, "brew-chai", "Boil water, add tea leaves and spices.", "How to brew masala chai in the morning"
    ).id
    now = utcnow() + timedelta(minutes=1)  # after every write, so no memory is in the future
    return engine, ids, now


@pytest.fixture(scope="module")
def base(world) -> RetrievalTrace:
    """One default retrieval of QUESTION, shared by the tests that only read it."""
    return run(world)


def run(world, question: str = QUESTION, **kw) -> RetrievalTrace:
    """A retrieval under llmemory's formulas (the `llmemory` preset) unless the test names another preset: the
    recorded scores are checked against the reference's arithmetic."""
    engine, _, now = world
    kw.setdefault("preset", "llmemory")
    return engine.retrieval.retrieve(USER, question, now=now, **kw)


def candidates(trace: RetrievalTrace):
    return [c for h in trace.hops for c in h.candidates]


def by_id(trace: RetrievalTrace, hop: int = 1):
    return {c.id: c for c in trace.hops[hop - 1].candidates}


# --- candidates ---------------------------------------------------------------------------------------------------


def test_candidates_come_from_both_vector_and_full_text_search(world):
    _, ids, _ = world
    trace = run(world, "What does Priya drink in the morning? QX7781", overrides={"top_k": 2})
    found = {c.id: c for c in candidates(trace)}
    # The build log shares only the ticket number with the question: only full-text search can find it.
    assert found[ids["build"]].found_by == "fts"
    assert found[ids["build"]].scores.fts_score > 0
    assert {c.found_by for c in found.values()} <= {"vector", "fts", "both"}
    vector_only = [c for c in found.values() if c.found_by == "vector"]
    assert vector_only and all(c.scores.fts_score is None for c in vector_only)
    assert any(c.found_by == "both" for c in found.values())


def test_candidates_cover_all_three_memory_kinds_of_this_user_only(world, base):
    _, ids, _ = world
    trace = base
    found = by_id(trace)
    assert {c.kind for c in found.values()} == {"semantic", "episodic", "procedural"}
    assert ids["episode"] in found and ids["skill"] in found
    assert ids["other"] not in found


def test_every_candidate_has_all_scores_ranks_verdicts_and_a_context_reason(base):
    trace = base
    assert trace.hops[0].candidates
    for c in candidates(trace):
        assert ALL_SCORES <= set(c.scores.to_dict()), c.id
        # every score is computed for every candidate, except those of a search or judge that did not return it
        assert [k for k in sorted(ALL_SCORES - OPTIONAL_SCORES) if getattr(c.scores, k) is None] == [], c.id
        assert c.verdicts.relevance in ("kept", "dropped") and c.verdicts.rule, c.id
        assert c.context_reason in REASONS
        assert c.in_context == (c.context_reason == "context")
        assert c.ranks.hybrid is not None
        if c.verdicts.relevance == "kept":
            assert None not in (c.ranks.filter, c.ranks.temporal, c.ranks.feedback, c.ranks.final)
            assert c.tokens == math.ceil(len(c.text) / 4)
        else:
            assert c.context_reason == "filtered"


def test_the_default_preset_composes_the_hybrid_from_z_scores(world):
    trace = run(world, preset=None)
    assert trace.settings.retrieval.fusion == "zscore" and trace.settings.preset == "default"
    for hop in trace.hops:
        # Standardised by hand from the raw inputs (cosine, BM25; no preceding texts here, so BM25 is the lexical
        # score), population standard deviation over the hop's candidates: never from the z-scores the trace holds.
        cosines = [c.scores.vector_similarity for c in hop.candidates]
        bm25 = [c.scores.bm25_raw for c in hop.candidates]
        assert len(cosines) > 5 and statistics.pstdev(cosines) > 0 and statistics.pstdev(bm25) > 0
        # The BM25 weight by the defaults written here (bm25_weight 0.5, adaptive_bm25 with the 5th best cosine
        # over the best between 0.6 and 0.85), not read back from the trace
        best = sorted(cosines, reverse=True)
        w = 0.5 * min(1.0, max(0.0, (best[4] / best[0] - 0.6) / 0.25))
        assert hop.fusion.weight == pytest.approx(w, rel=1e-12)
        for c, cos, lex in zip(hop.candidates, cosines, bm25, strict=True):
            z_vector = (cos - statistics.fmean(cosines)) / statistics.pstdev(cosines)
            z_bm25 = (lex - statistics.fmean(bm25)) / statistics.pstdev(bm25)
            hybrid = 1 / (1 + math.exp(-(w * z_bm25 + (1 - w) * z_vector)))
            assert c.scores.hybrid == pytest.approx(hybrid, rel=1e-9), c.id
            assert c.scores.hybrid_vector_part == pytest.approx(1 / (1 + math.exp(-(1 - w) * z_vector)), rel=1e-9)
            assert c.scores.hybrid_vector_part + c.scores.hybrid_bm25_part == pytest.approx(hybrid, rel=1e-9)


def test_recorded_scores_compose_by_the_documented_formulas(base):
    trace = base
    assert len(candidates(trace)) >= 5  # a loop over no candidates would check nothing
    for c in candidates(trace):
        s = c.scores
        assert s.hybrid == pytest.approx(0.3 * s.bm25_norm + 0.7 * s.vector_similarity)
        assert s.decay == pytest.approx(math.exp(-math.log(2) / 30 * s.age_days))
        assert s.temporal == pytest.approx(s.hybrid * s.decay * s.importance_factor)
        assert s.final == pytest.approx(s.temporal * s.feedback_factor)


def test_ages_are_whole_days_from_the_given_now(world, base):
    _, ids, _ = world
    found = by_id(base)
    assert found[ids["chai"]].scores.age_days == 2
    assert found[ids["cardamom"]].scores.age_days == 5
    assert found[ids["skill"]].scores.age_days == 0


def test_scores_keep_their_direction_and_scale_in_their_names(world):
    _, ids, _ = world
    trace = run(world, FACTS["seats"][0])
    found = by_id(trace)
    # similarity, not distance: the memory identical to the query is the closest, at about 1.0
    assert found[ids["seats"]].scores.vector_similarity == pytest.approx(1.0, abs=1e-3)
    assert max(found.values(), key=lambda c: c.scores.vector_similarity).id == ids["seats"]
    for c in found.values():
        assert not any("distance" in k for k in c.scores.to_dict())
        assert -1.0 <= c.scores.vector_similarity <= 1.0 + 1e-6
        assert 0.0 <= c.scores.bm25_norm <= 1.0
        assert c.scores.bm25_raw >= 0.0
    assert max(c.scores.bm25_norm for c in found.values()) == 1.0


def test_context_is_the_in_context_candidates_in_final_order(base):
    trace = base
    in_context = [r for r in trace.ranking if r.in_context]
    assert tuple(r.id for r in in_context) == trace.context_ids
    assert [r.rank for r in trace.ranking] == list(range(1, len(trace.ranking) + 1))
    finals = [r.final for r in trace.ranking]
    assert finals == sorted(finals, reverse=True)  # MMR is off by default
    assert trace.context_tokens == sum(r.tokens for r in in_context)
    texts = {c.id: c.text for c in candidates(trace)}
    positions = [trace.context.index(texts[i]) for i in trace.context_ids]
    assert positions == sorted(positions)
    assert trace.context.startswith("=== RELEVANT MEMORIES ===")


def test_a_question_matching_nothing_for_an_unknown_user_gives_an_empty_context(world):
    engine, _, now = world
    trace = engine.retrieval.retrieve("nobody-here", QUESTION, now=now, save=False)
    assert trace.context == "" and trace.context_ids == () and trace.hops[0].candidates == ()


def test_a_forgotten_memory_never_comes_back_from_retrieval(world):
    engine, _, now = world
    plant = engine.items.remember(
        USER, "The office plant is a ficus named Ferdinand.", created_at=now - timedelta(days=1)
    )
    question = "What is the office plant called?"
    assert plant.id in by_id(engine.retrieval.retrieve(USER, question, now=now, save=False))
    engine.forgetting.forget(USER, "semantic", [plant.id], reason="test: soft forget")
    assert plant.id not in by_id(engine.retrieval.retrieve(USER, question, now=now, save=False))


# --- settings and overrides ---------------------------------------------------------------------------------------


def test_settings_recorded_include_every_retrieval_setting_the_embedder_and_now(world, base):
    engine, _, now = world
    trace = base
    assert set(Settings.retrieval_keys()) <= set(trace.settings.retrieval_values())
    assert trace.settings.now == now.isoformat()
    assert trace.settings.embedder == engine.embedder.name == "all-MiniLM-L6-v2"
    assert trace.settings.embedding_dim == 384
    assert trace.settings.llm == "offline"
    assert trace.settings.retrieval.bm25_weight == 0.3 and trace.settings.retrieval.budget_tokens == 2000


def test_now_can_be_given_as_iso_text(world):
    engine, ids, now = world
    later = (now + timedelta(days=30)).isoformat()
    trace = engine.retrieval.retrieve(USER, QUESTION, now=later, save=False)
    assert trace.settings.now == later
    assert by_id(trace)[ids["chai"]].scores.age_days == 32


def test_per_call_overrides_change_behaviour_and_are_recorded(world, base):
    _, ids, _ = world
    trace = run(world, overrides={"bm25_weight": 0.0, "half_life_days": 2, "mmr_enabled": True}, budget=30)
    assert (trace.settings.retrieval.bm25_weight, trace.settings.retrieval.half_life_days) == (0.0, 2.0)
    assert (trace.settings.retrieval.mmr_enabled, trace.settings.retrieval.budget_tokens) == (True, 30)
    found = by_id(trace)
    assert all(c.scores.hybrid == c.scores.vector_similarity for c in found.values())
    assert found[ids["chai"]].scores.decay == pytest.approx(0.5)  # 2 days at a 2-day half-life
    assert all(c.scores.mmr_value is not None for c in found.values() if c.verdicts.relevance == "kept")
    assert trace.context_tokens <= 30 < base.context_tokens
    assert len(trace.context_ids) < len(base.context_ids)
    # the store's own settings are untouched by a per-call override
    assert world[0].settings.bm25_weight == Settings().bm25_weight


def test_context_max_items_caps_the_context_and_says_so(world):
    uncapped = run(world, overrides={"relevance_filter": "off"})
    trace = run(world, overrides={"relevance_filter": "off", "context_max_items": 2})
    assert len(uncapped.context_ids) > 2
    assert trace.context_ids == uncapped.context_ids[:2]
    assert {r.reason for r in trace.ranking[2:]} == {"cap"}
    assert {c.context_reason for c in by_id(trace).values() if c.id in uncapped.context_ids[2:]} == {"cap"}


def test_overrides_given_as_text_are_parsed(world):
    trace = run(world, overrides={"mmr_enabled": "true", "bm25_weight": "0.5", "assembly_mode": "stop"})
    assert (
        trace.settings.retrieval.mmr_enabled,
        trace.settings.retrieval.bm25_weight,
        trace.settings.retrieval.assembly_mode,
    ) == (
        True,
        0.5,
        "stop",
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"no_such_setting": 1},
        {"store": "/tmp/elsewhere"},
        {"openai_api_key": "sk-x"},
        {"bm25_weight": 1.5},
        {"bm25_weight": float("nan")},
        {"bm25_weight": "lots"},
        {"relevance_filter": "magic"},
        {"hops": 0},
        {"hops": 9},
        {"budget_tokens": 0},
        {"half_life_days": 0},
        {"top_k": True},
        {"x'; DROP TABLE traces;--": 1},
    ],
)
def test_bad_overrides_are_refused_and_nothing_is_stored(world, overrides):
    engine, _, _ = world
    before = engine.traces.list_traces(USER).total
    with pytest.raises(InvalidInput):
        run(world, overrides=overrides)
    assert engine.traces.list_traces(USER).total == before


@pytest.mark.parametrize("question", ["", "   \n", "x" * 40_000, "nul\x00byte", None, 42])
def test_bad_questions_are_refused(world, question):
    with pytest.raises(InvalidInput):
        run(world, question)


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_hostile_user_and_session_ids_are_refused(world, bad):
    engine, _, _ = world
    with pytest.raises(InvalidInput):
        engine.retrieval.retrieve(bad, QUESTION)
    with pytest.raises(InvalidInput):
        engine.retrieval.retrieve(USER, QUESTION, session_id=bad)


# --- strategies and query generation ------------------------------------------------------------------------------


def test_strategies_say_which_offline_strategy_ran(world, base):
    one = base
    assert {k: v for k, v in one.strategies.to_dict().items() if k not in ("vector_search", "full_text_search")} == {
        "query_generation": "question",
        "reasoner": "none (1 hop)",
        "relevance": "heuristic",
    }
    # Small tables are searched exactly either way: by LanceDB, or in memory once their version has been seen twice.
    assert re.fullmatch(
        r"semantic: (exact|in memory \(exact\)), episodic: (exact|in memory \(exact\)), "
        r"procedural: (exact|in memory \(exact\))",
        one.strategies.vector_search,
    )
    assert re.fullmatch(
        r"semantic: (LanceDB index|in memory \(BM25\)), episodic: (LanceDB index|in memory \(BM25\)), "
        r"procedural: (LanceDB index|in memory \(BM25\))",
        one.strategies.full_text_search,
    )
    two = run(world, hops=2)
    assert two.strategies.reasoner == "offline:bridge_entities"
    assert two.settings.retrieval.hops == 2


def test_the_llm_relevance_judge_without_an_llm_falls_back_to_the_heuristic_and_says_so(world):
    trace = run(world, overrides={"relevance_filter": "llm"})
    assert trace.strategies.relevance == "llm"
    assert trace.strategies.per_hop["relevance_hop1"] == "heuristic (no LLM configured)"
    assert all(c.scores.llm_relevance is None for c in candidates(trace))


LONG = "Could you please remind me what Priya usually drinks in the morning before our daily standup meeting starts?"


def test_a_long_question_is_condensed_offline_into_keywords(world):
    assert len(LONG) > 100
    trace = run(world, LONG)
    hop = trace.hops[0]
    # stopwords removed, content words kept in order
    assert hop.query == "please remind Priya usually drinks morning daily standup meeting starts"
    assert hop.proposed_by == "offline:keywords"
    assert trace.strategies.query_generation == "offline:keywords"
    assert hop.relevance_text == LONG  # parity: hop 1 filters against the user's message, not the query


def test_a_question_of_exactly_100_characters_is_used_as_is(world):
    question = ("Priya drinks what? " * 6)[:100]
    hop = run(world, question).hops[0]
    assert (hop.query, hop.proposed_by) == (question, "question")
    assert run(world, question + "!").hops[0].proposed_by == "offline:keywords"


def test_asking_for_the_llm_query_generator_without_an_llm_falls_back_to_keywords(world):
    hop = run(world, LONG, overrides={"query_generator": "llm"}).hops[0]
    assert hop.proposed_by == "offline:keywords"
    assert hop.proposal.fallback == "no LLM configured"


def test_offline_condensation_keeps_at_most_15_content_words():
    text = " ".join(f"word{n}" for n in range(30))
    assert condense_offline(text) == " ".join(f"word{n}" for n in range(15))
    assert condense_offline("what is it and why?") == ""


def test_a_long_question_keeps_its_last_clause_by_default_and_loses_it_under_llmemory(world):
    # The third event of a long question was cut by a 15-word condensation, so full-text search never saw it.
    events = (
        "What is the order of the three events: 'I signed up for the rewards program at ShopRite', 'I used a Buy "
        "One Get One Free coupon on Luvs diapers at Walmart', and 'I redeemed cashback for an Amazon gift card "
        "from Ibotta'?"
    )
    default = run(world, events, preset="default").hops[0]
    assert default.proposed_by == "offline:keywords"
    assert "Ibotta" in default.query and "ShopRite" in default.query
    parity = run(world, events).hops[0]
    assert len(parity.query.split()) == 15 and "Ibotta" not in parity.query


# --- the trace's life cycle ---------------------------------------------------------------------------------------


def test_a_trace_is_stored_listed_fetched_exported_and_deleted(world):
    engine, _, _ = world
    trace = run(world)
    listed = engine.traces.list_traces(USER, limit=500)
    summary = next(r for r in listed.rows if r["trace_id"] == trace.trace_id)
    assert summary["question"] == QUESTION and summary["context_ids"] == list(trace.context_ids)
    assert summary["stop_reason"] == "max_hops" and summary["hops"] == 1

    stored = engine.traces.get(trace.trace_id)
    assert stored.hops == trace.hops and stored.ranking == trace.ranking
    assert stored.settings == trace.settings and stored.context == trace.context
    assert engine.traces.get(trace.trace_id, USER) == stored

    exported = json.loads(engine.traces.export(trace.trace_id))
    assert exported["trace_id"] == trace.trace_id
    assert {"question", "settings", "hops", "stop_reason", "context", "context_ids", "timings_ms"} <= set(exported)
    first = exported["hops"][0]["candidates"][0]
    assert {"id", "kind", "text", "scores", "verdicts", "ranks", "in_context", "context_reason"} <= set(first)
    assert Traces.from_json(engine.traces.export(trace.trace_id)) == stored

    engine.traces.delete(trace.trace_id)
    with pytest.raises(NotFound):
        engine.traces.get(trace.trace_id)
    with pytest.raises(NotFound):
        engine.traces.delete(trace.trace_id)
    assert trace.trace_id not in {r["trace_id"] for r in engine.traces.list_traces(USER, limit=500).rows}


def test_a_trace_records_timings_per_stage_and_per_hop(base):
    trace = base
    assert {"query_generation", "merge_and_assembly", "pipeline", "trace_write", "total"} <= set(
        trace.timings_ms.as_dict()
    )
    assert {"embed_query", "search", "candidates", "scoring"} <= set(trace.hops[0].timings_ms.as_dict())
    assert all(v >= 0 for v in trace.timings_ms.as_dict().values())


def test_traces_are_listed_per_user_and_paginated(world):
    engine, _, now = world
    engine.retrieval.retrieve(OTHER, QUESTION, now=now)
    mine = engine.traces.list_traces(USER, limit=2)
    assert len(mine.rows) == 2 and mine.total >= 2 and mine.limit == 2
    assert {r["user_id"] for r in engine.traces.list_traces(USER, limit=500).rows} == {USER}
    page2 = engine.traces.list_traces(USER, limit=2, offset=2)
    assert not {r["trace_id"] for r in page2.rows} & {r["trace_id"] for r in mine.rows}


def test_a_trace_of_another_user_is_not_found_for_this_user(world):
    engine, _, now = world
    theirs = engine.retrieval.retrieve(OTHER, QUESTION, now=now)
    with pytest.raises(NotFound):
        engine.traces.get(theirs.trace_id, USER)
    with pytest.raises(NotFound):
        engine.traces.delete(theirs.trace_id, USER)
    assert engine.traces.get(theirs.trace_id, OTHER).trace_id == theirs.trace_id


def test_an_unsaved_retrieval_leaves_no_trace(world):
    engine, _, now = world
    trace = engine.retrieval.retrieve(USER, QUESTION, now=now, save=False)
    with pytest.raises(NotFound):
        engine.traces.get(trace.trace_id)


def test_unknown_trace_ids_are_not_found(world):
    engine, _, _ = world
    for call in (engine.traces.get, engine.traces.delete, engine.traces.export, engine.retrieval.replay):
        with pytest.raises(NotFound):
            call("tr_0000000000000000")


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_hostile_trace_ids_are_refused(world, bad):
    engine, _, _ = world
    before = engine.traces.list_traces().total
    for call in (engine.traces.get, engine.traces.delete, engine.traces.export, engine.retrieval.replay):
        with pytest.raises(InvalidInput):
            call(bad)
    with pytest.raises(InvalidInput):
        engine.traces.list_traces(bad)
    assert engine.traces.list_traces().total == before


@pytest.mark.parametrize("text", ["not json", "{}", '{"trace_id": "x"}', "[1, 2]"])
def test_a_trace_from_invalid_json_is_refused(text):
    with pytest.raises(InvalidInput):
        Traces.from_json(text)
