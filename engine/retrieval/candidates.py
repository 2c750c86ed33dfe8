"""Candidates for one hop: vector and full-text search per source, unioned, joined with DuckDB.

DuckDB decides what exists: a LanceDB row whose memory is archived or deleted there is dropped here, so a
forgotten memory can never come back from retrieval even if its vector outlived it.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from ..memory.base import Backends
from ..records import KINDS
from ..store.sql.database import Connection
from ..store.vectors.rows import VectorHit
from ..trace.key_links import KEY_FOUND_BY, KeyMatch
from ..trace.records import CandidateInput, EntityLinks
from ..vocab import FoundBy

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_POOL = ThreadPoolExecutor(max_workers=6, thread_name_prefix="memlens-search")

# One round trip per hop (each DuckDB query costs ~2 ms however small, so this is ~4 ms cheaper than one query
# per source plus one for feedback): the candidates that are active in DuckDB, with their metadata and feedback net.
# list_contains filters inside the table scan, where "id IN (SELECT unnest($2))" was planned as a hash join that
# read every row: this query took 28 ms at 1M items with that and 10 ms with list_contains (12.8 vs 11.2 ms at 100k;
# 2 cores).
# created_at comes as microseconds since the epoch: turning ~200 TIMESTAMPTZ values into Python datetimes costs
# ~1.5 ms (a time-zone lookup each), the integer arithmetic below a tenth of that.
_LOOKUP_SQL = """
WITH found AS (
    SELECT id, created_at, importance, evergreen, 0 AS successes, 0 AS failures, preceding_text FROM items
        WHERE user_id = $1 AND archived_at IS NULL AND list_contains($2::VARCHAR[], id)
    UNION ALL SELECT id, created_at, importance, FALSE, 0, 0, '' FROM episodes
        WHERE user_id = $1 AND archived_at IS NULL AND list_contains($3::VARCHAR[], id)
    UNION ALL SELECT id, created_at, NULL, FALSE, success_count, failure_count, '' FROM skills
        WHERE user_id = $1 AND archived_at IS NULL AND list_contains($4::VARCHAR[], id))
SELECT found.id, epoch_us(found.created_at), found.importance, found.evergreen, found.successes, found.failures,
    coalesce((SELECT sum(delta) FROM feedback f WHERE f.user_id = $1 AND f.item_id = found.id), 0),
    found.preceding_text
FROM found
"""


def search_sources(
    b: Backends,
    user_id: str,
    query: str,
    query_vector: np.ndarray,
    sources: Sequence[str],
    top_k: int,
    searches: Sequence[str] = ("vector", "fts"),
    text_query: str | None = None,
) -> tuple[dict[str, tuple[list[VectorHit], list[VectorHit]]], dict[str, dict[str, str]]]:
    """Vector and full-text hits per source (the searches run concurrently: LanceDB releases the GIL), and how
    each source was searched: ``{"vector_search": {kind: mode}, "full_text_search": {kind: mode}}`` (exact,
    approximate or in memory; LanceDB index or in memory). A search left out of ``searches`` does not run: its
    hits are empty and its mode is ``not run``. Full-text search is given ``text_query`` when set, else ``query``."""
    not_run: tuple[list[VectorHit], str] = ([], "not run")
    jobs = {}
    for kind in sources:
        if "vector" in searches:
            jobs[(kind, "vector")] = _POOL.submit(b.index.search_vectors, kind, user_id, query_vector, top_k)
        if "fts" in searches:
            words = query if text_query is None else text_query
            jobs[(kind, "fts")] = _POOL.submit(b.index.search_text, kind, user_id, words, top_k)
    vectors = {kind: jobs[(kind, "vector")].result() if (kind, "vector") in jobs else not_run for kind in sources}
    texts = {kind: jobs[(kind, "fts")].result() if (kind, "fts") in jobs else not_run for kind in sources}
    hits = {kind: (vectors[kind][0], texts[kind][0]) for kind in sources}
    return hits, {
        "vector_search": {kind: vectors[kind][1] for kind in sources},
        "full_text_search": {kind: texts[kind][1] for kind in sources},
    }


class LookedUp:
    """The DuckDB rows one retrieval has looked up, by memory id (None: not active for the user), so a later hop asks
    only for the memories the earlier hops did not find.

    The lookup scans the ids of every memory of the user and its cost grows with the number of ids asked for
    (``list_contains``: ~0.8 ms plus ~0.025 ms per id at 100k items, 2 cores), and a second hop finds many of the
    first hop's memories again. No other thread or process can change the rows between hops: a retrieval holds the
    store's connection, and with it the database file, from its first hop to its trace's write (pipeline.retrieve).
    Only a caller's own reasoner could write in between (it runs in the retrieval's thread); a later hop then sees a
    memory as the retrieval first saw it."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[Any, ...] | None] = {}

    def rows(self, conn: Connection, user_id: str, wanted: Sequence[Sequence[str]]) -> dict[str, tuple[Any, ...]]:
        """The active rows of the ids in ``wanted`` (one list per kind, in KINDS order), by id."""
        fresh = [[i for i in ids if i not in self._rows] for ids in wanted]
        if any(fresh):
            found = {row[0]: row for row in conn.execute(_LOOKUP_SQL, [user_id, *fresh]).fetchall()}
            for ids in fresh:
                for i in ids:
                    self._rows[i] = found.get(i)
        return {i: row for ids in wanted for i in ids if (row := self._rows[i]) is not None}


