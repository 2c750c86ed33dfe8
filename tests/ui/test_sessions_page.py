"""The Sessions page: filtering and pagination in the database, the message view, pruning with preview and confirm."""

from __future__ import annotations

from datetime import date

from apptest_helpers import button, no_errors, open_link, open_page, values

PAGE = "pages/sessions.py"


def session_rows(at) -> list[str]:
    return list(next(df.value for df in at.dataframe if "session" in df.value.columns)["session"])


def test_empty_store_explains_how_sessions_appear(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_sessions_of_the_sidebar_user_are_listed_newest_first_with_the_newest_opened(demo_app):
    at = open_page(PAGE, user="ada")
    no_errors(at)
    expected = [s.session_id for s in demo_app.sessions.list_sessions("ada").rows]
    assert session_rows(at) == expected
    assert "Messages of ada\\-s06" in values(at, "subheader")


def test_messages_show_role_and_tokens_and_their_text(demo_app):
    at = open_page(PAGE, user="ada", session="ada-s01")
    no_errors(at)
    first = demo_app.sessions.messages("ada", "ada-s01", limit=1).rows[0]
    assert any(v.startswith(f"#1 · **{first.role}** · {first.tokens:,} tokens") for v in values(at, "caption"))
    assert first.content in values(at, "text") + values(at, "code")
    assert len(at.chat_message) == demo_app.sessions.get_session("ada", "ada-s01").message_count


def test_search_and_page_size_are_applied_in_the_database(demo_app):
    at = open_page(PAGE, user="ada")
    at.selectbox(key="sessions_user").set_value("(all users)").run()
    at.selectbox(key="sessions_page_size").set_value(10).run()
    no_errors(at)
    assert len(session_rows(at)) == 10
    assert any("sessions 1–10 of 17" in v for v in values(at, "caption"))
    at.number_input(key="sessions_page").set_value(2).run()
    assert len(session_rows(at)) == 7
    at.text_input(key="sessions_search").input("refund").run()
    no_errors(at)
    expected = [s.session_id for s in demo_app.sessions.list_sessions(None, "refund").rows]
    assert expected and session_rows(at) == expected, "a new filter goes back to page 1"


def test_a_date_range_keeps_only_sessions_active_inside_it(demo_app):
    at = open_page(PAGE, user="tomas")
    at.date_input(key="sessions_since").set_value(date(2026, 11, 1)).run()
    no_errors(at)
    rows = session_rows(at)
    assert rows and all(
        demo_app.sessions.get_session("tomas", s).last_activity_at.date() >= date(2026, 11, 1) for s in rows
    )
    assert len(rows) < demo_app.sessions.list_sessions("tomas").total


def test_an_inverted_date_range_is_explained_not_queried(demo_app):
    at = open_page(PAGE, user="tomas")
    at.date_input(key="sessions_since").set_value(date(2026, 11, 1))
    at.date_input(key="sessions_until").set_value(date(2026, 10, 1)).run()
    assert any("later than" in v for v in values(at, "error"))


def test_opening_a_session_makes_it_current_for_every_page(demo_app):
    at = open_page(PAGE, user="mira")
    at.selectbox(key="sessions_open").set_value(("mira", "mira-s02")).run()
    button(at, "Make this the current session on every page").click().run()
    no_errors(at)
    assert at.session_state["app_session"] == "mira-s02"
    assert at.sidebar.selectbox(key="app_session_select").value == "mira-s02"


def test_pruning_previews_then_deletes_only_after_explicit_confirmation(demo_app):
    before = demo_app.sessions.list_sessions("mira").total
    at = open_page(PAGE, user="mira")
    at.radio(key="sessions_prune_rule").set_value("stale").run()
    button(at, "Preview what would be deleted").click().run()
    no_errors(at)
    plan = demo_app.sessions.prune("mira", "stale")
    assert plan.sessions, "the demo has sessions older than 30 days"
    assert any(
        f"would delete {len(plan.sessions)} session(s) with {plan.message_count:,} message(s)" in v
        for v in values(at, "warning")
    )
    preview = next(df.value for df in at.dataframe if len(df.value) == len(plan.sessions))
    assert sorted(preview["session"]) == sorted(s.session_id for s in plan.sessions)

    button(at, f"Delete {len(plan.sessions)} session(s)").click().run()
    assert any("Tick the confirmation box" in v for v in values(at, "error"))
    assert demo_app.sessions.list_sessions("mira").total == before, "nothing deleted without the confirmation"

    at.checkbox(key="sessions_prune_sure").check()
    button(at, f"Delete {len(plan.sessions)} session(s)").click().run()
    no_errors(at)
    assert demo_app.sessions.list_sessions("mira").total == before - len(plan.sessions)
    assert any(f"Deleted {len(plan.sessions)} session(s)" in v for v in values(at, "success"))


def test_the_user_filter_follows_the_sidebar_user_after_the_first_load(demo_app):
    at = open_page(PAGE, user="ada")
    assert at.selectbox(key="sessions_user").value == "ada"
    at.selectbox(key="app_user_select").set_value("mira").run()
    no_errors(at)
    assert at.selectbox(key="sessions_user").value == "mira"
    assert session_rows(at) == [s.session_id for s in demo_app.sessions.list_sessions("mira").rows]
    at.selectbox(key="sessions_user").set_value("(all users)").run()  # the page's own choice holds meanwhile
    at.run()
    assert at.selectbox(key="sessions_user").value == "(all users)"


def test_a_reload_keeps_the_user_and_session_named_in_the_url(demo_app):
    older = demo_app.sessions.list_sessions("mira").rows[-1].session_id  # not the newest, which is the default
    at = open_link(PAGE, {"user": "mira", "session": older})
    no_errors(at)
    assert at.selectbox(key="app_user_select").value == "mira"
    assert at.selectbox(key="app_session_select").value == older
    assert (at.query_params["user"], at.query_params["session"]) == ("mira", older)
    at.selectbox(key="app_user_select").set_value("ada").run()
    newest = demo_app.sessions.list_sessions("ada").rows[0].session_id
    assert (at.query_params["user"], at.query_params["session"]) == ("ada", newest)


def test_a_message_link_to_a_session_that_is_gone_says_so_instead_of_marking_another_sessions_message(demo_app):
    at = open_link(PAGE, {"user": "ada", "session": "ada-s99-deleted", "message": "1"})
    no_errors(at)
    assert any("ada\\-s99\\-deleted is not in this store" in v for v in values(at, "warning"))
    assert not any("linked message" in v for v in values(at, "caption") + values(at, "markdown"))


def test_a_message_link_marks_that_message_of_that_session(demo_app):
    at = open_link(PAGE, {"user": "ada", "session": "ada-s01", "message": "2"})
    no_errors(at)
    assert any("linked message" in v for v in values(at, "caption") + values(at, "markdown"))
    assert not values(at, "warning")
