"""What the processes of tests/engine/store/test_three_processes.py and test_crashes.py share: opening the store and a
synchronised start."""

from __future__ import annotations

import json
import time
from pathlib import Path

USER = "agent-user"
SESSION = "agent-s1"
SKILL = "sk-agent-plan"
BEACON = "zyxquorvant"  # a made-up word: only the agent's first memory contains it


def open_engine(store: str, load_model: bool = True):
    """The engine as an agent or the dashboard opens it, with the model and LanceDB (which the engine imports on
    first use) loaded before the synchronised start (``load_model=False`` for a process that never embeds nor
    touches a vector: their imports are seconds of CPU on a small machine)."""
    from engine import MemoryEngine, Settings

    engine = MemoryEngine.open(settings=Settings.from_env({}, store=store, lock_timeout_s=30))
    if load_model:
        engine.embedder.embed(["load the model before the start signal"])
        engine._b.index.table_names()  # connected
    return engine


def wait_for_start(ready: Path, go: Path, timeout_s: float = 300) -> None:
    ready.write_text("ready")
    deadline = time.monotonic() + timeout_s
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no start signal")
        time.sleep(0.01)


def write_result(path: Path, result: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)
