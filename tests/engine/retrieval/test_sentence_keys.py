"""Sentence keys (``memory_keys=sentences``, engine/memory/memory_keys.py): each sentence of a memory of two or more
is a key of that memory, with the speaker's prefix when the memory has one. A turn's vector averages everything it
says, so the sentence that answers a question is nearer to it than the turn: the candidate's cosine moves
``key_cosine_weight`` of the way to its best sentence's, the trace says which sentence matched, and replays score
it again. The context still shows the memory's own text."""

from __future__ import annotations

import dataclasses

import pytest

from engine import MemoryEngine, Settings
from engine.memory.memory_keys import MAX_SENTENCE_KEYS, sentence_texts
from engine.retrieval.participants import blend
from engine.trace.records import TraceSettings

TURN = 'Nate said, "Thanks for asking about my weekend, it was long! I usually play CS:GO with my team on Fridays."'
ANSWER = 'Nate said, "I usually play CS:GO with my team on Fridays."'
FILLERS = [
    "The quarterly budget review moved to Thursday afternoon.",
    "Remember to water the basil on the kitchen windowsill.",
    'Joanna said, "My new screenplay is about a lighthouse keeper."',
]
QUESTION = "Which game does Nate play with his team?"
NOW = "2026-01-01T00:00:00+00:00"
BY_COSINE = {
    "memory_keys": "sentences",
    "key_cosine_weight": 0.4,
    "fusion": "weighted",
    "bm25_weight": 0.0,
    "relevance_filter": "off",
}


@pytest.mark.parametrize(
    "content, keys",
    [
        (TURN, ['Nate said, "Thanks for asking about my weekend, it was long!"', ANSWER]),
        # what follows the quote (a shared photo) is a sentence of the turn as well
        (
            'Ann said, "We hiked the ridge at dawn. The view was unreal." and shared a photo of a valley.',
            [
                'Ann said, "We hiked the ridge at dawn."',
                'Ann said, "The view was unreal."',
                'Ann said, "and shared a photo of a valley."',
            ],
        ),
        (
            "user: I moved to Lisbon in May. My commute is a bike ride now.",
            [
                "user: I moved to Lisbon in May.",
                "My commute is a bike ride now.",
            ],
        ),
        (
            # a sentence that asks is no key (it tells nothing about the memory); the memory still has two sentences
            'Tim said, "I am learning the violin now. What instrument are you playing?"',
            ['Tim said, "I am learning the violin now."'],
        ),
        ('Ann said, "We hiked the ridge at dawn."', []),  # one sentence: the memory's own vector is that sentence's
        ("Oh wow. Yes! We hiked the ridge at dawn.", []),  # fragments under three words are no keys
    ],
)
def test_a_memory_of_two_or_more_sentences_has_one_key_per_sentence(content: str, keys: list[str]) -> None:
    assert sentence_texts(content) == keys


def test_a_long_memory_keys_its_first_sentences_only() -> None:
    text = " ".join(f"Sentence number {n} is here." for n in range(30))
    keys = sentence_texts(text)
    assert len(keys) == MAX_SENTENCE_KEYS and keys[0] == "Sentence number 0 is here."


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    engine = MemoryEngine.open(
        settings=dataclasses.replace(module_settings, graph_extraction="offline", memory_keys_write=True),
        embedder=embedder,
    )
    engine.items.remember_many(
        [{"user_id": "u", "id": "turn", "content": TURN}]
        + [{"user_id": "u", "id": f"f{n}", "content": t} for n, t in enumerate(FILLERS)]
    )
    return engine


def turn_of(trace):
    return next(c for c in trace.hops[0].candidates if c.id == "turn")


