"""Which of a memory's extra keys (engine/memory/memory_keys.py) a hop's key search matched: per candidate, the best
key by vector (its cosine) and the best by full text (its BM25), each with the key's kind, text and the memory its
text came from (``source_id``). The scoring stages read ``cosine`` and ``bm25`` (engine/retrieval/key_search.py),
so a replay scores the recorded keys again without searching. A trace from before the key search has no ``key``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from .hop_records import stored_object

__all__ = ["KEY_FOUND_BY", "KeyMatch", "REDACTED_KEY"]

KEY_FOUND_BY = "key"  # the found_by of a candidate only its keys found

REDACTED_KEY = "[key drawn from a forgotten memory]"
_FIELDS = (
    "cosine",
    "cosine_kind",
    "cosine_text",
    "cosine_source",
    "bm25",
    "bm25_kind",
    "bm25_text",
    "bm25_source",
    "brought_in",
)


@dataclass(frozen=True)
class KeyMatch:
    """The memory's best key by cosine and by BM25 (None: that search matched none of its keys); ``brought_in``
    when only its keys found it (its own text and vector were fetched for it)."""

    cosine: float | None = None
    cosine_kind: str | None = None
    cosine_text: str | None = None
    cosine_source: str | None = None
    bm25: float | None = None
    bm25_kind: str | None = None
    bm25_text: str | None = None
    bm25_source: str | None = None
    brought_in: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self | None:
        if data is None or isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(**{k: data[k] for k in _FIELDS if k in data})

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _FIELDS}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()

    def sources(self) -> set[str]:
        return {s for s in (self.cosine_source, self.bm25_source) if s}

    def redacted(self) -> KeyMatch:
        """The match with its key texts replaced (a hard forget of the memory or of the one its key quotes)."""
        return KeyMatch(
            self.cosine,
            self.cosine_kind,
            None if self.cosine_text is None else REDACTED_KEY,
            self.cosine_source,
            self.bm25,
            self.bm25_kind,
            None if self.bm25_text is None else REDACTED_KEY,
            self.bm25_source,
            self.brought_in,
        )

    def describe(self) -> str:
        """Which keys matched, as a person reads it."""
        parts = []
        if self.cosine is not None:
            parts.append(f"{self.cosine_kind} key by vector (cosine {self.cosine:.3f}): {self.cosine_text}")
        if self.bm25 is not None:
            parts.append(f"{self.bm25_kind} key by full text (BM25 {self.bm25:.3f}): {self.bm25_text}")
        return "; ".join(parts)
