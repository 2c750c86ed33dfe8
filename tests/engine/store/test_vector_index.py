"""Large vector tables get an approximate (HNSW-SQ) index from optimize(); searches stay right for big and small
users."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings

TOPICS = ["flights", "hotels", "trains", "invoices", "refunds", "tests", "deploys", "soil", "bees", "grants"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("ann") / "store"
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(path), vector_index_min_rows=300, resident_vector_max_rows=0),
        embedder=embedder,
    )
    engine.items.remember_many(
        {"user_id": "big", "content": f"Note {n} about {TOPICS[n % 10]}: detail {n * 7 % 97}"} for n in range(400)
    )
    engine.items.remember_many(
        {"user_id": "small", "content": text}
        for text in [
            "Small prefers aisle seats",
            "Small's cat is called Miso",
            "Small works from Porto",
            "Small's budget is 400 EUR",
            "Small runs on Tuesdays",
        ]
    )
    assert engine.admin.optimize() == ["semantic__all-minilm-l6-v2"]
    return engine


def test_optimize_indexes_only_tables_past_the_threshold_and_only_once(indexed):
    index = indexed._b.index  # noqa: SLF001 - the storage layer is what this test is about
    assert index.has_ann("semantic", fresh=True)
    assert not index.has_ann("episodic", fresh=True)
    assert indexed.admin.optimize() == []  # already indexed


def test_the_approximate_search_finds_what_the_exact_search_finds(indexed):
    index = indexed._b.index  # noqa: SLF001
    vec = indexed.embedder.embed(["a note about refunds"])[0]
    ann = [h.id for h in index.vector_search("semantic", "big", vec, 10)]
    exact = [h.id for h in index.vector_search("semantic", "big", vec, 10, exact=True)]
    assert len(ann) == 10 and len(set(ann) & set(exact)) >= 8
    assert ann[0] == exact[0]


def test_a_user_with_few_rows_in_an_indexed_table_still_gets_all_of_them(indexed):
    index = indexed._b.index  # noqa: SLF001
    vec = indexed.embedder.embed(["where does Small work"])[0]
    hits = index.vector_search("semantic", "small", vec, 20)
    assert len(hits) == 5 and hits[0].text == "Small works from Porto"


def test_the_trace_says_which_searches_were_approximate(indexed):
    trace = indexed.retrieval.retrieve("big", "what about refunds?")
    assert trace.strategies.vector_search == ("semantic: approximate (HNSW-SQ), episodic: exact, procedural: exact")


def test_a_zero_threshold_never_builds_an_index(tmp_path, embedder):
    engine = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "s"), vector_index_min_rows=0), embedder=embedder
    )
    engine.items.remember_many({"user_id": "u", "content": f"fact {n}"} for n in range(50))
    assert engine.admin.optimize() == []


# A memory has a key per sentence (memory_keys=sentences), so its keys table outgrows the memories' own: optimize()
# indexes it by the same threshold, and the key search walks that index.
@pytest.fixture(scope="module")
def keyed(tmp_path_factory, embedder) -> MemoryEngine:
    path = tmp_path_factory.mktemp("ann-keys") / "store"
    engine = MemoryEngine.open(
        settings=Settings.from_env(
            {},
            store=str(path),
            vector_index_min_rows=300,
            resident_vector_max_rows=0,
            memory_keys_write=True,
            graph_extraction="offline",
        ),
        embedder=embedder,
    )
    engine.items.remember_many(
        {
            "user_id": "big",
            "content": f"Note {n} is about {TOPICS[n % 10]} today. The detail to keep is number {n * 7 % 97} here.",
        }
        for n in range(200)
    )
    engine.items.remember_many(
        {"user_id": "small", "content": text}
        for text in [
            "Small moved to Porto last spring. Small works from a cafe near the river now.",
            "Small adopted a cat last year. The cat is called Miso and sleeps all day.",
        ]
    )
    return engine


def test_optimize_indexes_a_keys_table_past_the_threshold_even_when_its_memories_table_is_not(keyed):
    index = keyed._b.index  # noqa: SLF001
    assert index.count("semantic") == 202 and index.count_keys("semantic") >= 300
    assert keyed.admin.optimize() == ["semantic__all-minilm-l6-v2--keys"]
    assert not index.has_ann("semantic", fresh=True)
    assert index._indexed(index.key_table("semantic"), fresh=True)  # noqa: SLF001
    assert keyed.admin.optimize() == []  # already indexed


def test_the_indexed_key_search_finds_what_an_exact_search_finds(keyed):
    index = keyed._b.index  # noqa: SLF001
    keyed.admin.optimize()
    vec = keyed.embedder.embed(["the detail about refunds"])[0]
    ann = index.search_key_vectors("semantic", "big", vec, 10, ["sentence"])
    exact = (
        index.key_table("semantic")
        .search(vec, vector_column_name="vector")
        .distance_type("cosine")
        .where("user_id = 'big' AND key_kind = 'sentence'", prefilter=True)
        .limit(10)
        .bypass_vector_index()
        .to_arrow()
    )
    exact_texts = exact.column("text").to_pylist()
    assert len(ann) == 10 and len({h.text for h in ann} & set(exact_texts)) >= 8
    assert ann[0].text == exact_texts[0]
    assert {h.key_kind for h in ann} == {"sentence"}


def test_a_user_with_few_keys_in_an_indexed_keys_table_still_gets_all_of_them(keyed):
    keyed.admin.optimize()
    vec = keyed.embedder.embed(["what is the cat called"])[0]
    hits = keyed._b.index.search_key_vectors("semantic", "small", vec, 20, ["sentence"])  # noqa: SLF001
    # the graph walk meets few of the user's keys among the big user's hundreds: the exact search finds all four
    assert {h.text for h in hits} == {
        "Small moved to Porto last spring.",
        "Small works from a cafe near the river now.",
        "Small adopted a cat last year.",
        "The cat is called Miso and sleeps all day.",
    }


def test_retrieval_over_an_indexed_keys_table_names_the_sentence_that_matched(keyed):
    keyed.admin.optimize()
    trace = keyed.retrieval.retrieve("small", "What is the name of the cat?", overrides={"memory_keys": "sentences"})
    cat = next(c for c in trace.hops[0].candidates if c.text.startswith("Small adopted a cat"))
    assert cat.key is not None and cat.key.cosine_kind == "sentence"
    assert cat.key.cosine_text in ("Small adopted a cat last year.", "The cat is called Miso and sleeps all day.")
    # small's four keys are too few for the graph walk among big's hundreds: searched exactly, and the trace says so
    assert trace.strategies.to_dict()["key_search"] == "semantic: exact"
    big = keyed.retrieval.retrieve("big", "the detail about refunds", overrides={"memory_keys": "sentences"})
    assert big.strategies.to_dict()["key_search"] == "semantic: approximate (HNSW-SQ)"


def test_the_key_text_search_returns_only_the_users_keys_of_the_kinds_asked_for(keyed):
    index = keyed._b.index  # noqa: SLF001
    # "cat" and "Miso" are in small's sentence keys and in its facts key; big's keys never say them
    hits = index.search_key_text("semantic", "small", "the cat Miso", 20, ["sentence"])
    assert {h.text for h in hits} == {
        "Small adopted a cat last year.",
        "The cat is called Miso and sleeps all day.",
    }
    facts = index.search_key_text("semantic", "small", "the cat Miso", 20, ["facts"])
    assert facts and {h.key_kind for h in facts} == {"facts"}
    # big's 200 sentences about a number fill the unfiltered top; small's one sentence about the river is still found
    river = index.search_key_text("semantic", "small", "the number of the detail by the river", 5, ["sentence"])
    assert [h.text for h in river] == ["Small works from a cafe near the river now."]
    assert len(index.search_key_text("semantic", "big", "the number of the detail", 5, ["sentence"])) == 5
