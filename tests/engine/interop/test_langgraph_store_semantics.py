"""LangGraph's store semantics, run against ``MemlensStore``: the checks of LangGraph's own InMemoryStore tests
(langgraph repository, libs/checkpoint/tests/test_store.py), ported.

LangGraph ships no conformance suite for stores: ``langgraph-checkpoint-conformance`` (PyPI) validates
checkpointers (``BaseCheckpointSaver``) only, and the store tests live in the repository, not in an installed
package. So the essential checks are ported here, each store made over a fresh memlens store, with what memlens
does differently said where it does:

- a query search returns what memlens's pipeline put into the context (relevance filter and token budget), not
  every candidate, so assertions on "all N results" hold where every item is relevant;
- memlens keeps one vector per item (its index paths' texts joined) where InMemoryStore keeps one per text and
  takes the best, so score equalities between two fields of one item are not ported; orderings are;
- a namespace's first label is a memlens user id (letters, digits, ``_ : @ + -``), which every namespace of those
  tests already is."""

from __future__ import annotations

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from engine import MemoryEngine, Settings
from engine.interop.langgraph_store import MemlensStore
from tests.support.own_loop import run_on_own_loop

FILTER_DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


@pytest.fixture
def new_store(tmp_path, embedder):
    """A maker of stores, each over its own empty memlens store (list_namespaces() lists a whole store)."""
    made = iter(range(100))

    def make(**kwargs) -> MemlensStore:
        path = tmp_path / f"store{next(made)}"
        engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
        return MemlensStore(engine, **kwargs)

    return make


# -- list_namespaces ---------------------------------------------------------------------------------------------------
def test_list_namespaces_basic(new_store):
    store = new_store()
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)])
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards_pagination_depth_and_no_conditions(new_store):
    store = new_store()
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)])
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(max_depth=1) == [("admin",), ("guests",), ("users",)]

    paged = new_store()
    paged.batch([PutOp(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i}) for i in range(20)])
    for offset in (0, 5, 15):
        expected = [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
        assert paged.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == expected

    deep = new_store()
    for i, ns in enumerate([("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j")]):
        deep.put(ns, f"id_{i}", {"data": i})
    assert deep.list_namespaces(max_depth=2) == [("a", "b"), ("a", "g"), ("h", "i")]
    assert new_store().list_namespaces() == []


def test_namespaces_langgraph_refuses_and_the_reserved_root_through_batch(new_store):
    store = new_store()
    doc = {"foo": "bar"}
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            run_on_own_loop(store.aput(namespace, "foo", doc))

    async def async_round_trip() -> None:
        await store.aput(("foo", "langgraph", "foo"), "bar", doc)
        got = await store.aget(("foo", "langgraph", "foo"), "bar")
        assert got is not None and got.value == doc
        assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
        await store.adelete(("foo", "langgraph", "foo"), "bar")
        assert await store.aget(("foo", "langgraph", "foo"), "bar") is None
        # Past the public put: LangGraph's batch path may use its reserved root, as its InMemoryStore allows.
        await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
        assert (await store.asearch(("langgraph", "foo")))[0].value == doc
        await store.adelete(("langgraph", "foo"), "bar")
        assert await store.aget(("langgraph", "foo"), "bar") is None

    run_on_own_loop(async_round_trip())
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    got = store.get(("langgraph", "foo"), "bar")
    assert got is not None and got.value == doc


# -- search with a query ---------------------------------------------------------------------------------------------
def test_insert_with_auto_embedding_of_the_whole_value(new_store):
    store = new_store()  # fields ["$"]: LangGraph's default, the whole value
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]
    for key, value in docs:
        store.put(("test",), key, value)
    keys = [r.key for r in store.search(("test",), query="long text")]
    assert {"doc2", "doc3"} <= set(keys)


def test_update_changes_what_a_query_finds_and_index_false_is_not_scored(new_store):
    store = new_store(fields=["text"])
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1" and initial[0].score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next((r.score for r in store.search(("test",), query="Zany Xerxes") if r.key == "doc1"), 0.0)
    assert after is not None and after < initial[0].score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert not any(r.key == "doc4" for r in store.search(("test",), query="new text about dogs", limit=3))


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_search_with_filters(new_store, run_async):
    store = new_store(fields=["text"])

    def search(query: str, flt: dict) -> list:
        if run_async:
            return run_on_own_loop(store.asearch(("test",), query=query, filter=flt))
        return store.search(("test",), query=query, filter=flt)

    for key, value in FILTER_DOCS:
        store.put(("test",), key, value)
    results = search("apple", {"color": "red"})
    assert [r.key for r in results][:1] == ["doc1"] and len(results) == 2
    results = search("car", {"color": "red"})
    assert [r.key for r in results][:1] == ["doc2"] and len(results) == 2
    results = search("bbbbluuu", {"score": {"$gt": 3.2}})
    assert [r.key for r in results][:1] == ["doc4"] and len(results) == 3
    assert [r.key for r in search("apple", {"score": {"$gte": 4.0}, "color": "green"})] == ["doc3"]
    assert search("apple", {"score": {"$lt": 3.0}}) == []
    assert {r.key for r in search("car", {"color": {"$ne": "red"}})} == {"doc3", "doc4"}


def test_search_pagination(new_store):
    store = new_store(fields=["text"])
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2 and page1[0].key != page2[0].key
    assert {r.key for r in page1}.isdisjoint(r.key for r in page2)
    assert len(store.search(("test",), query="test", limit=10)) == 5
    # Without a query: newest first, paginated the same way.
    listed = [r.key for r in store.search(("test",), limit=10)]
    assert listed == [f"doc{i}" for i in reversed(range(5))]
    assert [r.key for r in store.search(("test",), limit=2, offset=1)] == listed[1:3]


def test_embed_with_paths_of_the_store_and_of_the_put(new_store):
    store = new_store(fields=["key0", "key1", "key3"])
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # key0 missing: no error
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert {r.key for r in store.search(("test",), query="xxx")} == {"doc1", "doc2"}
    results = store.search(("test",), query="uuu")
    assert results[0].key == "doc2" and all(r.score is not None for r in results)

    per_put = new_store(fields=["key17"])
    per_put.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}, index=["key0", "key1"])
    per_put.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}, index=["key1", "key3"])
    assert per_put.search(("test",), query="aaa")[0].key == "doc3"
    assert per_put.search(("test",), query="ggg")[0].key == "doc4"
    per_put.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    per_put.put(("test",), "doc6", {"key0": "jjj"})  # the store's fields select nothing: not indexed either
    results = per_put.search(("test",), query="hhh")
    assert {r.key for r in results} == {"doc3", "doc4", "doc5", "doc6"}
    assert [r.score for r in results[-2:]] == [None, None] and {r.key for r in results[-2:]} == {"doc5", "doc6"}
    assert [r.key for r in per_put.search(("test",), query="hhh", limit=2)] == [r.key for r in results[:2]]


def test_non_ascii(new_store):
    store = new_store(fields=["text"])
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)
