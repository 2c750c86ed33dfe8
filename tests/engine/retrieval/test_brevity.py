"""The brevity stage: a turn of a conversation (a memory stored with a preceding text) shorter than
brevity_full_words words keeps (words / brevity_full_words) ** brevity_weight of its temporal score; a memory that
stands alone keeps its score whatever its length.

The expected numbers are computed by hand in the comments. On a real store the turns' words and factors are
recorded in the trace and its JSON, replayed exactly, switched off by a replay, shown in why-not, on the trace page
and in the scoring span, and absent from older traces and the llmemory preset.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine import MemoryEngine, Settings
from engine.presets import PRESETS
from engine.retrieval.brevity import brevity_stage, personal_word
from engine.retrieval.stages import score_hop
from engine.trace.records import CandidateInput
from engine.trace.why_not import why_not
from tests.support.candidate_inputs import candidate_input
from tests.support.stored_trace import empty_trace
from ui.trace_data import brevity_caption
from ui.trace_timing import span_io

T = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def inp(id: str, words: int, vec: float, preceding: str = "the turn before") -> CandidateInput:
    """An evergreen candidate without importance or feedback whose text has ``words`` words."""
    text = " ".join(["word"] * words)
    return candidate_input(id, text, vec, created_at=T.isoformat(), evergreen=True, preceding_text=preceding)


def test_a_short_turn_keeps_its_share_of_the_full_length_to_the_weights_power():
    inputs = [inp("short", 10, 0.5), inp("long", 60, 0.5), inp("exact", 50, 0.5), inp("alone", 3, 0.5, preceding="")]
    got = brevity_stage(inputs, 0.2, 50)
    # (10 / 50) ** 0.2 = 0.2 ** 0.2 = 0.72478; 60 and 50 words: the whole score; no preceding text: not a turn
    assert got.words == (10, 60, 50, None)
    assert got.factor == pytest.approx((0.724780, 1.0, 1.0, None))
    assert got.factor[3] is None
    assert got.apply([1.0, 2.0, 3.0, 4.0]) == pytest.approx((0.724780, 2.0, 3.0, 4.0))


def test_a_reply_to_a_question_is_an_answer_however_short_and_is_left_alone():
    asked = 'Katrin in the lab chat: "Who collects the pan traps before the first snow?"'
    inputs = [
        inp("reply", 9, 0.5, preceding=asked),
        inp("said", 9, 0.5, preceding='Melanie said, "Who is coming?" and shared a photo of a dog'),  # own words ask
        inp("reaction", 9, 0.5, preceding='Jon said, "I opened my own dance studio!"'),
    ]
    got = brevity_stage(inputs, 0.2, 60)
    # (9 / 60) ** 0.2 = 0.684255 for the reaction only
    assert got.words == (None, None, 9)
    assert got.factor[:2] == (None, None) and got.factor[2] == pytest.approx(0.684255)


def test_with_the_weight_at_zero_the_stage_records_nothing_and_changes_nothing():
    inputs = [inp("short", 2, 0.5), inp("alone", 2, 0.5, preceding="")]
    off = brevity_stage(inputs, 0.0, 50)
    assert off.words == (None, None) and off.factor == (None, None)
    assert off.apply([0.3, 0.4]) == (0.3, 0.4)


def test_words_are_the_stored_texts_whitespace_separated_words_speaker_prefix_included():
    before = 'Jon said, "I opened the studio."'
    turn = candidate_input("t", 'Gina said, "Wow,   that\'s awesome!"', preceding_text=before)
    got = brevity_stage([turn], 0.5, 20)
    # 5 words ("Gina", "said,", "\"Wow,", "that's", "awesome!\""): (5 / 20) ** 0.5 = 0.5
    assert got.words == (5,) and got.factor == pytest.approx((0.5,))


def test_in_score_hop_a_longer_turn_overtakes_a_short_one_with_a_higher_cosine():
    # hybrid off, filter off, evergreen, no importance or feedback: final = cosine * brevity factor.
    # The short turn: 0.8 * (5 / 50) ** 0.2 = 0.8 * 0.630957 = 0.504766, below the long turn's 0.6.
    settings = Settings().with_overrides(
        {
            **PRESETS["llmemory"],
            "hybrid_enabled": False,
            "relevance_filter": "off",
            "brevity_weight": 0.2,
            "brevity_full_words": 50,
        }
    )
    inputs = [inp("short", 5, 0.8), inp("long", 50, 0.6), inp("fact", 5, 0.55, preceding="")]
    scored = score_hop(inputs, "q", "q", settings, NOW)
    assert [s.inp.id for s in scored] == ["long", "fact", "short"]
    by_id = {s.inp.id: s for s in scored}
    assert by_id["short"].final == pytest.approx(0.504766, abs=1e-6)
    assert by_id["short"].scores.temporal == pytest.approx(0.504766, abs=1e-6)
    assert (by_id["short"].scores.brevity_words, by_id["short"].scores.brevity_factor) == (5, pytest.approx(0.630957))
    assert (by_id["long"].scores.brevity_words, by_id["long"].scores.brevity_factor) == (50, 1.0)
    assert by_id["fact"].scores.brevity_factor is None and by_id["fact"].final == pytest.approx(0.55)
    # The temporal rank is where the stage shows: the short turn led by hybrid and falls to third after it
    assert by_id["short"].ranks.hybrid == 1 and by_id["short"].ranks.temporal == 3
    # Off: the cosines decide
    plain = score_hop(inputs, "q", "q", settings.with_overrides({"brevity_weight": 0.0}), NOW)
    assert [s.inp.id for s in plain] == ["short", "long", "fact"]
    assert all(s.scores.brevity_factor is None and s.scores.brevity_words is None for s in plain)


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("What did Caroline research?", None),
        ("Which US cities does John mention visiting to Tim?", None),  # the country, in capitals
        ("What did I say about my bike?", "i"),
        ("I\u2019ve got some free time tonight, any documentary recommendations?", "i've"),
        ("What was the move you made after 27. Kg2?", "you"),
        ("Where did we eat in Lisbon?", "we"),
        ("Remind us of OUR plan", "us"),
        ("", None),
    ],
)
def test_the_stage_is_for_questions_about_others_not_in_the_first_or_second_person(question, word):
    assert personal_word(question) == word


def test_for_a_question_in_the_first_or_second_person_the_stage_lowers_nothing():
    inputs = [inp("short", 5, 0.8), inp("long", 50, 0.6)]
    off = brevity_stage(inputs, 0.2, 50, personal="my")
    assert off.words == (None, None) and off.factor == (None, None)
    settings = Settings().with_overrides(
        {**PRESETS["llmemory"], "hybrid_enabled": False, "relevance_filter": "off", "brevity_weight": 0.2}
    )
    scored = score_hop(inputs, "q", "q", settings, NOW, personal="you")
    assert [s.inp.id for s in scored] == ["short", "long"]
    assert scored[0].final == pytest.approx(0.8) and scored[0].scores.brevity_factor is None


# -- on a store -------------------------------------------------------------------------------------------------
USER = "brevity"
QUESTION = "What did Jon do at the fair for his dance studio?"
OPENING = 'Jon said, "Hey Gina! Guess what, I went to a fair last week."'
TURNS = [
    'Gina said, "Wow, the fair for your dance studio! Awesome!"',  # short: the question's words, no fact
    'Jon said, "At the fair I set up a booth for the dance studio, ran two free trial classes for kids, handed out '
    "flyers to every family that walked by, and signed up eleven new students for the autumn term, which is more "
    'than I hoped for, so next month I will run the same booth at the harvest market in the old town square."',
]


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=module_settings, embedder=embedder)


@pytest.fixture(scope="module")
def ids(engine: MemoryEngine) -> list[str]:
    first = engine.items.remember(USER, OPENING, created_at=T)
    turns = [
        engine.items.remember(USER, t, created_at=T + timedelta(minutes=n + 1), preceding_text=before)
        for n, (t, before) in enumerate(zip(TURNS, [OPENING, TURNS[0]]))
    ]
    return [first.id, *(t.id for t in turns)]


def candidate(trace, item_id: str):
    return next(c for c in trace.hops[0].candidates if c.id == item_id)


def test_the_trace_records_each_turns_words_and_factor_and_replays_it_exactly(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, overrides={"top_k": 10}, now=NOW)
    opening, short, long = (candidate(trace, i) for i in ids)
    assert opening.scores.brevity_words is None and opening.scores.brevity_factor is None  # no preceding text
    assert short.scores.brevity_words == 10 and short.scores.brevity_factor == pytest.approx((10 / 60) ** 0.3)
    assert long.scores.brevity_words > 60 and long.scores.brevity_factor == 1.0
    stored = engine.traces.get(trace.trace_id)
    assert candidate(stored, ids[1]).scores == short.scores
    replayed = engine.retrieval.replay_trace(stored)
    assert [(r.id, r.final) for r in replayed.ranking] == [(r.id, r.final) for r in trace.ranking]
    # Replayed without the stage: what a retrieval without it ranks, and nothing recorded
    off = engine.retrieval.replay_trace(stored, overrides={"brevity_weight": 0.0})
    live_off = engine.retrieval.retrieve(USER, QUESTION, overrides={"top_k": 10, "brevity_weight": 0.0}, now=NOW)
    assert [(r.id, r.final) for r in off.ranking] == [(r.id, r.final) for r in live_off.ranking]
    assert live_off.hops[0].candidates
    assert all(c.scores.brevity_factor is None for c in live_off.hops[0].candidates)
    # The stage lowered the short turn's final score by its factor and nothing else
    before = {r.id: r.final for r in live_off.ranking}
    after = {r.id: r.final for r in trace.ranking}
    assert after[ids[1]] == pytest.approx(before[ids[1]] * (10 / 60) ** 0.3, rel=1e-5)
    assert after[ids[2]] == pytest.approx(before[ids[2]], rel=1e-9)


def test_why_not_the_trace_page_and_the_scoring_span_name_the_short_turn(engine, ids):
    trace = engine.retrieval.retrieve(USER, QUESTION, overrides={"top_k": 10}, now=NOW, save=False)
    assert "a short turn (10 of 60 words): score x0.584" in why_not(trace, ids[1]).rows[0]["what happened"]
    assert "short turn" not in why_not(trace, ids[2]).rows[0]["what happened"]
    assert brevity_caption(trace) == (
        "Brevity stage: 1 short turn(s) of a conversation kept (words / 60) ** 0.3 of their score (columns "
        "brevity_words, brevity_factor)"
    )
    inputs, _ = span_io(trace, "hop1.scoring")
    assert ("short turns lowered", "1") in inputs
    off = engine.retrieval.retrieve(USER, QUESTION, overrides={"top_k": 10, "brevity_weight": 0.0}, now=NOW, save=False)
    assert brevity_caption(off) is None
    assert not any(label == "short turns lowered" for label, _ in span_io(off, "hop1.scoring")[0])


PERSONAL = "What did I tell Gina about the fair for my dance studio?"


def test_a_question_in_the_first_person_runs_without_the_stage_live_in_replay_and_on_the_page(engine, ids):
    trace = engine.retrieval.retrieve(USER, PERSONAL, overrides={"top_k": 10}, now=NOW)
    assert {c.id for c in trace.hops[0].candidates} >= set(ids)
    assert all(c.scores.brevity_factor is None for c in trace.hops[0].candidates)
    live_off = engine.retrieval.retrieve(USER, PERSONAL, overrides={"top_k": 10, "brevity_weight": 0.0}, now=NOW)
    assert [(r.id, r.final) for r in trace.ranking] == [(r.id, r.final) for r in live_off.ranking]
    replayed = engine.retrieval.replay_trace(engine.traces.get(trace.trace_id))
    assert replayed.hops[0].candidates
    assert all(c.scores.brevity_factor is None for h in replayed.hops for c in h.candidates)
    assert brevity_caption(trace) == (
        'Brevity stage: off for this question (it speaks in the first or second person: "i"), where a short turn '
        "can be the whole answer"
    )
    assert ("short turns lowered", 'none: the question speaks in the first or second person ("i")') in span_io(
        trace, "hop1.scoring"
    )[0]
    assert "short turn" not in why_not(trace, ids[1]).rows[0]["what happened"]
    # Without any turn among the candidates there is nothing the stage could have lowered: the page says nothing
    engine.items.remember("brevity-facts", "My bike repair at the shop cost $80.")
    facts = engine.retrieval.retrieve("brevity-facts", "What did I pay for my bike repair?", now=NOW, save=False)
    assert facts.hops[0].candidates and brevity_caption(facts) is None


def test_traces_from_before_the_stage_read_as_run_without_it():
    settings = empty_trace({"top_k": 10, "now": NOW.isoformat()}, NOW).settings
    assert settings.retrieval.brevity_weight == 0.0 and "brevity_weight" not in settings.absent
    assert settings.retrieval.brevity_full_words == 60


def test_the_llmemory_preset_runs_without_the_brevity_stage_and_the_default_with_it():
    assert Settings().with_overrides(PRESETS["llmemory"]).brevity_weight == 0.0
    assert (Settings().brevity_weight, Settings().brevity_full_words) == (0.3, 60)
