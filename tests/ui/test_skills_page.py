"""The Skills page: ranking by Wilson lower bound with the interval drawn, filters, versions, history, outcomes."""

from __future__ import annotations

from apptest_helpers import button, no_errors, open_link, open_page, values

PAGE = "pages/skills.py"


def ranked_table(at):
    return next(df.value for df in at.dataframe if "Wilson lower" in df.value.columns)


def test_empty_store_explains_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_a_user_without_skills_is_told_how_agents_register_them(empty_app):
    empty_app.items.remember("newcomer", "Something to make the user exist.")
    at = open_page(PAGE)
    no_errors(at)
    assert any("has no skills yet" in v and "register_skill" in v for v in values(at, "info"))


def test_skills_are_ranked_by_wilson_lower_bound_with_rate_trials_and_interval(demo_app):
    ranked = demo_app.skills.rank("ada", limit=25)
    at = open_page(PAGE, user="ada")
    no_errors(at)
    table = ranked_table(at)
    assert list(table["id"]) == [r.skill.id for r in ranked]
    assert list(table["Wilson lower"]) == sorted(table["Wilson lower"], reverse=True)
    top = table.iloc[0]
    assert (top["trials"], top["successes"]) == (ranked[0].trials, ranked[0].skill.success_count)
    chart = at.get("plotly_chart")[0]
    assert "error_x" in chart.proto.spec and "Wilson" in chart.proto.spec, "the interval is drawn as error bars"
    few = [r for r in ranked if r.few_trials]
    assert few and list(table[table["few trials"]]["id"]) == [r.skill.id for r in few]
    assert any("too few trials" in v for v in values(at, "caption"))


def test_filters_by_text_and_kind(demo_app):
    at = open_page(PAGE, user="ada")
    at.selectbox(key="skills_kind").set_value("code").run()
    no_errors(at)
    table = ranked_table(at)
    assert len(table) and set(table["kind"]) == {"code"}
    at.selectbox(key="skills_kind").set_value("any kind")
    at.text_input(key="skills_query").input("migration").run()
    expected = [r.skill.id for r in demo_app.skills.rank("ada", query="migration", limit=25)]
    assert expected and list(ranked_table(at)["id"]) == expected
    at.text_input(key="skills_query").input("no skill mentions this zyxw").run()
    assert "No skills match." in values(at, "info")


def test_versions_are_shown_side_by_side_with_their_own_rates_and_the_history_chart(demo_app):
    name = next(
        r.skill.name
        for r in demo_app.skills.rank("ada", limit=100)
        if len(demo_app.skills.versions("ada", r.skill.name)) >= 2
    )
    versions = demo_app.skills.versions("ada", name)
    chosen = next(r.skill.id for r in demo_app.skills.rank("ada", limit=25) if r.skill.name == name)
    at = open_page(PAGE, user="ada", state={"skills_selected": chosen})
    no_errors(at)
    cards = [v for v in values(at, "markdown") if v.startswith("**v")]
    assert len(cards) == len(versions)
    for skill in versions:
        assert any(
            v.startswith(f"{skill.success_count} of {skill.trials} trials succeeded") for v in values(at, "caption")
        )
        assert skill.body.rstrip("\n") in values(at, "code"), "st.code drops only the final newline"
    assert len(at.get("plotly_chart")) == 2, "ranking chart and outcome history chart"


def test_recording_an_outcome_updates_the_counts(demo_app):
    top = demo_app.skills.rank("mira", limit=1)[0].skill
    at = open_page(PAGE, user="mira")
    assert at.selectbox(key="skills_outcome_skill").value == top.id
    at.radio(key="skills_outcome_result").set_value("failure")
    at.text_input(key="skills_outcome_episode").input("not a valid id!")
    button(at, "Record outcome").click().run()
    assert any("Outcome not recorded" in v and "invalid episode id" in v for v in values(at, "error"))
    assert demo_app.skills.get("mira", top.id).failure_count == top.failure_count

    at.text_input(key="skills_outcome_episode").input("")
    button(at, "Record outcome").click().run()
    no_errors(at)
    after = demo_app.skills.get("mira", top.id)
    assert after.failure_count == top.failure_count + 1
    assert demo_app.skills.outcomes("mira", skill_id=top.id)[-1].success is False
    assert any(f"now {after.success_count} of {after.trials} trials succeeded" in v for v in values(at, "success"))


def test_five_of_eight_reads_62_5_percent_in_the_table_and_on_the_card(demo_app):
    skill = demo_app.skills.register("ada", "five-of-eight", "do the thing", description="a 5/8 skill")
    for success in (True, True, True, True, True, False, False, False):
        demo_app.skills.report_outcome("ada", skill.id, success)
    at = open_page(PAGE, user="ada")
    at.text_input(key="skills_query").input("five-of-eight").run()
    no_errors(at)
    assert ranked_table(at).set_index("id").loc[skill.id, "success rate"] == 62.5  # drawn as "62.5%"
    assert [m.value for m in at.metric if m.label == "success rate"] == ["62.5%"]


def test_a_link_names_the_selected_skill(demo_app):
    ranked = demo_app.skills.rank("ada", limit=25)
    second = ranked[1].skill
    at = open_link(PAGE, {"user": "ada", "memory": second.id})
    no_errors(at)
    assert at.selectbox(key="skills_selected").value == second.id
    assert at.query_params["memory"] == second.id