def test_the_answering_sentence_moves_its_memorys_cosine_towards_its_own(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, overrides=BY_COSINE, now=NOW)
    turn = turn_of(trace)
    assert turn.text == TURN  # the memory's own text; the key only reaches it
    assert turn.key is not None and (turn.key.cosine_kind, turn.key.cosine_text) == ("sentence", ANSWER)
    own, key = turn.scores.vector_similarity, turn.key.cosine
    assert key is not None and key > own
    assert turn.scores.hybrid == pytest.approx(own + 0.4 * (key - own), abs=1e-6)
    assert trace.context_ids[0] == "turn"
    said = engine.traces.why_not(trace, "turn").rows[0]["what happened"]
    assert "sentence key by vector" in said

    nearest = engine.retrieval.replay(trace.trace_id, overrides={"key_cosine_weight": 1.0})
    assert turn_of(nearest).scores.hybrid == pytest.approx(key, abs=1e-6)
    off = engine.retrieval.replay(trace.trace_id, overrides={"memory_keys": "off"})
    assert turn_of(off).scores.hybrid == pytest.approx(own, abs=1e-6)


def test_other_key_kinds_do_not_search_sentences(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve(
        "u", QUESTION, overrides={**BY_COSINE, "memory_keys": "facts"}, now=NOW, save=False
    )
    assert turn_of(trace).key is None or "sentence" not in (
        turn_of(trace).key.cosine_kind,
        turn_of(trace).key.bm25_kind,
    )


def test_the_deep_preset_runs_two_hops_over_the_found_memories_sentences_and_the_session_stage(
    engine: MemoryEngine,
) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, preset="deep", now=NOW)
    r = trace.settings.retrieval
    assert (r.hops, r.memory_keys, r.memory_keys_search, r.key_cosine_weight, r.key_bm25_weight, r.session_weight) == (
        2,
        "sentences",
        "candidates",
        0.9,
        0.0,
        0.1,
    )
    assert trace.settings.preset == "deep"
    assert turn_of(trace).key is not None and turn_of(trace).key.cosine_text == ANSWER
    # the keys table is not searched: the memories the hop found are matched to their own sentences
    assert trace.strategies.to_dict()["key_search"] == "semantic: candidates' keys only (exact)"
    # the call's own hops win over the preset's
    assert engine.retrieval.retrieve("u", QUESTION, preset="deep", hops=1, now=NOW).settings.retrieval.hops == 1


def test_a_store_without_keys_says_so_in_the_trace(tmp_path, embedder) -> None:
    bare = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "bare")), embedder=embedder)
    bare.items.remember_many([{"user_id": "u", "content": TURN}])
    trace = bare.retrieval.retrieve("u", QUESTION, preset="deep", now=NOW)
    assert trace.strategies.to_dict()["key_search"] == "semantic: none written"
    candidates = [c for hop in trace.hops for c in hop.candidates]
    assert candidates and all(c.key is None for c in candidates)


def test_candidate_keys_score_the_found_memories_by_their_nearest_sentence(engine: MemoryEngine, embedder) -> None:
    """``memory_keys_search=candidates``: no keys search; each memory the hop's own searches found is matched to its
    nearest stored sentence by cosine, computed here by hand from the embedder."""
    overrides = {**BY_COSINE, "memory_keys_search": "candidates"}
    trace = engine.retrieval.retrieve("u", QUESTION, overrides=overrides, now=NOW)
    assert trace.strategies.to_dict()["key_search"] == "semantic: candidates' keys only (exact)"
    turn = turn_of(trace)
    # The question names Nate, who speaks the turn: the hop's vector is the participant stage's blend, and the keys
    # are matched to it like the candidates' own cosines (participants.py)
    assert trace.hops[0].vector_query == "Which game does play with his team?"
    own, without = embedder.embed([QUESTION, trace.hops[0].vector_query])
    q = blend(own, without, engine.settings.participant_weight)
    sentences = sentence_texts(TURN)
    by_hand = max(float(v @ q) for v in embedder.embed(sentences))
    assert turn.key is not None and turn.key.cosine_text == ANSWER and not turn.key.brought_in
    assert turn.key.cosine == pytest.approx(by_hand, abs=1e-4)
    assert turn.key.bm25 is None  # no full-text search of the keys
    own = turn.scores.vector_similarity
    assert turn.scores.hybrid == pytest.approx(own + 0.4 * (by_hand - own), abs=1e-4)
    # fillers of one sentence have no keys, and nothing the searches did not find gets one
    others = [c for c in trace.hops[0].candidates if c.id != "turn"]
    assert len(others) == len(FILLERS) and all(c.key is None for c in others)
    replayed = engine.retrieval.replay(trace.trace_id)
    assert turn_of(replayed).scores.hybrid == pytest.approx(turn.scores.hybrid, abs=1e-9)


