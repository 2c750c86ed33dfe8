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


def test_the_deep_preset_runs_two_hops_over_sentence_keys_and_the_session_stage(engine: MemoryEngine) -> None:
    trace = engine.retrieval.retrieve("u", QUESTION, preset="deep", now=NOW)
    r = trace.settings.retrieval
    assert (r.hops, r.memory_keys, r.key_cosine_weight, r.key_bm25_weight, r.session_weight) == (
        2,
        "sentences",
        0.7,
        0.0,
        0.1,
    )
    assert trace.settings.preset == "deep"
    assert turn_of(trace).key is not None and turn_of(trace).key.cosine_text == ANSWER
    assert trace.strategies.to_dict()["key_search"] == "semantic: exact"  # four memories: no index to walk
    # the call's own hops win over the preset's
    assert engine.retrieval.retrieve("u", QUESTION, preset="deep", hops=1, now=NOW).settings.retrieval.hops == 1


def test_a_store_without_keys_says_so_in_the_trace(tmp_path, embedder) -> None:
    bare = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "bare")), embedder=embedder)
    bare.items.remember_many([{"user_id": "u", "content": TURN}])
    trace = bare.retrieval.retrieve("u", QUESTION, preset="deep", now=NOW)
    assert trace.strategies.to_dict()["key_search"] == "semantic: none written"
    candidates = [c for hop in trace.hops for c in hop.candidates]
    assert candidates and all(c.key is None for c in candidates)
