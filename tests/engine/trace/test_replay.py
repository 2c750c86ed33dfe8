"""Replay: re-rank a stored trace under other settings without searching. With its own settings a replay gives
exactly the original result; with other settings the new ranking follows the documented formulas, and each
candidate reports its old and new rank and whether it entered or left the context."""

from __future__ import annotations

import math
import zlib
from datetime import timedelta

import pytest

from engine import InvalidInput, MemoryEngine, NotFound, RetrievalTrace, Settings
from engine.clock import utcnow
from engine.trace.traces import Traces

USER = "replay-user"
GONE = "replay-gone"
QUESTION = "What does Priya drink in the morning?"
LONG = (
    "Priya's morning routine, as she described it at the offsite: she wakes at six, walks the dog along the "
    "river, then makes a pot of masala chai with cardamom, ginger and far too much sugar, drinks two cups while "
    "reading the overnight alerts, and only then opens her laptop. On travel days she settles for whatever tea "
    "the hotel has, but she complains about it in the team channel. She never drinks coffee before noon and "
    "says it makes her jittery during the standup."
)
FACTS = {
    "chai": ("Priya drinks masala chai every morning before standup.", 1),
    "chai_dup": ("Every morning before standup Priya drinks masala chai.", 1),
    "old_tea": ("Priya has always loved a strong cup of tea to start her day.", 120),
    "coffee": ("Daniel drinks black coffee in the morning.", 3),
    "long": (LONG, 2),
    "harmful": ("Priya sometimes drinks green tea in the afternoon.", 4),
    "build": ("Build QX7781 failed on the linux runner.", 5),
    "report": ("The quarterly report is due on Friday.", 10),
    "dog": ("The dog is called Biscuit.", 30),
    "cloud": ("Our cloud bill doubled in March.", 50),
    "supplier": ("Priya buys her chai from Chaiwala Brothers.", 6),
    "shipping": ("Chaiwala Brothers ship their tea from Kolkata.", 8),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder):
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path_factory.mktemp("replay")), lock_timeout_s=30),
        embedder=embedder,
    )
    t0 = utcnow()
    records = [
        {"user_id": u, "content": text, "created_at": t0 - timedelta(days=age)}
        for u in (USER, GONE)
        for text, age in FACTS.values()
    ]
    items = engine.items.remember_many(records)
    ids = dict(zip(FACTS, (i.id for i in items[: len(FACTS)]), strict=True))
    gone_ids = [i.id for i in items[len(FACTS) :]]
    engine.episodes.record(
        USER,
        [{"observation": "asked for a drink", "action": "made chai", "result": "thanks"}],
        summary="Made masala chai for Priya in the morning",
    )
    engine.skills.register(USER, "brew-chai", "Boil water, add tea leaves, milk and spices.", "Brew masala chai")
    for n in range(5):  # five labellers: a label counts once per (labeller, trace, memory)
        engine.feedback.report(USER, harmful=[ids["harmful"]], labeller=f"labeller-{n}")
    now = utcnow() + timedelta(minutes=1)
    # llmemory's formulas (the `llmemory` preset): the replays below are checked against them by hand.
    traces = {
        "one_hop": engine.retrieval.retrieve(USER, QUESTION, now=now, preset="llmemory"),
        "one_hop_mmr": engine.retrieval.retrieve(
            USER, QUESTION, now=now, preset="llmemory", overrides={"mmr_enabled": True}
        ),
        "one_hop_mmr_embedding": engine.retrieval.retrieve(
            USER,
            QUESTION,
            now=now,
            preset="llmemory",
            overrides={"mmr_enabled": True, "mmr_similarity": "embedding", "mmr_lambda": 0.5},
        ),
        "two_hop": engine.retrieval.retrieve(
            USER, QUESTION, now=now, preset="llmemory", hops=2, reasoner=lambda q, acc, hop: "Daniel coffee"
        ),
        "two_hop_hop_weight": engine.retrieval.retrieve(
            USER,
            QUESTION,
            now=now,
            preset="llmemory",
            hops=2,
            overrides={"hop_weight": 0.8},
            reasoner=lambda q, acc, hop: "Daniel coffee",
        ),
        "two_hop_offline_mmr": engine.retrieval.retrieve(
            USER, QUESTION, now=now, preset="llmemory", hops=2, overrides={"mmr_enabled": True, "reasoner": "offline"}
        ),
        "stop_mode_small_budget": engine.retrieval.retrieve(
            USER, QUESTION, now=now, preset="llmemory", budget=150, overrides={"assembly_mode": "stop"}
        ),
    }
    return engine, ids, gone_ids, now, traces


