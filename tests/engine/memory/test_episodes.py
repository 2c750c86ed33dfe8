"""Episodic memory: trajectories of steps with an outcome, a derived summary, searchable text (memory-model.md §5)."""

from __future__ import annotations

import pytest

from engine import Episode, InvalidInput, MemoryEngine, NotFound, Settings, Step
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"
STEPS = [
    {"observation": "pytest fails in test_refunds", "action": "read the traceback", "result": "KeyError: currency"},
    {
        "observation": "currency missing for legacy rows",
        "action": "add a default currency",
        "result": "tests pass",
        "timestamp": "2026-03-01T10:00:00Z",
    },
]


def test_a_missing_summary_is_derived_from_the_actions(empty_engine):
    ep = empty_engine.episodes.record(U, STEPS, outcome="success")
    assert ep.summary == "Episode with 2 step(s): read the traceback -> add a default currency"
    assert empty_engine.episodes.get(U, ep.id).summary == ep.summary


def test_the_derived_summary_skips_steps_without_an_action(empty_engine):
    ep = empty_engine.episodes.record(U, [{"observation": "only looked"}, {"action": "acted"}])
    assert ep.summary == "Episode with 2 step(s): acted"
    ep = empty_engine.episodes.record(U, [{"observation": "only looked"}])
    assert ep.summary == "Episode with 1 step(s)"


def test_a_given_summary_is_kept_and_a_blank_one_is_derived(empty_engine):
    assert empty_engine.episodes.record(U, STEPS, summary="Fixed the refunds test").summary == "Fixed the refunds test"
    assert empty_engine.episodes.record(U, STEPS, summary="   ").summary.startswith("Episode with 2 step(s): ")


def test_an_episode_round_trips_steps_outcome_importance_and_session(empty_engine):
    ep = empty_engine.episodes.record(
        U, STEPS, outcome="failure", importance=0.8, session_id="ada-s01", created_at="2026-03-01T09:00:00Z"
    )
    stored = empty_engine.episodes.get(U, ep.id)
    assert isinstance(stored, Episode)
    assert stored == ep
    assert stored.steps[1] == Step(
        "currency missing for legacy rows", "add a default currency", "tests pass", "2026-03-01T10:00:00+00:00"
    )
    assert stored.steps[0].timestamp is None
    assert (stored.outcome, stored.importance, stored.session_id) == ("failure", 0.8, "ada-s01")
    assert stored.provenance["method"] == "episode_recording"


def test_episode_importance_defaults_to_one_half(empty_engine):
    assert empty_engine.episodes.record(U, STEPS).importance == 0.5


def test_the_searchable_text_holds_summary_outcome_and_every_step_field(empty_engine):
    ep = empty_engine.episodes.record(U, STEPS, outcome="success")
    text = ep.searchable_text
    for part in [ep.summary, "success", *(s[k] for s in STEPS for k in ("observation", "action", "result"))]:
        assert part in text


def test_an_episode_is_found_by_a_word_that_only_appears_in_a_step_result(empty_engine):
    ep = empty_engine.episodes.record(U, [{"action": "deploy", "result": "the quokka service came back"}])
    empty_engine.items.remember(U, "An unrelated fact about lunch")
    hits = empty_engine.retrieval.search(U, "quokka", kind="episodic")
    assert [h.id for h in hits] == [ep.id]
    assert hits[0].fts_score and hits[0].fts_score > 0


@pytest.mark.parametrize(
    "steps",
    [
        [],
        None,
        "step",
        [{}],
        [{"observation": " ", "action": ""}],
        ["text"],
        [{"action": 5}],
        [{"action": "x\x00y"}],
        [{"action": "a" * 40_000}],
        [{"action": "a", "timestamp": "soon"}],
    ],
)
def test_invalid_steps_are_refused_and_nothing_is_written(empty_engine, steps):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.episodes.record(U, steps)
    assert snapshot(empty_engine) == before


@pytest.mark.parametrize(
    "kwargs",
    [{"importance": float("nan")}, {"importance": 2}, {"outcome": 1}, {"outcome": "x" * 65}, {"session_id": "a b"}],
)
def test_invalid_episode_fields_are_refused(empty_engine, kwargs):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.episodes.record(U, STEPS, **kwargs)
    assert snapshot(empty_engine) == before


def test_an_unknown_episode_is_not_found(empty_engine):
    with pytest.raises(NotFound):
        empty_engine.episodes.get(U, "ep_missing")


@pytest.fixture(scope="module")
def history(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("episodes") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    for n, outcome in enumerate(["success", "failure", "success", "partial", "failure", None]):
        engine.episodes.record(
            U,
            [{"action": f"attempt {n}", "result": f"result {n}"}],
            outcome=outcome,
            session_id="s-even" if n % 2 == 0 else "s-odd",
            created_at=f"2026-04-0{n + 1}T00:00Z",
        )
    engine.episodes.record("bo", [{"action": "bo's attempt"}], outcome="success")
    return engine


def test_episodes_list_newest_first_and_filter_by_outcome(history):
    assert [e.steps[0].action for e in history.episodes.list_episodes(U).rows] == [
        f"attempt {n}" for n in range(5, -1, -1)
    ]
    failures = history.episodes.list_episodes(U, outcome="failure")
    assert failures.total == 2
    assert [e.steps[0].action for e in failures.rows] == ["attempt 4", "attempt 1"]
    assert history.episodes.list_episodes(U, outcome="partial").total == 1
    assert history.episodes.list_episodes(U, outcome="nope").total == 0


def test_episodes_filter_by_session_and_text_and_paginate(history):
    assert history.episodes.list_episodes(U, session_id="s-even").total == 3
    assert [e.steps[0].result for e in history.episodes.list_episodes(U, query="RESULT 3").rows] == ["result 3"]
    page = history.episodes.list_episodes(U, limit=2, offset=4)
    assert (page.total, len(page.rows)) == (6, 2)
    assert history.episodes.list_episodes("bo").total == 1
