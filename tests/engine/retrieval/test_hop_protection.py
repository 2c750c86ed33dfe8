"""hop_protect_top: with more than one hop, the first hop's best memories keep the top of the merged ranking in
hop 1's order, and a later hop's memories (scored on their own query's scale) are merged below them by score.

Scores are chosen by hand: cosine alone is the hybrid (hybrid off), memories are evergreen without importance or
feedback and the filter is off, so a candidate's final score is its cosine times hop_weight^(hop-1) (1 here)."""

from __future__ import annotations

from datetime import UTC, datetime

from engine import Settings
from engine.presets import PRESETS
from engine.retrieval.hop_run import HopRun
from engine.retrieval.pipeline import hop_decision, rank_and_assemble
from engine.retrieval.reasoners import Proposal
from engine.retrieval.stages import score_hop
from engine.trace.records import CandidateInput, ProposalDetails

NOW = datetime(2024, 6, 1, tzinfo=UTC)
SETTINGS = Settings().with_overrides(
    {**PRESETS["llmemory"], "hybrid_enabled": False, "relevance_filter": "off", "hop_weight": 1.0}
)


def inp(id: str, vec: float) -> CandidateInput:
    return CandidateInput(id, "semantic", f"text {id}", NOW.isoformat(), None, True, 0, 0, 0, vec, None, "vector")


def run(hop: int, inputs: list[CandidateInput], settings: Settings) -> HopRun:
    scored = score_hop(inputs, "q", "q", settings, NOW, hop)
    return HopRun(hop, "q", "question", ProposalDetails(), "q", tuple(inputs), tuple(scored))


def order(top: int) -> list[tuple[str, int]]:
    settings = SETTINGS.with_overrides({"hop_protect_top": top})
    hop1 = run(1, [inp("a", 0.6), inp("b", 0.5), inp("c", 0.4)], settings)
    # hop 2 re-finds b at 0.95 and brings x (0.9) and y (0.45)
    hop2 = run(2, [inp("x", 0.9), inp("b", 0.95), inp("y", 0.45)], settings)
    ranked, _ = rank_and_assemble(settings, [hop1, hop2])
    return [(s.inp.id, s.hop) for s in ranked]


def test_without_protection_the_max_score_merge_lets_a_later_hop_take_the_top():
    # b 0.95 (hop 2's copy), x 0.9, a 0.6, y 0.45, c 0.4
    assert order(0) == [("b", 2), ("x", 2), ("a", 1), ("y", 2), ("c", 1)]


def test_hop_ones_best_keep_their_places_and_the_later_hop_merges_below_them():
    # hop 1's best two, a and b, in hop 1's order (b keeps hop 2's higher copy), then x 0.9, y 0.45, c 0.4
    assert order(2) == [("a", 1), ("b", 2), ("x", 2), ("y", 2), ("c", 1)]
    # all of hop 1 protected: hop 2 only adds below
    assert order(3) == [("a", 1), ("b", 2), ("c", 1), ("x", 2), ("y", 2)]


def test_one_hop_is_never_reordered():
    settings = SETTINGS.with_overrides({"hop_protect_top": 2})
    hop1 = run(1, [inp("a", 0.6), inp("b", 0.5)], settings)
    ranked, _ = rank_and_assemble(settings, [hop1])
    assert [s.inp.id for s in ranked] == ["a", "b"]


# -- the recorded decision: why a later hop ran or did not --------------------------------------------------------
def test_a_later_hop_that_runs_records_what_it_bridges_to():
    details = ProposalDetails(names=("Adaeze", "Lisbon"), question_overlap=2.5, key_terms=("moved",))
    proposal = Proposal("sister Adaeze Lisbon moved", "offline:bridge_entities", details)
    assert hop_decision(proposal, None) == (
        "ran: offline:bridge_entities proposed 'sister Adaeze Lisbon moved'; names Adaeze, Lisbon from a top result "
        "(overlap 2.5); key terms moved"
    )


def test_a_hop_the_reasoner_found_unneeded_records_why_it_did_not_run():
    why = ProposalDetails(why="no new names or identifiers in the results to bridge to")
    assert hop_decision(Proposal("DONE", "offline:bridge_entities", why), "done") == (
        "not run (done): no new names or identifiers in the results to bridge to"
    )
    assert hop_decision(Proposal("q", "custom"), "repeated_query") == "not run (repeated_query)"
