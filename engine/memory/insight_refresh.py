"""The store insights' refresh: near-duplicate pairs of a user's semantic memories and echoes, computed into the
``near_duplicates`` and ``echoes`` tables (migration 0009).

Near-duplicates are an all-pairs comparison: the user's vectors are read from LanceDB once and compared with numpy
in blocks of rows (an exact cosine, upper triangle only), keeping at most ``NEIGHBOURS`` pairs per memory at or
above ``min_similarity``. One LanceDB search per memory would cost ~5-10 ms each (about 15 minutes at 100k
memories); the blocked product is a few tens of seconds there, so it runs on demand, never on a page's render.

An echo is a memory that repeats what the agent was given before it was written: a near-duplicate of a memory that
sat in an earlier trace's context, or the text of an earlier assistant message (sentence by sentence, compared
after normalising case, punctuation and spaces: exact, because embedding every message would cost more than the
comparison of memories itself)."""

from __future__ import annotations

import bisect
import json
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..clock import utcnow
from ..vocab import Kind
from .base import Backends, insert_rows
from .insight_records import InsightRefresh

BLOCK_ROWS = 512  # rows per matrix product: 512 x 100k float32 similarities is ~200 MB at the size
NEIGHBOURS = 5  # pairs kept per memory: a memory copied fifty times shows as a cluster, not 1,225 pairs
MIN_ECHO_CHARS = 24  # shorter sentences ("Sure, done.") repeat by chance
_WORDS = re.compile(r"[^\w]+", re.UNICODE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")

PAIR_TYPES = (("user_id", "str"), ("a_id", "str"), ("b_id", "str"), ("similarity", "float"))
ECHO_TYPES = (
    ("user_id", "str"),
    ("memory_id", "str"),
    ("source", "str"),
    ("source_id", "str"),
    ("trace_id", "str"),
    ("given_at", "ts"),
    ("similarity", "float"),
)


def normalised(text: str) -> str:
    return " ".join(_WORDS.sub(" ", text.casefold()).split())


def similar_pairs(vectors: np.ndarray, min_similarity: float) -> Iterator[tuple[int, int, float]]:
    """Row pairs (i < j) with cosine similarity >= ``min_similarity``, at most ``NEIGHBOURS`` per row i, computed
    block by block over the upper triangle."""
    n = len(vectors)
    if n < 2:
        return
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    for start in range(0, n, BLOCK_ROWS):
        end = min(start + BLOCK_ROWS, n)
        sims = unit[start:end] @ unit[start:].T  # columns from ``start``: only pairs with j > i are new
        for r in range(end - start):
            row = sims[r, r + 1 :]
            hits = np.flatnonzero(row >= min_similarity)
            if len(hits) > NEIGHBOURS:
                hits = hits[np.argsort(-row[hits], kind="stable")[:NEIGHBOURS]]
            for h in hits:
                yield start + r, start + r + 1 + int(h), float(row[h])


@dataclass(frozen=True)
class _Memory:
    id: str
    content: str
    created_at: datetime


class InsightRefresher:
    def __init__(self, b: Backends) -> None:
        self.b = b

    def refresh(self, user_id: str, min_similarity: float) -> InsightRefresh:
        started = time.perf_counter()
        with self.b.db.read() as conn:
            memories = {
                r[0]: _Memory(r[0], r[1], r[2])
                for r in conn.execute(
                    "SELECT id, content, created_at FROM items WHERE user_id=? AND archived_at IS NULL", [user_id]
                ).fetchall()
            }
            traces = conn.execute(
                "SELECT id, created_at, context_ids FROM traces WHERE user_id=? ORDER BY created_at", [user_id]
            ).fetchall()
            messages = conn.execute(
                "SELECT session_id, seq, content, created_at FROM messages WHERE user_id=? AND role='assistant' "
                "ORDER BY created_at, session_id, seq",
                [user_id],
            ).fetchall()
        ids, vectors = self.b.index.user_vectors(Kind.SEMANTIC, user_id)
        first = {i: n for n, i in reversed(list(enumerate(ids)))}  # a row stored twice (before a repair) counts once
        keep = [n for i, n in first.items() if i in memories]  # soft-forgotten rows may keep their vectors
        ids, vectors = [ids[n] for n in keep], vectors[keep]
        pairs = []
        for i, j, sim in similar_pairs(vectors, min_similarity):
            a, b = sorted((memories[ids[i]], memories[ids[j]]), key=lambda m: (m.created_at, m.id))
            pairs.append((user_id, a.id, b.id, round(sim, 6)))
        echoes = _context_echoes(user_id, pairs, memories, traces) + _message_echoes(user_id, memories, messages)
        now = utcnow()
        seconds = time.perf_counter() - started
        with self.b.db.write() as conn:
            for table in ("near_duplicates", "echoes", "insight_refreshes"):
                conn.execute(f"DELETE FROM {table} WHERE user_id=?", [user_id])
            insert_rows(conn, "near_duplicates", PAIR_TYPES, pairs)
            insert_rows(conn, "echoes", ECHO_TYPES, echoes)
            conn.execute(
                "INSERT INTO insight_refreshes (user_id, refreshed_at, items, pairs, echoes, min_similarity, seconds) "
                "VALUES (?,?,?,?,?,?,?)",
                [user_id, now, len(ids), len(pairs), len(echoes), float(min_similarity), seconds],
            )
        return InsightRefresh(user_id, now, len(ids), len(pairs), len(echoes), float(min_similarity), seconds)


def _context_echoes(
    user_id: str, pairs: list[tuple[str, str, str, float]], memories: dict[str, _Memory], traces: list[Any]
) -> list[tuple[Any, ...]]:
    """For each near-duplicate pair, the newer memory echoes the older when the older one sat in a context before
    the newer was written (the first such trace is named)."""
    seen: dict[str, list[tuple[datetime, str]]] = defaultdict(list)  # memory id -> (trace time, trace id), in order
    for trace_id, created_at, context_ids in traces:
        for memory_id in json.loads(context_ids) if isinstance(context_ids, str) else context_ids or []:
            seen[memory_id].append((created_at, trace_id))
    out: dict[tuple[str, str], tuple[Any, ...]] = {}
    for _, older, newer, sim in pairs:
        given = seen.get(older)
        if not given:
            continue
        written = memories[newer].created_at
        n = bisect.bisect_left(given, (written, ""))
        if n == 0:
            continue  # the older memory entered a context only after the newer was written
        at, trace_id = given[0]
        out.setdefault((newer, older), (user_id, newer, "context", older, trace_id, at, sim))
    return list(out.values())


def _message_echoes(user_id: str, memories: dict[str, _Memory], messages: list[Any]) -> list[tuple[Any, ...]]:
    """Memories whose text (normalised) is an earlier assistant message or one of its sentences."""
    first: dict[str, tuple[datetime, str]] = {}  # normalised text -> the earliest message saying it
    for session_id, seq, content, created_at in messages:
        for piece in (content, *_SENTENCES.split(content)):
            key = normalised(piece)
            if len(key) >= MIN_ECHO_CHARS and key not in first:
                first[key] = (created_at, f"{session_id}#{seq}")
    out = []
    for m in memories.values():
        hit = first.get(normalised(m.content))
        if hit is not None and hit[0] < m.created_at:
            out.append((user_id, m.id, "message", hit[1], None, hit[0], 1.0))
    return out
