"""Working memory: six typed slots plus custom ones, all-or-nothing updates, an edit history that can be restored
(memory-model.md §3)."""

from __future__ import annotations

import pytest

from engine import TYPED_SLOTS, InvalidInput, NotFound
from tests.support.storecheck import snapshot

pytestmark = pytest.mark.both_stores

U, S = "ada", "ada-s01"


def test_an_untouched_session_shows_the_six_typed_slots_empty(empty_engine):
    assert TYPED_SLOTS == (
        "goals",
        "current_task",
        "retrieved_context",
        "scratchpad",
        "last_observation",
        "intermediate_reasoning",
    )
    assert empty_engine.working.get(U, S) == dict.fromkeys(TYPED_SLOTS)


def test_typed_and_custom_slots_hold_any_json_and_custom_slots_follow_the_typed_ones(empty_engine):
    state = empty_engine.working.update(
        U,
        S,
        {
            "goals": ["fix the refund bug", "keep CI green"],
            "current_task": "reproduce the failing test",
            "scratchpad": {"hypothesis": "rounding", "confidence": 0.6, "checked": [1, 2, None]},
            "zz_custom": 42,
            "api_budget": {"left": 3},
        },
    )
    assert list(state) == [*TYPED_SLOTS, "api_budget", "zz_custom"]
    assert state["goals"] == ["fix the refund bug", "keep CI green"]
    assert state["scratchpad"] == {"hypothesis": "rounding", "confidence": 0.6, "checked": [1, 2, None]}
    assert state["last_observation"] is None
    assert empty_engine.working.get(U, S) == state


def test_setting_a_slot_to_none_removes_it_and_clear_removes_all(empty_engine):
    empty_engine.working.update(U, S, {"goals": ["a"], "custom": True, "scratchpad": "x"})
    state = empty_engine.working.update(U, S, {"custom": None})
    assert "custom" not in state
    assert empty_engine.working.clear(U, S) == 2
    assert empty_engine.working.get(U, S) == dict.fromkeys(TYPED_SLOTS)


def test_working_memory_is_per_user_and_session(empty_engine):
    empty_engine.working.update(U, S, {"goals": ["mine"]})
    assert empty_engine.working.get(U, "other-session")["goals"] is None
    assert empty_engine.working.get("bo", S)["goals"] is None


def test_a_multi_slot_update_with_one_bad_value_writes_nothing(empty_engine):
    empty_engine.working.update(U, S, {"goals": ["original"]})
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.working.update(U, S, {"goals": ["replaced"], "scratchpad": "fine", "current_task": float("nan")})
    assert snapshot(empty_engine) == before
    assert empty_engine.working.get(U, S)["goals"] == ["original"]
    assert empty_engine.working.get(U, S)["scratchpad"] is None


@pytest.mark.parametrize(
    "bad",
    [
        {"Bad-Name": 1},
        {"": 1},
        {"x" * 65: 1},
        {"ok": object()},
        {"ok": float("inf")},
        {"ok": {"nested": float("-inf")}},
    ],
)
def test_a_bad_slot_name_or_non_json_value_anywhere_in_the_update_writes_nothing(empty_engine, bad):
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput):
        empty_engine.working.update(U, S, {"goals": ["would be written first"], **bad})
    assert snapshot(empty_engine) == before


def test_a_slot_value_over_the_size_limit_is_refused(empty_engine):
    with pytest.raises(InvalidInput, match="limit"):
        empty_engine.working.update(U, S, {"scratchpad": "x" * 300_000})
    assert empty_engine.working.get(U, S)["scratchpad"] is None


def test_an_empty_update_is_refused(empty_engine):
    with pytest.raises(InvalidInput):
        empty_engine.working.update(U, S, {})


def test_a_slot_set_from_json_text_is_parsed(empty_engine):
    state = empty_engine.working.set_json(U, S, "goals", '["book flights", {"by": "Friday"}]')
    assert state["goals"] == ["book flights", {"by": "Friday"}]
    assert empty_engine.working.set_json(U, S, "flag", "true")["flag"] is True


