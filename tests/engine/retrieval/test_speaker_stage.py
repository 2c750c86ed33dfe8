"""The speaker stage: when a question asks about the user's own life (first person, not about what the assistant
said), each stored assistant turn's hybrid score loses assistant_turn_penalty; whatever the question, each stored
turn that asks (its own words end with a question mark) loses question_turn_penalty; nothing else changes.

The expected numbers are computed by hand in the comments; on a real store the stage's cue and parts are recorded
in the trace and its JSON, replayed exactly, switched off by a replay, shown in why-not, and absent from older
traces and the llmemory preset.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from engine import MemoryEngine, Settings
from engine.interop.otel_spans import retrieval_spans
from engine.presets import PRESETS
from engine.retrieval.speaker_stage import (
    asks_about_user,
    asks_rather_than_tells,
    speaker_parts,
    spoken_by_assistant,
)
from engine.retrieval.stages import score_hop
from engine.trace.codec import trace_json
from engine.trace.records import CandidateInput
from engine.trace.why_not import why_not
from tests.support.stored_trace import empty_trace
from tests.support.stored_turns import remember_turns
from ui.trace_data import speaker_caption
from ui.trace_timing import span_io

T = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("How much total money have I spent on bike-related expenses?", 'first person "i"'),
        ("What was my previous stance on spirituality?", 'first person "my"'),
        ("Where did Sophia meet me?", 'first person "me"'),
        ("I\u2019ve got some free time tonight, any documentary recommendations?", 'first person "i\'ve"'),
        # A request in the present still rests on what the user told
        ("Can you suggest some activities I can do during my commute to work?", 'first person "i"'),
        ("I'm trying to decide whether to buy a NAS device now or wait. What do you think?", 'first person "i\'m"'),
    ],
)
def test_a_first_person_question_asks_about_the_user(question, cue):
    assert asks_about_user(question) == cue


@pytest.mark.parametrize(
    "question",
    [
        # the assistant's own words: "you" with a past verb of saying or making, an earlier conversation, "we ..."
        "What was the name of that hiking trail you recommended to me?",
        "I'm looking back at our previous chess game: what was the move you made after 27. Kg2?",
        "I was going through our previous conversation about Catalonia. Which singer was it?",
        "Can you remind me what were the three objectives we outlined for my project?",
        "Which traditional game did you say was performed by skilled dancers? I forgot.",
        "Remind me of the name of the restaurant you helped me find in Lisbon.",
        "In our last session I asked about knots: which one was it?",
        "Can you remind me of the name of the hotel in my itinerary?",  # recalling a conversation: either side's
        "In a previous chat I asked for a name for my cat. Which did I pick?",
        # no first person at all
        "What books has Tim read?",
        "Which event happened first, the meeting with Rachel or the pride parade?",
        "",
    ],
)
def test_a_question_about_the_assistants_words_or_in_the_third_person_does_not(question):
    assert asks_about_user(question) is None


def test_the_cue_reads_a_long_hostile_question_in_one_pass():
    hostile = "you " * 8000 + "my"  # "you" runs with no verb after them: the pattern never backtracks far
    assert asks_about_user(hostile) == 'first person "my"'
    assert asks_about_user("my " + "you said " * 4000) is None


def test_an_assistant_turn_is_a_memory_whose_text_starts_with_assistant():
    assert spoken_by_assistant("assistant: Here are five trails.")
    assert spoken_by_assistant("  Assistant: Sure!")
    assert not spoken_by_assistant("user: I bought a bike.")
    assert not spoken_by_assistant("The assistant: a short story")
    assert not spoken_by_assistant("")


def inp(id: str, text: str, vec: float, kind: str = "semantic") -> CandidateInput:
    return CandidateInput(id, kind, text, T.isoformat(), None, True, 0, 0, 0, vec, None, "vector")


def test_only_semantic_assistant_turns_are_lowered_and_only_when_the_question_asks_about_the_user():
    inputs = [
        inp("u", "user: I bought a bike", 0.5),
        inp("a", "assistant: bikes are great", 0.8),
        inp("e", "assistant: an episode's summary", 0.8, kind="episodic"),
    ]
    assert speaker_parts(inputs, 'first person "i"', 0.4) == (None, -0.4, None)
    assert speaker_parts(inputs, None, 0.4) == (None, None, None)
    assert speaker_parts(inputs, 'first person "i"', 0.0) == (None, None, None)


def test_in_score_hop_the_penalty_puts_the_users_turn_above_the_assistants_answer():
    # The cosine alone is the hybrid (hybrid off), memories are evergreen without importance or feedback, the filter
    # is off: final = cosine + speaker part. The answer: 0.8 - 0.4 = 0.4, below the user's turn at 0.5.
    settings = Settings().with_overrides(
        {**PRESETS["llmemory"], "hybrid_enabled": False, "relevance_filter": "off", "assistant_turn_penalty": 0.4}
    )
    inputs = [inp("u", "user: I bought a bike for $80", 0.5), inp("a", "assistant: bikes are great", 0.8)]
    scored = score_hop(inputs, "q", "q", settings, NOW, speaker='first person "i"')
    assert [s.inp.id for s in scored] == ["u", "a"]
    by_id = {s.inp.id: s for s in scored}
    assert by_id["a"].scores.hybrid == pytest.approx(0.4) and by_id["a"].final == pytest.approx(0.4)
    assert by_id["a"].scores.hybrid_speaker_part == pytest.approx(-0.4)
    assert by_id["u"].scores.hybrid_speaker_part is None and by_id["u"].scores.hybrid == pytest.approx(0.5)
    # No cue (a question about the assistant's words): the answer keeps its cosine and its place
    plain = score_hop(inputs, "q", "q", settings, NOW, speaker=None)
    assert [s.inp.id for s in plain] == ["a", "u"] and plain[0].scores.hybrid_speaker_part is None


# -- on a store -------------------------------------------------------------------------------------------------
USER = "speaker"
QUESTION = "How much did I pay for my bike repair?"
TURNS = [
    "user: The bike shop charged me $80 to fix the gears last week.",  # the answer
    "assistant: Bike repair costs vary; a gear repair at a bike shop usually costs $50 to $100 for your bike.",
    "assistant: To keep your bike in good repair, clean and oil the chain after every ride you pay attention to.",
    "user: My sister is visiting in June.",
]
ON = {"assistant_turn_penalty": 0.4, "top_k": 10}


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


@pytest.fixture(scope="module")
def ids(engine: MemoryEngine) -> list[str]:
    return remember_turns(engine, USER, TURNS, T)


def candidate(trace, item_id: str):
    return next(c for c in trace.hops[0].candidates if c.id == item_id)


def test_the_trace_records_the_cue_and_each_lowered_turn_and_replays_it_exactly(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, overrides=ON, now=NOW)
    assert trace.speaker == 'first person "i"'
    assert [candidate(trace, i).scores.hybrid_speaker_part for i in ids] == [None, -0.4, -0.4, None]
    assert trace.ranking[0].id == ids[0]
    # Through the stored JSON: the cue and the parts come back, and a replay with its own settings is the same
    stored = engine.traces.get(trace.trace_id)
    assert stored.speaker == trace.speaker and json.loads(trace_json(trace))["speaker"] == 'first person "i"'
    assert candidate(stored, ids[1]).scores == candidate(trace, ids[1]).scores
    replayed = engine.retrieval.replay_trace(stored)
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # Replayed without the stage: what a retrieval without it ranks, with no cue and no part recorded
    off = engine.retrieval.replay_trace(stored, overrides={"assistant_turn_penalty": 0.0})
    live_off = engine.retrieval.retrieve(USER, QUESTION, overrides={**ON, "assistant_turn_penalty": 0.0}, now=NOW)
    assert [r.id for r in off.ranking] == [r.id for r in live_off.ranking]
    assert off.speaker is None and live_off.speaker is None and "speaker" not in json.loads(trace_json(live_off))
    assert live_off.hops[0].candidates
    assert all(c.scores.hybrid_speaker_part is None for c in live_off.hops[0].candidates)


def test_the_span_tree_and_the_exported_span_name_the_cue(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, overrides=ON, now=NOW, save=False)
    assert retrieval_spans(trace)[0].attributes["memlens.speaker"] == 'first person "i"'
    _, outputs = span_io(trace, "hop1.scoring")
    inputs, _ = span_io(trace, "hop1.scoring")
    assert ("assistant turns lowered", '2 (first person "i")') in inputs
    assert outputs  # the filter's counts and the best final scores, as before


def test_the_trace_page_says_so_when_no_candidate_was_an_assistant_turn(engine, ids):
    engine.items.remember("no-turns", "My bike repair at the shop cost $80.")
    trace = engine.retrieval.retrieve("no-turns", QUESTION, overrides=ON, now=NOW, save=False)
    assert trace.speaker == 'first person "i"' and trace.hops[0].candidates
    assert speaker_caption(trace) == (
        'Speaker stage: the question asks about the user (first person "i"); no candidate was an assistant turn, '
        "so none was lowered"
    )
    lowered = engine.retrieval.retrieve(USER, QUESTION, overrides=ON, now=NOW, save=False)
    assert "(2 candidate(s), column hybrid_speaker_part)" in speaker_caption(lowered)


def test_a_question_about_the_assistants_words_lowers_nothing(engine, ids):
    trace = engine.retrieval.retrieve(USER, "What bike repair cost did you mention to me?", overrides=ON, now=NOW)
    assert trace.speaker is None
    assert {c.id for c in trace.hops[0].candidates} >= set(ids[:3])  # the assistant turns are among them
    assert all(c.scores.hybrid_speaker_part is None for c in trace.hops[0].candidates)


def test_why_not_says_an_assistant_turn_was_lowered(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, overrides=ON, now=NOW, save=False)
    row = why_not(trace, ids[1]).rows[0]
    assert (
        'an assistant turn, while the question asks about the user (first person "i"): hybrid -0.4'
        in (row["what happened"])
    )
    assert "assistant turn" not in why_not(trace, ids[0]).rows[0]["what happened"]


def test_traces_from_before_the_stage_read_as_run_without_it():
    settings = empty_trace({"top_k": 10, "now": NOW.isoformat()}, NOW).settings
    assert settings.retrieval.assistant_turn_penalty == 0.0 and "assistant_turn_penalty" not in settings.absent
    assert settings.retrieval.question_turn_penalty == 0.0 and "question_turn_penalty" not in settings.absent


def test_the_llmemory_preset_runs_without_the_speaker_stage_and_the_default_with_it():
    llmemory = Settings().with_overrides(PRESETS["llmemory"])
    assert llmemory.assistant_turn_penalty == 0.0 and llmemory.question_turn_penalty == 0.0
    assert Settings().assistant_turn_penalty == 0.4 and Settings().question_turn_penalty == 0.1


# -- turns that ask ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "asking"),
    [
        ('John said, "What instrument are you playing?"', True),
        ('John said, "Cool! What breed is it?" and shared a photo of a dog', True),  # the caption is not his words
        ('Maria said, "I went there last June. Did you?"', True),  # its last sentence asks
        ("user: any tips for my commute?", True),
        ('Tim said, "Is it hard? I play the violin now."', False),  # it ends by telling
        ("I play the violin now.", False),
        ('Tim said, "I asked: why not?" and shared a photo of a question mark.', True),
        ("", False),
        # a longer turn tells before it asks (a request to an assistant carries the facts): 28 words
        (
            "user: I moved to Lisbon in May and now bike forty minutes to the office every morning along the river, "
            "so could you suggest a few good podcasts?",
            False,
        ),
    ],
)
def test_a_turn_asks_when_its_own_words_end_with_a_question_mark(text, asking):
    assert asks_rather_than_tells(text) is asking


def test_how_many_words_a_turn_that_asks_may_have_is_the_question_turn_max_words_setting():
    five = 'Ann said, "Where did you go hiking?"'  # 5 words of her own
    assert asks_rather_than_tells(five, 5) and not asks_rather_than_tells(five, 4)
    inputs = [inp("asks", five, 0.6)]
    assert speaker_parts(inputs, None, 0.4, 0.1, 5) == (-0.1,)
    assert speaker_parts(inputs, None, 0.4, 0.1, 4) == (None,)


def test_a_turn_that_asks_loses_question_turn_penalty_for_any_question_and_an_assistants_question_both():
    inputs = [
        inp("tells", 'Tim said, "I play the violin now."', 0.5),
        inp("asks", 'John said, "What instrument are you playing?"', 0.6),
        inp("a?", "assistant: Would you like some trails?", 0.6),
        inp("ep", "Did the deploy work?", 0.6, kind="episodic"),  # only stored conversation memories
    ]
    assert speaker_parts(inputs, None, 0.4, 0.1) == (None, -0.1, -0.1, None)
    # the question asks about the user: an assistant's question loses both (-0.4 - 0.1)
    assert speaker_parts(inputs, 'first person "i"', 0.4, 0.1) == pytest.approx((None, -0.1, -0.5, None))
    assert speaker_parts(inputs, None, 0.4, 0.0) == (None, None, None, None)


def test_in_score_hop_the_telling_turn_overtakes_the_asking_one():
    # hybrid off, filter off, evergreen, no importance or feedback: final = cosine + speaker part.
    # The question: 0.6 - 0.15 = 0.45, below the answer's 0.5.
    settings = Settings().with_overrides(
        {**PRESETS["llmemory"], "hybrid_enabled": False, "relevance_filter": "off", "question_turn_penalty": 0.15}
    )
    inputs = [
        inp("asks", 'John said, "What instrument are you playing?"', 0.6),
        inp("tells", 'Tim said, "I play the violin now."', 0.5),
    ]
    scored = score_hop(inputs, "q", "q", settings, NOW)
    assert [s.inp.id for s in scored] == ["tells", "asks"]
    assert scored[1].final == pytest.approx(0.45) and scored[1].scores.hybrid_speaker_part == pytest.approx(-0.15)
    assert scored[0].scores.hybrid_speaker_part is None


ASKING_USER = "asking"
ASKING = [
    'John said, "Which instrument are you learning to play these days?"',
    'Tim said, "I am learning to play the violin, mostly classical pieces."',
    'Tim said, "My sister visits in June."',
]
INSTRUMENT = "What instrument does Tim play?"


@pytest.fixture(scope="module")
def asking_ids(engine: MemoryEngine) -> list[str]:
    return [engine.items.remember(ASKING_USER, t, created_at=T + timedelta(minutes=n)).id for n, t in enumerate(ASKING)]


def test_the_trace_records_the_asking_turns_part_replays_it_and_why_not_names_it(engine, asking_ids):
    trace = engine.retrieval.retrieve(ASKING_USER, INSTRUMENT, overrides={"top_k": 10}, now=NOW)
    assert trace.speaker is None  # a question in the third person: only turns that ask are lowered
    assert [candidate(trace, i).scores.hybrid_speaker_part for i in asking_ids] == [-0.1, None, None]
    stored = engine.traces.get(trace.trace_id)
    replayed = engine.retrieval.replay_trace(stored)
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # without the penalty the question's hybrid is 0.1 higher and nothing else moves
    off = engine.retrieval.replay_trace(stored, overrides={"question_turn_penalty": 0.0})
    assert candidate(off, asking_ids[0]).scores.hybrid_speaker_part is None
    assert candidate(off, asking_ids[0]).scores.hybrid == pytest.approx(
        candidate(trace, asking_ids[0]).scores.hybrid + 0.1
    )
    row = why_not(trace, asking_ids[0]).rows[0]
    assert "a turn that asks (ends with a question mark): hybrid -0.1" in row["what happened"]
    assert "asks" not in why_not(trace, asking_ids[1]).rows[0]["what happened"]
    assert speaker_caption(trace) == (
        "Speaker stage: each turn that asks (ends with a question mark) lost question_turn_penalty 0.1 "
        "(1 candidate(s), column hybrid_speaker_part)"
    )
    inputs, _ = span_io(trace, "hop1.scoring")
    assert ("turns that ask, lowered", "1") in inputs
