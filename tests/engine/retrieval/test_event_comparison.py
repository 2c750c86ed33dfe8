"""adaptive_bm25_events: which questions compare events in time (engine/retrieval/event_comparison.py). The
questions are of the kinds LongMemEval's temporal-reasoning questions ask, and of the kinds that only look alike."""

from __future__ import annotations

import pytest

from engine.retrieval.event_comparison import compared_events

COMPARING = [
    ("How many days passed between the day I cancelled my subscription and the day I shopped online?", "time"),
    ("How many days had passed since I bought my running shoes when I realized the shoelace had broken?", "time"),
    ("How many days before I bought the iPhone 13 Pro did I attend the Holiday Market?", "time"),
    ("How many weeks passed between Maria adopting Coco and Shadow?", "time"),
    ("How long had I been bird watching when I attended the bird watching workshop?", "time"),
    ("What is the order of airlines I flew with from earliest to latest?", "order"),
    ("Which three events happened in the order from first to last: the nursery, the shower, the phone case?", "order"),
]
NOT_COMPARING = [
    "How many days ago did I buy a smoker?",  # one event and today
    "How many months ago did I book the Airbnb in San Francisco?",
    "When did Caroline go to the LGBTQ support group?",
    "What did I do with Rachel on the Wednesday two months ago?",
    "Was the first half of September 2022 a good month for Nate? Answer yes or no.",  # "first ... or no"
    "What did I need to do in order to renew my passport?",  # "in order to"
    # which of two came first: left out by measurement (event_comparison.py)
    "Which event happened first, the meeting with Rachel or the pride parade?",
    "Which film was released earlier, Yohan or A Nightmare On Elm Street 4?",
    "How many different doctors did I visit?",
    "",
]
CUES = {"time": "time between events", "order": "order of events"}


@pytest.mark.parametrize(("question", "cue"), COMPARING)
def test_a_question_that_compares_events_names_its_cue(question, cue):
    assert compared_events(question) == CUES[cue]
    assert compared_events(question.upper()) == CUES[cue]  # matched without regard to case
    assert compared_events("  " + question.replace(" ", "\n  ")) == CUES[cue]  # or to line breaks


@pytest.mark.parametrize("question", NOT_COMPARING)
def test_a_question_about_one_event_or_about_none_has_no_cue(question):
    assert compared_events(question) is None


def test_a_question_as_long_as_the_store_accepts_is_read_in_one_pass():
    # 32,000 characters (max_text_chars): the words are scanned once, so the cue is found however far apart its
    # parts are, and a long question without one is told apart as well (no regular expression with two open gaps).
    filler = "the long and winding day " * 1200
    assert compared_events(f"How many days passed between {filler}and the next morning?") == "time between events"
    assert compared_events("how many days " + "between " * 4000) is None  # no second event after the joiner
    assert compared_events("How long had I been walking " + "and walking " * 2500 + "when I fell?") == (
        "time between events"
    )
    assert compared_events("order " * 5000) is None
