"""Fixtures shared by engine tests: a module's own demo store, and engines that talk to an LLM through the real
``openai`` client."""

from __future__ import annotations

import shutil

import pytest

from engine import MemoryEngine, Settings
from tests.support.openai_server import FakeOpenAI, llm_settings


@pytest.fixture(scope="module")
def demo(demo_store_template, tmp_path_factory, embedder, request) -> MemoryEngine:
    """One copy of the demo store for the module (retrieval writes traces into it)."""
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "store"
    shutil.copytree(demo_store_template, path)
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)


@pytest.fixture(scope="module")
def server():
    """A local OpenAI-compatible HTTP server on 127.0.0.1, one per test module."""
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="module")
def llm_engine(server, tmp_path_factory, embedder, request) -> MemoryEngine:
    """A store of the module's own whose LLM is ``server`` (through the real openai client)."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    base = Settings.from_env({}, store=str(tmp_path_factory.mktemp(name) / "store"), lock_timeout_s=30)
    return MemoryEngine.open(settings=llm_settings(base, server), embedder=embedder)
