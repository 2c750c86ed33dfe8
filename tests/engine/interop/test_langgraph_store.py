"""memlens as a LangGraph store (engine/interop/langgraph_store.py): a real compiled LangGraph graph whose nodes
write and search through ``MemlensStore`` (deterministic nodes, no LLM), each search a stored trace of origin
``langgraph``; get/put/delete/list_namespaces and their async forms; a batch refused whole; hostile input.
LangGraph's own store semantics (its InMemoryStore's tests) are ported in test_langgraph_store_semantics.py."""

from __future__ import annotations

import asyncio
import operator
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from engine import InvalidInput, MemoryEngine, Settings, TraceFilter, TraceOrigin
from engine.interop.langgraph_store import DELETED_REASON, REPLACED_REASON, MemlensSearchItem, MemlensStore
from tests.support.own_loop import run_on_own_loop
from tests.support.storecheck import snapshot
from ui.trace_table_data import USUAL_ORIGINS, origin_words

FACTS = {
    "drink": "Ada's favourite drink is green tea with jasmine",
    "city": "Ada moved to Lisbon in 2021 and lives near the river",
    "cat": "Ada's cat is called Pixel and sleeps on the keyboard",
    "job": "Ada works as a compiler engineer at a robotics company",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> MemoryEngine:
    store = tmp_path_factory.mktemp("langgraph-store") / "store"
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)


@pytest.fixture(scope="module")
def store(engine) -> MemlensStore:
    return MemlensStore(engine, fields=["text"])


# -- a real compiled graph ------------------------------------------------------------------------------------------
class AgentState(TypedDict):
    user: str
    facts: dict[str, str]
    question: str
    recalled: Annotated[list[str], operator.add]
    trace_ids: Annotated[list[str], operator.add]


def remember(state: AgentState, runtime: Runtime) -> dict[str, list[str]]:
    assert runtime.store is not None
    for key, text in state["facts"].items():
        runtime.store.put((state["user"], "memories"), key, {"text": text, "kind": "fact"})
    return {}


def recall(state: AgentState, runtime: Runtime) -> dict[str, list[str]]:
    assert runtime.store is not None
    found = runtime.store.search((state["user"], "memories"), query=state["question"], limit=2)
    return {"recalled": [h.key for h in found], "trace_ids": [h.trace_id for h in found if h.trace_id]}


async def aremember(state: AgentState, runtime: Runtime) -> dict[str, list[str]]:
    assert runtime.store is not None
    for key, text in state["facts"].items():
        await runtime.store.aput((state["user"], "memories"), key, {"text": text})
    return {}


async def arecall(state: AgentState, runtime: Runtime) -> dict[str, list[str]]:
    assert runtime.store is not None
    found = await runtime.store.asearch((state["user"], "memories"), query=state["question"], limit=1)
    return {"recalled": [h.key for h in found], "trace_ids": [h.trace_id for h in found if h.trace_id]}


