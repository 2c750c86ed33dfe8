"""The time stage of the traced retrieval on a small store whose numbers are worked out by hand.

Three memories of camping trips, dated 10 June, 12 July and 2 September 2023, asked about on 1 December 2023:
"Where did Caroline go camping in July?" names the window 2023-07-01..2023-07-31. With a half-life of 7 days the
June trip (21 days before the window) has time score 0.5^3 = 0.125, the July trip 1, the September trip (33 days
after) 0.5^(33/7); under ``boost`` with weight 1 their factors are 1.125, 2 and 1 + 0.5^(33/7). Under ``filter``
the June and September trips are dropped (more than one half-life outside). The window, its parser and every
candidate's columns are in the trace, its timings and its JSON; replay scores the recorded window again; why-not
says where a memory's date lies. Off, or a question naming no time: nothing changes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import MemoryEngine, Settings
from engine.errors import InvalidInput
from engine.trace.codec import trace_from_dict, trace_json
from engine.trace.why_not import why_not
from tests.support.openai_server import FakeOpenAI, llm_settings

NOW = datetime(2023, 12, 1, tzinfo=UTC)
U = "cam"
QUESTION = "Where did Caroline go camping in July?"
TRIPS = {
    "june": ("Caroline went camping at the lake with her kids.", datetime(2023, 6, 10, 15, tzinfo=UTC)),
    "july": ("Caroline went camping in the mountains, it was cold.", datetime(2023, 7, 12, 9, tzinfo=UTC)),
    "september": ("Caroline went camping by the sea with friends.", datetime(2023, 9, 2, 20, tzinfo=UTC)),
}
TIME = {"time_half_life_days": 7.0, "time_weight": 1.0}
BOOST = {**TIME, "time_window": "boost"}
FILTER = {**TIME, "time_window": "filter"}
OFF = {**TIME, "time_window": "off"}
# by hand: days outside the window, time score 0.5 ** (days / 7), boost factor 1 + score
EXPECTED = {
    "june": (21, 0.125, 1.125),
    "july": (0, 1.0, 2.0),
    "september": (33, 0.5 ** (33 / 7), 1 + 0.5 ** (33 / 7)),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    store = tmp_path_factory.mktemp("time-stage") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=30), embedder=embedder)


@pytest.fixture(scope="module")
def trips(engine: MemoryEngine) -> dict[str, str]:
    return {name: engine.items.remember(U, text, created_at=at).id for name, (text, at) in TRIPS.items()}


def by_id(trace, hop: int = 1):
    return {c.id: c for c in trace.hops[hop - 1].candidates}


def test_off_reads_no_window_and_records_no_time_stage(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, overrides=OFF, now=NOW, save=False)
    assert trace.time_window is None and "time_window" not in trace.strategies.to_dict()
    assert trace.timings_ms.get("time_window") is None
    assert '"time_window":{' not in trace_json(trace)  # only the setting's own key: no recorded window
    for c in trace.hops[0].candidates:
        assert (c.scores.time_days_outside, c.scores.time_score, c.scores.time_factor) == (None, None, None)
    # off is the stage's absence: the temporal score is what it was before the stage existed
    for c in trace.hops[0].candidates:
        assert c.scores.temporal == c.scores.hybrid * c.scores.decay * c.scores.importance_factor
    # and so is the llmemory preset's
    parity = engine.retrieval.retrieve(U, QUESTION, now=NOW, save=False, preset="llmemory")
    assert parity.time_window is None and parity.settings.retrieval.time_window == "off"


def test_the_default_boosts_with_the_offline_rules(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, now=NOW, save=False)
    assert (trace.settings.retrieval.time_window, trace.settings.retrieval.time_parser) == ("boost", "offline")
    assert trace.time_window is not None and trace.time_window.parser == "offline"


def test_boost_records_the_window_and_multiplies_each_candidates_score_by_its_hand_computed_factor(engine, trips):
    off = engine.retrieval.retrieve(U, QUESTION, overrides=OFF, now=NOW, save=False)
    trace = engine.retrieval.retrieve(U, QUESTION, overrides=BOOST, now=NOW, save=False)
    w = trace.time_window
    assert (w.start, w.end, w.phrase, w.parser, w.rule) == ("2023-07-01", "2023-07-31", "in July", "offline", "MONTH")
    assert trace.strategies.to_dict()["time_window"] == "offline"
    assert trace.timings_ms.get("time_window") is not None
    before, after = by_id(off), by_id(trace)
    for name, item_id in trips.items():
        c = after[item_id]
        days, score, factor = EXPECTED[name]
        assert c.scores.time_days_outside == days
        assert c.scores.time_score == pytest.approx(score, rel=1e-12)
        assert c.scores.time_factor == pytest.approx(factor, rel=1e-12)
        # the temporal stage's score is hybrid x decay x importance x the time factor: the stage changes only that
        s = c.scores
        assert s.temporal == pytest.approx(s.hybrid * s.decay * s.importance_factor * s.time_factor, rel=1e-12)
        assert s.temporal == pytest.approx(before[item_id].scores.temporal * factor, rel=1e-12)
        assert s.hybrid == before[item_id].scores.hybrid
    assert trace.ranking[0].id == trips["july"]


def test_a_question_that_names_no_time_changes_nothing_and_says_so(engine, trips):
    question = "Where did Caroline go camping?"
    off = engine.retrieval.retrieve(U, question, overrides=OFF, now=NOW, save=False)
    on = engine.retrieval.retrieve(U, question, overrides=BOOST, now=NOW, save=False)
    assert on.time_window is None and on.strategies.to_dict()["time_window"] == "offline (no time named)"
    assert [(r.id, r.final) for r in on.ranking] == [(r.id, r.final) for r in off.ranking]
    assert all(c.scores.time_factor is None for c in on.hops[0].candidates)


def test_filter_drops_the_memories_more_than_a_half_life_outside_and_why_not_says_where_they_lie(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, overrides=FILTER, now=NOW, save=False)
    got = by_id(trace)
    assert [r.id for r in trace.ranking] == [trips["july"]]
    assert got[trips["july"]].scores.time_factor == 1.0  # filter keeps or drops, it does not boost
    june = got[trips["june"]]
    assert not june.verdicts.kept
    assert june.verdicts.rule == (
        "outside the question's window 2023-07-01..2023-07-31 ('in July'; dated 2023-06-10, 21 days before): "
        "more than time_half_life_days=7.0"
    )
    verdict = why_not(trace, trips["september"])
    assert verdict.status == "filtered"
    assert "dated 2023-09-02, 33 days after" in verdict.headline
    # a looser half-life keeps the June trip (21 days outside, under 30) but not September's (33)
    looser = engine.retrieval.retrieve(
        U, QUESTION, overrides={**FILTER, "time_half_life_days": 30.0}, now=NOW, save=False
    )
    assert {r.id for r in looser.ranking} == {trips["july"], trips["june"]}


def test_filter_stands_aside_when_no_candidate_lies_near_the_window(engine, trips):
    question = "Where did Caroline go camping in 2019?"
    off = engine.retrieval.retrieve(U, question, overrides=OFF, now=NOW, save=False)
    trace = engine.retrieval.retrieve(U, question, overrides=FILTER, now=NOW, save=False)
    assert trace.time_window.label == "2019-01-01..2019-12-31"
    assert [r.id for r in trace.ranking] == [r.id for r in off.ranking] and len(trace.ranking) == 3


def test_why_not_names_the_window_and_the_factor_of_a_memory_lost_at_assembly(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, overrides={**BOOST, "context_max_items": 1}, now=NOW, save=False)
    verdict = why_not(trace, trips["june"])
    assert verdict.status == "cap"
    (row,) = verdict.rows
    assert row["what happened"] == (
        "found by both; outside the question's window 2023-07-01..2023-07-31 ('in July'; dated 2023-06-10, 21 days "
        "before), time factor x1.12, final rank 2: context_max_items=1 reached"
    )


def test_the_window_is_stored_and_a_replay_scores_the_recorded_window_again(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, overrides=BOOST, now=NOW)
    stored = engine.traces.get(trace.trace_id)
    assert stored.time_window == trace.time_window
    assert trace_from_dict(trace.to_dict()).time_window == trace.time_window
    replay = engine.retrieval.replay(trace.trace_id)
    assert replay.time_window == trace.time_window
    assert [(r.id, r.final) for r in replay.ranking] == [(r.id, r.final) for r in trace.ranking]
    for c in replay.hops[0].candidates:
        assert c.scores == by_id(trace)[c.id].scores
    # a replay with the stage off scores as if no window had been read
    off = engine.retrieval.replay(trace.trace_id, overrides={"time_window": "off"})
    assert off.time_window is None and all(c.scores.time_factor is None for c in off.hops[0].candidates)


def test_a_trace_recorded_without_the_stage_replays_with_it_through_the_offline_rules(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, overrides=OFF, now=NOW)
    what_if = engine.retrieval.replay(trace.trace_id, overrides=BOOST)
    assert (what_if.time_window.label, what_if.time_window.parser) == ("2023-07-01..2023-07-31", "offline")
    assert what_if.ranking[0].id == trips["july"]
    assert {c.id: c.scores.time_factor for c in what_if.hops[0].candidates}[trips["june"]] == pytest.approx(1.125)


def test_every_hop_scores_against_the_questions_window(engine, trips):
    trace = engine.retrieval.retrieve(U, QUESTION, hops=2, overrides={**BOOST, "reasoner": "offline"}, now=NOW)
    for hop in trace.hops:
        for c in hop.candidates:
            assert c.scores.time_factor is not None


def test_the_llm_reads_the_window_when_configured_and_the_trace_says_so(tmp_path, embedder):
    with FakeOpenAI() as server:
        base = Settings.from_env({}, store=str(tmp_path / "store"), lock_timeout_s=30)
        engine = MemoryEngine.open(settings=llm_settings(base, server), embedder=embedder)
        for text, at in TRIPS.values():
            engine.items.remember(U, text, created_at=at)
        server.reset()
        # the LLM reads a window the offline rules could not ("the trip before the autumn")
        server.script("chat", '{"start": "2023-08-25", "end": "2023-09-05", "phrase": "the trip before the autumn"}')
        trace = engine.retrieval.retrieve(
            U, "Where was the trip before the autumn?", overrides={**BOOST, "time_parser": "auto"}, now=NOW
        )
        assert len(server.captured("chat")) == 1
        w = trace.time_window
        assert (w.start, w.end, w.parser, w.rule) == ("2023-08-25", "2023-09-05", "llm", "")
        assert trace.strategies.to_dict()["time_window"] == "llm"
        assert trace.ranking[0].id == next(c.id for c in trace.hops[0].candidates if "sea" in c.text)
        # replay scores the LLM's recorded window: no LLM call
        replay = engine.retrieval.replay(trace.trace_id)
        assert replay.time_window == w and len(server.captured("chat")) == 1
        engine.close()


def test_an_unknown_mode_is_refused_before_any_work(engine):
    with pytest.raises(InvalidInput, match="time_window"):
        engine.retrieval.retrieve(U, QUESTION, overrides={"time_window": "sometimes"}, now=NOW, save=False)
