"""The Working memory page: typed and custom slots, JSON edits with validation, custom slots, history and restore."""

from __future__ import annotations

from apptest_helpers import button, by_label, no_errors, open_page, values

from engine import TYPED_SLOTS

PAGE = "pages/working_memory.py"


def slot_table(at):
    return next(df.value for df in at.dataframe if "slot" in df.value.columns and "kind" in df.value.columns)


def save(at, text: str):
    by_label(at, "text_area", "New value of").input(text)
    button(at, "Save").click().run()
    return at


def test_empty_store_explains_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_a_user_without_sessions_is_told_how_sessions_start(empty_app):
    empty_app.items.remember("solo", "A fact without any session.")
    at = open_page(PAGE)
    no_errors(at)
    assert any("has no sessions yet" in v for v in values(at, "info"))


def test_the_six_typed_slots_and_custom_slots_are_listed(demo_app):
    slots = demo_app.working.get("tomas", "tomas-s05")
    at = open_page(PAGE, user="tomas", session="tomas-s05")
    no_errors(at)
    table = slot_table(at)
    assert list(table["slot"])[:6] == list(TYPED_SLOTS)
    custom = [s for s in slots if s not in TYPED_SLOTS]
    assert custom, "the demo session has custom slots"
    assert set(table[table["kind"] == "custom"]["slot"]) == set(custom)


def test_invalid_json_shows_the_parse_error_and_saves_nothing_then_valid_json_saves(demo_app):
    user, session = "ada", "ada-s06"
    before = demo_app.working.get(user, session)["goals"]
    edits = len(demo_app.working.history(user, session))
    at = open_page(PAGE, user=user, session=session)
    assert at.selectbox(key="wm_slot").value == "goals"

    save(at, '["ship the JPY fix", ')
    errors = values(at, "error")
    assert errors and "invalid JSON for goals" in errors[0] and "line 1" in errors[0]
    assert demo_app.working.get(user, session)["goals"] == before
    assert len(demo_app.working.history(user, session)) == edits
    assert by_label(at, "text_area", "New value of").value == '["ship the JPY fix", ', "the typed text is kept"

    save(at, '["ship the JPY fix", "check the CSV export"]')
    no_errors(at)
    assert demo_app.working.get(user, session)["goals"] == ["ship the JPY fix", "check the CSV export"]
    latest = demo_app.working.history(user, session)[0]
    assert (latest.slot, latest.source, latest.old_value) == ("goals", "ui", before)
    assert "Saved goals." in values(at, "success")
    assert '"check the CSV export"' in values(at, "code")[0], "the current value shows the saved JSON"


def test_restoring_an_edit_puts_the_previous_value_back(demo_app):
    user, session = "mira", "mira-s05"
    at = open_page(PAGE, user=user, session=session)
    at.selectbox(key="wm_slot").set_value("scratchpad").run()
    original = demo_app.working.get(user, session)["scratchpad"]
    save(at, '{"note": "temporary"}')
    assert demo_app.working.get(user, session)["scratchpad"] == {"note": "temporary"}
    edit = demo_app.working.history(user, session)[0]
    assert at.selectbox(key="wm_edit").value == edit.id, "the newest edit is inspected first"
    assert any('+  "note": "temporary"' in v for v in values(at, "code")), "the diff shows the added line"
    at.radio(key="wm_restore_which").set_value("old")
    button(at, "Restore this value").click().run()
    no_errors(at)
    assert demo_app.working.get(user, session)["scratchpad"] == original
    assert demo_app.working.history(user, session)[0].source == "restore"  # told apart from a typed edit


def test_custom_slots_can_be_added_and_removed(demo_app):
    user, session = "ada", "ada-s05"
    at = open_page(PAGE, user=user, session=session)
    at.text_input(key="wm_new_name").input("Bad Name")
    at.text_area(key="wm_new_value").input("1")
    button(at, "Add slot").click().run()
    assert any("invalid slot name" in v for v in values(at, "error"))
    assert "Bad Name" not in demo_app.working.get(user, session)

    at.text_input(key="wm_new_name").input("review_budget")
    at.text_area(key="wm_new_value").input('{"minutes": 30}')
    button(at, "Add slot").click().run()
    no_errors(at)
    assert demo_app.working.get(user, session)["review_budget"] == {"minutes": 30}
    assert "review_budget" in list(slot_table(at)["slot"])

    at.selectbox(key="wm_remove_name").set_value("review_budget")
    button(at, "Remove slot").click().run()
    assert any("Tick the box" in v for v in values(at, "error"))
    assert "review_budget" in demo_app.working.get(user, session)
    at.checkbox(key="wm_remove_sure").check()
    button(at, "Remove slot").click().run()
    no_errors(at)
    assert "review_budget" not in demo_app.working.get(user, session)


def test_hostile_json_typed_into_the_editor_is_a_readable_error_and_changes_nothing(demo_app):
    """5,000 levels of nesting (RecursionError before the validation wall), a 5,000-digit integer, a lone surrogate
    escape and NaN: each an error box naming the problem, no exception, the store's contents unchanged."""
    from tests.support.store_snapshot import snapshot

    user, session = "ada", "ada-s06"
    before = snapshot(demo_app)
    at = open_page(PAGE, user=user, session=session)
    for text, expected in [
        ("[" * 5000 + "]" * 5000, "nested more than 64 levels"),
        ("9" * 5000, "invalid JSON for goals"),
        ('"tea \\ud800"', "lone surrogate"),
        ('{"budget": NaN}', "NaN is not allowed"),
    ]:
        save(at, text)
        assert not at.exception, at.exception
        errors = values(at, "error")
        assert errors and "Not saved" in errors[0] and expected in errors[0], (text[:20], errors)
    assert snapshot(demo_app) == before
