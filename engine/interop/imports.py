"""``engine.imports``: memory kept by mem0, Letta and llmemory, imported into memlens (all or nothing, idempotent;
engine/interop/import_run.py). Each reader is imported when used: mem0's needs the optional ``mem0ai`` package."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .import_run import ImportReport, run_import
from .import_source import ImportSource

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class Imports:
    """Import another memory system's store into this one. Every method returns an :class:`ImportReport`; with
    ``dry_run`` nothing is written and the report says what would be."""

    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine

    def run(self, source: ImportSource, *, dry_run: bool = False) -> ImportReport:
        """Write a source an importer has read (any ``ImportSource``)."""
        return run_import(self._engine, source, dry_run=dry_run)

    def mem0(self, config: Any, *, dry_run: bool = False, **options: Any) -> ImportReport:
        """Import a mem0 store, read through mem0's own API (``pip install mem0ai``): ``config`` is what
        ``mem0.Memory.from_config`` takes (a mapping, or a path to a JSON file of it); ``options`` go to the reader
        (engine/interop/mem0_import.py), such as the users to read."""
        from .mem0_import import read_mem0

        return self.run(read_mem0(config, **options), dry_run=dry_run)

    def letta(self, path: str | Path, *, user_id: str | None = None, dry_run: bool = False) -> ImportReport:
        """Import a Letta agent file (``.af``): core memory blocks as working slots, archival passages as semantic
        items, messages as sessions (engine/interop/letta_import.py). ``user_id`` defaults to the first agent's
        name."""
        from .letta_import import read_letta

        return self.run(read_letta(path, user_id=user_id), dry_run=dry_run)

    def llmemory(
        self, path: str | Path, *, user_ids: Sequence[str] | None = None, dry_run: bool = False
    ) -> ImportReport:
        """Import llmemory's file store (its ``long_term_storage_path``): facts, categories, episodes, skills, the
        graph and the short-term sessions (engine/interop/llmemory_import.py); ``user_ids`` limits it to those
        users."""
        from .llmemory_import import read_llmemory

        users = [user_ids] if isinstance(user_ids, str) else user_ids  # one user named as a string, not its letters
        return self.run(read_llmemory(path, user_ids=users), dry_run=dry_run)
