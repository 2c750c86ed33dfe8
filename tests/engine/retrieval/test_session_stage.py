"""The session stage: a hop's candidates grouped into sessions (one kind, one created_at instant, or a chain of
instants no more than session_window_minutes apart), each session scored by the sum of its session_top_n best
hybrid scores over the best session's, and session_weight times that score added to every member's hybrid.

The expected numbers are computed by hand in the comments; on a real store the stage is recorded per candidate, in
the hop's timings and the trace's JSON, replayed exactly, switched off by a replay, and explained by why-not.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from engine import MemoryEngine, Settings
from engine.presets import PRESETS
from engine.retrieval.session_stage import session_keys, session_stage
from engine.retrieval.stages import score_hop
from engine.trace.codec import trace_json
from engine.trace.records import CandidateInput
from engine.trace.why_not import why_not
from tests.support.stored_trace import empty_trace

T1 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2024, 5, 8, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def inp(id: str, at: datetime, vec: float = 0.5, kind: str = "semantic") -> CandidateInput:
    return CandidateInput(id, kind, f"text {id}", at.isoformat(), None, True, 0, 0, 0, vec, None, "vector")


def test_a_session_is_one_kind_stamped_at_one_instant_or_a_chain_within_the_window():
    stamps = [T1, T1, T1 + timedelta(minutes=20), T1 + timedelta(minutes=45), T1]
    kinds = ["semantic", "semantic", "semantic", "semantic", "episodic"]
    inputs = [inp(f"m{n}", at, kind=k) for n, (at, k) in enumerate(zip(stamps, kinds))]
    same_instant = session_keys(inputs, 0)
    assert same_instant[0] == same_instant[1]  # same instant, same kind
    assert len({same_instant[0], same_instant[2], same_instant[3], same_instant[4]}) == 4  # the episode apart
    # 30 minutes: +20 joins (a gap of 20), +45 joins +20 (a gap of 25): a chain, though 45 > 30 from the start
    chained = session_keys(inputs, 30)
    assert chained[0] == chained[1] == chained[2] == chained[3] != chained[4]
    assert len(set(session_keys(inputs, 15))) == 4  # a gap of 20 breaks the chain


def test_a_sessions_score_sums_its_best_members_over_the_best_sessions_and_adds_weight_times_it():
    inputs = [inp("a1", T1), inp("a2", T1), inp("a3", T1), inp("b1", T2)]
    out = session_stage(inputs, [0.9, 0.5, 0.1, 0.8], weight=0.5, top_n=2, window_minutes=0)
    # session A: 0.9 + 0.5 = 1.4 (its third member does not count); session B: 0.8. Scores 1.4/1.4, 0.8/1.4.
    assert out.score == pytest.approx((1.0, 1.0, 1.0, 0.571429))
    assert out.rank == (1, 1, 1, 2)
    assert out.part == pytest.approx((0.5, 0.5, 0.5, 0.285714))
    assert out.sessions == 2
    # With the max alone (top_n 1): A 0.9, B 0.8 -> B scores 0.8/0.9
    single = session_stage(inputs, [0.9, 0.5, 0.1, 0.8], weight=0.5, top_n=1, window_minutes=0)
    assert single.score[3] == pytest.approx(0.888889)


def test_sessions_with_equal_scores_share_the_better_rank():
    inputs = [inp("a", T1), inp("b", T2), inp("c", T2 + timedelta(days=1))]
    assert session_stage(inputs, [0.4, 0.4, 0.2], 1.0, 2, 0).rank == (1, 1, 3)


def test_one_session_or_weight_zero_adds_nothing():
    one = session_stage([inp("a", T1), inp("b", T1)], [0.9, 0.2], weight=0.5, top_n=2, window_minutes=0)
    assert one.score == (1.0, 1.0) and one.rank == (1, 1) and one.part == (0.0, 0.0)
    off = session_stage([inp("a", T1), inp("b", T2)], [0.9, 0.2], weight=0.0, top_n=2, window_minutes=0)
    assert off.score == (None, None) and off.rank == (None, None) and off.part == (None, None)


def test_in_score_hop_the_session_part_lifts_a_weak_turn_of_the_best_session_past_a_stronger_stray():
    # The cosine alone is the hybrid (hybrid off), memories are evergreen without importance or feedback, the filter
    # is off: final = cosine + session part. A: 0.9 + 0.3 = 1.2; B: 0.5 -> scores 1, 0.5/1.2 = 0.416667; parts (weight
    # 0.5) 0.5 and 0.208333: a2 0.3 + 0.5 = 0.8 over b1 0.5 + 0.208333 = 0.708333.
    settings = Settings().with_overrides(
        {
            **PRESETS["llmemory"],
            "hybrid_enabled": False,
            "relevance_filter": "off",
            "session_weight": 0.5,
            "session_top_n": 2,
        }
    )
    inputs = [inp("a1", T1, 0.9), inp("a2", T1, 0.3), inp("b1", T2, 0.5)]
    timings: dict[str, float] = {}
    scored = {s.inp.id: s for s in score_hop(inputs, "q", "q", settings, NOW, 1, timings)}
    assert scored["a2"].scores.hybrid == pytest.approx(0.8)
    assert scored["b1"].scores.hybrid == pytest.approx(0.708333)
    assert scored["a2"].final == pytest.approx(0.8) and scored["b1"].final == pytest.approx(0.708333)
    assert scored["a2"].scores.session_rank == 1 and scored["b1"].scores.session_rank == 2
    assert scored["a2"].scores.hybrid_session_part == pytest.approx(0.5)
    assert "sessions" in timings
    # Without the stage the stray outranks the weak turn, and nothing of the stage is recorded
    plain = {s.inp.id: s for s in score_hop(inputs, "q", "q", settings.with_overrides({"session_weight": 0.0}), NOW)}
    assert plain["b1"].final > plain["a2"].final
    assert plain["a2"].scores.session_score is None and plain["a2"].scores.hybrid == pytest.approx(0.3)


# -- on a store -------------------------------------------------------------------------------------------------
QUESTION = "What did Priya bring to the lake picnic?"
SESSION_ONE = [
    "Priya organised a picnic at the lake on Saturday.",
    "She brought a basket of mangoes and a thermos of chai.",  # the answer: shares no word with the question
    "Everyone stayed until the sun went down over the water.",
]
STRAYS = [
    "The office fridge needs cleaning before Friday.",
    "Bring the projector to the quarterly review.",
    "The bus to the airport leaves every twenty minutes.",
    "My cousin's wedding is in Lisbon next spring.",
]
ON = {"session_weight": 0.5, "session_top_n": 2, "top_k": 10}


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


@pytest.fixture(scope="module")
def ids(engine: MemoryEngine) -> dict[str, str]:
    u = "sessions"
    one = [engine.items.remember(u, text, created_at=T1).id for text in SESSION_ONE]
    strays = [engine.items.remember(u, text, created_at=T2 + timedelta(days=n)).id for n, text in enumerate(STRAYS)]
    return {"answer": one[1], "picnic": one[0], "stray": strays[0]}


def candidate(trace, item_id: str):
    return next(c for c in trace.hops[0].candidates if c.id == item_id)


def test_the_trace_records_each_candidates_session_and_replays_it_exactly(engine, ids):
    trace = engine.retrieval.retrieve("sessions", QUESTION, overrides=ON, now=NOW)
    answer, picnic, stray = (candidate(trace, ids[k]) for k in ("answer", "picnic", "stray"))
    # The picnic's session holds the best match: first of the hop's 5 sessions, its members lifted by 0.5 * 1
    assert answer.scores.session_rank == picnic.scores.session_rank == 1
    assert answer.scores.session_score == 1.0 and answer.scores.hybrid_session_part == pytest.approx(0.5)
    assert stray.scores.session_rank > 1 and stray.scores.hybrid_session_part < 0.5
    assert "sessions" in trace.hops[0].timings_ms.as_dict()
    # Through the stored JSON: the scores come back, and a replay with the trace's own settings is the same ranking
    stored = engine.traces.get(trace.trace_id)
    assert candidate(stored, ids["answer"]).scores == answer.scores
    assert json.loads(trace_json(trace))["settings"]["session_weight"] == 0.5
    replayed = engine.retrieval.replay_trace(stored)
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # Replayed without the stage: what a retrieval without it ranks
    off = engine.retrieval.replay_trace(stored, overrides={"session_weight": 0.0})
    live_off = engine.retrieval.retrieve("sessions", QUESTION, overrides={**ON, "session_weight": 0.0}, now=NOW)
    assert [r.id for r in off.ranking] == [r.id for r in live_off.ranking]
    assert candidate(live_off, ids["answer"]).scores.session_score is None


def test_why_not_says_where_a_candidates_session_ranked(engine, ids):
    trace = engine.retrieval.retrieve("sessions", QUESTION, overrides=ON, now=NOW, save=False)
    row = why_not(trace, ids["answer"]).rows[0]
    assert "its session ranked 1 of 5 (score 1.00, +0.500)" in row["what happened"]
    plain = engine.retrieval.retrieve("sessions", QUESTION, overrides={"top_k": 10}, now=NOW, save=False)
    assert "session" not in why_not(plain, ids["answer"]).rows[0]["what happened"]


def test_traces_from_before_the_stage_read_as_run_without_it():
    old = {"top_k": 10, "now": NOW.isoformat()}
    settings = empty_trace(old, NOW).settings
    assert settings.retrieval.session_weight == 0.0 and "session_weight" not in settings.absent


def test_the_llmemory_preset_runs_without_the_session_stage():
    assert Settings().with_overrides(PRESETS["llmemory"]).session_weight == 0.0


def test_a_two_hop_trace_records_why_its_second_hop_ran_or_not(engine, ids):
    trace = engine.retrieval.retrieve("sessions", QUESTION, hops=2, overrides=ON, now=NOW, save=False)
    decision = trace.strategies.per_hop["hop2"]
    if len(trace.hops) == 2:
        assert decision.startswith(f"ran: {trace.hops[1].proposed_by} proposed {trace.hops[1].query[:120]!r}")
    else:
        assert decision == f"not run ({trace.stop_reason}): {trace.stop_details['why']}"
    one = engine.retrieval.retrieve("sessions", QUESTION, overrides=ON, now=NOW, save=False)
    assert "hop2" not in one.strategies.per_hop
