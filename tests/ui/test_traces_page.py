"""The Traces page: every stored trace in a table with the filters the trace pickers share; evaluation runs' traces
left out unless asked; the filters kept in the URL; a question asked on the dashboard recorded as the dashboard's."""

from __future__ import annotations

from apptest_helpers import button, by_label, no_errors, open_link, open_page, values

from engine import MemoryEngine, recording_origin

PAGE = "pages/traces.py"


def shown_ids(at) -> list[str]:
    return list(at.dataframe[0].value["trace id"]) if at.dataframe else []


def test_on_an_empty_store_the_page_says_what_to_do(empty_app: MemoryEngine):
    at = open_page(PAGE)
    no_errors(at)
    assert any("No retrievals traced yet" in v for v in values(at, "info"))


def test_one_users_unlabelled_agent_traces_and_the_link_that_keeps_the_filter(demo_app: MemoryEngine):
    e = demo_app
    agent = e.retrieval.retrieve("ada", "Which queue does the refund job use?")
    labelled = e.retrieval.retrieve("ada", "Who owns the refund reconciliation job?")
    e.feedback.label("ada", labelled.context_ids[0], "useful", trace_id=labelled.trace_id)
    with recording_origin("dashboard"):
        dashboard = e.retrieval.retrieve("ada", "Which queue does the refund job use today?")
    other = e.retrieval.retrieve("mira", "Who collects the pan traps?")
    e.evals.add_case("traces-page", "ada", "Which queue?", [agent.context_ids[0]], create_set=True)
    evaluation = e.evals.results(e.evals.evaluate("traces-page").run_id)[0].trace_id

    at = open_page(PAGE)
    no_errors(at)
    everything = shown_ids(at)
    assert {agent.trace_id, labelled.trace_id, dashboard.trace_id, other.trace_id} <= set(everything)
    assert evaluation not in everything  # unless asked
    assert "evaluation runs left out" in " ".join(values(at, "caption"))

    at.selectbox(key="traces_user").set_value("ada").run()
    at.segmented_control(key="traces_labelled").set_value("unlabelled").run()
    at.multiselect(key="traces_origins").set_value(["agent"]).run()
    no_errors(at)
    assert shown_ids(at) == [agent.trace_id]
    table = at.dataframe[0].value
    assert list(table["origin"]) == ["agent (API, MCP, CLI)"] and list(table["labels"]) == [0]
    assert str(table["when"][0]).count(":") == 2 and "." not in str(table["when"][0])  # to the second
    url = at.query_params
    assert [url[name] for name in ("of", "labelled", "origin")] in (
        [["ada"], ["unlabelled"], ["agent"]],
        ["ada", "unlabelled", "agent"],
    )

    shared = open_link(PAGE, {"of": "ada", "labelled": "unlabelled", "origin": "agent"})
    no_errors(shared)
    assert shown_ids(shared) == [agent.trace_id]

    at.multiselect(key="traces_origins").set_value(["evaluation"]).run()
    at.segmented_control(key="traces_labelled").set_value("any").run()
    assert evaluation in shown_ids(at)
    at.text_input(key="traces_text").set_value("nothing like this question").run()
    assert any("No stored trace matches" in v for v in values(at, "info"))


def test_sorting_by_latency_and_picking_a_row_offers_its_trace(demo_app: MemoryEngine):
    at = open_page(PAGE)
    at.selectbox(key="traces_sort").set_value("latency").run()
    at.toggle(key="traces_desc").set_value(False).run()
    no_errors(at)
    rows = demo_app.traces.list_traces(limit=100, sort="latency", descending=False).rows
    assert shown_ids(at)[:3] == [r["trace_id"] for r in rows if r["origin"] != "evaluation"][:3]
    assert by_label(at, "selectbox", "Sort by").value == "latency"


def test_a_question_asked_on_the_trace_page_is_the_dashboards_and_the_picker_leaves_runs_out(demo_app):
    e = demo_app
    e.evals.add_case("picker", "ada", "Which queue?", [e.items.list_items("ada").rows[0].id], create_set=True)
    runs = {r.trace_id for r in e.evals.results(e.evals.evaluate("picker").run_id)}
    at = open_page("pages/retrieval.py", user="ada")
    at.text_area(key="trace_question").input("Who maintains the billing queue?")
    button(at, "Retrieve").click().run()
    no_errors(at)
    asked = at.session_state["trace_current_id"]
    row = next(r for r in e.traces.list_traces("ada", limit=100).rows if r["trace_id"] == asked)
    assert row["origin"] == "dashboard"
    listed = at.session_state["trace_pick"], at.selectbox(key="trace_pick").options
    assert listed[0] == asked and not any(run in label for run in runs for label in listed[1])
    assert any(asked in label for label in listed[1])


def test_the_overviews_recent_traces_leave_evaluation_runs_out_unless_asked(demo_app: MemoryEngine):
    e = demo_app
    e.evals.add_case("overview", "ada", "Which queue?", [e.items.list_items("ada").rows[0].id], create_set=True)
    run = e.evals.results(e.evals.evaluate("overview").run_id)[0].trace_id
    agent = e.retrieval.retrieve("ada", "Who is on call for payments?").trace_id
    at = open_page("pages/overview.py")
    no_errors(at)
    recent = at.dataframe(key="overview_traces").value
    assert agent in set(recent["trace id"]) and run not in set(recent["trace id"])
    assert "agent (API, MCP, CLI)" in set(recent["origin"])
    at.toggle(key="overview_trace_runs").set_value(True).run()
    assert run in set(at.dataframe(key="overview_traces").value["trace id"])


def test_a_user_with_only_evaluation_traces_is_told_they_are_left_out_not_that_there_are_none(empty_app):
    e = empty_app
    item = e.items.remember("eve", "The evaluation-only user keeps her notes in the blue binder.")
    e.evals.add_case("only-runs", "eve", "Where are the notes kept?", [item.id], create_set=True)
    run = e.evals.results(e.evals.evaluate("only-runs").run_id)[0].trace_id
    at = open_link("pages/retrieval.py", {"trace": run})  # the way a run's case opens it
    no_errors(at)
    assert at.session_state["trace_current_id"] == run
    notes = values(at, "info")
    assert not any("No stored traces" in v for v in notes), notes  # eve has one: the picker left it out
    assert any("1 evaluation run trace" in v and "left out" in v for v in notes), notes
