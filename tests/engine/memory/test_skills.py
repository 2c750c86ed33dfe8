"""Procedural memory: a versioned skill library, outcome events, success_rate parity and ranking by the Wilson lower
bound (memory-model.md §6)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, RankedSkill, Settings, Skill
from engine.memory.procedural import rank_skills, wilson_interval
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U = "ada"


def skill_record(successes: int, failures: int, name: str = "s", version: int = 1) -> Skill:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return Skill(f"{name}-v{version}", U, name, version, "prompt", "", "body", successes, failures, {}, at, at)


# -- Wilson interval and ranking, against hand-computed numbers ------------------------------------------------------


@pytest.mark.parametrize(
    "successes, trials, lower, upper",
    [
        # 3/3: the lower bound of a perfect record is n / (n + z^2) = 3 / 6.841459 = 0.438503
        (3, 3, 0.438503, 1.0),
        # 95/100: (0.95 + z^2/200 - z*sqrt(0.95*0.05/100 + z^2/40000)) / (1 + z^2/100)
        (95, 100, 0.888250, 0.978456),
        (1, 2, 0.094531, 0.905469),
        (0, 10, 0.0, 0.277533),
        (10, 10, 0.722467, 1.0),
        (1, 1, 0.206549, 1.0),
    ],
)
def test_wilson_interval_matches_hand_computed_values(successes, trials, lower, upper):
    lo, hi = wilson_interval(successes, trials)
    assert lo == pytest.approx(lower, abs=1e-6)
    assert hi == pytest.approx(upper, abs=1e-6)


def test_wilson_interval_without_trials_is_the_whole_range():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_success_rate_is_llmemorys_ratio_and_one_half_without_outcomes():
    assert skill_record(0, 0).success_rate == 0.5
    assert skill_record(0, 1).success_rate == 0.0
    assert skill_record(1, 0).success_rate == 1.0
    assert skill_record(3, 1).success_rate == 0.75


def test_three_of_three_does_not_outrank_ninety_five_of_a_hundred():
    ranked = rank_skills([skill_record(3, 0, "lucky"), skill_record(95, 5, "proven")])
    assert [r.skill.name for r in ranked] == ["proven", "lucky"]
    lucky = ranked[1]
    assert lucky.success_rate == 1.0 > ranked[0].success_rate == 0.95
    assert (lucky.rank, lucky.trials, lucky.few_trials) == (2, 3, True)
    assert (ranked[0].rank, ranked[0].trials, ranked[0].few_trials) == (1, 100, False)


def test_an_untried_skill_ranks_below_one_with_evidence_and_above_a_failing_one():
    ranked = rank_skills([skill_record(0, 0, "new"), skill_record(2, 0, "good"), skill_record(0, 3, "bad")])
    assert [r.skill.name for r in ranked] == ["good", "new", "bad"]
    assert ranked[1].success_rate == 0.5
    # both "new" and "bad" have a lower bound of 0: the raw rate breaks the tie
    assert ranked[1].wilson_lower == ranked[2].wilson_lower == 0.0


# -- the library through the engine ----------------------------------------------------------------------------------


def test_registering_a_name_again_creates_the_next_version_with_fresh_counters(empty_engine):
    v1 = empty_engine.skills.register(U, "triage-bug", "Read the traceback first", description="triage")
    empty_engine.skills.report_outcome(U, v1.id, True)
    empty_engine.skills.report_outcome(U, v1.id, False)
    v2 = empty_engine.skills.register(U, "triage-bug", "Reproduce, then read the traceback")
    assert (v1.version, v2.version) == (1, 2)
    assert v2.id != v1.id
    assert (v2.success_count, v2.failure_count, v2.success_rate) == (0, 0, 0.5)
    old = empty_engine.skills.get(U, v1.id)
    assert (old.success_count, old.failure_count, old.body) == (1, 1, "Read the traceback first")
    assert [s.version for s in empty_engine.skills.versions(U, "triage-bug")] == [1, 2]
    assert empty_engine.skills.register("bo", "triage-bug", "bo's own").version == 1


class RegistersMeanwhile:
    """The real model, which registers another version of the same skill while it embeds the first text that
    names ``marker``: another writer getting in between a register's read of the versions and its write."""

    def __init__(self, model, marker: str) -> None:
        self.model, self.marker, self.engine = model, marker, None
        self.name, self.dim = model.name, model.dim

    def embed(self, texts):
        if self.engine is not None and any(self.marker in t for t in texts):
            engine, self.engine = self.engine, None
            engine.skills.register(U, "deploy", "meanwhile, from another writer")
        return self.model.embed(texts)

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_two_writers_registering_one_name_at_once_get_two_versions(settings, embedder):
    model = RegistersMeanwhile(embedder, "from this writer")
    engine = MemoryEngine.open(settings=settings, embedder=model)
    engine.skills.register(U, "deploy", "the first version")
    model.engine = engine  # the next register's embedding lets the other writer in
    mine = engine.skills.register(U, "deploy", "from this writer")
    versions = {s.body: s.version for s in engine.skills.versions(U, "deploy")}
    # The other writer read version 1 and wrote 2; this one read 1 too, before embedding, but numbers under the lock
    assert versions == {"the first version": 1, "meanwhile, from another writer": 2, "from this writer": 3}
    assert mine.version == 3