def compiled(store: MemlensStore, *, run_async: bool = False):
    builder = StateGraph(AgentState)
    builder.add_node("remember", aremember if run_async else remember)
    builder.add_node("recall", arecall if run_async else recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_a_compiled_graph_writes_and_searches_through_the_store_and_the_search_is_a_langgraph_trace(engine, store):
    graph = compiled(store)
    out = graph.invoke(
        {"user": "ada", "facts": FACTS, "question": "What is the name of Ada's cat?", "recalled": [], "trace_ids": []}
    )
    assert out["recalled"][0] == "cat"
    # Every put became a memlens item: source langgraph, the namespace after the user as its category.
    items = engine.items.list_items("ada").rows
    assert sorted(i.content for i in items) == sorted(FACTS.values())
    assert {i.source for i in items} == {"langgraph"} and {i.category for i in items} == {"memories"}
    assert all(i.provenance["origin"]["namespace"] == ["ada", "memories"] for i in items)

    # The search is a stored trace, recorded as a LangGraph agent's, that explains what the graph recalled.
    (trace_id,) = set(out["trace_ids"])
    trace = engine.traces.get(trace_id)
    assert trace.question == "What is the name of Ada's cat?" and trace.user_id == "ada"
    cat_id = next(i.id for i in items if i.content == FACTS["cat"])
    assert trace.ranking[0].id == cat_id and trace.ranking[0].in_context
    searched = trace.strategies.to_dict()["vector_search"]  # the store's items only: semantic memories
    assert searched.startswith("semantic:") and "episodic" not in searched and "procedural" not in searched
    listed = engine.traces.list_traces(filters=TraceFilter(origins=(TraceOrigin.LANGGRAPH.value,))).rows
    assert trace_id in {row["trace_id"] for row in listed}
    assert next(r for r in listed if r["trace_id"] == trace_id)["origin"] == "langgraph"
    others = engine.traces.list_traces(filters=TraceFilter(exclude_origins=(TraceOrigin.LANGGRAPH.value,))).rows
    assert trace_id not in {row["trace_id"] for row in others}
    # The Traces page lists it by default and says where it came from.
    assert "langgraph" in USUAL_ORIGINS and origin_words("langgraph") == "LangGraph agent (memlens store)"

    # The hit names its memory and trace, so the agent can label it through memlens.
    (hit,) = store.search(("ada", "memories"), query="Where does Ada live?", limit=1)
    assert isinstance(hit, MemlensSearchItem) and hit.key == "city" and hit.score is not None
    engine.feedback.report("ada", useful=[hit.memory_id], trace_id=hit.trace_id)
    assert engine.traces.list_traces(filters=TraceFilter(labelled=True)).rows[0]["trace_id"] == hit.trace_id


def test_the_async_graph_and_the_async_forms_go_through_abatch(engine):
    store = MemlensStore(engine, fields=["text"])
    graph = compiled(store, run_async=True)
    facts = {"pet": "Grace keeps two goldfish named Bubbles and Dot", "sport": "Grace plays volleyball on Sundays"}
    state = {"user": "grace", "facts": facts, "question": "What pets does Grace have?", "recalled": [], "trace_ids": []}
    out = run_on_own_loop(graph.ainvoke(state))
    assert out["recalled"] == ["pet"] and len(out["trace_ids"]) == 1

    async def direct() -> None:
        got = await store.aget(("grace", "memories"), "sport")
        assert got is not None and got.value == {"text": facts["sport"]}
        assert await store.alist_namespaces(prefix=("grace",)) == [("grace", "memories")]
        await store.aput(("grace", "notes"), "n1", {"text": "Grace's volleyball team is the Herons"})
        listed = await store.asearch(("grace",), limit=10)
        assert [h.key for h in listed][0] == "n1" and all(h.score is None for h in listed)
        await store.adelete(("grace", "memories"), "sport")
        assert await store.aget(("grace", "memories"), "sport") is None
        assert await store.alist_namespaces(prefix=("grace",)) == [("grace", "memories"), ("grace", "notes")]
        # Concurrent async calls: each runs in a thread, one batch at a time.
        keys = [f"k{i}" for i in range(6)]
        await asyncio.gather(*(store.aput(("grace", "burst"), k, {"text": f"burst note {k}"}) for k in keys))
        assert sorted(h.key for h in await store.asearch(("grace", "burst"))) == keys

    run_on_own_loop(direct())


# -- get / put / delete ---------------------------------------------------------------------------------------------
def test_put_get_update_and_delete_keep_versions_and_the_forget_log(engine, store):
    ns = ("lin", "prefs", "food")
    store.put(ns, "lunch", {"text": "Lin eats ramen for lunch", "spicy": True, "tags": ["noodles", "soup"]})
    first = store.get(ns, "lunch")
    assert first is not None and first.value == {
        "text": "Lin eats ramen for lunch",
        "spicy": True,
        "tags": ["noodles", "soup"],
    }
    assert first.namespace == ns and first.key == "lunch" and first.created_at == first.updated_at
    assert store.get(ns, "lunch") == first  # read twice, equal (the same version)
    assert store.get(ns, "dinner") is None and store.get(("lin", "prefs"), "lunch") is None

    # The same value again writes nothing.
    before = snapshot(engine)
    store.put(ns, "lunch", dict(first.value))
    assert snapshot(engine) == before

    # A new value: a new version, the old one forgotten (soft) with the store's reason; created_at kept.
    old_id = engine.items.list_items("lin").rows[0].id
    store.put(ns, "lunch", {"text": "Lin eats a salad for lunch"})
    second = store.get(ns, "lunch")
    assert second is not None and second.value == {"text": "Lin eats a salad for lunch"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    live = engine.items.list_items("lin").rows
    assert [i.content for i in live] == ["Lin eats a salad for lunch"] and live[0].id != old_id
    assert live[0].category == "prefs__food" and live[0].id.startswith(old_id.rsplit("_", 1)[0])
    archived = engine.items.list_items("lin", include_archived=True).rows
    assert {i.id for i in archived if i.archived_at is not None} == {old_id}
    entry = engine.forgetting.log("lin")[0]
    assert (entry.ids, entry.reason, entry.actor, entry.mode) == ((old_id,), REPLACED_REASON, "langgraph", "soft")

    store.delete(ns, "lunch")
    assert store.get(ns, "lunch") is None and store.search(("lin",)) == []
    assert engine.items.list_items("lin").total == 0 and engine.forgetting.log("lin")[0].reason == DELETED_REASON
    before = snapshot(engine)
    store.delete(ns, "lunch")  # deleting what is gone: nothing written
    store.delete(("lin", "never"), "x")
    assert snapshot(engine) == before

    # A put after the delete starts the key over.
    store.put(ns, "lunch", {"text": "Lin eats dumplings"})
    again = store.get(ns, "lunch")
    assert again is not None and again.created_at > first.created_at


def test_hard_forget_mode_erases_replaced_and_deleted_versions(engine):
    store = MemlensStore(engine, forget_mode="hard")
    store.put(("hal",), "door", {"note": "the pod bay door code is 0451"})
    store.put(("hal",), "door", {"note": "the pod bay door code is 1138"})
    store.delete(("hal",), "door")
    assert engine.items.list_items("hal", include_archived=True).total == 0
    assert [e.mode for e in engine.forgetting.log("hal")] == ["hard", "hard"]
    # fields ["$"] (the default): the whole value is what is embedded, and an unindexed put still reads back.
    store.put(("hal",), "plain", {"note": "kept whole", "n": 2})
    assert engine.items.list_items("hal").rows[0].content == '{"n": 2, "note": "kept whole"}'


def test_a_batch_reads_the_store_as_it_was_and_the_last_put_of_a_key_wins(engine, store):
    ns = ("mo", "todo")
    results = store.batch(
        [
            PutOp(ns, "a", {"text": "buy milk"}),
            GetOp(ns, "a"),
            PutOp(ns, "a", {"text": "buy oat milk"}),
            PutOp(("nia", "todo"), "b", {"text": "water the plants"}),  # two users in one write
            SearchOp(("mo",)),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[1] is None and results[4] == []
    assert ("mo", "todo") not in results[5]
    got = store.get(ns, "a")
    assert got is not None and got.value == {"text": "buy oat milk"}
    assert engine.items.list_items("mo").total == 1 and engine.items.list_items("nia").total == 1


def test_many_threads_putting_one_key_leave_one_live_version(engine):
    store = MemlensStore(engine, fields=["text"])

    def put(n: int) -> None:
        store.put(("tess", "race"), "counter", {"text": f"value number {n}"})

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(put, range(8)))
    live = engine.items.list_items("tess").rows
    assert len(live) == 1
    got = store.get(("tess", "race"), "counter")
    assert got is not None and got.value == {"text": live[0].content}


# -- all or nothing ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        PutOp(("ok", "ns"), "k", {"n": float("nan")}),
        PutOp(("ok", "ns"), "k", {"text": "t" * 40_000}),  # refused when its text is built, not by the value check
        PutOp(("ok", "ns"), "k", {"text": "x" * 20_000}, index=["p" * 500] * 100),  # provenance over its cap
        PutOp(("ok", "ns"), "k", {"text": "x"}, ttl=5.0),
        SearchOp(("ok",), filter={"n": {"$where": "1"}}),
        GetOp(("x'; DROP TABLE items; --",), "k"),
        "not an op",
    ],
    ids=[
        "nan",
        "text_over_max_text_chars",
        "provenance_over_cap",
        "ttl",
        "unknown_operator",
        "hostile_user",
        "not_an_op",
    ],
)
def test_a_batch_with_a_bad_op_writes_nothing_not_even_a_search_trace(engine, store, bad):
    store.put(("ok", "ns"), "existing", {"text": "an existing memory about owls"})
    before = snapshot(engine)
    ops = [
        PutOp(("ok", "ns"), "new", {"text": "a memory that must not be written"}),
        PutOp(("ok", "ns"), "existing", None),
        SearchOp(("ok",), query="owls"),
        bad,
    ]
    with pytest.raises(InvalidInput):
        store.batch(ops)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        run_on_own_loop(store.abatch(ops))  # type: ignore[arg-type]
    assert snapshot(engine) == before
    assert store.get(("ok", "ns"), "new") is None and store.get(("ok", "ns"), "existing") is not None


# -- hostile input ----------------------------------------------------------------------------------------------------
HOSTILE_LABEL = "' OR '1'='1 --; DROP TABLE items"


def test_hostile_labels_keys_and_values_round_trip_exactly_and_never_reach_sql(engine, store):
    ns = ("eve", HOSTILE_LABEL, "記憶 🧠", "*")
    key = "k'); DELETE FROM items; --\u202e"
    value = {"text": "Eve's note <script>alert(1)</script>", "nested": {"a": [1, 2.5, None, True]}, "'": "\"'"}
    store.put(ns, key, value)
    got = store.get(ns, key)
    assert got is not None and got.value == value and got.namespace == ns and got.key == key
    assert store.list_namespaces(prefix=("eve",)) == [ns]
    assert store.list_namespaces(prefix=("eve", HOSTILE_LABEL), suffix=("*",)) == [ns]
    assert [h.key for h in store.search(("eve", HOSTILE_LABEL), filter={"'": "\"'"})] == [key]
    (item,) = engine.items.list_items("eve").rows
    assert item.category == "or_1_1_drop_table_items__x__x"  # the dashboard's grouping; the namespace is exact
    # A key whose prefix of the id would match another (namespace, key) pair stays apart.
    store.put(("eve", "a"), "b/c", {"text": "one"})
    store.put(("eve", "a", "b"), "c", {"text": "two"})
    got_one, got_two = store.get(("eve", "a"), "b/c"), store.get(("eve", "a", "b"), "c")
    assert (
        got_one is not None
        and got_two is not None
        and (got_one.value, got_two.value) == ({"text": "one"}, {"text": "two"})
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put(("x'; DROP TABLE items; --", "m"), "k", {"text": "t"}),  # the user id is an id
        lambda s: s.put(("a b",), "k", {"text": "t"}),
        lambda s: s.put(("ok", "bad\x01label"), "k", {"text": "t"}),
        lambda s: s.put(("ok", "l" * 129), "k", {"text": "t"}),
        lambda s: s.put(("ok",) * 17, "k", {"text": "t"}),
        lambda s: s.put(("ok",), "", {"text": "t"}),
        lambda s: s.put(("ok",), "k\x00", {"text": "t"}),
        lambda s: s.put(("ok",), "k" * 1_001, {"text": "t"}),
        lambda s: s.put(("ok",), "k", ["not", "a", "mapping"]),
        lambda s: s.put(("ok",), "k", {"text": "\ud800 lone surrogate"}),
        lambda s: s.put(("ok",), "k", {"text": "v" * 70_000}),
        lambda s: s.put(("ok",), "k", {1: "non-text key"}),
        lambda s: s.put(("ok",), "k", {"text": "t"}, index=[""]),
        lambda s: s.search(("ok",), query="q" * 40_000),
        lambda s: s.search(("ok",), query="nul\x00"),
        lambda s: s.search((), query="no user to retrieve for"),
        lambda s: s.search(("ok",), limit=-1),
        lambda s: s.search(("ok",), offset=True),
        lambda s: s.search(("ok",), filter="color = 'red'"),
        lambda s: s.batch([SearchOp(("ok",), query=42)]),
        lambda s: s.batch([ListNamespacesOp(max_depth=0)]),
    ],
)
def test_hostile_input_is_refused_and_writes_nothing(engine, store, call):
    before = snapshot(engine)
    with pytest.raises((InvalidInput, InvalidNamespaceError)):
        call(store)
    assert snapshot(engine) == before


