"""What every memory module is built on: the database, the vector index, the embedder and the settings."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import numpy as np
import pyarrow as pa

from ..config import Settings
from ..errors import InvalidInput
from ..providers.embedders import Embedder
from ..store.journal import Note, WriteJournal
from ..store.sql.database import Connection, Database
from ..store.vectors.index import VectorIndex
from ..store.vectors.rows import check_vectors
from ..validation import check_int, check_json_value

if TYPE_CHECKING:
    import duckdb

    from ..store.sql.postgres import PostgresDatabase

_T = TypeVar("_T")


class StoredRecord(Protocol):
    """What store_records needs of a memory record (Item, Episode, Skill)."""

    @property
    def id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def archived_at(self) -> datetime | None: ...


_R = TypeVar("_R", bound=StoredRecord)


@dataclass
class Backends:
    db: Database | PostgresDatabase  # an embedded store's DuckDB file, or a team store's PostgreSQL
    index: VectorIndex
    embedder: Embedder
    settings: Settings
    journal: WriteJournal | None = None  # notes two-store writes in flight, for repair after a crash

    def __post_init__(self) -> None:
        # One process at a time creates a vector table: under the store-wide writer lock (VectorIndex.table).
        self.index.creation_lock = self.db.write

    def intent(self, kind: str, ids: Sequence[str]) -> AbstractContextManager[Note]:
        """Note a write touching ``ids`` of ``kind`` in both stores for its duration (storage/journal.py). A read-only
        store refuses here, before the note (on a read-only disk, writing it would fail with a raw OSError)."""
        self.db.refuse_if_read_only()
        return self.journal.intent(kind, ids) if self.journal is not None else nullcontext(Note(None))

    def check_new_ids(self, table: str, noun: str, ids: Sequence[str]) -> None:
        """Refuse duplicate ids within one write and ids that already exist in ``table``."""
        if len(set(ids)) != len(ids):
            raise InvalidInput(f"duplicate {noun} ids in one write")
        with self.db.read() as conn:
            taken = conn.execute(f"SELECT id FROM {table} WHERE id IN (SELECT unnest(?))", [list(ids)]).fetchall()
        if taken:
            raise InvalidInput(f"{noun} id {taken[0][0]!r} already exists")

    def store_records(
        self,
        kind: str,
        records: Sequence[_R],
        index_text: Callable[[_R], str],
        insert: Callable[[Connection, Sequence[_R]], _T],  # the connection of either store
        index_preceding: Callable[[_R], str] | None = None,
    ) -> _T:
        """Rows for every record, vectors for the active (not archived) ones, all or nothing."""
        active = [r for r in records if r.archived_at is None]
        return self.write_indexed(
            kind,
            [r.id for r in active],
            [r.user_id for r in active],
            [index_text(r) for r in active],
            lambda conn: insert(conn, records),
            [index_preceding(r) for r in active] if index_preceding else None,
        )

    def write_indexed(
        self,
        kind: str,
        ids: Sequence[str],
        user_ids: Sequence[str],
        texts: Sequence[str],
        write_rows: Callable[[Connection], _T],
        preceding: Sequence[str] | None = None,
    ) -> _T:
        """Embed, add vectors, then commit the rows; undo the vectors if the rows fail (all or nothing).

        DuckDB is the truth: retrieval only returns ids that are active there, so a crash between the two steps
        leaves at worst an invisible vector, never a visible half-written memory.
        """
        self.db.refuse_if_read_only()  # before any vector is added
        vectors = self.embed_after(texts, preceding)
        with self.intent(kind, ids) as note:
            self.index.add(kind, ids, user_ids, texts, vectors)
            try:
                with self.db.write() as conn:
                    return write_rows(conn)
            except BaseException:
                try:
                    self.index.delete(kind, list(ids))
                except Exception:  # the note stays: the next open removes them; the rows' error is the one to see
                    pass
                else:
                    note.settle()  # both stores agree again: no repair owed
                raise

    def embed_after(self, texts: Sequence[str], preceding: Sequence[str] | None = None) -> np.ndarray:
        """One unit vector per text; a text with a preceding text gets ``normalise(e(text) + w * e(preceding))``, w
        being ``preceding_text_weight``. Each distinct text is embedded once, so the turns of a conversation, each
        preceding the next, cost no extra embedding. Only the text goes to the full-text index: the preceding text
        adds meaning to the vector, and retrieval scores its words separately (``bm25_preceding``)."""
        texts = list(texts)
        weight = self.settings.preceding_text_weight
        before = [p if weight > 0 else "" for p in preceding] if preceding is not None else [""] * len(texts)
        distinct = list(dict.fromkeys([*texts, *(p for p in before if p)]))
        at = {t: n for n, t in enumerate(distinct)}
        # Checked here, not only by the index, because rows are picked out of it by position.
        embedded = check_vectors(self.embedder.embed(distinct), self.index.dim, len(distinct))
        vectors = embedded[[at[t] for t in texts]]
        if any(before):
            vectors = vectors.copy()
            for n, p in enumerate(before):
                if p:
                    mixed = vectors[n] + weight * embedded[at[p]]
                    vectors[n] = mixed / max(float(np.linalg.norm(mixed)), 1e-12)
        return vectors

    def record_vectors(self, module: Any, records: Sequence[Any]) -> tuple[list[str], np.ndarray]:
        """The index texts of ``records`` and their vectors, with each record's preceding text where its module
        has one."""
        texts = [module.index_text(r) for r in records]
        preceding_of = getattr(module, "index_preceding", None)
        return texts, self.embed_after(texts, [preceding_of(r) for r in records] if preceding_of else None)


_ARROW_TYPES = {
    "ts": pa.timestamp("us", tz="UTC"),
    "str": pa.string(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "int": pa.int64(),
}


def insert_rows(
    conn: Connection, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
) -> None:
    """Bulk insert through an Arrow table (several times faster than executemany for batches)."""
    if not rows:
        return
    copy_rows = getattr(conn, "copy_rows", None)
    if copy_rows is not None:  # a team store's PostgreSQL connection: COPY, its own bulk path
        copy_rows(table, [name for name, _ in columns], rows)
        return
    duck = cast("duckdb.DuckDBPyConnection", conn)  # only PostgreSQL's connection has copy_rows
    data = pa.table(
        {name: pa.array([r[n] for r in rows], _ARROW_TYPES[kind]) for n, (name, kind) in enumerate(columns)}
    )
    view = f"memlens_insert_{table}"
    duck.register(view, data)
    try:
        names = ", ".join(name for name, _ in columns)
        conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}")
    finally:
        duck.unregister(view)


def dumps(value: Any, field: str = "value") -> str:
    """JSON text for storage; values breaking the JSON value rule (depth, size, NaN/inf, huge ints, lone
    surrogates, non-JSON types) are refused with InvalidInput naming ``field``."""
    check_json_value(value, field)
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


def page_args(limit: object, offset: object = 0, max_limit: int = 10_000_000) -> tuple[int, int]:
    """Validated ``limit``/``offset`` for a listing (a bad value must not reach SQL as a raw DuckDB error)."""
    return check_int(limit, "limit", lo=1, hi=max_limit), check_int(offset, "offset", "offset")
