"""The trace table (engine.traces.list_traces with a TraceFilter), on an embedded store and on a team store.

Every stored trace records where it came from: an agent (the Python API, MCP, the CLI), the dashboard, an evaluation
run, an import; and the preset it ran. The listing filters by user, text of the question, date, preset, hops,
latency, labelled or not and origin, sorts and pages in the database; bad filters are refused by name. A store
written before origins were recorded opens with its evaluation traces marked as such and the others "unknown".
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import duckdb
import pytest

from engine import InvalidInput, MemoryEngine, Settings, TraceFilter, TraceOrigin, recording_origin

pytestmark = pytest.mark.both_stores

FACTS = {
    "ada": [
        "The refund reconciliation job runs on the billing queue every night.",
        "Ada owns the refund reconciliation job since March.",
        "The billing queue is drained by three workers.",
    ],
    "bob": ["Bob keeps the pan traps in the shed behind the greenhouse."],
}


@pytest.fixture(scope="module")
def engine(module_settings: Settings, embedder) -> MemoryEngine:
    e = MemoryEngine.open(settings=dataclasses.replace(module_settings, graph_extraction="off"), embedder=embedder)
    for user, facts in FACTS.items():
        for fact in facts:
            e.items.remember(user, fact)
    return e


@pytest.fixture(scope="module")
def stored(engine: MemoryEngine) -> dict[str, str]:
    """One trace per origin (ada), a two-hop llmemory trace and a labelled one (ada), one of bob: name -> id."""
    e = engine
    ids = {"agent": e.retrieval.retrieve("ada", "Which queue does the refund job use?").trace_id}
    with recording_origin("dashboard"):
        ids["dashboard"] = e.retrieval.retrieve("ada", "Who owns the REFUND reconciliation job?").trace_id
    ids["two_hops"] = e.retrieval.retrieve("ada", "How many workers drain it?", hops=2, preset="llmemory").trace_id
    expected = [e.items.list_items("ada").rows[0].id]
    e.evals.add_case("origin-set", "ada", "Which queue does billing use?", expected, create_set=True)
    run = e.evals.evaluate("origin-set")
    ids["evaluation"] = e.evals.results(run.run_id)[0].trace_id or ""
    exported = e.traces.export(ids["agent"]).replace(ids["agent"], "tr_imported0001")
    ids["import"] = e.traces.import_json(exported).trace_id
    ids["bob"] = e.retrieval.retrieve("bob", "Where are the pan traps?").trace_id
    ids["labelled"] = e.retrieval.retrieve("ada", "Is the billing queue busy?").trace_id
    item = e.traces.get(ids["labelled"]).context_ids[0]
    e.feedback.label("ada", item, "useful", trace_id=ids["labelled"])
    return ids


def listed(engine: MemoryEngine, **filters) -> list[str]:
    sort = filters.pop("sort", "created_at")
    descending = filters.pop("descending", True)
    page = engine.traces.list_traces(filters=TraceFilter(**filters), sort=sort, descending=descending, limit=100)
    assert page.total == len(page.rows)
    return [r["trace_id"] for r in page.rows]


def test_each_trace_records_where_it_came_from_and_its_preset(engine, stored):
    rows = {r["trace_id"]: r for r in engine.traces.list_traces(limit=100).rows}
    assert {name: rows[stored[name]]["origin"] for name in ("agent", "dashboard", "evaluation", "import", "bob")} == {
        "agent": "agent",
        "dashboard": "dashboard",
        "evaluation": "evaluation",
        "import": "import",
        "bob": "agent",
    }
    assert rows[stored["two_hops"]]["preset"] == "llmemory" and rows[stored["agent"]]["preset"] == "default"
    assert rows[stored["labelled"]]["labels"] == 1 and rows[stored["agent"]]["labels"] == 0


def test_the_origin_of_a_block_ends_with_the_block(engine, stored):
    with recording_origin("dashboard"):
        pass
    trace = engine.retrieval.retrieve("bob", "Who keeps the pan traps?")
    assert engine.traces.list_traces(filters=TraceFilter(text="who keeps the pan")).rows[0]["origin"] == "agent"
    engine.traces.delete(trace.trace_id)


def test_filters_narrow_by_user_text_hops_preset_and_origin(engine, stored):
    assert listed(engine, user_id="bob") == [stored["bob"]]
    assert listed(engine, text="refund reconciliation") == [stored["dashboard"]]  # ignoring case
    assert listed(engine, hops=2) == [stored["two_hops"]]
    assert listed(engine, preset="llmemory") == [stored["two_hops"]]
    # the import keeps the time its trace was made at (the agent's, before the evaluation's)
    assert listed(engine, origins=("evaluation", "import")) == [stored["evaluation"], stored["import"]]
    everything = listed(engine)
    without_evaluation = listed(engine, exclude_origins=(TraceOrigin.EVALUATION,))
    assert without_evaluation == [i for i in everything if i != stored["evaluation"]]


def test_unlabelled_agent_traces_of_one_user(engine, stored):
    found = listed(engine, user_id="ada", labelled=False, origins=("agent",))
    assert found == [stored["two_hops"], stored["agent"]]
    assert listed(engine, user_id="ada", labelled=True) == [stored["labelled"]]


def test_a_label_taken_off_leaves_the_trace_unlabelled(engine, stored):
    trace = engine.retrieval.retrieve("bob", "What is behind the greenhouse?")
    item = trace.context_ids[0]
    engine.feedback.label("bob", item, "harmful", trace_id=trace.trace_id)
    assert trace.trace_id in listed(engine, user_id="bob", labelled=True)
    engine.feedback.clear("bob", item, trace_id=trace.trace_id)
    assert trace.trace_id in listed(engine, user_id="bob", labelled=False)
    engine.traces.delete(trace.trace_id)


def test_dates_and_latency_bound_the_listing(engine, stored):
    rows = {r["trace_id"]: r for r in engine.traces.list_traces(limit=100).rows}
    bob_at = rows[stored["bob"]]["created_at"]
    assert listed(engine, since=bob_at, until=bob_at + timedelta(microseconds=1)) == [stored["bob"]]
    assert stored["bob"] not in listed(engine, until=bob_at)
    slowest = max(rows.values(), key=lambda r: r["total_ms"])
    as_slow = {i for i, r in rows.items() if r["total_ms"] == slowest["total_ms"]}  # the import is a copy
    assert set(listed(engine, min_ms=slowest["total_ms"])) == as_slow
    assert slowest["trace_id"] not in listed(engine, max_ms=slowest["total_ms"] - 0.001)


def test_sorting_and_paging(engine, stored):
    by_latency = listed(engine, sort="latency", descending=False)
    rows = {r["trace_id"]: r for r in engine.traces.list_traces(limit=100).rows}
    latencies = [rows[i]["total_ms"] for i in by_latency]
    assert latencies == sorted(latencies)
    assert listed(engine, sort="labels")[0] == stored["labelled"]
    assert listed(engine, sort="user", descending=False)[-1] == stored["bob"]
    first = engine.traces.list_traces(limit=2, offset=0, sort="question", descending=False)
    second = engine.traces.list_traces(limit=2, offset=2, sort="question", descending=False)
    questions = [r["question"] for r in first.rows + second.rows]
    assert questions == sorted(questions) and first.total == second.total == len(rows)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"filters": TraceFilter(origins=("robot",))}, "unknown trace origin 'robot'"),
        ({"filters": TraceFilter(origins="agent")}, "a list of origins, not str"),  # type: ignore[arg-type]
        ({"filters": TraceFilter(preset=["llmemory"])}, "unknown preset"),  # type: ignore[arg-type]
        ({"filters": TraceFilter(preset="fastest")}, "unknown preset 'fastest'"),
        ({"filters": TraceFilter(since="last tuesday")}, "not an ISO-8601 time"),
        ({"filters": TraceFilter(hops=-1)}, "hops must be an integer"),
        ({"filters": TraceFilter(min_ms=float("nan"))}, "min_ms must be a number"),
        ({"filters": TraceFilter(user_id="a b;")}, "user id"),
        ({"sort": "id; DROP TABLE traces"}, "cannot sort traces by"),
        ({"filters": {"user_id": "ada"}}, "must be a TraceFilter"),
    ],
)
def test_bad_filters_are_refused_by_name(engine, stored, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        engine.traces.list_traces(**kwargs)
    with pytest.raises(InvalidInput, match="unknown trace origin"):
        with recording_origin("robot"):
            pass


def test_question_text_is_a_value_never_sql(engine, stored):
    assert listed(engine, text="' OR 1=1 --") == []
    assert listed(engine, text="%") == [] and listed(engine, text="_") == []
    assert len(listed(engine)) == len(stored)


def test_importing_a_trace_the_store_holds_is_refused(engine, stored):
    with pytest.raises(InvalidInput, match="already holds a trace"):
        engine.traces.import_json(engine.traces.export(stored["agent"]))


def test_a_store_from_before_origins_opens_with_evaluation_traces_marked(tmp_path, embedder):
    settings = Settings.from_env({}, store=str(tmp_path / "old"), lock_timeout_s=30, graph_extraction="off")
    e = MemoryEngine.open(settings=settings, embedder=embedder)
    item = e.items.remember("ada", "The refund job runs on the billing queue.")
    agent = e.retrieval.retrieve("ada", "Which queue?").trace_id
    e.evals.add_case("old", "ada", "Which queue does billing use?", [item.id], create_set=True)
    evaluation = e.evals.results(e.evals.evaluate("old").run_id)[0].trace_id
    e.close()
    with duckdb.connect(str(tmp_path / "old" / "memlens.duckdb")) as conn:  # as memlens before 0011 left it
        conn.execute("ALTER TABLE traces DROP COLUMN origin")
        conn.execute("ALTER TABLE traces DROP COLUMN preset")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0011_trace_origin'")
    again = MemoryEngine.open(settings=settings, embedder=embedder)
    rows = {r["trace_id"]: r for r in again.traces.list_traces().rows}
    assert (rows[agent]["origin"], rows[evaluation]["origin"]) == ("unknown", "evaluation")
    assert rows[agent]["preset"] is None
    assert again.traces.get(agent).trace_id == agent
    assert listed(again, exclude_origins=("evaluation",)) == [agent]
    assert isinstance(rows[agent]["created_at"], datetime)
