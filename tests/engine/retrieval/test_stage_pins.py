"""The scoring stages (engine/retrieval/stages.py) pinned case by case, through ``score_hop``: every expected number is
worked out by hand here from the formulas in the stage docstrings (z-scores and logistic, reciprocal ranks, decay
with a floor, clamped importance, Wilson bounds, the feedback factor, the later-hop discount), and every relevance
rule's exact wording. Complements test_retrieval_stages.py (llmemory's constants) at the edges: equal values,
boundaries, empty and missing inputs.

Fast and model-free: bench/mutation.py runs these against every mutant of stages.py."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from engine import Settings
from engine.retrieval.scores import CandidateScores, Verdict
from engine.retrieval.stages import Scored, _sigmoid, score_hop
from engine.retrieval.text import bm25_scores
from engine.trace.records import CandidateInput
from engine.vocab import Relevance

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
# Weighted fusion with bm25_weight 0: the hybrid is the cosine itself, so filter and later stages read plain numbers.
PLAIN = {
    "fusion": "weighted",
    "bm25_weight": 0.0,
    "bm25_source": "index",
    "preceding_bm25_weight": 0.0,
    "relevance_filter": "off",
    "decay_floor": 0.0,
    "feedback_weight": 0.0,
    "hop_weight": 1.0,
}


def cfg(**overrides) -> Settings:
    return Settings().with_overrides({**PLAIN, **overrides})


def inp(
    id: str,
    vec: float = 0.5,
    text: str = "",
    *,
    fts: float | None = None,
    preceding: str = "",
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
        fts_score=fts,
        found_by="vector",
        llm_relevance=llm,
        preceding_text=preceding,
    )


def run(inputs, settings: Settings, query: str = "q", relevance_text: str = "", hop: int = 1) -> dict[str, Scored]:
    return {s.inp.id: s for s in score_hop(inputs, query, relevance_text, settings, NOW, hop)}


def col(scored: dict[str, Scored], field: str) -> list:
    return [getattr(s.scores, field) for s in scored.values()]


# --- lexical -------------------------------------------------------------------------------------------------------


def test_the_preceding_text_counts_fully_for_short_texts_and_proportionally_less_for_long_ones():
    s = cfg(bm25_source="index", preceding_bm25_weight=0.5, preceding_full_words=4)
    long_text = "one two three four five six seven eight"  # 8 words: 4/8 of the weight
    got = run(
        [inp("a", text=long_text, fts=2.0, preceding="tea time"), inp("b", text="tea", fts=None, preceding="tea"),
         inp("c", text="x_y z", fts=1.0)],
        s,
        query="tea",
    )  # fmt: skip
    p = bm25_scores("tea", ["tea time", "tea", ""])  # BM25 itself is pinned in test_retrieval_stages.py
    assert p[0] > 0 and p[1] > 0 and p[2] == 0
    a, b, c = got["a"].scores, got["b"].scores, got["c"].scores
    assert (a.bm25_raw, b.bm25_raw, c.bm25_raw) == (2.0, 0.0, 1.0)  # the index's score; none is 0
    assert (a.preceding_weight, b.preceding_weight, c.preceding_weight) == (0.25, 0.5, None)
    assert (a.bm25_preceding, b.bm25_preceding, c.bm25_preceding) == (p[0], p[1], None)
    top = max(2.0 + 0.25 * p[0], 0.5 * p[1], 1.0)
    assert a.bm25_norm == pytest.approx((2.0 + 0.25 * p[0]) / top)
    assert b.bm25_norm == pytest.approx(0.5 * p[1] / top)
    assert c.bm25_norm == pytest.approx(1.0 / top)
    # preceding_full_words 0: the full weight whatever the length.
    got = run([inp("a", text=long_text, fts=2.0, preceding="tea time"), inp("c", fts=1.0)], cfg(
        preceding_bm25_weight=0.5, preceding_full_words=0), query="tea")  # fmt: skip
    assert got["a"].scores.preceding_weight == 0.5


def test_a_text_without_words_takes_the_full_preceding_weight():
    got = run([inp("a", text="...", fts=0.0, preceding="tea"), inp("b", fts=0.0)], cfg(
        preceding_bm25_weight=0.5, preceding_full_words=4), query="tea")  # fmt: skip
    assert got["a"].scores.preceding_weight == 0.5


def test_without_any_preceding_text_or_any_match_the_norm_is_zero_not_a_division_error():
    got = run([inp("a", fts=0.0), inp("b", fts=None)], cfg(preceding_bm25_weight=0.5))
    assert col(got, "bm25_norm") == [0.0, 0.0] and col(got, "bm25_preceding") == [None, None]


def test_bm25_over_the_candidates_reads_their_texts_not_the_index():
    got = run([inp("a", text="green tea", fts=9.0), inp("b", text="black coffee", fts=1.0)], cfg(
        bm25_source="candidates"), query="tea")  # fmt: skip
    assert got["a"].scores.bm25_raw == bm25_scores("tea", ["green tea", "black coffee"])[0] > 0
    assert got["b"].scores.bm25_raw == 0.0 and got["a"].scores.bm25_norm == 1.0


# --- fusion --------------------------------------------------------------------------------------------------------


def test_zscore_fusion_by_hand():
    # cosines 0.9, 0.5, 0.1: mean 0.5, sd sqrt(0.32/3) -> z 1.2247, 0, -1.2247
    # lexical 0, 3, 0: mean 1, sd sqrt(2) -> z -0.7071, 1.4142, -0.7071
    s = cfg(fusion="zscore", bm25_weight=0.5)
    got = run([inp("a", 0.9, fts=0.0), inp("b", 0.5, fts=3.0), inp("c", 0.1, fts=0.0)], s)
    a, b, c = got["a"].scores, got["b"].scores, got["c"].scores
    assert [a.z_vector, b.z_vector, c.z_vector] == pytest.approx([1.2247449, 0.0, -1.2247449])
    assert [a.z_bm25, b.z_bm25, c.z_bm25] == pytest.approx([-0.7071068, 1.4142136, -0.7071068])
    # hybrid sigmoid(0.5*z_bm25 + 0.5*z_vector); vector part sigmoid(0.5*z_vector); BM25 part the rest
    assert [a.hybrid, b.hybrid, c.hybrid] == pytest.approx([0.5643460, 0.6697615, 0.2756933])
    assert [a.hybrid_vector_part, b.hybrid_vector_part, c.hybrid_vector_part] == pytest.approx(
        [0.6484818, 0.5, 0.3515182]
    )
    assert a.hybrid_bm25_part == pytest.approx(0.5643460 - 0.6484818)
    assert (a.rank_vector, a.rank_bm25) == (None, None)
    assert list(got) == ["b", "a", "c"]


def test_zscores_of_equal_values_are_zero_and_the_hybrid_one_half():
    got = run([inp("a", 0.4, fts=1.0), inp("b", 0.4, fts=1.0)], cfg(fusion="zscore", bm25_weight=0.3))
    assert col(got, "z_vector") == [0.0, 0.0] and col(got, "z_bm25") == [0.0, 0.0]
    assert col(got, "hybrid") == [0.5, 0.5] and col(got, "hybrid_bm25_part") == [0.0, 0.0]
    (one,) = run([inp("a", 0.9, fts=5.0)], cfg(fusion="zscore")).values()
    assert one.scores.hybrid == 0.5


def test_the_logistic_is_one_half_at_zero_and_never_overflows():
    assert _sigmoid(0.0) == 0.5
    assert _sigmoid(1000.0) == 1.0 and _sigmoid(-1000.0) == 0.0
    assert _sigmoid(-2.0) == pytest.approx(1 / (1 + math.e**2)) and _sigmoid(2.0) == pytest.approx(1 / (1 + math.e**-2))


def test_rrf_by_hand_with_shared_ranks_and_no_bm25_part_without_a_match():
    s = cfg(fusion="rrf", bm25_weight=0.5, rrf_k=60.0)
    got = run([inp("a", 0.9, fts=0.0), inp("b", 0.9, fts=2.0), inp("c", 0.1, fts=5.0)], s)
    a, b, c = got["a"].scores, got["b"].scores, got["c"].scores
    assert (a.rank_vector, b.rank_vector, c.rank_vector) == (1, 1, 3)
    assert (a.rank_bm25, b.rank_bm25, c.rank_bm25) == (None, 2, 1)
    assert (a.hybrid_vector_part, c.hybrid_vector_part) == (0.5, pytest.approx(0.5 * 61 / 63))
    assert (a.hybrid_bm25_part, b.hybrid_bm25_part, c.hybrid_bm25_part) == (0.0, pytest.approx(0.5 * 61 / 62), 0.5)
    assert [a.hybrid, b.hybrid, c.hybrid] == pytest.approx([0.5, 0.5 + 0.5 * 61 / 62, 0.5 * 61 / 63 + 0.5])
    assert (a.z_vector, a.z_bm25) == (None, None)
    # Shared ranks: equal values take the better rank, the next value its position.
    got = run([inp("a", 0.3), inp("b", 0.1), inp("c", 0.3), inp("d", 0.2)], cfg(fusion="rrf", bm25_weight=0.0))
    assert [got[i].scores.rank_vector for i in "abcd"] == [1, 4, 1, 3]
    assert [got[i].scores.hybrid for i in "abcd"] == pytest.approx([1.0, 61 / 64, 1.0, 61 / 63])


def test_weighted_fusion_and_no_fusion():
    s = cfg(fusion="weighted", bm25_weight=0.25)
    got = run([inp("a", 0.8, fts=4.0), inp("b", 0.4, fts=1.0)], s)
    assert col(got, "hybrid_vector_part") == pytest.approx([0.6, 0.3])
    assert col(got, "hybrid_bm25_part") == pytest.approx([0.25, 0.0625])
    assert col(got, "hybrid") == pytest.approx([0.85, 0.3625])
    off = run([inp("a", 0.8, fts=4.0), inp("b", 0.4, fts=1.0)], cfg(hybrid_enabled=False, fusion="zscore"))
    assert col(off, "hybrid") == [0.8, 0.4] and col(off, "hybrid_bm25_part") == [0.0, 0.0]
    assert col(off, "hybrid_vector_part") == [0.8, 0.4] and col(off, "z_vector") == [None, None]


# --- relevance filter ----------------------------------------------------------------------------------------------


def rules(got: dict[str, Scored]) -> dict[str, tuple[str, str]]:
    return {i: (s.verdicts.relevance, s.verdicts.rule) for i, s in got.items()}


def test_the_heuristics_rules_in_order_and_their_wording():
    s = cfg(relevance_filter="heuristic", relevance_protect_top=2, relevance_min_score=0.5, relevance_min_word_chars=4)
    inputs = [
        inp("score", 0.5),
        inp("vector2", 0.45),
        inp("text1", 0.1, fts=3.0),
        inp("text2", 0.1, fts=1.0),
        inp("word", 0.1, "I play guitars"),
        inp("before", 0.1, preceding="lessons are fun"),
        inp("none", 0.1, "no match"),
    ]
    got = run(inputs, s, relevance_text="Guitar lessons? Any?")
    assert rules(got) == {
        "score": ("kept", "score 0.500 >= 0.5"),
        "vector2": ("kept", "top_2 of vector search (rank 2)"),
        "text1": ("kept", "top_2 of full-text search (rank 1)"),
        "text2": ("kept", "top_2 of full-text search (rank 2)"),
        "word": ("kept", "word_overlap 'guitar'"),
        "before": ("kept", "word_overlap 'lessons' (in its preceding text)"),
        "none": ("dropped", "score 0.100 < 0.5 and no shared word"),
    }
    assert all(s.verdicts.note is None for s in got.values())
    assert list(got)[-1] == "none" and got["none"].reason == "filtered" and not got["none"].kept


def test_a_full_text_rank_protects_only_a_candidate_that_matched_and_raw_words_keep_their_punctuation():
    s = cfg(relevance_filter="heuristic", relevance_protect_top=2, relevance_words="raw")
    inputs = [inp(f"v{n}", 0.9 - n / 10) for n in range(2)] + [
        inp("match", 0.1, fts=2.0),
        inp("nomatch", 0.1, fts=0.0),  # full-text rank 2 (shared by every 0), but it matched nothing
        inp("before", 0.1, preceding="lessons are fun"),  # "lessons?" is not in it
        inp("word", 0.1, "guitar lessons? yes"),
        inp("short", 0.1, "any"),
    ]
    got = run(inputs, s, relevance_text="Guitar lessons? Any?")
    assert got["match"].kept and not got["nomatch"].kept and not got["before"].kept and not got["short"].kept
    assert rules(got)["word"] == ("kept", "word_overlap 'guitar'")
    assert rules(got)["nomatch"] == ("dropped", "score 0.100 < 0.5 and no shared word")


def test_protect_top_0_protects_nothing():
    s = cfg(relevance_filter="heuristic", relevance_protect_top=0)
    got = run([inp(f"c{n}", 0.4 - n / 100, fts=1.0) for n in range(6)], s)
    assert {r for _, r in rules(got).values()} == {"score 0.400 < 0.5 and no shared word", *(
        f"score 0.{39 - n}0 < 0.5 and no shared word" for n in range(5))}  # fmt: skip
    assert not any(s.kept for s in got.values())


def test_few_candidates_are_all_kept_and_six_are_judged():
    five = [inp(f"c{n}", 0.1) for n in range(5)]
    s = cfg(relevance_filter="heuristic", relevance_keep_all_max=5, relevance_protect_top=0)
    assert set(rules(run(five, s)).values()) == {("kept", "few_candidates (5 <= 5)")}
    assert not any(x.kept for x in run([*five, inp("c5", 0.1)], s).values())


def test_the_llm_judge_keeps_at_or_above_its_threshold_and_falls_back_with_a_note():
    s = cfg(relevance_filter="llm", relevance_judge_threshold=0.7, relevance_keep_all_max=1, relevance_protect_top=0)
    got = run([inp("yes", 0.1, llm=0.7), inp("no", 0.9, llm=0.69)], s)
    assert rules(got) == {"yes": ("kept", "llm_judge 0.70 >= 0.7"), "no": ("dropped", "llm_judge 0.69 < 0.7")}
    assert list(got) == ["yes", "no"]
    fallback = run([inp("yes", 0.6, llm=0.9), inp("no", 0.1)], s)  # one verdict missing: the heuristic decides
    assert rules(fallback) == {
        "yes": ("kept", "score 0.600 >= 0.5"),
        "no": ("dropped", "score 0.100 < 0.5 and no shared word"),
    }
    assert {x.verdicts.note for x in fallback.values()} == {"llm judge unavailable: heuristic used"}
    few = run([inp("a", 0.1)], s)
    assert rules(few) == {"a": ("kept", "few_candidates (1 <= 1)")} and few["a"].verdicts.note is None


def test_the_filter_off_keeps_everything():
    got = run([inp(f"c{n}", 0.0) for n in range(7)], cfg(relevance_filter="off"))
    assert set(rules(got).values()) == {("kept", "filter_off")}


# --- temporal and importance ---------------------------------------------------------------------------------------


def test_decay_with_a_floor_whole_days_evergreen_and_future_dates():
    s = cfg(half_life_days=10.0, decay_floor=0.2, clamp_future_age=True)
    got = run(
        [inp("d10", age_days=10.9), inp("d20", age_days=20), inp("ever", age_days=50, evergreen=True),
         inp("future", age_days=-2.5), inp("today", age_days=0)],
        s,
    )  # fmt: skip
    assert {i: x.scores.age_days for i, x in got.items()} == {"d10": 10, "d20": 20, "ever": 50, "future": 0, "today": 0}
    # floor + (1 - floor) * 2^(-age/10)
    assert got["d10"].scores.decay == pytest.approx(0.6) and got["d20"].scores.decay == pytest.approx(0.4)
    assert got["ever"].scores.decay == 1.0 and got["future"].scores.decay == 1.0 and got["today"].scores.decay == 1.0
    assert got["d10"].scores.temporal == pytest.approx(0.5 * 0.6)
    unclamped = run([inp("future", age_days=-2.5)], cfg(half_life_days=10.0, decay_floor=0.2, clamp_future_age=False))
    assert unclamped["future"].scores.age_days == -3  # floor(-2.5 days)
    assert unclamped["future"].scores.decay == pytest.approx(0.2 + 0.8 * 2**0.3)


def test_importance_is_clamped_to_0_1_and_raised_to_its_weight():
    s = cfg(importance_weight=2.0)
    got = run(
        [inp("half", importance=0.5), inp("over", importance=1.7), inp("under", importance=-0.3),
         inp("none", importance=None)],
        s,
    )  # fmt: skip
    factors = {i: x.scores.importance_factor for i, x in got.items()}
    assert factors == {"half": 0.25, "over": 1.0, "under": 0.0, "none": 1.0}
    assert got["over"].scores.importance == 1.7 and got["none"].scores.importance is None
    assert got["half"].scores.temporal == 0.5 * 0.25
    zero = run([inp("half", importance=0.5)], cfg(importance_weight=0.0))
    assert zero["half"].scores.importance_factor == 1.0


def test_a_skills_importance_is_its_success_rate_or_wilson_lower_bound_and_one_half_untried():
    skills = [
        inp("s31", kind="procedural", successes=3, failures=1, importance=0.1),
        inp("new", kind="procedural"),
        inp("s03", kind="procedural", successes=0, failures=3),
    ]
    rate = run(skills, cfg(skill_importance="success_rate"))
    assert {i: x.scores.importance for i, x in rate.items()} == {"s31": 0.75, "new": 0.5, "s03": 0.0}
    wilson = run(skills, cfg(skill_importance="wilson"))
    # (p + z^2/2n - z*sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n) with p = 3/4, n = 4, z = 1.96
    assert wilson["s31"].scores.importance == pytest.approx(0.3006418, abs=1e-6)
    assert wilson["new"].scores.importance == 0.5 and wilson["s03"].scores.importance == 0.0
    item = run([inp("i", kind="semantic", successes=3, failures=1, importance=0.2)], cfg())
    assert item["i"].scores.importance == 0.2


# --- feedback and the later-hop discount ---------------------------------------------------------------------------


def test_the_feedback_factor_clamps_the_net_to_the_cap():
    s = cfg(feedback_weight=0.5, feedback_cap=4)
    got = run([inp("up", net=2), inp("cap", net=9), inp("down", net=-7), inp("zero", net=0)], s)
    assert {i: x.scores.feedback_factor for i, x in got.items()} == {"up": 1.25, "cap": 1.5, "down": 0.5, "zero": 1.0}
    assert {i: x.scores.feedback_net for i, x in got.items()} == {"up": 2, "cap": 9, "down": -7, "zero": 0}
    assert got["up"].scores.final == 0.5 * 1.25
    off = run([inp("up", net=2)], cfg(feedback_weight=0.0))
    assert off["up"].scores.feedback_factor == 1.0


def test_the_later_hop_discount_is_hop_weight_to_the_hop_minus_one():
    s = cfg(hop_weight=0.8)
    assert run([inp("a")], s, hop=1)["a"].scores.hop_factor == 1.0
    third = run([inp("a")], s, hop=3)["a"]
    assert third.scores.hop_factor == pytest.approx(0.64) and third.scores.final == pytest.approx(0.5 * 0.64)
    assert third.hop == 3 and third.final == third.scores.final


# --- order and ranks -----------------------------------------------------------------------------------------------


def test_kept_ones_by_final_then_dropped_ones_by_hybrid_with_each_stages_rank():
    s = cfg(relevance_filter="heuristic", relevance_keep_all_max=0, relevance_protect_top=0, half_life_days=10.0)
    old, mid = inp("old", 0.9, age_days=20), inp("mid", 0.7, age_days=10)
    got = score_hop([old, inp("drop1", 0.3), inp("new", 0.6), inp("drop2", 0.4), mid], "q", "", s, NOW)
    # final: old 0.9/4 = 0.225, new 0.6, mid 0.35; dropped by hybrid: drop2 0.4, drop1 0.3
    assert [x.inp.id for x in got] == ["new", "mid", "old", "drop2", "drop1"]
    ranks = {x.inp.id: (x.ranks.hybrid, x.ranks.filter, x.ranks.temporal, x.ranks.feedback) for x in got}
    assert ranks == {
        "old": (1, 1, 3, 3),
        "mid": (2, 2, 2, 2),
        "new": (3, 3, 1, 1),
        "drop2": (4, None, None, None),
        "drop1": (5, None, None, None),
    }
    assert all(x.ranks.final is None and x.ranks.mmr is None for x in got)


def test_feedback_reorders_after_the_temporal_stage_and_ties_keep_search_order():
    s = cfg(feedback_weight=0.5, feedback_cap=5)
    got = score_hop([inp("a", 0.5), inp("b", 0.5), inp("c", 0.45, net=5), inp("d", 0.5)], "q", "", s, NOW)
    # c: 0.45 * 1.5 = 0.675 first; a, b, d tie at 0.5 and keep their search order
    assert [x.inp.id for x in got] == ["c", "a", "b", "d"]
    assert [x.ranks.temporal for x in got] == [4, 1, 2, 3] and [x.ranks.feedback for x in got] == [1, 2, 3, 4]
    assert score_hop([], "q", "", s, NOW) == []


def test_the_scores_record_carries_the_search_values_and_leaves_mmr_empty():
    (x,) = score_hop([inp("a", 0.25, fts=7.0, llm=0.3)], "q", "", cfg(), NOW)
    assert (x.scores.vector_similarity, x.scores.fts_score, x.scores.llm_relevance) == (0.25, 7.0, 0.3)
    assert (x.scores.mmr_relevance, x.scores.mmr_max_similarity, x.scores.mmr_value) == (None, None, None)
    assert (x.scores.temporal, x.scores.final, x.scores.feedback_net) == (0.25, 0.25, 0)


def test_a_word_exactly_as_long_as_the_minimum_counts():
    s = cfg(relevance_filter="heuristic", relevance_min_word_chars=3, relevance_protect_top=0)
    got = run([*(inp(f"c{n}", 0.1) for n in range(5)), inp("tea", 0.1, "green tea")], s, relevance_text="Tea? ok")
    assert rules(got)["tea"] == ("kept", "word_overlap 'tea'")
    assert rules(got)["c0"] == ("dropped", "score 0.100 < 0.5 and no shared word")


def test_a_score_record_read_from_a_record_is_that_record():
    scores = CandidateScores(hybrid=0.5, final=0.25)
    assert CandidateScores.from_dict(scores) == scores
    assert CandidateScores.from_dict({"hybrid": 0.5, "final": 0.25, "from_a_later_version": 1}) == scores
    assert CandidateScores.from_dict(None) == CandidateScores()


def test_a_stored_verdicts_plain_string_is_read_into_the_relevance_vocabulary():
    stored = Verdict.from_dict({"relevance": "dropped", "rule": "score 0.100 < 0.5 and no shared word"})
    assert type(stored.relevance) is Relevance and stored.relevance is Relevance.DROPPED and not stored.kept
    assert type(Verdict("kept").relevance) is Relevance and Verdict("kept").kept
    with pytest.raises(ValueError):
        Verdict("maybe")  # not a verdict the filter gives
