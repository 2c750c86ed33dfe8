"""The Memories & forgetting page: browse by category with provenance, add, forget with preview and reason, audit."""

from __future__ import annotations

from apptest_helpers import button, no_errors, open_link, open_page, values

PAGE = "pages/memories.py"


def item_table(at):
    return next(df.value for df in at.dataframe if "content" in df.value.columns)


def log_table(at):
    return next(df.value for df in at.dataframe if "reason" in df.value.columns)


def test_empty_store_explains_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_items_are_browsed_by_category_with_provenance_and_category_summary(demo_app):
    category = next(c for c in demo_app.items.categories("tomas") if c.summary and c.item_count >= 2)
    at = open_page(PAGE, user="tomas")
    at.selectbox(key="memories_category").set_value(category.name).run()
    no_errors(at)
    table = item_table(at)
    expected = demo_app.items.list_items("tomas", category=category.name, limit=25)
    assert list(table["id"]) == [i.id for i in expected.rows]
    assert set(table["category"]) == {category.name}
    first = expected.rows[0]
    assert first.content in values(at, "text"), "the selected item's full text"
    assert any(v.startswith("{") and first.provenance["method"] in v for v in values(at, "json"))
    assert category.summary.rstrip("\n") in values(at, "code"), "the summary is shown as source, not rendered"


def test_search_and_forgotten_items_toggle(demo_app):
    at = open_page(PAGE, user="ada")
    at.text_input(key="memories_query").input("Priya").run()
    no_errors(at)
    assert list(item_table(at)["id"]) == [i.id for i in demo_app.items.list_items("ada", query="Priya").rows]
    archived = demo_app.items.list_items("ada", include_archived=True).total - demo_app.items.list_items("ada").total
    assert archived >= 1
    at.text_input(key="memories_query").input("")
    at.toggle(key="memories_archived").set_value(True).run()
    assert any(
        f"of {demo_app.items.list_items('ada', include_archived=True).total}" in v for v in values(at, "caption")
    )


def test_adding_an_item_stores_it_through_the_engine(demo_app):
    at = open_page(PAGE, user="mira")
    at.text_area(key="memories_new_content").input("Mira's committee meets on the first Tuesday of each month.")
    at.text_input(key="memories_new_category").input("Not Snake")
    button(at, "Add memory").click().run()
    assert any("Memory not added" in v and "invalid category" in v for v in values(at, "error"))
    at.text_input(key="memories_new_category").input("schedule")
    at.text_input(key="memories_new_preceding").input("When does Mira's committee meet?")
    button(at, "Add memory").click().run()
    no_errors(at)
    added = demo_app.items.list_items("mira", category="schedule").rows
    assert [i.content for i in added] == ["Mira's committee meets on the first Tuesday of each month."]
    assert added[0].source == "ui"
    assert added[0].preceding_text == "When does Mira's committee meet?"
    at.text_input(key="memories_query").input("committee meets").run()
    assert "When does Mira's committee meet?" in values(at, "text"), "the detail view shows the preceding text"


def test_forget_previews_the_text_requires_a_reason_then_archives_and_logs(demo_app):
    user = "tomas"
    at = open_page(PAGE, user=user)
    target = item_table(at)["id"].iloc[1]
    text = demo_app.items.get(user, target).content
    at.multiselect(key="memories_forget_ids").select(target).run()
    no_errors(at)
    assert text in values(at, "text"), "the preview shows the text that will be forgotten"
    forget = "Forget 1 semantic items"

    button(at, forget).click().run()
    assert any("Give a reason" in v for v in values(at, "error"))
    assert demo_app.items.get(user, target).archived_at is None

    at.text_input(key="memories_forget_reason").input("user asked to drop it")
    button(at, forget).click().run()
    assert any("Tick" in v for v in values(at, "error"))
    assert demo_app.items.get(user, target).archived_at is None

    at.checkbox(key="memories_forget_sure").check()
    button(at, forget).click().run()
    no_errors(at)
    assert demo_app.items.get(user, target).archived_at is not None
    entry = demo_app.forgetting.log(user)[0]
    assert (entry.ids, entry.mode, entry.reason, entry.actor) == ((target,), "soft", "user asked to drop it", "ui")
    assert any("Forgot 1 semantic item (soft)" in v for v in values(at, "success"))
    log = log_table(at)
    assert (log["ids"].iloc[0], log["reason"].iloc[0], log["actor"].iloc[0]) == (target, "user asked to drop it", "ui")
    assert target not in list(item_table(at)["id"]), "a forgotten item leaves the active list"
    assert at.multiselect(key="memories_forget_ids").value == [], "the selection is cleared"


