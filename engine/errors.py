"""Named errors that cross the engine's public API.

They subclass builtins (as LanceDB does) so that an ordinary ``except ValueError`` or ``except KeyError`` still
works for callers who do not import memlens' names.
"""

from __future__ import annotations


class MemlensError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidInput(MemlensError, ValueError):
    """The caller gave a value the engine refuses (bad id, blank text, bad JSON, unknown kind...)."""


class NotFound(MemlensError, KeyError):
    """An id (user, session, item, episode, skill, trace, history entry) does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class StoreBusy(MemlensError, RuntimeError):
    """Another process held the store's lock for longer than the configured timeout."""


class StoreCorrupt(MemlensError, RuntimeError):
    """The store's files cannot be read as a memlens store."""


class StoreTooNew(MemlensError, RuntimeError):
    """The store was written by a newer memlens: its schema has migrations this version does not know."""


class ModelMismatch(MemlensError, ValueError):
    """Vectors were made with another embedding model or dimension than the one in use."""


class LLMUnavailable(MemlensError, RuntimeError):
    """An LLM-only operation was asked for while no LLM is configured or the LLM failed."""


class StoreReadOnly(MemlensError, PermissionError):
    """A write was asked of a store opened read-only (``read_only`` setting, or a folder that cannot be written)."""
