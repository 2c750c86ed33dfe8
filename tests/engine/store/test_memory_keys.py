"""The memories' extra keys (engine/memory/memory_keys.py) in the store, on an embedded store and a team store.

Writing items writes their keys: a ``facts`` key of each (what the extraction drew and its keyphrases) and, for an
item another one answers (the reply's preceding_text is its text), a ``next`` key with the reply's text, found in
the same batch or among the stored items. An ingest writes them the same way. Forgetting a memory, softly or hard,
deletes its keys and the keys drawn from its text; a hard forget leaves its words in no key; delete_user removes a
user's keys; `reindex` and `memlens keys` build them again from DuckDB, equal to what the writes made. Keys are
written only with memory_keys_write (off by default, like the memory_keys lever).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine import MemoryEngine, Settings
from engine.errors import InvalidInput
from engine.memory.memory_keys import facts_text, plan_keys
from engine.records import Extraction, Triple

pytestmark = pytest.mark.both_stores

Q = 'Caroline said, "Where did you go last weekend?"'
A = 'Melanie said, "We camped at the lake in Oregon."'
R = 'Caroline said, "That sounds lovely!"'


def keys_of(engine: MemoryEngine, ids: list[str]) -> set[tuple[str, str, str, str]]:
    return {(k.memory_id, k.key_kind, k.text, k.source_id) for k in engine.items.keys.b.index.key_rows("semantic", ids)}


def all_keys(engine: MemoryEngine, user: str) -> set[tuple[str, str, str, str]]:
    with engine.items.b.db.read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM items WHERE user_id = ?", [user]).fetchall()]
    return keys_of(engine, ids)


@pytest.fixture
def engine(settings: Settings, embedder) -> MemoryEngine:
    # the offline rules, whatever the default extraction becomes; keys written (memory_keys_write is off by default)
    return MemoryEngine.open(
        settings=dataclasses.replace(settings, graph_extraction="offline", memory_keys_write=True), embedder=embedder
    )


def test_facts_text_is_the_triples_then_the_entities_then_the_keyphrases() -> None:
    found = Extraction((("Rex", "pet"), ("Caroline", "person")), (Triple("Caroline", "has_pet", "Rex"),), "offline")
    # the speaker prefix goes, stop words ("I", "a") and repeats ("Rex", "Caroline") are not keyphrases
    assert facts_text('Caroline said, "I adopted a puppy named Rex."', found) == (
        "Caroline has pet Rex, Rex, Caroline, adopted, puppy, named"
    )
    assert facts_text('Ann said, "Oh, I am."', Extraction((), (), "offline")) == ""


def test_a_reply_gives_the_nearest_earlier_memory_with_its_preceding_text_a_next_key(engine: MemoryEngine) -> None:
    p = engine.items.prepare
    items = [
        p("u", Q, id="q1"),
        p("u", A, id="a1", preceding_text=Q),
        p("u", Q, id="q2"),  # the same question again: the reply after it answers this one
        p("u", R, id="r2", preceding_text=Q),
        p("v", R, id="v1", preceding_text=A),  # another user's reply answers nothing of u's
    ]
    rows = plan_keys(items, {}, None)
    assert [(r.memory_id, r.text, r.source_id) for r in rows if r.key_kind == "next"] == [
        ("q1", A, "a1"),
        ("q2", R, "r2"),
    ]


def test_writes_ingest_forgets_and_rebuilds_keep_the_keys(engine: MemoryEngine) -> None:
    engine.items.remember_many(
        [
            {"user_id": "u", "id": "q", "content": Q},
            {"user_id": "u", "id": "a", "content": A, "preceding_text": Q},
            {"user_id": "w", "id": "w1", "content": "Rex the puppy loves the beach."},
        ]
    )
    # a later write answering a stored memory: the stored one gets the key
    engine.items.remember("u", R, preceding_text=A)
    reply = next(i.id for i in engine.items.list_items("u").rows if i.content == R)
    written = all_keys(engine, "u")
    assert written == {
        ("q", "facts", "Caroline, last", "q"),
        ("a", "facts", "Oregon, Melanie, camped, lake", "a"),
        ("q", "next", A, "a"),
        ("a", "next", R, reply),
        (reply, "facts", "Caroline, lovely", reply),
    }
    # rebuilt from DuckDB (reindex, `memlens keys`): the same keys
    assert engine.admin.build_keys("u") == {"users": 1, "items": 3, "keys": 5}
    assert all_keys(engine, "u") == written
    engine.admin.reindex()
    assert all_keys(engine, "u") == written
    assert keys_of(engine, ["w1"]) == {("w1", "facts", "Rex, puppy, loves, beach", "w1")}
    with pytest.raises(InvalidInput):
        engine.admin.build_keys("bad user!")

    # a soft forget of the answer: its keys and the key drawn from its text go
    engine.forgetting.forget("u", "semantic", ["a"], "test", mode="soft")
    assert all_keys(engine, "u") == {
        ("q", "facts", "Caroline, last", "q"),
        (reply, "facts", "Caroline, lovely", reply),
    }
    # a hard forget: no key holds its words (the purge of its kind's tables covers the keys table)
    engine.forgetting.forget("u", "semantic", [reply], "test", mode="hard")
    assert all_keys(engine, "u") == {("q", "facts", "Caroline, last", "q")}
    table = engine.items.b.index.key_table("semantic")
    assert table is not None
    assert not [t for t in table.to_arrow().column("text").to_pylist() if "lovely" in t]

    engine.admin.delete_user("w")
    assert keys_of(engine, ["w1"]) == set()


def test_an_ingest_writes_keys_as_a_remember_does(engine: MemoryEngine, tmp_path) -> None:
    engine.items.remember_many(
        [{"user_id": "u", "id": "q", "content": Q}, {"user_id": "u", "id": "a", "content": A, "preceding_text": Q}]
    )
    exported = [json.dumps(r, default=str) for r in engine.admin.export("u")]
    # the same user id, another store: an embedded one beside the test's
    other = MemoryEngine.open(
        settings=Settings.from_env({}, store=str(tmp_path / "other"), memory_keys_write=True), embedder=engine.embedder
    )
    other.admin.ingest_lines(exported)
    assert all_keys(other, "u") == all_keys(engine, "u") != set()


def test_keys_are_not_written_by_default_and_are_built_on_demand(settings: Settings, embedder) -> None:
    engine = MemoryEngine.open(settings=settings, embedder=embedder)  # memory_keys_write is off by default
    engine.items.remember_many([{"user_id": "u", "id": "q", "content": Q}])
    assert all_keys(engine, "u") == set()
    assert engine.admin.build_keys()["keys"] == 1


def test_a_memory_of_several_sentences_gets_a_sentence_key_each_kept_like_its_other_keys(
    engine: MemoryEngine,
) -> None:
    two = 'Melanie said, "We camped at the lake in Oregon. The kids caught three trout there."'
    engine.items.remember_many([{"user_id": "u", "id": "m", "content": two}])
    sentences = {(k[2], k[3]) for k in all_keys(engine, "u") if k[1] == "sentence"}
    assert sentences == {
        ('Melanie said, "We camped at the lake in Oregon."', "m"),
        ('Melanie said, "The kids caught three trout there."', "m"),
    }
    written = all_keys(engine, "u")
    assert engine.admin.build_keys("u")["keys"] == len(written)
    assert all_keys(engine, "u") == written
    engine.forgetting.forget("u", "semantic", ["m"], "test", mode="hard")
    assert all_keys(engine, "u") == set()
    table = engine.items.b.index.key_table("semantic")
    assert table is not None
    assert not [t for t in table.to_arrow().column("text").to_pylist() if "trout" in t]


TWO = 'Melanie said, "We camped at the lake in Oregon. The kids loved the campfire stories."'


def test_only_the_kinds_memory_keys_write_kinds_names_are_written(settings: Settings, embedder) -> None:
    sentences_only = dataclasses.replace(
        settings, graph_extraction="offline", memory_keys_write=True, memory_keys_write_kinds="sentences"
    )
    engine = MemoryEngine.open(settings=sentences_only, embedder=embedder)
    engine.items.remember_many(
        [
            {"user_id": "u", "id": "q", "content": Q},
            {"user_id": "u", "id": "a", "content": TWO, "preceding_text": Q},
        ]
    )
    # no facts key of either, no next key of the question: the two sentences of the reply, with its speaker
    assert all_keys(engine, "u") == {
        ("a", "sentence", 'Melanie said, "We camped at the lake in Oregon."', "a"),
        ("a", "sentence", 'Melanie said, "The kids loved the campfire stories."', "a"),
    }
    # `memlens keys` builds the setting's kinds, or the ones asked for: the old keys go first
    assert engine.admin.build_keys("u")["keys"] == 2
    assert engine.admin.build_keys("u", kinds="next") == {"users": 1, "items": 2, "keys": 1}
    assert all_keys(engine, "u") == {("q", "next", TWO, "a")}
    assert engine.admin.build_keys("u", kinds="all")["keys"] == 5  # 2 facts, 1 next, 2 sentences
    assert engine.admin.key_count("u") == 5 and engine.admin.key_count("nobody") == 0
    assert [engine.admin.key_count("u", k) for k in ("facts", "next", "sentences")] == [2, 1, 2]
    assert engine.admin.key_count(kinds="sentences") == 2
    with pytest.raises(InvalidInput, match="unknown key kinds"):
        engine.admin.key_count("u", "sentence' OR 1=1")
    with pytest.raises(InvalidInput, match="unknown key kinds"):
        engine.admin.build_keys("u", kinds="sentence'; DROP TABLE items; --")
    assert engine.admin.key_count("u") == 5  # a refused build deletes nothing
    with pytest.raises(InvalidInput):
        engine.admin.key_count("bad user!")


def test_plan_keys_plans_only_the_kinds_asked_for(engine: MemoryEngine) -> None:
    p = engine.items.prepare
    items = [p("u", Q, id="q"), p("u", TWO, id="a", preceding_text=Q)]
    found = {"q": Extraction((("Caroline", "person"),), (), "offline")}
    assert {r.key_kind for r in plan_keys(items, found)} == {"facts", "next", "sentence"}
    assert {r.key_kind for r in plan_keys(items, found, kinds=("sentence",))} == {"sentence"}
    assert [(r.memory_id, r.key_kind) for r in plan_keys(items, found, kinds=("next",))] == [("q", "next")]
