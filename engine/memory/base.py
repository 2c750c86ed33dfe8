"""What every memory module is built on: the database, the vector index, the embedder and the settings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import duckdb

from ..config import Settings
from ..errors import InvalidInput
from ..providers.embedders import Embedder
from ..storage.database import Database
from ..storage.vectors import VectorIndex


@dataclass
class Backends:
    db: Database
    index: VectorIndex
    embedder: Embedder
    settings: Settings

    def write_indexed(self, kind: str, ids: Sequence[str], user_ids: Sequence[str], texts: Sequence[str],
                      write_rows: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        """Embed, add vectors, then commit the rows; undo the vectors if the rows fail (all or nothing).

        DuckDB is the truth: retrieval only returns ids that are active there, so a crash between the two steps
        leaves at worst an invisible vector, never a visible half-written memory.
        """
        vectors = self.embedder.embed(list(texts))
        self.index.add(kind, ids, user_ids, texts, vectors)
        try:
            with self.db.write() as conn:
                return write_rows(conn)
        except BaseException:
            self.index.delete(kind, list(ids))
            raise


def dumps(value: Any) -> str:
    """JSON text for storage; NaN/inf and non-JSON values are refused."""
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"value is not JSON-serialisable: {exc}") from None


def loads(text: Any) -> Any:
    if text is None:
        return None
    return json.loads(text) if isinstance(text, str) else text


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` literally anywhere (escape with ``ESCAPE '\\'``)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
