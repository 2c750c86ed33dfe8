"""Merge, MMR, final ranks and assembly (engine/retrieval/assembly.py) pinned by values worked out by hand: which copy
of a memory the merge keeps on a tie, MMR's pick order, scores and ranks with a similarity table written here, each
placement's reason and tokens, and the context's exact text.

Fast and model-free: bench/mutation.py runs these against every mutant of assembly.py."""

from __future__ import annotations

import pytest

from engine.retrieval.assembly import assemble, merge, mmr, similarity_function, token_cost, with_final_ranks
from engine.retrieval.scores import CandidateScores, StageRanks, Verdict
from engine.retrieval.stages import Scored
from engine.trace.records import CandidateInput
from tests.support.candidate_inputs import candidate_input


def inp(id: str, text: str = "", created_at: str = "2025-06-01T12:00:00+00:00") -> CandidateInput:
    return candidate_input(id, text or f"memory {id}", created_at=created_at)


def scored(id: str, final: float, hop: int = 1, text: str = "", kept: bool = True, **ranks: int) -> Scored:
    verdict = Verdict("kept", "test") if kept else Verdict("dropped", "test")
    return Scored(inp(id, text), hop, CandidateScores(hybrid=final, final=final), verdict, StageRanks(**ranks))


def ids(items) -> list[str]:
    return [s.inp.id for s in items]


# --- merge ---------------------------------------------------------------------------------------------------------


def test_merge_keeps_the_better_copy_the_earlier_on_a_tie_and_leaves_out_the_dropped():
    hop1 = [scored("a", 0.5), scored("b", 0.4), scored("c", 0.9, kept=False)]
    hop2 = [scored("a", 0.5, hop=2), scored("b", 0.45, hop=2), scored("d", 0.5, hop=2), scored("e", 0.1, hop=2)]
    out = merge([hop1, hop2])
    assert [(s.inp.id, s.hop) for s in out] == [("a", 1), ("d", 2), ("b", 2), ("e", 2)]  # a and d tie: hop 1 first
    assert merge([]) == [] and merge([[scored("x", 0.3, kept=False)]]) == []


def test_merge_keys_a_memory_without_an_id_by_its_text():
    hop1 = [scored("", 0.2, text="same text"), scored("", 0.3, text="other text")]
    hop2 = [scored("", 0.6, hop=2, text="same text")]
    assert [(s.inp.text, s.hop, s.final) for s in merge([hop1, hop2])] == [
        ("same text", 2, 0.6),
        ("other text", 1, 0.3),
    ]


def test_merge_orders_equal_scores_by_hop_not_by_arrival():
    out = merge([[scored("x", 0.7, hop=1)], [scored("y", 0.7, hop=2)], [scored("z", 0.7, hop=3)]][::-1])
    assert [s.hop for s in out] == [1, 2, 3]


# --- MMR -----------------------------------------------------------------------------------------------------------

SIM = {frozenset(p): v for p, v in [(("a", "b"), 0.8), (("a", "c"), 0.1), (("b", "c"), 0.3), (("a", "d"), 0.6)]}


def table_sim(x: str, y: str) -> float:
    return SIM.get(frozenset((x, y)), 0.0)


def test_mmr_picks_greedily_and_records_each_picks_scores_and_rank():
    items = [scored("a", 1.0), scored("b", 0.9), scored("c", 0.6)]
    out = mmr(items, 0.5, table_sim)
    # pick 1: a 0.5*1.0 = 0.5, b 0.45, c 0.3                          -> a (max sim 0)
    # pick 2: b 0.45 - 0.5*0.8 = 0.05, c 0.3 - 0.5*0.1 = 0.25         -> c (max sim 0.1)
    # pick 3: b 0.45 - 0.5*max(0.8, 0.3) = 0.05                        -> b (max sim 0.8)
    assert ids(out) == ["a", "c", "b"]
    assert [s.scores.mmr_value for s in out] == pytest.approx([0.5, 0.25, 0.05])
    assert [s.scores.mmr_max_similarity for s in out] == pytest.approx([0.0, 0.1, 0.8])
    assert [s.scores.mmr_relevance for s in out] == [1.0, 0.6, 0.9]
    assert [s.ranks.mmr for s in out] == [1, 2, 3]
    assert [s.final for s in out] == [1.0, 0.6, 0.9]  # reorders only


def test_mmr_with_negative_values_still_picks_the_best_and_keeps_the_first_on_a_tie():
    # lam 0: value = -max_sim; every first pick is -0 (a tie: the first item wins).
    out = mmr([scored("b", 0.2), scored("a", 0.9), scored("d", 0.5)], 0.0, table_sim)
    # pick 2: a -0.8, d -0.0 -> d; pick 3: a -max(0.8, 0.6) = -0.8
    assert ids(out) == ["b", "d", "a"]
    assert [s.scores.mmr_value for s in out] == pytest.approx([0.0, 0.0, -0.8])
    assert mmr([], 0.7, table_sim) == []


def test_mmr_keeps_the_earlier_stage_ranks():
    (out,) = mmr([scored("a", 1.0, hybrid=3, filter=2, temporal=4, feedback=1)], 0.7, table_sim)
    assert (out.ranks.hybrid, out.ranks.filter, out.ranks.temporal, out.ranks.feedback, out.ranks.mmr) == (
        3,
        2,
        4,
        1,
        1,
    )


