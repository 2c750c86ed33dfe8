"""adaptive_bm25: how much BM25 counts in a hop is read from how far the best cosine stands above the k-th
(engine/retrieval/lexical_weight.py). Every number is computed by hand in the comments."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

from engine import MemoryEngine, Settings
from engine.presets import PRESETS
from engine.retrieval.lexical_weight import lexical_weight
from engine.retrieval.stages import score_hop
from engine.trace.codec import trace_json
from engine.trace.hop_records import FusionWeight
from engine.trace.why_not import why_not
from tests.engine.retrieval.test_retrieval_fusion import inp
from tests.support.stored_trace import empty_trace

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ON = Settings().with_overrides({"adaptive_bm25": True, "bm25_weight": 0.5, "adaptive_bm25_rank": 5})


def weight(cosines, **overrides) -> FusionWeight:
    return lexical_weight(cosines, ON.with_overrides(overrides))


def test_a_clear_head_turns_bm25_off():
    # 5th best / best = 0.45 / 0.9 = 0.5 <= 0.6 (the clear ratio)
    w = weight([0.9, 0.8, 0.7, 0.6, 0.45, 0.3])
    assert (w.weight, w.set_weight, w.rule, w.rank) == (0.0, 0.5, "clear head", 5)
    assert w.ratio == pytest.approx(0.5)
    assert w.lowered
    assert w.describe() == (
        "BM25 weight 0 of 0.5: the cosine ranking has a clear head, so BM25 does not count "
        "(5th best cosine / best = 0.50)"
    )


def test_flat_cosines_keep_the_set_weight():
    # 0.45 / 0.5 = 0.9 >= 0.85 (the flat ratio)
    w = weight([0.5, 0.49, 0.48, 0.47, 0.45, 0.1])
    assert (w.weight, w.rule) == (0.5, "flat") and not w.lowered
    assert w.ratio == pytest.approx(0.9)


def test_between_the_ratios_the_weight_is_linear():
    # 0.725 / 1.0 = 0.725: (0.725 - 0.6) / (0.85 - 0.6) = 0.5 of 0.5 = 0.25; the order of the cosines does not matter
    w = weight([0.2, 0.725, 1.0, 0.9, 0.8, 0.75])
    assert w.rule == "between" and w.weight == pytest.approx(0.25)
    # rank 3 instead: 0.8 / 1.0 = 0.8 -> (0.8 - 0.6) / 0.25 = 0.8 of 0.5 = 0.4
    assert weight([0.2, 0.725, 1.0, 0.9, 0.8, 0.75], adaptive_bm25_rank=3).weight == pytest.approx(0.4)


def test_the_weight_stays_as_set_when_nothing_can_be_read():
    assert weight([0.9, 0.1, 0.1, 0.1, 0.1]).rule == "few candidates"  # 5 candidates, rank 5: no tail to compare
    assert weight([0.0, -0.2, -0.3, -0.3, -0.4, -0.5]).rule == "no positive cosine"
    off = weight([0.9, 0.8, 0.7, 0.6, 0.45, 0.3], adaptive_bm25=False)
    assert (off.weight, off.rule, off.ratio) == (0.5, "fixed", None)
    for w in (weight([0.9] * 3), weight([0.0] * 7)):
        assert w.weight == 0.5 and not w.lowered
    # a negative k-th cosine is a head as clear as 0
    assert weight([0.9, 0.5, 0.3, 0.1, -0.2, -0.3]).ratio == 0.0


def test_a_question_that_compares_events_keeps_the_set_weight_whatever_the_cosines():
    head = [0.9, 0.8, 0.7, 0.6, 0.45, 0.3]  # 0.45 / 0.9 = 0.5: a clear head, weight 0 for any other question
    question = "How many days passed between the day I sold the car and the day I bought the bike?"
    on = lexical_weight(head, ON.with_overrides({"adaptive_bm25_events": True}), question)
    assert (on.weight, on.rule, on.cue, on.ratio) == (0.5, "compares events", "time between events", None)
    assert not on.lowered
    assert on.describe() == (
        "BM25 weight 0.5: as set: the question compares events (time between events), so a clear cosine head may "
        "hold only one of them"
    )
    assert FusionWeight.from_dict(json.loads(json.dumps(on.to_dict()))) == on
    assert on.to_dict()["cue"] == "time between events"
    # the rule off, or a question about one event: the cosines decide
    assert lexical_weight(head, ON.with_overrides({"adaptive_bm25_events": False}), question).rule == "clear head"
    one = lexical_weight(head, ON.with_overrides({"adaptive_bm25_events": True}), "When did I buy the bike?")
    assert (one.weight, one.rule, one.cue) == (0.0, "clear head", None)
    # adaptive_bm25 off wins: the set weight, as every hop before round three
    fixed = ON.with_overrides({"adaptive_bm25": False, "adaptive_bm25_events": True})
    assert lexical_weight(head, fixed, question).rule == "fixed"


def test_the_record_reads_back_from_its_stored_form():
    w = weight([0.2, 0.725, 1.0, 0.9, 0.8, 0.75])
    assert FusionWeight.from_dict(json.loads(json.dumps(w.to_dict()))) == w
    assert FusionWeight.from_dict(None) is None
    assert weight([0.9] * 3).to_dict() == {"set_weight": 0.5, "weight": 0.5, "rule": "few candidates", "rank": 5}


def test_under_zscore_fusion_a_clear_head_ranks_by_the_cosine_alone():
    # cosines 0.9 0.5 0.4 0.3 0.2 0.1: 5th / best = 0.2 / 0.9 = 0.22 -> weight 0. BM25 favours f, the weakest by
    # meaning; with weight 0 the hybrid is sigmoid(z_vector) and BM25 adds nothing.
    cos = [0.9, 0.5, 0.4, 0.3, 0.2, 0.1]
    fts = [1.0, 1.0, 1.0, 1.0, 1.0, 9.0]
    inputs = [inp(n, "x", c, f) for n, c, f in zip("abcdef", cos, fts, strict=True)]
    settings = ON.with_overrides({"fusion": "zscore", "bm25_source": "index", "relevance_filter": "off"})
    scored = {s.inp.id: s for s in score_hop(inputs, "x", "x", settings, NOW)}
    mean = sum(cos) / 6  # 0.4
    sd = math.sqrt(sum((c - mean) ** 2 for c in cos) / 6)  # 0.2582
    assert scored["a"].scores.hybrid == pytest.approx(1 / (1 + math.exp(-(0.9 - mean) / sd)))
    assert scored["f"].scores.hybrid_bm25_part == pytest.approx(0.0)
    assert [s.inp.id for s in score_hop(inputs, "x", "x", settings, NOW)][:2] == ["a", "b"]
    # With the weight as set (0.5), f's BM25 z-score (2.236) lifts it above b: 0.5*2.236 + 0.5*(-1.549) = 0.34 > 0.19
    fixed = score_hop(inputs, "x", "x", settings.with_overrides({"adaptive_bm25": False}), NOW)
    assert [s.inp.id for s in fixed][:2] == ["a", "f"]


def test_the_llmemory_preset_and_older_traces_keep_the_set_weight():
    assert Settings().with_overrides(PRESETS["llmemory"]).adaptive_bm25 is False
    assert Settings().adaptive_bm25 is True
    old = empty_trace({"top_k": 10, "now": NOW.isoformat()}, NOW)
    assert old.settings.retrieval.adaptive_bm25 is False and "adaptive_bm25" not in old.settings.absent
    assert old.settings.retrieval.adaptive_bm25_events is False  # a trace from before the rule replays without it


# -- on a store -------------------------------------------------------------------------------------------------
QUESTION = "Which instrument does Priya play in the orchestra?"
TEXTS = [
    "Priya plays the cello in the city orchestra every Thursday.",
    "The orchestra hall is closed for repairs this month.",
    "Priya's brother plays football on weekends.",
    "Which bus goes to the orchestra hall from the station?",
    "The instrument shop on Elm Street sells second-hand violins.",
    "We had pancakes for breakfast.",
    "The printer on the third floor is out of toner.",
]
HEAD = {"adaptive_bm25_clear_ratio": 0.99, "adaptive_bm25_flat_ratio": 1.0}  # any real store has this clear a head


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    eng = MemoryEngine.open(settings=module_settings, embedder=embedder)
    for text in TEXTS:
        eng.items.remember("orchestra", text)
    return eng


def test_each_hop_records_the_weight_it_used_and_a_replay_reproduces_it(engine):
    trace = engine.retrieval.retrieve("orchestra", QUESTION, overrides={"top_k": 10}, now=NOW)
    hop = trace.hops[0]
    cosines = [c.scores.vector_similarity for c in hop.candidates]
    assert hop.fusion == lexical_weight(cosines, engine.settings)  # the record is what the cosines give
    stored = engine.traces.get(trace.trace_id)
    assert stored.hops[0].fusion == hop.fusion
    assert json.loads(trace_json(trace))["hops"][0]["fusion"]["rule"] == hop.fusion.rule
    replayed = engine.retrieval.replay_trace(stored)
    assert replayed.hops[0].fusion == hop.fusion
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]


def test_a_replay_with_another_ratio_uses_that_weight_as_a_live_retrieval_would(engine):
    trace = engine.retrieval.retrieve("orchestra", QUESTION, overrides={"top_k": 10}, now=NOW)
    head = engine.retrieval.replay_trace(trace, overrides=HEAD)
    live = engine.retrieval.retrieve("orchestra", QUESTION, overrides={"top_k": 10, **HEAD}, now=NOW, save=False)
    assert head.hops[0].fusion.weight == 0.0 and head.hops[0].fusion.rule == "clear head"
    assert [(r.id, r.final) for r in head.ranking] == [(r.id, r.final) for r in live.ranking]
    assert all(c.scores.hybrid_bm25_part == pytest.approx(0.0) for c in live.hops[0].candidates)
    off = engine.retrieval.replay_trace(trace, overrides={"adaptive_bm25": False})
    assert off.hops[0].fusion is None  # the weight as set, as every trace before the setting


def test_why_not_names_a_lowered_weight(engine):
    trace = engine.retrieval.retrieve("orchestra", QUESTION, overrides={"top_k": 10, **HEAD}, now=NOW, save=False)
    last = trace.hops[0].candidates[-1]
    what = why_not(trace, last.id).rows[0]["what happened"]
    assert "this hop's BM25 weight 0 of 0.5: the cosine ranking has a clear head" in what
    flat = {"adaptive_bm25_clear_ratio": 0.0, "adaptive_bm25_flat_ratio": 0.01}
    kept = engine.retrieval.retrieve("orchestra", QUESTION, overrides={"top_k": 10, **flat}, now=NOW, save=False)
    assert kept.hops[0].fusion.rule == "flat"
    assert "BM25 weight" not in why_not(kept, last.id).rows[0]["what happened"]


def test_a_question_comparing_events_records_its_cue_and_replays_with_it(engine):
    question = "How many days passed between the day Priya joined the orchestra and the day the hall closed?"
    rule = {**HEAD, "adaptive_bm25_events": True, "top_k": 10}
    trace = engine.retrieval.retrieve("orchestra", question, overrides=rule, now=NOW)
    fusion = trace.hops[0].fusion
    assert (fusion.rule, fusion.cue, fusion.weight) == ("compares events", "time between events", 0.5)
    stored = engine.traces.get(trace.trace_id)
    assert stored.hops[0].fusion == fusion
    replayed = engine.retrieval.replay_trace(stored)
    assert replayed.hops[0].fusion == fusion
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # What if the rule were off: the clear head lowers BM25 to 0, as a live retrieval without it does
    off = engine.retrieval.replay_trace(stored, overrides={"adaptive_bm25_events": False})
    live = engine.retrieval.retrieve(
        "orchestra", question, overrides={**rule, "adaptive_bm25_events": False}, now=NOW, save=False
    )
    assert off.hops[0].fusion.rule == live.hops[0].fusion.rule == "clear head"
    assert [(r.id, r.final) for r in off.ranking] == [(r.id, r.final) for r in live.ranking]
    last = trace.hops[0].candidates[-1]
    assert "BM25 weight" not in why_not(trace, last.id).rows[0]["what happened"]  # the weight was not lowered