def same_result(a: RetrievalTrace, b: RetrievalTrace) -> None:
    assert b.context_ids == a.context_ids
    assert b.context == a.context
    assert b.context_tokens == a.context_tokens
    assert [r.id for r in b.ranking] == [r.id for r in a.ranking]
    assert [r.final for r in b.ranking] == [r.final for r in a.ranking]  # exactly, not approximately
    assert [(r.in_context, r.reason, r.hop) for r in b.ranking] == [(r.in_context, r.reason, r.hop) for r in a.ranking]
    assert b.stop_reason == a.stop_reason
    for ha, hb in zip(a.hops, b.hops, strict=True):
        assert [c.id for c in hb.candidates] == [c.id for c in ha.candidates]
        assert [c.scores for c in hb.candidates] == [c.scores for c in ha.candidates]
        assert [c.ranks for c in hb.candidates] == [c.ranks for c in ha.candidates]
        assert [(c.in_context, c.context_reason) for c in hb.candidates] == [
            (c.in_context, c.context_reason) for c in ha.candidates
        ]


# --- identity -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "one_hop",
        "one_hop_mmr",
        "one_hop_mmr_embedding",
        "two_hop",
        "two_hop_hop_weight",
        "two_hop_offline_mmr",
        "stop_mode_small_budget",
    ],
)
def test_replay_with_the_original_settings_gives_exactly_the_original_result(world, name):
    engine, _, _, _, traces = world
    original = traces[name]
    replayed = engine.retrieval.replay(original.trace_id)
    same_result(original, replayed)
    assert replayed.replay_of == original.trace_id
    assert all(r.rank_change == 0 and r.old_rank == r.rank for r in replayed.ranking)
    assert {r.context_change for r in replayed.ranking} <= {"stayed", "out"}


def test_the_identity_traces_exercise_what_they_claim(world):
    traces = world[4]
    assert len(traces["two_hop"].hops) == 2 and len(traces["two_hop_offline_mmr"].hops) == 2
    assert traces["two_hop_offline_mmr"].hops[1].proposed_by == "offline:bridge_entities"
    assert any(r.hop == 2 for r in traces["two_hop"].ranking)
    kept = [c.scores for c in traces["one_hop_mmr"].hops[0].candidates if c.verdicts.relevance == "kept"]
    assert kept and all(r.mmr_value is not None for r in kept)
    embedding = traces["one_hop_mmr_embedding"]
    assert embedding.hops[0].similarity.ids  # the pairwise cosines that make this replayable
    assert [r.id for r in embedding.ranking] != [r.id for r in traces["one_hop"].ranking]
    assert any(r.reason == "budget_stop" for r in traces["stop_mode_small_budget"].ranking)