def test_similarity_function_is_jaccard_of_the_texts_unless_cosines_are_given_for_embedding():
    items = [scored("a", 1.0, text="red apple pie"), scored("b", 0.5, text="red apple tart")]
    assert similarity_function(items, "jaccard", table_sim)("a", "b") == pytest.approx(2 / 4)
    assert similarity_function(items, "embedding", table_sim)("a", "b") == 0.8
    assert similarity_function(items, "embedding", None)("a", "b") == pytest.approx(2 / 4)


def test_final_ranks_number_the_ranking_and_keep_every_other_rank():
    items = [scored("a", 0.3, hybrid=2, filter=2, temporal=1, feedback=3, mmr=2), scored("b", 0.9, hybrid=1)]
    out = with_final_ranks(items)
    assert ids(out) == ["a", "b"]
    assert out[0].ranks == StageRanks(hybrid=2, filter=2, temporal=1, feedback=3, final=1, mmr=2)
    assert out[1].ranks == StageRanks(hybrid=1, final=2)
    assert out[0].scores is items[0].scores and out[0].verdicts is items[0].verdicts and out[1].hop == 1


# --- assembly ------------------------------------------------------------------------------------------------------


def test_token_cost_rounds_a_quarter_of_the_characters_up():
    assert [token_cost("x" * n) for n in (0, 1, 3, 4, 5, 8, 9)] == [0, 1, 1, 1, 2, 2, 3]


def test_skip_mode_passes_over_what_does_not_fit_and_fills_the_rest():
    ranked = [scored("a", 0.9, text="x" * 40), scored("b", 0.8, text="x" * 44), scored("c", 0.7, text="x" * 36)]
    got = assemble(ranked, 20, "skip")  # 10, 11, 9 tokens
    assert [(p.reason, p.tokens, p.in_context) for p in got.placements] == [
        ("context", 10, True),
        ("budget", 11, False),
        ("context", 9, True),
    ]
    assert ids(got.chosen) == ["a", "c"] and got.tokens_used == 19


def test_stop_mode_ends_at_the_first_memory_that_does_not_fit():
    ranked = [scored("a", 0.9, text="x" * 40), scored("b", 0.8, text="x" * 44), scored("c", 0.7, text="x" * 4)]
    got = assemble(ranked, 20, "stop")
    assert [(p.reason, p.tokens) for p in got.placements] == [("context", 10), ("budget", 11), ("budget_stop", 1)]
    assert ids(got.chosen) == ["a"] and got.tokens_used == 10


def test_a_memory_that_exactly_fills_the_budget_fits_and_one_token_more_does_not():
    ranked = [scored("a", 0.9, text="x" * 40), scored("b", 0.8, text="x" * 40)]
    assert [p.reason for p in assemble(ranked, 20, "skip").placements] == ["context", "context"]
    assert [p.reason for p in assemble(ranked, 19, "skip").placements] == ["context", "budget"]
    assert assemble(ranked, 0, "skip").tokens_used == 0


def test_the_item_cap_counts_memories_in_the_context_and_zero_means_no_cap():
    ranked = [scored(c, 0.9 - n / 10, text="x" * 40) for n, c in enumerate("abcd")]
    got = assemble(ranked, 25, "skip", max_items=2)  # a, b fit (20 tokens); c is over the budget and the cap
    assert [p.reason for p in got.placements] == ["context", "context", "cap", "cap"]
    assert [p.reason for p in assemble(ranked, 100, "skip", max_items=0).placements] == ["context"] * 4
    assert [p.reason for p in assemble(ranked, 100, "skip", max_items=3).placements] == ["context"] * 3 + ["cap"]
    # Under the cap a memory that does not fit is still "budget".
    assert [p.reason for p in assemble(ranked, 15, "skip", max_items=3).placements] == ["context"] + ["budget"] * 3


def test_the_context_lists_each_memory_with_its_time_and_confidence():
    ranked = [
        Scored(inp("a", "Ada likes tea.", "2025-01-02T03:04:05+00:00"), 1, CandidateScores(final=0.876)),
        scored("b", 0.5, text="Ada lives in Leeds."),
    ]
    got = assemble(ranked, 100, "skip")
    assert got.context == (
        "=== RELEVANT MEMORIES ===\n"
        "\n"
        "[2025-01-02T03:04:05+00:00] (confidence: 0.88)\n"
        "Ada likes tea.\n"
        "\n"
        "[2025-06-01T12:00:00+00:00] (confidence: 0.50)\n"
        "Ada lives in Leeds.\n"
        "\n"
        "=== END MEMORIES ==="
    )
    assert assemble([], 100, "skip").context == ""
    assert assemble(ranked, 1, "skip").context == ""  # nothing fits: no empty header block


def test_a_scored_memory_without_a_final_score_is_ranked_by_its_hybrid_and_missing_both_is_zero():
    assert Scored(inp("a"), 1, CandidateScores(hybrid=0.4)).final == 0.4
    assert Scored(inp("a"), 1, CandidateScores(hybrid=0.4, final=0.0)).final == 0.0
    assert Scored(inp("a"), 1, CandidateScores()).final == 0.0
    assert Scored(inp("a"), 1, CandidateScores(), Verdict("dropped", "x")).reason == "filtered"
    assert Scored(inp("a"), 1, CandidateScores()).reason == ""
