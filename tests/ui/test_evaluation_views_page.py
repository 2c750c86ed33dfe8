"""The Evaluations page's views of a run (issue 32, deliver 5) in AppTest on the demo store: the funnel's ranking
cut-off (no all-clear beside a recall@1 below 1), the Hops and scores tab (attribution, the signals, the
threshold sweep on request) and the set's metric history, each checked against the engine's own numbers."""

from __future__ import annotations

import pytest
from apptest_helpers import by_label, no_errors, open_link, open_page, values

from engine import MemoryEngine

PAGE = "pages/evaluations.py"


@pytest.fixture
def runs(demo_app: MemoryEngine) -> tuple[str, str]:
    """The demo set's default run and a two-hop run of it (made once per module store)."""
    demo_app.evals.load_demo()
    done = {r.label: r.run_id for r in demo_app.evals.runs("demo")}
    if "two hops" not in done:
        done["two hops"] = demo_app.evals.evaluate("demo", hops=2, label="two hops").run_id
    return done["demo · default settings"], done["two hops"]


def tables(at, column: str) -> list:
    """The tables on the page with this column (tables without selection carry no key in AppTest)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with column {column!r}"
    return found


def test_a_ranking_cut_off_of_1_turns_context_memories_below_rank_1_into_ranking_losses(demo_app, runs):
    run_id = runs[0]
    results = demo_app.evals.results(run_id)
    below_1 = {r.case_id for r in results if any(r.in_context.get(e) and (r.ranks.get(e) or 0) > 1 for e in r.expected)}
    assert below_1 and demo_app.evals.get_run(run_id).metrics["overall"]["recall@1"] < 1
    at = open_page(PAGE, user="ada", state={"ev_run": run_id, "ev_cutoff": 1, "ev_f_stage": "ranking"})
    no_errors(at)
    assert not [s for s in values(at, "success") if s.startswith("Every expected memory reached the context")]
    cases = [d.value for d in at.dataframe if "where lost" in d.value.columns][0]
    assert set(cases["case"]) == below_1
    assert all("ranking" in w for w in cases["where lost"])


def test_a_link_opens_hops_and_scores_attributing_each_expected_memory_and_sweeping_on_request(demo_app, runs):
    run_id = runs[1]
    att = demo_app.evals.attribution(run_id)
    # Opened from a link to the run's tab, as a colleague would share it.
    at = open_link(PAGE, {"user": "ada", "set": "demo", "run": run_id, "tab": "hops-and-scores"})
    no_errors(at)
    assert at.selectbox(key="ev_an_run").value == run_id and at.query_params["run"] == run_id
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cases read"] == "14 of 14" and metrics["Gained by later hops"] == str(len(att.gained))
    shown = tables(at, "in hop 1's context alone")  # gained, lost (each when any), then every expected memory
    assert [len(t) for t in shown] == [n for n in (len(att.gained), len(att.lost)) if n] + [len(att.findings)]
    assert at.selectbox(key="ev_cal_signal").value == "hybrid"
    by_label(at, "button", "Sweep the relevance threshold").click().run()
    no_errors(at)
    (sweep,) = tables(at, "the run's")
    assert list(sweep["threshold"]) == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert list(sweep["the run's"]).count("◀") == 1 and sweep["the run's"].iloc[5] == "◀"
    own = demo_app.evals.get_run(run_id).metrics["overall"]["context_recall"]
    assert sweep["context recall"].iloc[5] == pytest.approx(own, abs=1e-3)  # the run's own threshold: the run


def test_the_history_tab_lists_the_sets_finished_runs_oldest_first(demo_app, runs):
    at = open_page(PAGE, user="ada", state={"ev_tab": "History"})
    no_errors(at)
    (rows,) = tables(at, "started")
    assert list(rows["id"]) == [h["run_id"] for h in demo_app.evals.history("demo")]
    assert list(rows["id"])[-2:] == list(runs)
