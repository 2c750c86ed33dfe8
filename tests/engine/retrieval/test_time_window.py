"""The date window a question names, read by the offline rules (a table of phrases and the windows worked out by
hand for a fixed clock) and by the LLM through the real ``openai`` client (a local OpenAI-compatible server), with
the offline rules taking over when the LLM fails."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.providers.llm import NoLLM
from engine.retrieval.time_window import offline_window, question_window
from engine.retrieval.time_window_llm import LLM_PROMPT
from tests.support.openai_server import Reply

# Friday 5 January 2024, noon: the week began on Monday 1 January; the weekend before was 30-31 December.
NOW = datetime(2024, 1, 5, 12, 0, tzinfo=UTC)

# question -> (first day, last day, the phrase it was read from), worked out by hand for NOW
WINDOWS = {
    # full dates: that day
    "What did Nate do for Joanna on 25 May, 2022?": ("2022-05-25", "2022-05-25", "25 May, 2022"),
    "Who did Maria have dinner with on May 3, 2023?": ("2023-05-03", "2023-05-03", "May 3, 2023"),
    "What book did Tim finish on 8th December, 2023?": ("2023-12-08", "2023-12-08", "8th December, 2023"),
    "What happened on 2023-05-08?": ("2023-05-08", "2023-05-08", "2023-05-08"),
    # a day and month without a year: the latest on or before now (8 May 2023; 2 January 2024)
    "Was it on May 8?": ("2023-05-08", "2023-05-08", "May 8"),
    "What did we eat on 2 January?": ("2024-01-02", "2024-01-02", "2 January"),
    # months, seasons, years
    "What did John attend with his colleagues in March 2023?": ("2023-03-01", "2023-03-31", "March 2023"),
    "When did Melanie go camping in July?": ("2023-07-01", "2023-07-31", "in July"),
    "What did I plant last June?": ("2023-06-01", "2023-06-30", "last June"),
    "What state did Joanna visit in summer 2021?": ("2021-06-01", "2021-08-31", "summer 2021"),
    "Where did we ski in winter 2023?": ("2022-12-01", "2023-02-28", "winter 2023"),
    "How many times has Melanie gone to the beach in 2023?": ("2023-01-01", "2023-12-31", "2023"),
    "What did they do last summer?": ("2023-06-01", "2023-08-31", "last summer"),
    # parts of a month
    "Which country was Tim visiting in the second week of November?": (
        "2023-11-08",
        "2023-11-14",
        "the second week of November",
    ),
    "Was the first half of September 2022 good for Nate?": (
        "2022-09-01",
        "2022-09-15",
        "the first half of September 2022",
    ),
    "Which tournament did Nate win in the beginning of November 2022?": (
        "2022-11-01",
        "2022-11-10",
        "the beginning of November 2022",
    ),
    "What happened in late March 2023?": ("2023-03-21", "2023-03-31", "late March 2023"),
    # between two dates (the first takes the second's year)
    "Where was John between August 11 and August 15 2023?": (
        "2023-08-11",
        "2023-08-15",
        "between August 11 and August 15 2023",
    ),
    # ... before DATE: through DATE, the day a conversation dated DATE told of it
    "Where was Tim in the week before 16 November 2023?": (
        "2023-11-09",
        "2023-11-16",
        "the week before 16 November 2023",
    ),
    # 10 April 2023 was a Monday: the weekend before it was 8-9 April
    "What did Maria do last weekend before April 10, 2023?": (
        "2023-04-08",
        "2023-04-10",
        "last weekend before April 10, 2023",
    ),
    # two weeks before 11 August 2023 is 28 July, and the 7 days around it begin on 25 July
    "What puppy did she get two weeks before August 11, 2023?": (
        "2023-07-25",
        "2023-08-11",
        "two weeks before August 11, 2023",
    ),
    # 25 October 2022 was a Tuesday: the Sunday before it was the 23rd
    "What was shown on the Sunday before October 25, 2022?": (
        "2022-10-23",
        "2022-10-25",
        "the Sunday before October 25, 2022",
    ),
    # a relative phrase anchored by the question's own date (23 January 2022 was a Sunday; 6 November 2023 a Monday)
    "What did Joanna finish last Friday on 23 January, 2022?": (
        "2022-01-21",
        "2022-01-23",
        "last Friday ... 23 January, 2022",
    ),
    "What was Tim's issue last week, as mentioned on November 6, 2023?": (
        "2023-10-30",
        "2023-11-06",
        "last week ... November 6, 2023",
    ),
    # no such day: the month it names (and the rest is just text)
    "x'); DROP TABLE items;-- 31 February 2023": ("2023-02-01", "2023-02-28", "February 2023"),
    # relative to now
    "What did Joanna write yesterday?": ("2024-01-04", "2024-01-04", "yesterday"),
    "What did I cook a few days ago?": ("2024-01-02", "2024-01-02", "a few days ago"),
    "Who called two weeks ago?": ("2023-12-19", "2023-12-25", "two weeks ago"),
    "What did I do with Rachel on the Wednesday two months ago?": ("2023-11-01", "2023-11-30", "two months ago"),
    "Where did Caroline move from 4 years ago?": ("2020-01-01", "2020-12-31", "4 years ago"),
    "What game did I finally beat last weekend?": ("2023-12-30", "2023-12-31", "last weekend"),
    "What did we discuss last week?": ("2023-12-25", "2023-12-31", "last week"),
    "Who visited last Monday?": ("2024-01-01", "2024-01-01", "last Monday"),
    "How many hours did I watch last month?": ("2023-12-01", "2023-12-31", "last month"),
    "What did John do last year in his hometown?": ("2023-01-01", "2023-12-31", "last year"),
    "How many events did I attend in the past month?": ("2023-12-05", "2024-01-05", "in the past month"),
    "How much did I run in the last 10 days?": ("2023-12-26", "2024-01-05", "in the last 10 days"),
    "What have I spent since the start of the year?": ("2024-01-01", "2024-01-05", "since the start of the year"),
    "What did I read this week?": ("2024-01-01", "2024-01-05", "this week"),
}

# Questions that ask FOR a time, name none, name an open span, the future, or an event rather than a date.
NO_WINDOW = [
    "When did Caroline go to the LGBTQ support group?",
    "How many days ago did I buy a smoker?",
    "How long ago was Caroline's 18th birthday?",
    "What year did John start surfing?",
    "How many tournaments has Nate won by July 10, 2022?",
    "May I ask what you march for?",  # the verb "may", the verb "march"
    "What city did Tim suggest for the team trip next month?",
    "What happened two weeks before the trip?",
    "What music did people love in the 1990s?",
    "The M1919 and the M1 was used by what military?",  # a name, not a year
]


@pytest.mark.parametrize("question", list(WINDOWS))
def test_the_offline_rules_read_each_phrase_as_the_window_worked_out_by_hand(question):
    window = offline_window(question, NOW)
    assert window is not None
    assert (window.start, window.end, window.phrase) == WINDOWS[question]
    assert window.parser == "offline" and window.rule


@pytest.mark.parametrize("question", NO_WINDOW)
def test_a_question_that_names_no_period_gets_no_window(question):
    assert offline_window(question, NOW) is None


def test_without_an_llm_auto_reads_with_the_offline_rules_and_says_so():
    window, strategy = question_window("What did I plant last June?", NOW, "auto", NoLLM(), "u")
    assert window is not None and (window.start, window.end, strategy) == ("2023-06-01", "2023-06-30", "offline")
    assert question_window("Where do I live?", NOW, "auto", NoLLM(), "u") == (None, "offline (no time named)")


class TestTheLLMParser:
    @pytest.fixture(autouse=True)
    def fresh(self, server):
        server.reset()
        yield
        assert server.pending("chat") == 0, "a scripted reply was never requested"

    @pytest.fixture(scope="class")
    def llm(self, llm_engine):
        return llm_engine.llm

    def test_the_llm_reads_the_window_from_todays_date_and_the_question(self, llm, server):
        server.script("chat", '{"start": "2023-12-18", "end": "2023-12-24", "phrase": "two weeks before Christmas"}')
        question = "What did I buy two weeks before Christmas?"
        window, strategy = question_window(question, NOW, "llm", llm, "u")
        assert window is not None and strategy == "llm"
        assert (window.start, window.end, window.phrase, window.parser) == (
            "2023-12-18",
            "2023-12-24",
            "two weeks before Christmas",
            "llm",
        )
        [req] = server.captured("chat")
        assert req.prompt == LLM_PROMPT.format(today="2024-01-05", weekday="Friday", question=question)
        assert req.body["response_format"]["json_schema"]["name"] == "time_window"  # structured output asked for

    def test_an_llm_that_sees_no_period_names_none(self, llm, server):
        server.script("chat", '{"start": null, "end": null, "phrase": null}')
        assert question_window("What did I do before moving to Lyon?", NOW, "auto", llm, "u") == (
            None,
            "llm (no time named)",
        )

    def test_a_failing_or_malformed_llm_falls_back_to_the_offline_rules_and_the_strategy_says_why(self, llm, server):
        # the structured call answers garbage, the plain call too: the offline rules read the window
        server.script("chat", "no idea", '{"start": "June", "end": "2023-06-30"}')
        window, strategy = question_window("What did I plant last June?", NOW, "llm", llm, "u")
        assert window is not None and (window.start, window.end, window.parser) == (
            "2023-06-01",
            "2023-06-30",
            "offline",
        )
        assert strategy == "offline (LLM failed: dates not in YYYY-MM-DD form)"
        server.script("chat", *[Reply(status=500)] * 6)
        window, strategy = question_window("What did I plant last June?", NOW, "llm", llm, "u")
        assert window is not None and window.parser == "offline" and strategy.startswith("offline (LLM failed: LLM")

    def test_auto_asks_the_llm_only_about_a_question_with_a_word_a_time_phrase_needs(self, llm, server):
        assert question_window("Where does my sister live?", NOW, "auto", llm, "u") == (
            None,
            "offline (no time named)",
        )
        assert server.captured("chat") == []  # no word of time: no call
        server.script("chat", '{"start": "2023-12-24", "end": "2023-12-26", "phrase": "at Christmas"}')
        window, strategy = question_window("What did I get at Christmas?", NOW, "auto", llm, "u")
        assert window is not None and (window.label, strategy) == ("2023-12-24..2023-12-26", "llm")

    def test_an_end_before_the_start_is_refused(self, llm, server):
        backwards = '{"start": "2023-06-30", "end": "2023-06-01", "phrase": "x"}'
        server.script("chat", backwards, backwards)
        assert question_window("Where do I live?", NOW, "llm", llm, "u") == (
            None,
            "offline (LLM failed: end before start)",
        )