def test_candidate_keys_bring_in_nothing_the_memories_own_searches_missed(tmp_path, embedder) -> None:
    """One candidate per search (top_k 1): the team's other turns win both searches, and only the index mode's key
    search reaches the turn (by its sentence about Fridays and the team)."""
    store = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "s"), memory_keys_write=True), embedder=embedder
    )
    team = [
        'Nate said, "My team meets on Fridays at the community center."',
        'Nate said, "We order pizza when the team wins."',
    ]
    store.items.remember_many(
        [{"user_id": "u", "id": "turn", "content": TURN}]
        + [{"user_id": "u", "id": f"f{n}", "content": t} for n, t in enumerate([*FILLERS, *team])]
    )
    question = "Nate team Fridays community center pizza"

    def found(mode: str) -> dict[str, str]:
        overrides = {**BY_COSINE, "memory_keys_search": mode, "top_k": 1}
        trace = store.retrieval.retrieve("u", question, overrides=overrides, now=NOW, save=False)
        return {c.id: c.found_by for c in trace.hops[0].candidates}

    assert found("index").get("turn") == "key"
    assert "turn" not in found("candidates")


def test_candidate_keys_on_a_store_without_keys_say_none_were_written(tmp_path, embedder) -> None:
    bare = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "bare")), embedder=embedder)
    bare.items.remember_many([{"user_id": "u", "content": TURN}])
    trace = bare.retrieval.retrieve(
        "u", QUESTION, overrides={"memory_keys": "sentences", "memory_keys_search": "candidates"}, now=NOW
    )
    assert trace.strategies.to_dict()["key_search"] == "semantic: none written"
    assert trace.hops[0].candidates and all(c.key is None for c in trace.hops[0].candidates)


def seven_memories(tmp_path, embedder) -> MemoryEngine:
    """A store of its own with the turn and six others written with their sentence keys: enough candidates for a
    hop's cosine head ratio (5th best over the best)."""
    store = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "s"), memory_keys_write=True), embedder=embedder
    )
    others = [*FILLERS, "Nate bought a new keyboard.", "The team won on Friday.", "Joanna likes long walks."]
    store.items.remember_many(
        [{"user_id": "u", "id": "turn", "content": TURN}]
        + [{"user_id": "u", "id": f"f{n}", "content": t} for n, t in enumerate(others)]
    )
    return store