def test_hard_forget_of_an_episode_by_id_deletes_it(demo_app):
    user = "mira"
    ep = demo_app.episodes.list_episodes(user, limit=1).rows[0]
    at = open_page(PAGE, user=user)
    at.selectbox(key="memories_forget_kind").set_value("episodic").run()
    at.text_input(key="memories_forget_more").input(f"{ep.id}, ep-unknown-1").run()
    assert ep.summary in values(at, "text")
    assert any("not found" in v for v in values(at, "caption"))
    at.radio(key="memories_forget_mode").set_value("hard")
    at.text_input(key="memories_forget_reason").input("test data")
    at.checkbox(key="memories_forget_sure").check()
    button(at, "Forget 2 episodes").click().run()
    no_errors(at)
    assert ep.id not in [e.id for e in demo_app.episodes.list_episodes(user, include_archived=True, limit=100).rows]
    entry = demo_app.forgetting.log(user)[0]
    assert (entry.memory_type, entry.mode, entry.ids) == ("episodic", "hard", (ep.id,))
    assert any("Unknown ids (ignored)" in v for v in values(at, "success"))


def test_a_saved_memory_empties_the_form_so_a_second_click_stores_no_duplicate(demo_app):
    at = open_page(PAGE, user="tomas")
    text = "Tomas waters the fern on Thursdays."
    at.text_area(key="memories_new_content").input(text)
    at.text_input(key="memories_new_category").input("chores")
    button(at, "Add memory").click().run()
    no_errors(at)
    assert at.text_area(key="memories_new_content").value == "", "the saved text is gone from the form"
    button(at, "Add memory").click().run()  # a second click: nothing to save
    assert [i.content for i in demo_app.items.list_items("tomas", category="chores").rows] == [text]


def test_the_open_tab_is_kept_in_the_url_and_survives_a_message_above_the_tabs(demo_app):
    at = open_page(PAGE, user="tomas")
    assert at.query_params["tab"] == "browse"
    at.session_state["memories_tab"] = "Add a memory"  # what clicking the tab does
    at.run()
    assert at.query_params["tab"] == "add-a-memory"
    at.text_area(key="memories_new_content").input("Tomas keeps the spare key under the blue pot.")
    at.text_input(key="memories_new_category").input("chores")
    button(at, "Add memory").click().run()
    no_errors(at)
    assert any("Added" in v for v in values(at, "success"))  # a message appeared above the tabs
    assert at.session_state["memories_tab"] == "Add a memory"
    assert at.query_params["tab"] == "add-a-memory"


def test_a_link_names_the_memory_whose_details_are_shown_even_off_the_first_page(demo_app):
    oldest = demo_app.items.list_items("ada", limit=1, offset=demo_app.items.list_items("ada").total - 1).rows[0]
    at = open_link(PAGE, {"user": "ada", "memory": oldest.id, "tab": "browse"})
    no_errors(at)
    assert at.selectbox(key="memories_item").value == oldest.id
    assert oldest.content in values(at, "text")
    assert at.query_params["memory"] == oldest.id
    at.selectbox(key="memories_item").set_value(item_table(at)["id"].iloc[0]).run()
    assert at.query_params["memory"] == item_table(at)["id"].iloc[0]
