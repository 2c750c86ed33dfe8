"""The Evaluations page in AppTest on the demo store: the demo set and its run, starting a run, the run's metrics
and cases filtered by where they were lost, a missed case opening its trace at "Why not?", comparing two runs, and
"Pin as expectation" on the Retrieval trace page. What the page shows is checked against the engine's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_helpers import button, no_errors, open_page, values

from engine import MemoryEngine
from ui.eval_data import case_rows, parse_overrides

PAGE = "pages/evaluations.py"
TRACE_PAGE = "pages/retrieval.py"
TWO_HOP = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())


def frame(at, column: str):
    """The first table on the page with this column (tables without selection carry no key in AppTest)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with column {column!r}"
    return found[0]


@pytest.fixture
def demo_set(demo_app: MemoryEngine) -> str:
    """The demo's expectation set with one run (made once per module store)."""
    names = {s.name for s in demo_app.evals.sets()}
    if "demo" not in names:
        demo_app.evals.load_demo()
    return "demo"


def test_without_sets_the_page_offers_the_demo_set_and_shows_its_run(demo_app: MemoryEngine):
    at = open_page(PAGE, user="ada")
    no_errors(at)
    if not demo_app.evals.sets():
        assert any("No expectation sets yet" in v for v in values(at, "info"))
        button(at, "Create the demo expectation set and run it").click().run()
        no_errors(at)
    (run,) = demo_app.evals.runs("demo")
    assert at.selectbox(key="ev_run").value == run.run_id
    table = frame(at, "latency_p50_ms")
    overall = table[table["category"] == "overall"].iloc[0]
    assert overall["recall@10"] == pytest.approx(run.metrics["overall"]["recall@10"])
    assert set(table["category"]) == {"overall", "single-hop", "two-hop"}
    cases = frame(at, "where lost")
    assert len(cases) == 14


def test_cases_filter_by_where_they_were_lost(demo_app: MemoryEngine, demo_set: str):
    at = open_page(PAGE, user="ada")
    run = demo_app.evals.runs(demo_set)[-1]
    results = demo_app.evals.results(run.run_id)
    at.selectbox(key="ev_run").set_value(run.run_id).run()
    at.selectbox(key="ev_f_stage").set_value("relevance filter").run()
    no_errors(at)
    shown = frame(at, "where lost")
    expected = [r.case_id for r in results if any(x["stage"] == "relevance filter" for x in r.lost.values())]
    assert list(shown["case"]) == expected and expected
    at.multiselect(key="ev_f_cat").set_value(["two-hop"]).run()
    assert set(frame(at, "where lost")["category"]) == {"two-hop"}


def test_the_funnel_click_filter_keeps_only_that_rule():
    class R:  # the case table reads only these fields of a CaseResult
        def __init__(self, cid, lost):
            self.case_id, self.category, self.question, self.expected = cid, "c", "q?", tuple(lost) or ("m",)
            self.top, self.ranks, self.scores, self.in_context = (), {}, {}, {}
            self.lost, self.trace_id, self.user_id = lost, "tr_x", "u"

    a = R("a", {"m": {"stage": "relevance filter", "rule": "score 0.412 < 0.5 and no shared word"}})
    b = R("b", {"m": {"stage": "relevance filter", "rule": "llm_judge 0.20 < 0.5"}})
    c = R("c", {})
    rows = case_rows([a, b, c], stage="relevance filter", rule="score N < N and no shared word")
    assert [r["case"] for r in rows] == ["a"]
    assert [r["case"] for r in case_rows([a, b, c], stage="found")] == ["c"]
    assert parse_overrides("top_k=30\nbm25_weight=0.4, hops=2") == {"top_k": "30", "bm25_weight": "0.4", "hops": "2"}


