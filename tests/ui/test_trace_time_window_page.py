"""The Retrieval trace page shows the time stage: the date window the question named (its days, the phrase, the
parser and rule) and each candidate's time columns (days outside the window, time score, time factor)."""

from __future__ import annotations

from datetime import UTC, datetime

from apptest_helpers import markdown_texts, no_errors, open_link, plain_texts

from engine import MemoryEngine

PAGE = "pages/retrieval.py"
USER = "timely"


def test_a_trace_with_a_time_window_shows_the_window_and_each_candidates_time_columns(empty_app: MemoryEngine):
    empty_app.items.remember(
        USER, "Caroline went camping in the mountains.", created_at=datetime(2023, 7, 12, tzinfo=UTC)
    )
    empty_app.items.remember(USER, "Caroline went camping by the sea.", created_at=datetime(2023, 9, 2, tzinfo=UTC))
    trace = empty_app.retrieval.retrieve(
        USER,
        "Where did Caroline go camping in July?",
        overrides={"time_window": "boost", "time_half_life_days": 7.0, "time_weight": 1.0},
        now=datetime(2023, 12, 1, tzinfo=UTC),
    )
    at = open_link(PAGE, {"user": USER, "trace": trace.trace_id})
    no_errors(at)
    shown = "\n".join(markdown_texts(at)).replace("\\", "")  # as read: without markdown's escapes
    assert "Time window **2023-07-01..2023-07-31** read from 'in July' (offline: MONTH)" in shown
    assert "memories dated inside it score higher" in shown
    columns = {str(c) for df in at.dataframe for c in df.value.columns}
    assert {"time_days_outside", "time_score", "time_factor"} <= columns
    assert "Caroline went camping by the sea." in plain_texts(at)
