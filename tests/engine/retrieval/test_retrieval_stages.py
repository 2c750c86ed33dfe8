"""The scoring stages as pure functions, checked against numbers computed by hand from llmemory's formulas
(reference §6). Every expected value is written out here; none is obtained by calling the code under test."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta

import pytest

from engine import Settings
from engine.errors import InvalidInput
from engine.presets import PRESETS
from engine.retrieval.assembly import assemble, merge, mmr, render_context, similarity_function, token_cost
from engine.retrieval.scores import CandidateScores, Verdict
from engine.retrieval.stages import Scored, score_hop
from engine.retrieval.text import bm25_scores, bm25_tokens, jaccard
from engine.trace.records import CandidateInput

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
# llmemory's rules and constants are the `llmemory` preset; these tests check them against the reference.
DEFAULTS = Settings().with_overrides(PRESETS["llmemory"])


def cfg(**overrides) -> Settings:
    return DEFAULTS.with_overrides(overrides)


def inp(
    id: str,
    text: str = "",
    vec: float = 0.5,
    *,
    age_days: float = 0.0,
    importance: float | None = None,
    evergreen: bool = False,
    kind: str = "semantic",
    successes: int = 0,
    failures: int = 0,
    net: int = 0,
    llm: float | None = None,
) -> CandidateInput:
    return CandidateInput(
        id=id,
        kind=kind,
        text=text or f"memory {id}",
        created_at=(NOW - timedelta(days=age_days)).isoformat(),
        importance=importance,
        evergreen=evergreen,
        success_count=successes,
        failure_count=failures,
        feedback_net=net,
        vector_similarity=vec,
        fts_score=None,
        found_by="vector",
        llm_relevance=llm,
    )


def by_id(scored: list[Scored]) -> dict[str, Scored]:
    return {s.inp.id: s for s in scored}


def plain(text: str, final: float, id: str | None = None) -> Scored:
    """A candidate that has been through the hop stages with the given final score."""
    return Scored(inp(id or text, text), 1, CandidateScores(hybrid=final, final=final))


# --- parity defaults ---------------------------------------------------------------------------------------------


def test_the_llmemory_preset_holds_llmemorys_constants_and_rules():
    s = DEFAULTS
    assert (s.top_k, s.query_condense_chars, s.hybrid_enabled, s.bm25_weight) == (20, 100, True, 0.3)
    assert (s.relevance_keep_all_max, s.relevance_min_score, s.relevance_min_word_chars) == (5, 0.5, 4)
    assert (s.half_life_days, s.importance_weight, s.skill_importance) == (30.0, 1.0, "success_rate")
    assert (s.feedback_weight, s.feedback_cap) == (0.5, 5)
    assert (s.mmr_enabled, s.mmr_lambda, s.mmr_similarity) == (False, 0.7, "jaccard")
    assert s.budget_tokens == 2000
    assert s.relevance_filter == "heuristic" and s.relevance_words == "raw" and s.relevance_protect_top == 0
    assert (s.fusion, s.bm25_source, s.decay_floor) == ("weighted", "candidates", 0.0)
    assert s.assembly_mode == "stop"
    assert s.context_max_items == 0
    assert s.preceding_bm25_weight == 0.0 and s.hop_weight == 1.0
    # the one rule every preset shares: a memory dated after `now` is not fresher than today's
    assert s.clamp_future_age is True


# --- BM25 over the candidate set ---------------------------------------------------------------------------------

DOCS = ["apple banana apple", "banana cherry", "cherry date elderberry fig"]
# By hand: N=3, avgdl=(3+2+4)/3=3, df(apple)=1, df(cherry)=2
#   idf(apple)  = ln((3-1+0.5)/(1+0.5)+1) = ln(2.6667) = 0.980829
#   idf(cherry) = ln((3-2+0.5)/(2+0.5)+1) = ln(1.6)    = 0.470004
#   doc1: apple tf=2 len=3: 0.980829 * 2*2.5/(2+1.5*(0.25+0.75*3/3))   = 0.980829 * 1.428571 = 1.401185
#   doc2: cherry tf=1 len=2: 0.470004 * 2.5/(1+1.5*(0.25+0.75*2/3))    = 0.470004 * 1.176471 = 0.552945
#   doc3: cherry tf=1 len=4: 0.470004 * 2.5/(1+1.5*(0.25+0.75*4/3))    = 0.470004 * 0.869565 = 0.408699
BM25_EXPECTED = [1.401185, 0.552945, 0.408699]


def test_bm25_over_the_candidate_set_matches_hand_computed_values():
    assert bm25_scores("apple cherry", DOCS) == pytest.approx(BM25_EXPECTED, abs=1e-5)


def test_bm25_counts_each_query_term_once_and_ignores_unknown_terms():
    assert bm25_scores("apple apple cherry zebra", DOCS) == pytest.approx(BM25_EXPECTED, abs=1e-5)


def test_bm25_of_a_query_without_tokens_is_zero_everywhere():
    assert bm25_scores("a ? !", DOCS) == [0.0, 0.0, 0.0]
    assert bm25_scores("apple", []) == []


def test_bm25_tokenizer_is_llmemorys_ascii_runs_of_two_or_more():
    # Parity quirk: accented words get no BM25 credit, single characters are not tokens.
    assert bm25_tokens("Café Zürich x 42 API-v2") == ["42", "api", "v2"]


def test_bm25_norm_divides_by_the_maximum_and_hybrid_blends_with_weight_0_3():
    vecs = {"d1": 0.2, "d2": 0.5, "d3": 0.9}
    inputs = [inp(k, text, vecs[k]) for k, text in zip(("d1", "d2", "d3"), DOCS, strict=False)]
    scored = by_id(score_hop(inputs, "apple cherry", "apple cherry", cfg(relevance_filter="off"), NOW))
    # bm25_norm: 1.401185/1.401185 = 1, 0.552945/1.401185 = 0.394627, 0.408699/1.401185 = 0.291681
    # hybrid = 0.3*norm + 0.7*vec: 0.3+0.14 = 0.44, 0.118388+0.35 = 0.468388, 0.087504+0.63 = 0.717504
    assert [scored[k].scores.bm25_raw for k in ("d1", "d2", "d3")] == pytest.approx(BM25_EXPECTED, abs=1e-5)
    assert [scored[k].scores.bm25_norm for k in ("d1", "d2", "d3")] == pytest.approx(
        [1.0, 0.394627, 0.291681], abs=1e-5
    )
    assert [scored[k].scores.hybrid for k in ("d1", "d2", "d3")] == pytest.approx([0.44, 0.468388, 0.717504], abs=1e-5)
    assert [scored[k].ranks.hybrid for k in ("d1", "d2", "d3")] == [3, 2, 1]


def test_bm25_norm_with_a_zero_maximum_divides_by_one():
    inputs = [inp("d1", DOCS[0], 0.2), inp("d2", DOCS[1], 0.6)]
    scored = by_id(score_hop(inputs, "zebra", "zebra", cfg(), NOW))
    assert [scored[k].scores.bm25_norm for k in ("d1", "d2")] == [0.0, 0.0]
    assert [scored[k].scores.hybrid for k in ("d1", "d2")] == pytest.approx([0.14, 0.42])


def test_bm25_weight_override_changes_the_blend():
    inputs = [inp("d1", DOCS[0], 0.2), inp("d2", DOCS[1], 0.5)]
    # two docs: idf(apple)=ln(1.5/1.5+1)=ln 2, only doc1 has it -> norm 1 and 0
    scored = by_id(score_hop(inputs, "apple", "apple", cfg(bm25_weight=0.5), NOW))
    assert scored["d1"].scores.hybrid == pytest.approx(0.5 * 1.0 + 0.5 * 0.2)
    assert scored["d2"].scores.hybrid == pytest.approx(0.5 * 0.0 + 0.5 * 0.5)


def test_hybrid_disabled_uses_the_vector_similarity_alone():
    inputs = [inp("d1", DOCS[0], 0.2), inp("d2", DOCS[1], 0.5)]
    scored = by_id(score_hop(inputs, "apple", "apple", cfg(hybrid_enabled=False), NOW))
    assert scored["d1"].scores.hybrid == 0.2
    assert scored["d2"].scores.hybrid == 0.5


# --- relevance filter ---------------------------------------------------------------------------------------------

QUESTION = "Which car does Priya own"  # words longer than 3 characters: which, does, priya


def six_candidates(**extra) -> list[CandidateInput]:
    return [
        inp("overlap-substring", "Priyanka moved to Berlin", 0.1, **extra),
        inp("no-overlap", "Bob likes cats", 0.1, **extra),
        inp("short-word-only", "A red car and a blue van", 0.1, **extra),
        inp("score-at-threshold", "Unrelated words here", 0.5, **extra),
        inp("score-below", "Nothing to see", 0.49, **extra),
        inp("overlap-uppercase", "PRIYA OWNS A BIKE", 0.0, **extra),
    ]


def filtered(inputs, settings) -> dict[str, Scored]:
    # hybrid off: the filter's score is exactly the vector similarity given above
    return by_id(score_hop(inputs, "zzzz", QUESTION, settings.with_overrides({"hybrid_enabled": False}), NOW))


def test_relevance_filter_keeps_everything_with_five_or_fewer_candidates():
    scored = filtered(six_candidates()[:5], cfg())
    assert all(s.kept for s in scored.values())
    assert {s.verdicts.rule for s in scored.values()} == {"few_candidates (5 <= 5)"}


def test_the_query_words_in_a_preceding_text_add_to_bm25_at_preceding_bm25_weight():
    # Index BM25 as the text's score (fts_score), the preceding texts DOCS scored over the candidate set.
    def with_before(id, fts, before):
        return dataclasses.replace(inp(id, f"reply {id}"), fts_score=fts, preceding_text=before)

    inputs = [
        with_before("d1", 2.0, DOCS[0]),
        with_before("d2", None, DOCS[1]),
        with_before("d3", None, DOCS[2]),
        with_before("d4", 1.0, ""),
    ]
    # By hand, over the preceding texts [DOCS..., ""]: N=4, avgdl=(3+2+4+0)/4=2.25
    #   idf(apple) = ln(3.5/1.5+1) = 1.203973, idf(cherry) = ln(2.5/2.5+1) = 0.693147
    #   d1: 1.203973 * 2*2.5/(2+1.5*(0.25+0.75*3/2.25)) = 1.203973 * 1.290323 = 1.553514
    #   d2: 0.693147 * 2.5/(1+1.5*(0.25+0.75*2/2.25))   = 0.693147 * 1.052632 = 0.729628
    #   d3: 0.693147 * 2.5/(1+1.5*(0.25+0.75*4/2.25))   = 0.693147 * 0.740741 = 0.513442
    # bm25_raw + 0.5*bm25_preceding: 2.776757, 0.364814, 0.256721, 1.0 -> divided by 2.776757
    scored = by_id(
        score_hop(
            inputs,
            "apple cherry",
            "apple cherry",
            cfg(bm25_source="index", relevance_filter="off", preceding_bm25_weight=0.5),
            NOW,
        )
    )
    ids = ("d1", "d2", "d3", "d4")
    assert [scored[k].scores.bm25_raw for k in ids] == [2.0, 0.0, 0.0, 1.0]
    assert [scored[k].scores.bm25_preceding for k in ids[:3]] == pytest.approx([1.553514, 0.729628, 0.513442], abs=1e-5)
    assert scored["d4"].scores.bm25_preceding is None  # no preceding text: nothing to score
    assert [scored[k].scores.bm25_norm for k in ids] == pytest.approx([1.0, 0.131381, 0.092454, 0.360132], abs=1e-5)

    # Weight 0: the text's own BM25 only, as llmemory computes it; the preceding BM25 is still shown.
    off = by_id(
        score_hop(
            inputs,
            "apple cherry",
            "apple cherry",
            cfg(bm25_source="index", relevance_filter="off", preceding_bm25_weight=0),
            NOW,
        )
    )
    assert [off[k].scores.bm25_norm for k in ids] == pytest.approx([1.0, 0.0, 0.0, 0.5])
    assert off["d1"].scores.bm25_preceding == pytest.approx(1.553514, abs=1e-5)


def test_relevance_filter_keeps_score_at_least_0_5_or_a_shared_word_longer_than_3_chars():
    scored = filtered(six_candidates(), cfg())
    verdicts = {k: (s.verdicts.relevance, s.verdicts.rule) for k, s in scored.items()}
    assert verdicts == {
        "overlap-substring": ("kept", "word_overlap 'priya'"),  # parity: substring match
        "no-overlap": ("dropped", "score 0.100 < 0.5 and no shared word"),
        "short-word-only": ("dropped", "score 0.100 < 0.5 and no shared word"),  # 'car' has only 3 characters
        "score-at-threshold": ("kept", "score 0.500 >= 0.5"),
        "score-below": ("dropped", "score 0.490 < 0.5 and no shared word"),
        "overlap-uppercase": ("kept", "word_overlap 'priya'"),
    }


def test_relevance_filter_also_finds_a_shared_word_in_a_memorys_preceding_text():
    before = {"no-overlap": "Alice asked: which pet does Bob like?", "short-word-only": "Is the car red?"}
    inputs = [dataclasses.replace(i, preceding_text=before.get(i.id, "")) for i in six_candidates()]
    verdicts = {k: (s.verdicts.relevance, s.verdicts.rule) for k, s in filtered(inputs, cfg()).items()}
    assert verdicts["no-overlap"] == ("kept", "word_overlap 'which' (in its preceding text)")
    assert verdicts["short-word-only"] == ("dropped", "score 0.100 < 0.5 and no shared word")  # 'car': 3 chars
    assert verdicts["overlap-substring"] == ("kept", "word_overlap 'priya'")  # its own text is read first


def test_dropped_candidates_come_last_marked_filtered_without_later_ranks():
    ordered = score_hop(six_candidates(), "zzzz", QUESTION, cfg(hybrid_enabled=False), NOW)
    assert [s.kept for s in ordered] == [True, True, True, False, False, False]
    for s in ordered[3:]:
        assert s.reason == "filtered"
        assert s.ranks.hybrid is not None and s.ranks.filter is None and s.ranks.feedback is None
    assert sorted(s.ranks.filter for s in ordered[:3]) == [1, 2, 3]


def test_relevance_filter_thresholds_are_settings():
    lower = filtered(six_candidates(), cfg(relevance_min_score=0.45))
    assert lower["score-below"].kept
    assert lower["score-below"].verdicts.rule == "score 0.490 >= 0.45"
    three_chars = filtered(six_candidates(), cfg(relevance_min_word_chars=3))
    assert three_chars["short-word-only"].verdicts.rule == "word_overlap 'car'"
    keep_all = filtered(six_candidates(), cfg(relevance_keep_all_max=6))
    assert len(keep_all) == 6 and all(s.kept for s in keep_all.values())


def test_relevance_filter_off_keeps_everything():
    scored = filtered(six_candidates(), cfg(relevance_filter="off"))
    assert all(s.kept for s in scored.values())
    assert {s.verdicts.rule for s in scored.values()} == {"filter_off"}


def test_relevance_filter_llm_mode_uses_the_stored_verdicts_with_threshold_0_7():
    llm = [0.9, 0.7, 0.69, 0.3, 1.0, 0.0]
    inputs = [dataclasses.replace(c, llm_relevance=v) for c, v in zip(six_candidates(), llm, strict=False)]
    scored = filtered(inputs, cfg(relevance_filter="llm"))
    assert {k: s.kept for k, s in scored.items()} == {
        "overlap-substring": True,
        "no-overlap": True,
        "short-word-only": False,
        "score-at-threshold": False,  # the judge overrules the heuristic's score rule
        "score-below": True,
        "overlap-uppercase": False,
    }
    assert scored["short-word-only"].verdicts.rule == "llm_judge 0.69 < 0.7"
    assert scored["no-overlap"].verdicts.rule == "llm_judge 0.70 >= 0.7"
    assert scored["no-overlap"].scores.llm_relevance == 0.7


def test_relevance_filter_llm_mode_without_verdicts_falls_back_to_the_heuristic_and_says_so():
    scored = filtered(six_candidates(), cfg(relevance_filter="llm"))
    assert not scored["no-overlap"].kept
    assert scored["overlap-substring"].verdicts.rule == "word_overlap 'priya'"
    assert all("heuristic" in s.verdicts.note for s in scored.values())


# --- temporal decay and importance --------------------------------------------------------------------------------


def temporal(inputs, **overrides) -> dict[str, Scored]:
    return by_id(score_hop(inputs, "zzzz", "zzzz", cfg(hybrid_enabled=False, relevance_filter="off", **overrides), NOW))


def test_decay_halves_every_30_days_of_whole_age_and_evergreen_never_decays():
    scored = temporal(
        [
            inp("new", age_days=0),
            inp("month", age_days=30),
            inp("partial", age_days=45.9),
            inp("evergreen", age_days=400, evergreen=True),
            inp("future", age_days=-0.5),
        ]
    )
    assert {k: s.scores.age_days for k, s in scored.items()} == {
        "new": 0,
        "month": 30,
        "partial": 45,
        "evergreen": 400,
        "future": 0,
    }
    # exp(-ln2/30 * 45) = 2^-1.5 = 0.353553; a memory dated after `now` is as fresh as today's, never fresher
    assert {k: s.scores.decay for k, s in scored.items()} == pytest.approx(
        {"new": 1.0, "month": 0.5, "partial": 0.353553, "evergreen": 1.0, "future": 1.0}, abs=1e-6
    )


def test_traces_stored_before_the_age_clamp_replay_with_their_negative_age():
    # llmemory floors a future age to -1 day: 2^(1/30) = 1.023374. Only old traces (clamp_future_age=False) do.
    scored = temporal([inp("future", age_days=-0.5)], clamp_future_age=False)
    assert scored["future"].scores.age_days == -1
    assert scored["future"].scores.decay == pytest.approx(1.023374, abs=1e-6)


def test_half_life_is_a_setting():
    scored = temporal([inp("month", age_days=30)], half_life_days=10)
    assert scored["month"].scores.decay == pytest.approx(0.125)


def test_reference_example_score_1_importance_0_9_age_30_gives_0_45():
    scored = temporal([inp("fact", vec=1.0, importance=0.9, age_days=30), inp("resource", vec=0.9)])
    assert scored["fact"].scores.temporal == pytest.approx(0.45)
    assert scored["fact"].scores.final == pytest.approx(0.45)
    assert scored["resource"].scores.temporal == pytest.approx(0.9)
    assert scored["resource"].ranks.temporal == 1


def test_importance_factor_is_clamped_importance_to_the_weight_and_missing_importance_is_neutral():
    inputs = [
        inp("low", importance=0.2),
        inp("none", importance=None),
        inp("above", importance=1.5),
        inp("below", importance=-0.3),
    ]
    assert {k: s.scores.importance_factor for k, s in temporal(inputs).items()} == pytest.approx(
        {"low": 0.2, "none": 1.0, "above": 1.0, "below": 0.0}
    )
    assert temporal(inputs, importance_weight=2)["low"].scores.importance_factor == pytest.approx(0.04)
    assert {s.scores.importance_factor for s in temporal(inputs, importance_weight=0).values()} == {1.0}


def test_skill_importance_is_the_success_rate_with_one_half_before_any_trial():
    inputs = [
        inp("untried", kind="procedural"),
        inp("failed-once", kind="procedural", failures=1),
        inp("three-of-four", kind="procedural", successes=3, failures=1),
    ]
    scored = temporal(inputs)
    assert {k: s.scores.importance for k, s in scored.items()} == {
        "untried": 0.5,
        "failed-once": 0.0,
        "three-of-four": 0.75,
    }
    assert scored["failed-once"].scores.final == 0.0
    assert scored["untried"].scores.final == pytest.approx(0.25)


def test_skill_importance_wilson_mode_uses_the_95_percent_lower_bound():
    inputs = [
        inp("three-of-four", kind="procedural", successes=3, failures=1),
        inp("one-of-one", kind="procedural", successes=1),
        inp("failed-once", kind="procedural", failures=1),
    ]
    scored = temporal(inputs, skill_importance="wilson")
    # Wilson lower bound, z=1.959964: (p + z²/2n - z*sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    assert {k: s.scores.importance for k, s in scored.items()} == pytest.approx(
        {"three-of-four": 0.300642, "one-of-one": 0.206549, "failed-once": 0.0}, abs=1e-6
    )


# --- feedback -----------------------------------------------------------------------------------------------------


def test_feedback_factor_is_1_plus_half_the_clamped_net_over_5():
    nets = {"plus5": 5, "minus5": -5, "plus10": 10, "minus2": -2, "zero": 0, "plus1": 1}
    scored = temporal([inp(k, net=v) for k, v in nets.items()])
    assert {k: s.scores.feedback_factor for k, s in scored.items()} == pytest.approx(
        {"plus5": 1.5, "minus5": 0.5, "plus10": 1.5, "minus2": 0.8, "zero": 1.0, "plus1": 1.1}
    )
    assert {k: s.scores.final for k, s in scored.items()} == pytest.approx(
        {"plus5": 0.75, "minus5": 0.25, "plus10": 0.75, "minus2": 0.4, "zero": 0.5, "plus1": 0.55}
    )
    assert scored["minus5"].ranks.feedback == 6
    assert scored["plus1"].ranks.feedback == 3
    assert {k: s.scores.feedback_net for k, s in scored.items()} == nets


def test_feedback_weight_0_disables_feedback_and_the_cap_is_a_setting():
    inputs = [inp("plus5", net=5), inp("minus5", net=-5)]
    assert {s.scores.feedback_factor for s in temporal(inputs, feedback_weight=0).values()} == {1.0}
    capped = temporal(inputs, feedback_cap=10)
    assert capped["plus5"].scores.feedback_factor == pytest.approx(1.25)
    assert capped["minus5"].scores.feedback_factor == pytest.approx(0.75)


def test_feedback_moves_a_candidate_past_a_better_scored_one():
    scored = temporal([inp("better", vec=0.6, net=-3), inp("worse", vec=0.5)])
    # better: 0.6 * (1 - 0.5*3/5) = 0.42 < worse: 0.5
    assert scored["better"].ranks.temporal == 1
    assert scored["better"].ranks.feedback == 2
    assert scored["better"].scores.final == pytest.approx(0.42)


# --- MMR ----------------------------------------------------------------------------------------------------------


def test_jaccard_is_over_unique_bm25_token_sets():
    assert jaccard("Red apple, red pie!", "apple tart") == pytest.approx(1 / 4)
    assert jaccard("red apple pie", "red apple tart") == pytest.approx(2 / 4)
    assert jaccard("a ?", "apple") == 0.0


def test_mmr_greedy_with_lambda_0_7_and_jaccard_hand_checked():
    a, b, c = plain("red apple pie", 1.0), plain("red apple tart", 0.9), plain("blue ocean waves", 0.7)
    order = mmr([a, b, c], 0.7, similarity_function([a, b, c], "jaccard", None))
    # pick 1: a 0.7*1.0=0.70, b 0.63, c 0.49 -> a
    # pick 2: b 0.63-0.3*jaccard(b,a)=0.63-0.15=0.48, c 0.49-0 = 0.49 -> c
    # pick 3: b 0.48 (max similarity 0.5 to a)
    assert [s.inp.text for s in order] == ["red apple pie", "blue ocean waves", "red apple tart"]
    assert [s.scores.mmr_value for s in order] == pytest.approx([0.7, 0.49, 0.48])
    assert [s.scores.mmr_max_similarity for s in order] == pytest.approx([0.0, 0.0, 0.5])
    assert [s.scores.mmr_relevance for s in order] == pytest.approx([1.0, 0.7, 0.9])
    assert [s.ranks.mmr for s in order] == [1, 2, 3]
    assert [s.scores.final for s in order] == [1.0, 0.7, 0.9]  # reorders only: scores untouched


def test_mmr_with_lambda_1_keeps_the_relevance_order_and_never_drops():
    items = [plain("red apple pie", 1.0), plain("red apple tart", 0.9), plain("red apple pie too", 0.8)]
    order = mmr(list(items), 1.0, similarity_function(items, "jaccard", None))
    assert [s.inp.id for s in order] == [s.inp.id for s in items]


def test_mmr_embedding_similarity_uses_the_recorded_cosines_and_jaccard_otherwise():
    items = [plain("red apple", 1.0, "a"), plain("red pear", 0.9, "b")]
    recorded = {("a", "b"): 0.8, ("b", "a"): 0.8}
    sim = similarity_function(items, "embedding", lambda x, y: recorded[(x, y)])
    assert sim("a", "b") == 0.8 and sim("b", "a") == 0.8
    # nothing recorded (a trace without cosines): token-set Jaccard, |{red}| / |{red, apple, pear}|
    assert similarity_function(items, "embedding", None)("a", "b") == pytest.approx(1 / 3)


# --- merge --------------------------------------------------------------------------------------------------------


def test_merge_keeps_the_higher_final_score_and_marks_the_other_copy_merged():
    h1 = [plain("x", 0.4, "X"), plain("y", 0.3, "Y"), plain("z", 0.9, "Z")]
    h1[2] = dataclasses.replace(h1[2], verdicts=Verdict("dropped", "filtered"))
    h2 = [dataclasses.replace(s, hop=2) for s in (plain("x", 0.6, "X"), plain("w", 0.5, "W"))]
    ranked = merge([h1, h2])
    assert [(s.inp.id, s.hop) for s in ranked] == [("X", 2), ("W", 2), ("Y", 1)]
    assert h1[0] not in ranked and h1[0].kept  # merged: kept, but the other copy scored higher
    assert h2[0] in ranked


def test_merge_keeps_the_earlier_copy_when_it_scored_higher_and_keys_by_text_without_an_id():
    h1 = [plain("same text", 0.8, "")]
    h2 = [plain("same text", 0.2, "")]
    ranked = merge([h1, h2])
    assert ranked == [h1[0]]
    assert h2[0] not in ranked  # merged


def test_hop_weight_discounts_later_hops_final_scores_by_its_power_and_keeps_their_order():
    inputs = [inp("a", vec=0.5), inp("b", vec=0.4)]
    settings = cfg(hybrid_enabled=False, relevance_filter="off", hop_weight=0.8)
    for hop, factor in ((1, 1.0), (2, 0.8), (3, 0.64)):  # 0.8 ** (hop - 1)
        scored = score_hop(inputs, "zzzz", "zzzz", settings, NOW, hop)
        assert [s.inp.id for s in scored] == ["a", "b"]
        assert [s.scores.hop_factor for s in scored] == pytest.approx([factor, factor])
        # final = hybrid 0.5 / 0.4 * decay 1 * importance 1 * feedback 1 * hop factor
        assert [s.final for s in scored] == pytest.approx([0.5 * factor, 0.4 * factor])
    # the parity default leaves every hop's scores as they were
    assert [
        s.final for s in score_hop(inputs, "zzzz", "zzzz", cfg(hybrid_enabled=False, relevance_filter="off"), NOW, 2)
    ] == [0.5, 0.4]


def test_hop_weight_keeps_the_questions_results_ahead_unless_a_later_hop_beats_them_by_the_margin():
    h1 = score_hop(
        [inp("X", vec=0.5), inp("Y", vec=0.45)],
        "zzzz",
        "zzzz",
        cfg(hybrid_enabled=False, relevance_filter="off", hop_weight=0.8),
        NOW,
        1,
    )
    h2 = score_hop(
        [inp("X", vec=0.6), inp("W", vec=0.55), inp("V", vec=0.7)],
        "zzzz",
        "zzzz",
        cfg(hybrid_enabled=False, relevance_filter="off", hop_weight=0.8),
        NOW,
        2,
    )
    # hop 2 after the 0.8 discount: V 0.56, X 0.48, W 0.44. X keeps its hop-1 copy (0.5 > 0.48); W falls behind
    # Y (0.44 < 0.45); V beats the margin (0.7 * 0.8 = 0.56 > 0.5) and comes first.
    ranked = merge([h1, h2])
    assert [(s.inp.id, s.hop) for s in ranked] == [("V", 2), ("X", 1), ("Y", 1), ("W", 2)]
    assert [s.final for s in ranked] == pytest.approx([0.56, 0.5, 0.45, 0.44])
    assert by_id(h2)["X"] not in ranked  # merged


def test_hop_weight_is_validated():
    for bad in (-0.1, 1.5):
        with pytest.raises(InvalidInput):
            cfg(hop_weight=bad)
    assert DEFAULTS.hop_weight == 1.0


# --- assembly -----------------------------------------------------------------------------------------------------


def test_token_cost_is_ceil_of_characters_over_4():
    assert [token_cost(t) for t in ("", "abc", "abcd", "abcde", "é" * 8)] == [0, 1, 1, 2, 2]


def budget_items() -> list[Scored]:
    return [plain("a" * 40, 0.9), plain("b" * 100, 0.8), plain("c" * 20, 0.7), plain("d", 0.6)]  # 10, 25, 5, 1


def reasons(assembly) -> list[str]:
    return [p.reason for p in assembly.placements]


def test_skip_assembly_passes_over_a_memory_that_does_not_fit():
    done = assemble(budget_items(), 20, "skip")
    assert reasons(done) == ["context", "budget", "context", "context"]
    assert [p.tokens for p in done.placements] == [10, 25, 5, 1]
    assert (len(done.chosen), done.tokens_used) == (3, 16)


def test_stop_assembly_ends_at_the_first_memory_that_does_not_fit():
    done = assemble(budget_items(), 20, "stop")
    assert reasons(done) == ["context", "budget", "budget_stop", "budget_stop"]
    assert (len(done.chosen), done.tokens_used) == (1, 10)
    assert [p.in_context for p in done.placements] == [True, False, False, False]


def test_a_memory_exactly_filling_the_budget_fits():
    assert reasons(assemble(budget_items(), 10, "stop"))[:2] == ["context", "budget"]


def test_context_max_items_caps_the_context():
    done = assemble(budget_items(), 20, "skip", max_items=2)
    assert reasons(done) == ["context", "budget", "context", "cap"]
    assert len(done.chosen) == 2


def test_context_uses_llmemorys_block_format_and_is_empty_without_memories():
    s = plain("Priya works in Bangalore.", 0.45, "f")
    assert render_context([s]) == (
        "=== RELEVANT MEMORIES ===\n\n[2025-06-01T12:00:00+00:00] (confidence: 0.45)\n"
        "Priya works in Bangalore.\n\n=== END MEMORIES ==="
    )
    empty = assemble([], 2000, "skip")
    assert (empty.context, empty.chosen, empty.tokens_used, empty.placements) == ("", (), 0, ())


def test_scores_are_finite_everywhere_for_a_realistic_mix():
    inputs = six_candidates(importance=0.7, age_days=12) + [inp("skill", kind="procedural", successes=2)]
    scored = score_hop(inputs, "Priya car", QUESTION, cfg(), NOW)
    assert len(scored) == len(inputs)
    for s in scored:
        assert all(math.isfinite(v) for v in s.scores.to_dict().values() if isinstance(v, float))
