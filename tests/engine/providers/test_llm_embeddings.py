"""OpenAI-compatible embeddings (through the real ``openai`` client against a local server) live in their own LanceDB
tables with the model in the metadata, never mixed with MiniLM vectors; switching a store between the two keeps both
usable (stats warn, reindex builds the missing vectors)."""

from __future__ import annotations

import lancedb
import pytest

from engine import LLMUnavailable, MemoryEngine, Settings
from engine.store.vectors.index import table_name
from tests.support.openai_server import FakeOpenAI, Reply, llm_settings

U = "emb"
MODEL = "test-embed-8"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI(dim=8) as srv:
        yield srv


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()


def openai_engine(server, path) -> MemoryEngine:
    base = Settings.from_env({}, store=str(path), lock_timeout_s=30)
    return MemoryEngine.open(settings=llm_settings(base, server, embedder="openai", embedding_model=MODEL))


def local_engine(path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)


def tables(path) -> dict[str, dict]:
    db = lancedb.connect(str(path / "vectors"))
    result = db.list_tables()
    names = getattr(result, "tables", result)
    return {n: {k.decode(): v.decode() for k, v in (db.open_table(n).schema.metadata or {}).items()} for n in names}


def test_embedder_openai_sends_texts_to_the_embeddings_endpoint_and_stores_its_own_tables(server, tmp_path):
    engine = openai_engine(server, tmp_path)
    assert (engine.embedder.name, engine.embedder.dim) == (MODEL, 8)
    engine.items.remember(U, "The red bicycle is in the garage")
    reqs = server.captured("embeddings")
    assert reqs and all(r.body["model"] == MODEL for r in reqs)
    assert ["The red bicycle is in the garage"] in [r.body["input"] for r in reqs]
    meta = tables(tmp_path)
    assert set(meta) == {table_name("semantic", MODEL)}
    assert meta[table_name("semantic", MODEL)]["model"] == MODEL
    assert meta[table_name("semantic", MODEL)]["dim"] == "8"
    assert engine.admin.stats().embedder == f"{MODEL} (8d)"
    # The server's vectors are hash-seeded: the identical text is the closest hit with cosine 1.
    [hit] = engine.retrieval.search(U, "The red bicycle is in the garage", kind="semantic", mode="vector", limit=1)
    assert hit.vector_similarity == pytest.approx(1.0, abs=1e-5)
    trace = engine.retrieval.retrieve(U, "The red bicycle is in the garage")
    assert trace.settings.embedder == MODEL and trace.settings.embedding_dim == 8
    assert any(r["operation"] == "embed" and r["model"] == MODEL for r in engine.admin.usage())


def test_switching_between_local_and_openai_embedders_keeps_both_usable(server, tmp_path, embedder):
    store = tmp_path / "switch"
    first = openai_engine(server, store)
    first.items.remember(U, "Alpha fact about the lighthouse keeper")

    local = local_engine(store, embedder)
    assert any("have no all-MiniLM-L6-v2 vector" in w and MODEL in w for w in local.admin.stats().warnings)
    assert local.retrieval.search(U, "lighthouse keeper", kind="semantic", mode="vector") == []
    assert local.admin.reindex()["semantic"] == 1
    assert local.admin.stats().warnings == ()
    local.items.remember(U, "Beta fact about the orchard in spring")
    assert {h.text for h in local.retrieval.search(U, "lighthouse orchard", kind="semantic", limit=5)} == {
        "Alpha fact about the lighthouse keeper",
        "Beta fact about the orchard in spring",
    }
    meta = tables(store)
    assert meta[table_name("semantic", MODEL)]["dim"] == "8"
    assert meta[table_name("semantic", "all-MiniLM-L6-v2")]["dim"] == "384"

    back = openai_engine(server, store)
    assert any("have no test-embed-8 vector" in w for w in back.admin.stats().warnings)
    back.admin.reindex()
    assert back.admin.stats().warnings == ()
    [hit] = back.retrieval.search(U, "Beta fact about the orchard in spring", kind="semantic", mode="vector", limit=1)
    assert hit.text == "Beta fact about the orchard in spring"
    assert hit.vector_similarity == pytest.approx(1.0, abs=1e-5)
    # MiniLM's table was not touched by the switch back.
    assert local_engine(store, embedder).admin.stats().warnings == ()


def test_a_5xx_on_embeddings_is_retried(server, tmp_path):
    engine = openai_engine(server, tmp_path)
    _ = engine.embedder.dim
    server.reset()
    server.script("embeddings", Reply(status=500, headers={"retry-after-ms": "10"}))
    engine.items.remember(U, "A fact embedded on the second try")
    assert len(server.captured("embeddings")) == 2
    assert engine.items.list_items(U).total == 1


def test_a_failing_embeddings_server_refuses_the_write_and_stores_nothing(server, tmp_path):
    engine = openai_engine(server, tmp_path)
    _ = engine.embedder.dim  # probe first, then break the server
    server.reset()
    server.script("embeddings", *[Reply(status=500, headers={"retry-after-ms": "10"})] * 3)
    with pytest.raises(LLMUnavailable, match="embedding request failed"):
        engine.items.remember(U, "This fact cannot be embedded")
    assert len(server.captured("embeddings")) == 3  # one try and llm_retries=2 retries
    assert engine.items.list_items(U).total == 0


@pytest.mark.parametrize(
    "body",
    [{"data": [{"index": 0, "embedding": [0.0] * 8}]}, {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}, {"data": []}],
    ids=["zero-vector", "wrong-dim", "no-vectors"],
)
def test_malformed_embeddings_are_refused_with_a_clear_error(server, tmp_path, body):
    engine = openai_engine(server, tmp_path)
    _ = engine.embedder.dim
    server.script("embeddings", Reply(body={"object": "list", "model": MODEL, **body}))
    with pytest.raises(ValueError):
        engine.items.remember(U, "A fact with a broken vector")
    assert engine.items.list_items(U).total == 0