def test_a_skill_round_trips_its_fields(empty_engine):
    s = empty_engine.skills.register(
        U,
        "render-report",
        "{{title}}\n{{body}}",
        description="Report template",
        kind="template",
        provenance={"sources": [{"type": "episode", "id": "ep-1"}]},
    )
    stored = empty_engine.skills.get(U, s.id)
    assert stored == s
    assert (stored.kind, stored.description, stored.provenance["sources"]) == (
        "template",
        "Report template",
        [{"type": "episode", "id": "ep-1"}],
    )


def test_an_outcome_increments_a_counter_and_appends_an_event(empty_engine):
    s = empty_engine.skills.register(U, "deploy", "make deploy")
    after_failure = empty_engine.skills.report_outcome(U, s.id, False)
    assert (after_failure.success_count, after_failure.failure_count, after_failure.success_rate) == (0, 1, 0.0)
    episode = empty_engine.episodes.record(U, [{"action": "make deploy", "result": "ok"}], outcome="success")
    after = empty_engine.skills.report_outcome(U, s.id, True, episode_id=episode.id)
    assert (after.success_count, after.failure_count, after.success_rate) == (1, 1, 0.5)
    events = empty_engine.skills.outcomes(U, s.id)
    assert [(e.skill_id, e.success, e.episode_id) for e in events] == [(s.id, False, None), (s.id, True, episode.id)]
    assert events[0].at <= events[1].at


def test_outcomes_can_be_listed_per_name_across_versions(empty_engine):
    v1 = empty_engine.skills.register(U, "plan-trip", "v1 body")
    v2 = empty_engine.skills.register(U, "plan-trip", "v2 body")
    other = empty_engine.skills.register(U, "other", "body")
    for sid, ok in ((v1.id, False), (v2.id, True), (other.id, True)):
        empty_engine.skills.report_outcome(U, sid, ok)
    assert [e.skill_id for e in empty_engine.skills.outcomes(U, name="plan-trip")] == [v1.id, v2.id]
    assert len(empty_engine.skills.outcomes(U)) == 3


@pytest.mark.parametrize(
    "call",
    [
        lambda e, sid: e.skills.report_outcome(U, "skill_missing", True),
        lambda e, sid: e.skills.report_outcome("bo", sid, True),
    ],
)
def test_an_outcome_for_an_unknown_or_foreign_skill_is_not_found_and_writes_nothing(empty_engine, call):
    s = empty_engine.skills.register(U, "x", "body")
    before = snapshot(empty_engine)
    with pytest.raises(NotFound):
        call(empty_engine, s.id)
    assert snapshot(empty_engine) == before