def test_replay_with_the_original_values_given_explicitly_is_the_identity(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    same_result(
        original,
        engine.retrieval.replay(
            original.trace_id, {"bm25_weight": 0.3, "half_life_days": 30, "mmr_enabled": False, "budget_tokens": 2000}
        ),
    )


def test_replay_of_an_exported_trace_is_the_identity(world):
    engine, _, _, _, traces = world
    original = traces["two_hop"]
    same_result(original, engine.retrieval.replay_trace(Traces.from_json(engine.traces.export(original.trace_id))))


def test_replay_does_not_search_or_embed_again(world):
    engine, _, gone_ids, now, _ = world
    original = engine.retrieval.retrieve(GONE, QUESTION, now=now, hops=2)
    assert original.context_ids
    # Without their vectors, search finds none of them: a replay that searched again would come back empty.
    engine._b.index.delete("semantic", gone_ids)
    assert engine.retrieval.retrieve(GONE, QUESTION, now=now, save=False).context_ids == ()
    same_result(original, engine.retrieval.replay(original.trace_id))
    changed = engine.retrieval.replay(original.trace_id, {"half_life_days": 1000})
    assert set(changed.context_ids) <= set(gone_ids)
    # Forgotten memories, though, never come back through a replay (issue 17): reported as forgotten instead.
    engine.forgetting.forget(GONE, "semantic", gone_ids, reason="test: replay leaves them out", mode="hard")
    after = engine.retrieval.replay(original.trace_id)
    assert after.context_ids == ()
    assert {r.id for r in after.ranking if r.reason == "forgotten"} == set(original.context_ids)


# --- changed settings ---------------------------------------------------------------------------------------------


def expected_final(c, *, w=0.3, half_life=30.0, wf=0.5, cap=5) -> float:
    """The documented formulas applied to a candidate's recorded components."""
    s = c.scores
    hybrid = w * s.bm25_norm + (1 - w) * s.vector_similarity
    decay = 1.0 if c.evergreen else math.exp(-math.log(2) / half_life * s.age_days)
    net = s.feedback_net
    feedback = 1 + wf * max(-cap, min(cap, net)) / cap
    return hybrid * decay * s.importance_factor * feedback


def check_formula_ranking(original, replayed, **params) -> None:
    cands = {c.id: c for c in original.hops[0].candidates}
    ranked = [r for r in replayed.ranking if r.rank is not None]
    for r in ranked:
        assert r.final == pytest.approx(expected_final(cands[r.id], **params), abs=1e-9)
    finals = [r.final for r in ranked]
    assert finals == sorted(finals, reverse=True)


def entry(trace, item_id):
    return next(r for r in trace.ranking if r.id == item_id)


def test_a_longer_half_life_lifts_an_old_memory(world):
    engine, ids, _, _, traces = world
    original = traces["one_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"half_life_days": 10_000})
    assert replayed.settings.retrieval.half_life_days == 10_000
    check_formula_ranking(original, replayed, half_life=10_000)
    old = entry(replayed, ids["old_tea"])
    assert old.rank < old.old_rank and old.rank_change == old.old_rank - old.rank > 0


def test_bm25_weight_changes_the_hybrid_blend(world):
    engine, ids, _, _, traces = world
    original = traces["one_hop"]
    keyword = engine.retrieval.replay(original.trace_id, {"bm25_weight": 1.0, "relevance_filter": "off"})
    check_formula_ranking(original, keyword, w=1.0)
    vector = engine.retrieval.replay(original.trace_id, {"bm25_weight": 0.0, "relevance_filter": "off"})
    check_formula_ranking(original, vector, w=0.0)
    assert [r.id for r in keyword.ranking] != [r.id for r in vector.ranking]


def test_feedback_weight_0_removes_the_penalty_of_harmful_labels(world):
    engine, ids, _, _, traces = world
    original = traces["one_hop"]
    harmful = next(c for c in original.hops[0].candidates if c.id == ids["harmful"])
    assert (harmful.scores.feedback_net, harmful.scores.feedback_factor) == (-5, 0.5)
    replayed = engine.retrieval.replay(original.trace_id, {"feedback_weight": 0})
    check_formula_ranking(original, replayed, wf=0.0)
    moved = entry(replayed, ids["harmful"])
    assert moved.rank_change > 0


def test_mmr_on_pushes_a_near_duplicate_down_and_lambda_1_changes_nothing(world):
    engine, ids, _, _, traces = world
    original = traces["one_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"mmr_enabled": True, "mmr_lambda": 0.5})
    first, second = sorted((entry(replayed, ids["chai"]), entry(replayed, ids["chai_dup"])), key=lambda r: r.old_rank)
    assert second.rank_change < 0  # identical word sets: Jaccard 1 after its twin was picked
    assert first.rank < second.rank
    assert [r.id for r in replayed.ranking] != [r.id for r in original.ranking]
    pure = engine.retrieval.replay(original.trace_id, {"mmr_enabled": True, "mmr_lambda": 1.0})
    assert [r.id for r in pure.ranking] == [r.id for r in original.ranking]
    off = engine.retrieval.replay(traces["one_hop_mmr"].trace_id, {"mmr_enabled": False})
    assert [r.id for r in off.ranking] == [r.id for r in original.ranking]


def test_hop_weight_scales_only_the_later_hops_final_scores(world):
    engine, _, _, _, traces = world
    original = traces["two_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"hop_weight": 0.5})
    for hop_before, hop_after, factor in zip(original.hops, replayed.hops, (1.0, 0.5), strict=True):
        assert {c.id: c.scores.hop_factor for c in hop_after.candidates} == {
            c.id: factor for c in hop_before.candidates
        }
        assert [c.scores.final for c in hop_after.candidates] == pytest.approx(
            [c.scores.final * factor for c in hop_before.candidates]
        )
    finals = [r.final for r in replayed.ranking if r.rank is not None]
    assert finals == sorted(finals, reverse=True)
    back = engine.retrieval.replay(traces["two_hop_hop_weight"].trace_id, {"hop_weight": 1.0})
    assert [r.id for r in back.ranking] == [r.id for r in original.ranking]


def overlap_words(trace: RetrievalTrace) -> list[str]:
    return [w for w in trace.hops[0].relevance_text.lower().split() if len(w) > 3]


def test_a_lower_threshold_lets_filtered_memories_enter(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    filtered = {c.id for c in original.hops[0].candidates if c.verdicts.relevance == "dropped"}
    assert filtered, "the question should leave some memories filtered"
    replayed = engine.retrieval.replay(original.trace_id, {"relevance_min_score": 0.0})
    assert filtered & set(replayed.context_ids)
    for r in replayed.ranking:
        if r.id in filtered:
            assert r.old_rank is None and r.rank is not None
            assert r.context_change == "entered"


def test_a_higher_threshold_keeps_only_word_overlaps(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"relevance_min_score": 1.0})
    words = overlap_words(original)
    texts = {c.id: c.text.lower() for c in original.hops[0].candidates}
    kept = {r.id for r in replayed.ranking if r.rank is not None}
    assert kept == {i for i, t in texts.items() if any(w in t for w in words)}


def test_requiring_longer_shared_words_makes_memories_leave_the_context(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"relevance_min_word_chars": 6})
    words = [w for w in overlap_words(original) if len(w) >= 6]
    cands = {c.id: c for c in original.hops[0].candidates}
    kept = {r.id for r in replayed.ranking if r.rank is not None}
    assert kept == {i for i, c in cands.items() if c.scores.hybrid >= 0.5 or any(w in c.text.lower() for w in words)}
    left = [r for r in replayed.ranking if r.context_change == "left"]
    assert left, "memories kept only by a 5-letter word ('priya', 'drink') should leave"
    assert all(r.rank is None and r.reason == "filtered" and r.old_in_context for r in left)
    assert {r.id for r in left} == set(original.context_ids) - set(replayed.context_ids)


def test_a_smaller_budget_makes_memories_leave_and_a_larger_one_makes_them_enter(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    small = engine.retrieval.replay(original.trace_id, {"budget_tokens": 40})
    assert small.context_tokens <= 40
    assert len(small.context_ids) < len(original.context_ids)
    assert {r.id for r in small.ranking if r.context_change == "left"} == (
        set(original.context_ids) - set(small.context_ids)
    )
    assert all(r.reason in ("budget", "budget_stop") for r in small.ranking if r.context_change == "left")
    assert [r.id for r in small.ranking] == [r.id for r in original.ranking]  # ranking unchanged
    tight = traces["stop_mode_small_budget"]
    wide = engine.retrieval.replay(tight.trace_id, {"budget_tokens": 2000})
    entered = {r.id for r in wide.ranking if r.context_change == "entered"}
    assert entered and entered == set(wide.context_ids) - set(tight.context_ids)


def test_stop_mode_ends_the_context_where_skip_mode_continues(world):
    engine, _, _, _, traces = world
    original = traces["one_hop"]
    tokens = [r.tokens for r in original.ranking]
    # the first memory followed by a smaller one: a budget that fits everything before it plus that smaller one
    i = next(k for k in range(1, len(tokens)) if min(tokens[k + 1 :], default=math.inf) < tokens[k])
    budget = sum(tokens[:i]) + min(tokens[i + 1 :])
    stop = engine.retrieval.replay(original.trace_id, {"budget_tokens": budget, "assembly_mode": "stop"})
    skip = engine.retrieval.replay(original.trace_id, {"budget_tokens": budget, "assembly_mode": "skip"})
    assert stop.context_ids == tuple(r.id for r in original.ranking[:i])
    assert [r.reason for r in stop.ranking[i:]] == ["budget"] + ["budget_stop"] * (len(tokens) - i - 1)
    assert len(skip.context_ids) > i
    assert skip.context_ids[:i] == stop.context_ids
    assert entry(original, world[1]["long"]).tokens > 100


def test_replaying_fewer_hops_drops_the_later_hops(world):
    engine, _, _, _, traces = world
    original = traces["two_hop"]
    replayed = engine.retrieval.replay(original.trace_id, {"hops": 1})
    assert len(replayed.hops) == 1 and replayed.stop_reason == "max_hops"
    assert [(c.id, c.scores) for c in replayed.hops[0].candidates] == [
        (c.id, c.scores) for c in original.hops[0].candidates
    ]
    assert {r.hop for r in replayed.ranking if r.rank is not None} == {1}


@pytest.mark.parametrize(
    "overrides",
    [
        {"no_such_setting": 1},
        {"store": "/tmp/x"},
        {"bm25_weight": -1},
        {"mmr_lambda": "high"},
        {"assembly_mode": "overflow"},
    ],
)
def test_replay_refuses_bad_overrides(world, overrides):
    engine, _, _, _, traces = world
    with pytest.raises(InvalidInput):
        engine.retrieval.replay(traces["one_hop"].trace_id, overrides)


def test_a_stored_trace_body_is_exactly_the_traces_plain_json(world):
    import json

    from engine.trace.codec import trace_json

    assert len(world[4]) >= 5  # the module's stored traces
    for trace in world[4].values():
        assert json.loads(trace_json(trace)) == json.loads(json.dumps(trace.to_dict(), ensure_ascii=False))


def test_traces_are_stored_compressed_and_traces_stored_as_plain_json_still_open(world):
    import json

    engine, _, _, _, traces = world
    original = traces["one_hop"]
    with engine._b.db.hold() as conn:  # noqa: SLF001 - the stored form is what this test is about
        body, packed = conn.execute("SELECT body, body_packed FROM traces WHERE id=?", [original.trace_id]).fetchone()
        assert body is None and len(packed) < len(json.dumps(original.to_dict())) / 2
        # a trace written between migrations 0002 and 0003 is a zlib stream
        conn.execute(
            "INSERT INTO traces (id, user_id, question, hops, body_packed, created_at) VALUES (?,?,?,?,?,?)",
            [
                "tr_zlib_format",
                original.user_id,
                original.question,
                1,
                zlib.compress(json.dumps({**original.to_dict(), "trace_id": "tr_zlib_format"}).encode(), 1),
                original.created_at,
            ],
        )
        # a trace written before migration 0002 kept its JSON text in `body`
        conn.execute(
            "INSERT INTO traces (id, user_id, question, hops, body, created_at) VALUES (?,?,?,?,?,?)",
            [
                "tr_old_format",
                original.user_id,
                original.question,
                1,
                json.dumps({**original.to_dict(), "trace_id": "tr_old_format"}),
                original.created_at,
            ],
        )
    old = engine.traces.get("tr_old_format")
    assert old.trace_id == "tr_old_format" and old.ranking == original.ranking
    engine.traces.delete("tr_old_format")
    zlibbed = engine.traces.get("tr_zlib_format")
    assert zlibbed.trace_id == "tr_zlib_format" and zlibbed.ranking == original.ranking
    engine.traces.delete("tr_zlib_format")


@pytest.mark.parametrize(
    "packed",
    [b"\x28\xb5\x2f\xfdgarbage", b"not a zlib stream", zlib.compress(b"{not json")],
    ids=["zstd", "zlib", "json"],
)
def test_an_unreadable_stored_trace_is_a_clear_error_and_can_still_be_deleted(world, packed):
    from engine import StoreCorrupt

    engine, _, _, _, traces = world
    original = traces["one_hop"]
    with engine._b.db.hold() as conn:  # noqa: SLF001 - damage the stored form, as a broken disk or tool would
        conn.execute(
            "INSERT INTO traces (id, user_id, question, hops, body, body_packed, created_at) VALUES (?,?,?,?,?,?,?)",
            ["tr_broken", original.user_id, original.question, 1, None, packed, original.created_at],
        )
    with pytest.raises(StoreCorrupt, match="tr_broken"):
        engine.traces.get("tr_broken")
    engine.traces.delete("tr_broken")
    with pytest.raises(NotFound):
        engine.traces.delete("tr_broken")
    assert engine.traces.get(original.trace_id).trace_id == original.trace_id  # the others are untouched