def test_the_adaptive_key_weight_follows_how_flat_the_hops_own_cosines_are(tmp_path, embedder) -> None:
    """``adaptive_key_weight``: key_cosine_weight times the flatness of the hop's own cosines (r = 5th best over the
    best; 0 at adaptive_bm25_clear_ratio, 1 at adaptive_bm25_flat_ratio), computed here by hand from the trace."""
    store = seven_memories(tmp_path, embedder)
    base = {**BY_COSINE, "memory_keys_search": "candidates", "adaptive_key_weight": True}
    trace = store.retrieval.retrieve("u", QUESTION, overrides=base, now=NOW)
    own = sorted((c.scores.vector_similarity for c in trace.hops[0].candidates), reverse=True)
    assert len(own) == 7
    r = own[4] / own[0]
    turn = turn_of(trace)
    key, mine = turn.key.cosine, turn.scores.vector_similarity
    assert key > mine and 0 < r < 0.5

    def hybrid_with_ramp(clear: float, flat: float) -> float:
        ramp = {"adaptive_bm25_clear_ratio": clear, "adaptive_bm25_flat_ratio": flat}
        return turn_of(store.retrieval.replay(trace.trace_id, overrides=ramp)).scores.hybrid

    # the hop's ratio halfway up the ramp: half the key weight
    assert hybrid_with_ramp(r / 2, 1.5 * r) == pytest.approx(mine + 0.5 * 0.4 * (key - mine), abs=1e-5)
    # a ramp the ratio is below: the sentence does not count; above it: it counts in full
    assert hybrid_with_ramp(min(0.98, 2 * r), 0.99) == pytest.approx(mine, abs=1e-6)
    assert hybrid_with_ramp(0.0, r / 2) == pytest.approx(mine + 0.4 * (key - mine), abs=1e-6)


def test_the_adaptive_key_weight_scales_the_first_hop_only_unless_every_hop_is_asked(tmp_path, embedder) -> None:
    """``adaptive_key_weight_hops``: ``first`` (the default) leaves a later hop its full key_cosine_weight (its query
    is the reasoner's, whose cosine head says little about how alike the turns look); ``every`` scales every hop.
    A ramp the hops' ratios are all below makes the flatness 0, so a scaled hop ignores its sentences."""
    store = seven_memories(tmp_path, embedder)
    base = {**BY_COSINE, "memory_keys_search": "candidates", "adaptive_key_weight": True}
    trace = store.retrieval.retrieve(
        "u", QUESTION, hops=2, overrides=base, now=NOW, reasoner=lambda q, acc, hop: "What does Nate do on Fridays?"
    )
    assert len(trace.hops) == 2 and trace.settings.retrieval.adaptive_key_weight_hops == "first"
    clear = {"adaptive_bm25_clear_ratio": 0.99, "adaptive_bm25_flat_ratio": 0.995}

    def turn_in(t, hop: int):
        return next(c for c in t.hops[hop - 1].candidates if c.id == "turn")

    for hop in (1, 2):
        c = turn_in(trace, hop)
        own = sorted((x.scores.vector_similarity for x in trace.hops[hop - 1].candidates), reverse=True)
        assert own[4] / own[0] < 0.99 and c.key.cosine > c.scores.vector_similarity  # below the ramp; a key nearer
    first = store.retrieval.replay(trace.trace_id, overrides=clear)
    every = store.retrieval.replay(trace.trace_id, overrides={**clear, "adaptive_key_weight_hops": "every"})
    one, two = turn_in(trace, 1), turn_in(trace, 2)
    # hop 1: scaled to nothing under both
    assert turn_in(first, 1).scores.hybrid == pytest.approx(one.scores.vector_similarity, abs=1e-6)
    assert turn_in(every, 1).scores.hybrid == pytest.approx(one.scores.vector_similarity, abs=1e-6)
    # hop 2: the full weight under first, nothing under every
    own2, key2 = two.scores.vector_similarity, two.key.cosine
    assert turn_in(first, 2).scores.hybrid == pytest.approx(own2 + 0.4 * (key2 - own2), abs=1e-6)
    assert turn_in(every, 2).scores.hybrid == pytest.approx(own2, abs=1e-6)


def test_a_trace_stored_before_adaptive_key_weight_hops_replays_scaling_every_hop(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, overrides=BY_COSINE, now=NOW)
    stored = {k: v for k, v in trace.settings.to_dict().items() if k != "adaptive_key_weight_hops"}
    assert TraceSettings.from_dict(stored).retrieval.adaptive_key_weight_hops == "every"
    assert TraceSettings.from_dict(trace.settings.to_dict()).retrieval.adaptive_key_weight_hops == "first"