@pytest.mark.parametrize(
    "kwargs", [{"success": "yes"}, {"success": 1}, {"success": None}, {"success": True, "episode_id": "../ep"}]
)
def test_an_outcome_must_be_true_or_false(empty_engine, kwargs):
    s = empty_engine.skills.register(U, "x", "body")
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.skills.report_outcome(U, s.id, **kwargs)
    assert snapshot(empty_engine) == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "macro"},
        {"kind": "Prompt"},
        {"version": 0},
        {"version": "2"},
        {"name": "  "},
        {"body": ""},
        {"description": 5},
    ],
)
def test_invalid_skill_fields_are_refused_and_nothing_is_written(empty_engine, kwargs):
    args = {"name": "n", "body": "b", **kwargs}
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.skills.register(U, **args)
    assert snapshot(empty_engine) == before


@pytest.fixture(scope="module")
def ranked_library(tmp_path_factory, embedder) -> MemoryEngine:
    """Outcome histories loaded through ingest (one transaction) rather than 200 single calls."""
    path = tmp_path_factory.mktemp("skills") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    histories = {"lucky": (3, 0), "proven": (95, 5), "untried": (0, 0), "flaky": (5, 5), "broken": (0, 4)}
    lines = []
    for name, (s, f) in histories.items():
        kind = "code" if name == "flaky" else "prompt"
        lines.append(
            {
                "kind": "skill",
                "user_id": U,
                "id": f"sk-{name}",
                "name": name,
                "skill_kind": kind,
                "body": f"how to do {name} things",
                "description": f"the {name} skill",
            }
        )
        lines += [
            {"kind": "outcome", "user_id": U, "skill_id": f"sk-{name}", "success": ok}
            for ok in [True] * s + [False] * f
        ]
    engine.admin.ingest_lines(json.dumps(r) for r in lines)
    return engine


def test_ranking_orders_by_wilson_lower_bound_with_rate_and_trials_beside_it(ranked_library):
    ranked = ranked_library.skills.rank(U)
    assert all(isinstance(r, RankedSkill) for r in ranked)
    assert [r.skill.name for r in ranked] == ["proven", "lucky", "flaky", "untried", "broken"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5]
    by_name = {r.skill.name: r for r in ranked}
    assert (by_name["proven"].trials, by_name["proven"].success_rate) == (100, 0.95)
    assert by_name["proven"].wilson_lower == pytest.approx(0.888250, abs=1e-6)
    assert by_name["lucky"].wilson_lower == pytest.approx(0.438503, abs=1e-6)
    assert (by_name["untried"].trials, by_name["untried"].success_rate) == (0, 0.5)
    assert [r.wilson_lower for r in ranked] == sorted((r.wilson_lower for r in ranked), reverse=True)


def test_ingested_outcomes_are_events_and_counters_alike(ranked_library):
    proven = ranked_library.skills.get(U, "sk-proven")
    assert (proven.success_count, proven.failure_count) == (95, 5)
    events = ranked_library.skills.outcomes(U, "sk-proven")
    assert (sum(e.success for e in events), sum(not e.success for e in events)) == (95, 5)


def test_ranking_can_be_filtered_by_kind_and_text_and_limited(ranked_library):
    assert [r.skill.name for r in ranked_library.skills.rank(U, kind="code")] == ["flaky"]
    assert [r.skill.name for r in ranked_library.skills.rank(U, query="LUCKY")] == ["lucky"]
    assert [r.skill.name for r in ranked_library.skills.rank(U, limit=2)] == ["proven", "lucky"]
    with pytest.raises(InvalidInput):
        ranked_library.skills.rank(U, kind="macro")


def test_an_outcome_naming_an_episode_the_user_does_not_have_is_refused_and_counts_nothing(empty_engine):
    s = empty_engine.skills.register(U, "deploy", "make deploy")
    other = empty_engine.episodes.record("someone-else", [{"action": "x", "result": "y"}], outcome="success")
    for episode_id in ("ep-nothere", other.id):
        with pytest.raises(NotFound, match="no episode"):
            empty_engine.skills.report_outcome(U, s.id, True, episode_id=episode_id)
    assert empty_engine.skills.outcomes(U, s.id) == []
    assert empty_engine.skills.get(U, s.id).success_count == 0
