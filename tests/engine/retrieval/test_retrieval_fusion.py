"""The [memlens] stages beside llmemory's: rank fusion, the bounded decay, the filter's word rule and its protection
of each search's top results. Every number is computed by hand in the comments."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from engine import Settings
from engine.presets import PRESETS
from engine.retrieval.scores import Verdict
from engine.retrieval.stages import Scored, score_hop
from engine.trace.records import CandidateInput

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PARITY = Settings().with_overrides(PRESETS["llmemory"])


def inp(id: str, text: str, vec: float, fts: float | None = None, age_days: float = 0.0) -> CandidateInput:
    return CandidateInput(
        id=id,
        kind="semantic",
        text=text,
        created_at=(NOW - timedelta(days=age_days)).isoformat(),
        importance=None,
        evergreen=False,
        success_count=0,
        failure_count=0,
        feedback_net=0,
        vector_similarity=vec,
        fts_score=fts,
        found_by="both" if fts else "vector",
    )


def by_id(scored: list[Scored]) -> dict[str, Scored]:
    return {s.inp.id: s for s in scored}


def run(inputs, relevance_text="zzzz", **overrides) -> dict[str, Scored]:
    return by_id(score_hop(inputs, "zzzz", relevance_text, PARITY.with_overrides(overrides), NOW))


def test_rrf_fuses_ranks_not_scores_and_records_both_parts():
    # index BM25: a 9.0, b 3.0, c none; cosines: a 0.2, b 0.6, c 0.4. Ranks: vector b1 c2 a3, BM25 a1 b2 (c none).
    inputs = [inp("a", "x", 0.2, 9.0), inp("b", "y", 0.6, 3.0), inp("c", "z", 0.4)]
    s = run(inputs, fusion="rrf", rrf_k=60, bm25_weight=0.5, bm25_source="index", relevance_filter="off")
    # a: 0.5*61/63 + 0.5*61/61 = 0.484127 + 0.5 = 0.984127; b: 0.5*61/61 + 0.5*61/62 = 0.5 + 0.491935 = 0.991935
    # c: 0.5*61/62 + 0 (no query word, no BM25 rank) = 0.491935
    assert s["a"].scores.hybrid == pytest.approx(0.984127, abs=1e-6)
    assert s["b"].scores.hybrid == pytest.approx(0.991935, abs=1e-6)
    assert s["c"].scores.hybrid == pytest.approx(0.491935, abs=1e-6)
    assert (s["a"].scores.rank_vector, s["a"].scores.rank_bm25) == (3, 1)
    assert s["c"].scores.rank_bm25 is None and s["c"].scores.hybrid_bm25_part == 0.0
    for x in s.values():
        assert x.scores.hybrid_vector_part + x.scores.hybrid_bm25_part == pytest.approx(x.scores.hybrid)
    assert [
        x.inp.id
        for x in score_hop(
            inputs,
            "zzzz",
            "zzzz",
            PARITY.with_overrides(
                {"fusion": "rrf", "bm25_weight": 0.5, "bm25_source": "index", "relevance_filter": "off"}
            ),
            NOW,
        )
    ] == ["b", "a", "c"]


def test_rrf_ties_share_the_better_rank():
    inputs = [inp("a", "x", 0.5, 2.0), inp("b", "y", 0.5, 2.0)]
    s = run(inputs, fusion="rrf", bm25_weight=0.3, bm25_source="index", relevance_filter="off")
    assert s["a"].scores.hybrid == s["b"].scores.hybrid == pytest.approx(1.0)


def test_weighted_fusion_records_its_parts_too():
    s = run([inp("a", "x", 0.4, 2.0), inp("b", "y", 0.8, 1.0)], bm25_source="index", relevance_filter="off")
    # a: 0.3*1.0 + 0.7*0.4 = 0.58; b: 0.3*0.5 + 0.7*0.8 = 0.71
    assert (s["a"].scores.hybrid_bm25_part, s["a"].scores.hybrid_vector_part) == pytest.approx((0.3, 0.28))
    assert s["b"].scores.hybrid == pytest.approx(0.71)


def test_decay_floor_bounds_how_much_age_can_take():
    s = run(
        [inp("new", "x", 0.5, age_days=0), inp("old", "y", 0.5, age_days=60)],
        hybrid_enabled=False,
        relevance_filter="off",
        half_life_days=30,
        decay_floor=0.8,
    )
    # 0.8 + 0.2 * 2^-2 = 0.85 (llmemory: 0.25)
    assert s["old"].scores.decay == pytest.approx(0.85)
    assert s["new"].scores.decay == pytest.approx(1.0)
    assert s["old"].scores.temporal == pytest.approx(0.425)


def six(text_of_f: str) -> list[CandidateInput]:
    return [inp(f"n{i}", f"unrelated {i}", 0.1 + i / 100) for i in range(5)] + [inp("f", text_of_f, 0.05)]


def test_the_filter_reads_the_questions_words_without_their_punctuation():
    question = "What does Emma play, the guitar?"
    parity = run(six("Emma plays a guitar"), question, hybrid_enabled=False)
    assert parity["f"].verdicts.relevance == "kept"  # 'emma' is found (no punctuation on it)
    only_last = run(six("a guitar lesson"), question, hybrid_enabled=False)
    assert only_last["f"].verdicts.relevance == "dropped"  # llmemory looks for 'guitar?' and 'play,'
    fixed = run(six("a guitar lesson"), question, hybrid_enabled=False, relevance_words="words")
    assert fixed["f"].verdicts == Verdict("kept", "word_overlap 'guitar'")


def test_the_filter_never_drops_a_searchs_own_top_results_when_protected():
    # f has the lowest cosine but the only BM25 score: first by full-text search.
    inputs = six("no shared words at all")
    inputs[-1] = dataclasses.replace(inputs[-1], fts_score=4.0)
    dropped = run(inputs, "zzzz", hybrid_enabled=False, bm25_source="index")
    assert dropped["f"].verdicts.relevance == "dropped"
    kept = run(inputs, "zzzz", hybrid_enabled=False, bm25_source="index", relevance_protect_top=3)
    assert kept["f"].verdicts == Verdict("kept", "top_3 of full-text search (rank 1)")
    # the vector side: n4 (cosine 0.14) is first by vector, n2 third, n1 fourth
    assert kept["n2"].verdicts == Verdict("kept", "top_3 of vector search (rank 3)")
    assert kept["n1"].verdicts.relevance == "dropped"
