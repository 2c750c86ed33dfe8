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


class StoreFull(MemlensError, OSError):
    """The disk (or quota) holding the store is full: the write was refused and nothing of it was kept."""


# errno values (and the words DuckDB and Lance put in their messages, which carry no errno) of a disk that refuses a
# write: full, over quota, or mounted read-only.
_FULL_ERRNOS = (28, 122)  # ENOSPC, EDQUOT
_READ_ONLY_ERRNOS = (30,)  # EROFS
_FULL_WORDS = ("no space left on device", "disk quota exceeded")
_READ_ONLY_WORDS = ("read-only file system",)


def disk_error(exc: BaseException, where: object = "the store") -> MemlensError | None:
    """The named error for an exception a full or read-only disk caused (StoreFull, StoreReadOnly), else None.
    DuckDB and Lance report these as their own error types with the OS message inside, so the text is checked too."""
    if isinstance(exc, MemlensError):
        return None
    code = getattr(exc, "errno", None)
    text = str(exc).lower()
    if code in _FULL_ERRNOS or any(w in text for w in _FULL_WORDS):
        return StoreFull(f"the disk holding {where} is full; the write was refused and nothing of it was kept")
    if code in _READ_ONLY_ERRNOS or any(w in text for w in _READ_ONLY_WORDS):
        return StoreReadOnly(f"{where} is on a read-only file system; nothing was written")
    return None
