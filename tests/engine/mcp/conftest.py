"""What the MCP tests share: a real server over stdio on the module's ``store`` (each module makes its own store
fixture: empty, seeded, or its own server) and the same store opened by the test process, as the dashboard would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings
from tests.support.mcp_client import SyncMcp, stdio_server


@pytest.fixture(scope="module")
def client(store: Path) -> Iterator[SyncMcp]:
    c = SyncMcp(stdio_server(store))
    yield c
    c.close()


@pytest.fixture(scope="module")
def reader(store: Path, client: SyncMcp, embedder) -> MemoryEngine:
    """The store opened by this process too while the server runs."""
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=30), embedder=embedder)