def build_inputs(
    b: Backends,
    conn: Connection,
    user_id: str,
    query_vector: np.ndarray,
    hits: dict[str, tuple[list[VectorHit], list[VectorHit]]],
    entity_hits: dict[str, list[VectorHit]] | None = None,
    links: dict[str, EntityLinks] | None = None,
    key_hits: dict[str, list[VectorHit]] | None = None,
    keys: dict[str, KeyMatch] | None = None,
    looked_up: LookedUp | None = None,
) -> tuple[list[CandidateInput], np.ndarray]:
    """Union hits by id per source, keep only memories active in DuckDB, attach metadata and feedback. The entity
    stage's rows (``entity_hits``, memories search did not find) come after the searches' hits, and every memory it
    linked carries its ``links`` (its ``found_by`` then ends in ``+entity``, or is ``entity`` alone). Then the rows
    only the key search found (``key_hits``, found_by ``key``); every memory a key matched carries its ``keys``
    entry (key_search.py). ``looked_up`` keeps the rows of one retrieval's earlier hops."""
    merged: dict[str, dict[str, Any]] = {}
    for kind, (vec_hits, fts_hits) in hits.items():
        for h in vec_hits:
            merged.setdefault(h.id, {"kind": kind, "hit": h, "found": FoundBy.VECTOR, "fts": None})
        for h in fts_hits:
            entry = merged.get(h.id)
            if entry is None:
                merged[h.id] = {"kind": kind, "hit": h, "found": FoundBy.FTS, "fts": h.fts_score}
            else:
                entry["found"] = FoundBy.BOTH
                entry["fts"] = h.fts_score
    for kind, rows in (entity_hits or {}).items():
        for h in rows:
            merged.setdefault(h.id, {"kind": kind, "hit": h, "found": FoundBy.ENTITY, "fts": None})
    for kind, rows in (key_hits or {}).items():
        for h in rows:
            merged.setdefault(h.id, {"kind": kind, "hit": h, "found": KEY_FOUND_BY, "fts": None})
    links = links or {}
    keys = keys or {}
    if not merged:
        return [], np.zeros((0, 0), dtype=np.float32)
    wanted = [[i for i, e in merged.items() if e["kind"] == kind] for kind in KINDS]
    meta = (looked_up or LookedUp()).rows(conn, user_id, wanted)
    live = [i for i in merged if i in meta]
    if not live:
        return [], np.zeros((0, 0), dtype=np.float32)
    vectors = np.stack([merged[i]["hit"].vector for i in live])
    sims = vectors @ np.asarray(query_vector, dtype=np.float32)
    inputs = []
    for n, i in enumerate(live):
        e, m = merged[i], meta[i]
        inputs.append(
            CandidateInput(
                id=i,
                kind=e["kind"],
                text=e["hit"].text,
                created_at=(_EPOCH + timedelta(microseconds=m[1])).isoformat(),
                importance=None if m[2] is None else float(m[2]),
                evergreen=bool(m[3]),
                success_count=int(m[4]),
                failure_count=int(m[5]),
                feedback_net=int(m[6]),
                vector_similarity=round(float(sims[n]), 6),
                fts_score=None if e["fts"] is None else round(e["fts"], 6),
                found_by=_found_by(e["found"], i in links),
                preceding_text=m[7] or "",
                entity=links.get(i),
                key=keys.get(i),
            )
        )
    return inputs, vectors


def _found_by(found: str, linked: bool) -> str:
    """How a candidate was found: by a search (vector, fts, both), the entity stage alone (entity), or a search
    and the entity stage (``both+entity``)."""
    if not linked or found in (FoundBy.ENTITY, KEY_FOUND_BY):
        return str(found)
    return f"{found}+{FoundBy.ENTITY}"