def test_langgraphs_own_checks_still_refuse_what_its_put_refuses(store):
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "foo", {"foo": "bar"})
    with pytest.raises(NotImplementedError):
        store.put(("ok",), "k", {"a": 1}, ttl=5.0)


def test_memories_another_writer_shaped_like_the_stores_are_left_out_not_guessed(engine, store):
    for origin in [{"system": "langgraph"}, {"system": "langgraph", "namespace": "zed", "key": 1, "value": []}]:
        engine.items.remember(
            "zed", "a memory with a LangGraph-looking origin", source="langgraph", provenance={"origin": origin}
        )
    store.put(("zed", "real"), "k", {"text": "a memory with a LangGraph-looking origin"})
    assert store.list_namespaces(prefix=("zed",)) == [("zed", "real")]
    assert [h.key for h in store.search(("zed",))] == ["k"]
    assert [h.key for h in store.search(("zed",), query="LangGraph-looking origin")] == ["k"]


def test_settings_are_checked_when_the_store_is_made(engine):
    with pytest.raises(InvalidInput):
        MemlensStore(engine, retrieval={"no_such_setting": 1})
    with pytest.raises(InvalidInput):
        MemlensStore(engine, forget_mode="shred")
    with pytest.raises(InvalidInput):
        MemlensStore(engine, fields="text")
    with pytest.raises(InvalidInput):
        MemlensStore(engine, fields=[])
    MemlensStore(engine, retrieval={"budget_tokens": 500}, hops=1)