def test_a_missed_case_opens_its_trace_at_why_not(demo_app: MemoryEngine, demo_set: str):
    # a run under a tight budget, so some expected memories are missed
    run = demo_app.evals.evaluate(demo_set, preset="llmemory", overrides={"budget_tokens": 30}, label="tight")
    # a miss of another user than the page's, so opening it also switches the sidebar user
    missed = next(r for r in demo_app.evals.results(run.run_id) if r.lost and r.user_id != "ada")
    memory = next(iter(missed.lost))
    at = open_page(PAGE, user="ada")
    at.selectbox(key="ev_run").set_value(run.run_id).run()
    at.selectbox(key="ev_open_case").set_value(missed.case_id).run()
    at.selectbox(key="ev_open_memory").set_value(memory).run()
    button(at, "Open trace at Why not?").click().run()
    no_errors(at)
    assert at.session_state["app_user"] == missed.user_id
    assert at.session_state["trace_current_id"] == missed.trace_id
    assert at.selectbox(key="trace_wn_item").value == memory
    verdict = demo_app.traces.why_not(missed.trace_id, memory)
    assert verdict.status == missed.lost[memory]["status"]
    assert any(verdict.headline[:40] in v for v in values(at, "warning") + values(at, "info"))


def test_starting_a_run_and_comparing_two(demo_app: MemoryEngine, demo_set: str):
    at = open_page(PAGE, user="ada")
    before = {r.run_id for r in demo_app.evals.runs(demo_set)}
    at.selectbox(key="ev_method").set_value("memlens")
    at.number_input(key="ev_hops").set_value(2)
    at.text_input(key="ev_label").input("two hops")
    button(at, "Run evaluation").click().run()
    no_errors(at)
    (new,) = [r for r in demo_app.evals.runs(demo_set) if r.run_id not in before]
    assert new.hops == 2 and new.label == "two hops" and new.status == "done"
    assert any(f"Run {new.run_id} finished" in v for v in values(at, "success"))
    at.selectbox(key="ev_cmp_b").set_value(new.run_id).run()
    at.selectbox(key="ev_cmp_a").set_value(sorted(before)[0]).run()
    no_errors(at)
    cmp = demo_app.evals.compare(sorted(before)[0], new.run_id)
    labels = {m.label: str(m.value) for m in at.metric}
    assert labels["Paired cases"] == str(cmp.significance["n"]) == "14"
    assert labels["Gained / lost"] == f"{len(cmp.gained)} / {len(cmp.lost)}"
    deltas = frame(at, "recall@10 Δ")
    row = deltas[deltas["category"] == "overall"].iloc[0]
    assert row["recall@10 Δ"] == pytest.approx(cmp.deltas["overall"]["recall@10"]["delta"])


def test_pin_as_expectation_from_a_trace(demo_app: MemoryEngine):
    q = TWO_HOP[4]
    at = open_page(TRACE_PAGE, user=q["user_id"])
    at.text_area(key="trace_question").input(q["question"])
    button(at, "Retrieve").click().run()
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    picker = at.multiselect(key=f"pin_ids_{trace.trace_id}")
    assert list(picker.value) == []  # nothing labelled useful yet: nothing pre-selected (issue 32)
    picker.set_value(list(trace.context_ids))
    at.text_input(key="pin_extra").input(q["fact_b"])
    at.text_input(key="pin_new_set").input("pinned-here")
    at.text_input(key="pin_category").input("two-hop")
    button(at, "Pin as expectation").click().run()
    no_errors(at)
    (case,) = demo_app.evals.cases("pinned-here")
    assert case.question == q["question"] and case.source == "pinned" and case.category == "two-hop"
    assert case.expected == tuple(dict.fromkeys([*trace.context_ids, q["fact_b"]]))
    assert any("Pinned as case" in v for v in values(at, "success"))


def test_a_run_under_deep_takes_the_presets_two_hops_and_says_its_keys_were_missing(
    demo_app: MemoryEngine, demo_set: str
):
    at = open_page(PAGE, user="ada")
    before = {r.run_id for r in demo_app.evals.runs(demo_set)}
    assert at.number_input(key="ev_hops").value is None  # empty: the preset's hops
    at.selectbox(key="ev_preset").set_value("deep")
    at.text_input(key="ev_label").input("deep from the page")
    button(at, "Run evaluation").click().run()
    no_errors(at)
    (new,) = [r for r in demo_app.evals.runs(demo_set) if r.run_id not in before]
    assert (new.preset, new.hops, new.status) == ("deep", None, "done")
    first = demo_app.evals.results(new.run_id)[0]
    assert demo_app.traces.get(first.trace_id).settings.retrieval.hops == 2
    # the demo store has no sentence keys: the run ran without them, and the page says so
    warned = [w for w in values(at, "warning") if f"Run {new.run_id} finished" in w]
    assert warned and "memlens keys --kinds sentences" in warned[0]
