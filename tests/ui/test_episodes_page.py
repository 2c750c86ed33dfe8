"""The Episodes page: step timelines with outcomes, filters and pagination, reflection with links to sources."""

from __future__ import annotations

from apptest_helpers import button, no_errors, open_page, values

from ui.text import md_escape

PAGE = "pages/episodes.py"


def test_empty_store_explains_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_a_user_without_episodes_is_told_how_agents_record_them_and_reflection_says_so(empty_app):
    empty_app.items.remember("newcomer", "Something to make the user exist.")
    at = open_page(PAGE)
    no_errors(at)
    assert any("has no episodes yet" in v for v in values(at, "info"))
    button(at, "Run reflection").click().run()
    no_errors(at)
    assert any("No insights" in v for v in values(at, "info"))


def test_episodes_are_paginated_newest_first_with_each_step_shown(demo_app):
    page = demo_app.episodes.list_episodes("ada", limit=10)
    at = open_page(PAGE, user="ada")
    no_errors(at)
    assert len(at.expander) == 10
    assert any(f"episodes 1–10 of {page.total}" in v for v in values(at, "caption"))
    newest = page.rows[0]
    assert md_escape(newest.summary[:40]) in at.expander[0].label
    texts = values(at, "text")
    for step in newest.steps:
        for part in (step.observation, step.action, step.result):
            assert (part or "—") in texts
    at.number_input(key="episodes_page").set_value(2).run()
    assert len(at.expander) == page.total - 10


def test_outcome_and_text_filters_narrow_the_list(demo_app):
    counts = demo_app.admin.episode_outcomes("tomas")
    at = open_page(PAGE, user="tomas")
    assert at.get("button_group")[0].options[0].startswith("any outcome")
    at.get("button_group")[0].set_value("failure").run()
    no_errors(at)
    assert len(at.expander) == min(10, counts["failure"])
    failures = demo_app.episodes.list_episodes("tomas", outcome="failure", limit=50).rows
    at.text_input(key="episodes_query").input(failures[0].steps[0].action).run()
    expected = demo_app.episodes.list_episodes("tomas", outcome="failure", query=failures[0].steps[0].action).total
    assert len(at.expander) == expected >= 1


def test_an_episode_opens_by_id_from_the_url_parameter(demo_app):
    ep = demo_app.episodes.list_episodes("mira", limit=1).rows[0]
    at = open_page(PAGE, user="mira", state={"episodes_episode": ep.id})
    no_errors(at)
    assert any(md_escape(ep.id) in v for v in values(at, "markdown"))
    at.text_input(key="episodes_episode").input("ep-does-not-exist").run()
    assert any("Cannot open that episode" in v for v in values(at, "error"))


def test_reflection_stores_insights_whose_provenance_links_to_the_source_episodes(demo_app):
    recent = [e.id for e in demo_app.episodes.list_episodes("mira", limit=4).rows]
    before = demo_app.items.list_items("mira", category="insights").total
    at = open_page(PAGE, user="mira")
    at.number_input(key="episodes_reflect_window").set_value(4)
    button(at, "Run reflection").click().run()
    no_errors(at)
    insights = demo_app.items.list_items("mira", category="insights").rows
    assert len(insights) > before
    for item in insights[: len(insights) - before]:
        assert [s["id"] for s in item.provenance["sources"]] == recent
        assert item.content in values(at, "text")
    links = at.get("page_link")
    assert {link.proto.label for link in links} >= {md_escape(i) for i in recent}
    assert all(link.proto.page.endswith("episodes") for link in links)
    # the strategy in words, not the engine's name for it (reflection_offline)
    made_by = f"Made by {md_escape('outcome statistics and recurring actions (offline')}"
    assert any(made_by in v for v in values(at, "caption"))
    assert not any("reflection\\_offline" in v or "reflection_offline" in v for v in values(at, "caption"))