@pytest.mark.parametrize(
    "text, detail",
    [
        ('{"a": 1,}', "line 1, column 9"),
        ("[1, 2", "line 1, column 6"),
        ("{'single': 'quotes'}", "line 1, column 2"),
        ("not json", "line 1, column 1"),
        ('{\n  "a": 1\n  "b": 2\n}', "line 3, column 3"),
        ("", "line 1, column 1"),
    ],
)
def test_invalid_json_text_is_refused_with_the_parse_error_and_nothing_is_saved(empty_engine, text, detail):
    empty_engine.working.set_json(U, S, "goals", '["keep me"]')
    before = snapshot(empty_engine)
    with pytest.raises(InvalidInput) as err:
        empty_engine.working.set_json(U, S, "goals", text)
    assert "invalid JSON for goals" in str(err.value)
    assert detail in str(err.value)
    assert snapshot(empty_engine) == before
    assert empty_engine.working.get(U, S)["goals"] == ["keep me"]


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"x": -Infinity}'])
def test_json_text_with_nan_or_infinity_is_refused(empty_engine, text):
    with pytest.raises(InvalidInput, match="not allowed"):
        empty_engine.working.set_json(U, S, "scratchpad", text)
    assert empty_engine.working.history(U, S) == []


def test_every_change_is_recorded_with_old_value_new_value_and_source_newest_first(empty_engine):
    empty_engine.working.update(U, S, {"goals": ["a"]}, source="agent")
    empty_engine.working.set_json(U, S, "goals", '["a", "b"]', source="ui")
    empty_engine.working.update(U, S, {"goals": None}, source="api")
    history = empty_engine.working.history(U, S)
    assert [(h.slot, h.old_value, h.new_value, h.source) for h in history] == [
        ("goals", ["a", "b"], None, "api"),
        ("goals", ["a"], ["a", "b"], "ui"),
        ("goals", None, ["a"], "agent"),
    ]
    assert history[0].at >= history[1].at >= history[2].at
    assert len({h.id for h in history}) == 3


def test_setting_a_slot_to_its_current_value_records_no_edit(empty_engine):
    empty_engine.working.update(U, S, {"goals": {"a": 1, "b": 2}})
    empty_engine.working.update(U, S, {"goals": {"b": 2, "a": 1}})
    assert len(empty_engine.working.history(U, S)) == 1


def test_history_can_be_filtered_by_slot(empty_engine):
    empty_engine.working.update(U, S, {"goals": 1, "scratchpad": 2})
    empty_engine.working.update(U, S, {"goals": 3})
    assert [h.new_value for h in empty_engine.working.history(U, S, slot="goals")] == [3, 1]


def test_an_unknown_edit_source_is_refused(empty_engine):
    with pytest.raises(InvalidInput, match="source"):
        empty_engine.working.update(U, S, {"goals": 1}, source="hacker")


def test_restoring_an_edit_puts_back_the_old_value_and_records_the_restore(empty_engine):
    empty_engine.working.update(U, S, {"scratchpad": {"draft": 1}}, source="agent")
    empty_engine.working.update(U, S, {"scratchpad": {"draft": 2}}, source="agent")
    edit = empty_engine.working.history(U, S)[0]
    assert (edit.old_value, edit.new_value) == ({"draft": 1}, {"draft": 2})
    assert empty_engine.working.restore(U, S, edit.id) == {"draft": 1}
    assert empty_engine.working.get(U, S)["scratchpad"] == {"draft": 1}
    latest = empty_engine.working.history(U, S)[0]
    assert (latest.old_value, latest.new_value, latest.source) == ({"draft": 2}, {"draft": 1}, "ui")
    assert empty_engine.working.restore(U, S, edit.id, which="new") == {"draft": 2}
    assert empty_engine.working.get(U, S)["scratchpad"] == {"draft": 2}


def test_restoring_the_creation_of_a_slot_removes_it(empty_engine):
    empty_engine.working.update(U, S, {"custom": "created"})
    created = empty_engine.working.history(U, S)[0]
    assert empty_engine.working.restore(U, S, created.id) is None
    assert "custom" not in empty_engine.working.get(U, S)


def test_restoring_an_unknown_or_foreign_edit_is_not_found(empty_engine):
    empty_engine.working.update("bo", "bo-s1", {"goals": "bo's"})
    foreign = empty_engine.working.history("bo", "bo-s1")[0]
    before = snapshot(empty_engine)
    with pytest.raises(NotFound):
        empty_engine.working.restore(U, S, foreign.id)
    with pytest.raises(NotFound):
        empty_engine.working.restore(U, S, 987654)
    with pytest.raises(InvalidInput):
        empty_engine.working.restore("bo", "bo-s1", foreign.id, which="newest")
    assert snapshot(empty_engine) == before
