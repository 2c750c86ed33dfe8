"""The typed records a candidate carries from scoring into the trace (and a memory of the final ranking), and the
stage timer: what they hold, that they are records (not mappings), and that they are stored as the same JSON
objects as before."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import orjson
import pytest

from engine import (
    RANK_STAGES,
    SCORE_KEYS,
    CandidateScores,
    InvalidInput,
    RankedMemory,
    StageRanks,
    Verdict,
    to_plain,
)
from engine.retrieval.hop_run import StageTimer
from engine.trace.codec import trace_json
from engine.trace.traces import Traces
from engine.vocab import Relevance
from ui.trace_data import candidate_rows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def test_the_score_keys_are_the_records_fields_in_pipeline_order():
    assert SCORE_KEYS == tuple(f.name for f in dataclasses.fields(CandidateScores))
    assert SCORE_KEYS[:2] == ("vector_similarity", "fts_score") and SCORE_KEYS.index("hybrid") < SCORE_KEYS.index(
        "temporal"
    ) < SCORE_KEYS.index("final") < SCORE_KEYS.index("mmr_value")
    assert RANK_STAGES == ("hybrid", "filter", "temporal", "feedback", "final", "mmr")


def test_scores_read_by_field_are_not_a_mapping_and_are_frozen():
    s = CandidateScores(vector_similarity=0.5, hybrid=0.4, final=0.3)
    assert (s.hybrid, s.final, s.mmr_value) == (0.4, 0.3, None)
    assert tuple(s.to_dict()) == SCORE_KEYS  # every score is a key of the stored form; None where none computed
    for record in (s, StageRanks(hybrid=1), Verdict()):
        assert not isinstance(record, Mapping)
        with pytest.raises(TypeError):
            record["hybrid"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.hybrid = 1.0  # type: ignore[misc]


def test_ranks_and_verdicts_hold_none_for_what_did_not_happen_and_never_equal_a_dict():
    ranks = StageRanks(hybrid=3, filter=2)
    assert (ranks.hybrid, ranks.filter, ranks.temporal, ranks.final) == (3, 2, None, None)
    assert ranks.to_dict() == {"hybrid": 3, "filter": 2, "temporal": None, "feedback": None, "final": None, "mmr": None}
    assert StageRanks.from_dict({"hybrid": 3, "filter": 2}) == ranks  # an older trace's form (only the set ranks)
    verdict = Verdict("dropped", "score 0.100 < 0.5 and no shared word")
    assert not verdict.kept and verdict.relevance == Relevance.DROPPED
    assert Verdict.from_dict({"relevance": "dropped", "rule": verdict.rule}) == verdict
    assert verdict != {"relevance": "dropped", "rule": verdict.rule}  # a record, not its stored form


def test_a_stored_form_reads_back_into_the_same_record_and_unknown_keys_are_left_out():
    s = CandidateScores(vector_similarity=0.5, bm25_preceding=None, hybrid=0.4, rank_bm25=None)
    stored = json.loads(orjson.dumps(s))
    assert list(stored) == list(SCORE_KEYS)
    assert CandidateScores.from_dict(stored) == s
    assert CandidateScores.from_dict({**stored, "from_a_newer_version": 1}) == s
    assert CandidateScores.from_dict({"hybrid": 0.4}) == CandidateScores(hybrid=0.4)


@pytest.mark.parametrize("name", ["default_2hop", "older_llmemory_1hop"])
def test_a_loaded_trace_keeps_every_value_it_stored_under_the_same_key(name):
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    trace = Traces.from_json(json.dumps(data))
    again = json.loads(trace_json(trace))
    assert again["ranking"] == data["ranking"]  # the same keys, in the same order, with the same values
    for hop_before, hop_after in zip(data["hops"], again["hops"], strict=True):
        for before, after in zip(hop_before["candidates"], hop_after["candidates"], strict=True):
            for part in ("scores", "ranks", "verdicts"):
                assert {k: after[part][k] for k in before[part]} == before[part], (before["id"], part)
                assert all(after[part][k] is None for k in set(after[part]) - set(before[part]))


def test_the_candidates_table_has_a_column_per_score_and_per_stage_rank():
    trace = Traces.from_json((FIXTURES / "default_1hop.json").read_text(encoding="utf-8"))
    row = candidate_rows(trace.hops[0])[0]
    assert [k for k in row if k in SCORE_KEYS] == list(SCORE_KEYS)
    assert [k for k in row if k.startswith("rank_") and k[5:] in RANK_STAGES] == [f"rank_{s}" for s in RANK_STAGES]
    first = trace.hops[0].candidates[0]
    assert row["final"] == first.scores.final and row["rank_hybrid"] == first.ranks.hybrid


def test_the_stage_timer_records_each_stage_in_the_order_they_ran():
    timer = StageTimer()
    with timer.stage("search"):
        pass
    with timer.stage("scoring"):
        pass
    with pytest.raises(ValueError), timer.stage("failed"):
        raise ValueError("a stage that raises is not recorded")
    timer.since_start("total")
    timings = timer.timings().as_dict()
    assert list(timings) == ["search", "scoring", "total"]
    assert all(isinstance(v, float) and v >= 0 for v in timings.values())
    assert timings["total"] >= timings["search"]


def test_the_hop_stages_fill_each_score_under_its_own_name():
    # candidate_scores builds the record by position (it runs per candidate): each value must land in its field.
    from datetime import UTC, datetime

    from engine import Settings
    from engine.retrieval.stages import score_hop
    from engine.trace.records import CandidateInput

    now = datetime(2026, 1, 10, tzinfo=UTC)
    inputs = [
        CandidateInput(
            f"m{n}",
            "semantic",
            f"apple {'pie ' * n}",
            "2026-01-01T00:00:00+00:00",
            0.5,
            False,
            0,
            0,
            n - 1,
            0.1 * n,
            2.0 + n,
            "both",
            0.3,
            "before apple" if n == 2 else "",
        )
        for n in range(1, 4)
    ]
    settings = Settings().with_overrides({"fusion": "zscore", "feedback_weight": 0.5, "hop_weight": 0.5})
    scored = score_hop(inputs, "apple pie", "apple pie", settings, now, hop=2)
    assert len(scored) == len(inputs) == 3
    for s in scored:
        sc, inp = s.scores, s.inp
        assert (sc.vector_similarity, sc.fts_score, sc.llm_relevance) == (inp.vector_similarity, inp.fts_score, 0.3)
        assert (sc.age_days, sc.importance, sc.feedback_net, sc.hop_factor) == (9, 0.5, inp.feedback_net, 0.5)
        assert (sc.bm25_preceding is None) == (not inp.preceding_text)
        assert sc.z_vector is not None and sc.rank_vector is None and sc.mmr_value is None
        assert sc.hybrid == pytest.approx(sc.hybrid_vector_part + sc.hybrid_bm25_part)
        # the brevity stage: only the turn (the candidate with a preceding text, 3 words) has its words and factor
        assert (sc.brevity_words, sc.brevity_factor) == (
            (3, pytest.approx((3 / 60) ** settings.brevity_weight)) if inp.preceding_text else (None, None)
        )
        assert sc.temporal == pytest.approx(sc.hybrid * sc.decay * sc.importance_factor * (sc.brevity_factor or 1.0))
        assert sc.final == pytest.approx(sc.temporal * sc.feedback_factor * 0.5)


# -- the final ranking's entries --------------------------------------------------------------------------------------
LIVE = {"id": "m1", "kind": "semantic", "hop": 1, "final": 0.5, "rank": 1, "in_context": True, "reason": "context"}
REPLAY = {"old_rank": 2, "rank_change": 1, "old_in_context": False, "context_change": "entered"}


def test_a_ranking_entry_is_written_with_the_keys_it_always_had():
    live = RankedMemory(**LIVE, tokens=7)
    assert list(live.to_dict()) == ["id", "kind", "hop", "final", "rank", "in_context", "reason", "tokens"]
    replayed = dataclasses.replace(live, **REPLAY)
    assert replayed.replayed and not live.replayed
    assert replayed.to_dict() == {**LIVE, "tokens": 7, **REPLAY}  # a replay's four keys only in a replay's entries
    tomb = {"mode": "hard", "at": "2026-11-29T12:00:00+00:00", "actor": "t", "reason": "r", "forget_log_id": 3}
    gone = dataclasses.replace(replayed, rank=None, final=None, reason="forgotten", forgotten=tomb)
    assert list(gone.to_dict())[-1] == "forgotten" and gone.to_dict()["forgotten"] == tomb
    assert to_plain([live, replayed]) == [live.to_dict(), replayed.to_dict()]  # every plain form is the same
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.rank = 2  # type: ignore[misc]


def test_a_ranking_entry_reads_back_from_every_stored_form():
    assert RankedMemory.from_dict({**LIVE, "tokens": 7}) == RankedMemory(**LIVE, tokens=7)
    older = RankedMemory.from_dict(LIVE)  # no tokens: 0, as replay always read it
    assert older.tokens == 0 and older.old_rank is None and not older.replayed
    newer = RankedMemory.from_dict({**LIVE, **REPLAY, "tokens": 7, "from_a_newer_version": True})
    assert newer.replayed and newer.rank_change == 1 and newer.to_dict() == {**LIVE, "tokens": 7, **REPLAY}


@pytest.mark.parametrize("entry", [["m1", 1], "m1", {"kind": "semantic"}])
def test_a_trace_with_a_ranking_entry_that_is_not_one_is_refused(entry):
    data = json.loads((FIXTURES / "default_1hop.json").read_text(encoding="utf-8"))
    data["ranking"][0] = entry
    with pytest.raises(InvalidInput, match="not a memlens trace"):
        Traces.from_json(json.dumps(data))
