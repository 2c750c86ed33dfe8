"""LanceDB rows as memlens sees them: search hits, a table's rows of one user, the vectors of rows as one matrix, and
the check every vector passes before it is stored or searched with (shape and finiteness)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import InvalidInput


@dataclass(frozen=True)
class VectorHit:
    id: str
    text: str
    vector: np.ndarray
    vector_similarity: float | None  # cosine similarity, higher is closer, in [-1, 1]
    fts_score: float | None  # LanceDB BM25 over the whole table, higher is better, unbounded


def check_vectors(vectors: np.ndarray, dim: int, count: int) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape != (count, dim):
        raise InvalidInput(f"expected {count} vector(s) of dimension {dim}, got shape {tuple(vectors.shape)}")
    if not np.isfinite(vectors).all():
        raise InvalidInput("vector contains NaN or infinite values (a broken embedder?); refusing to use it")
    return vectors


def hits(
    ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    similarity: np.ndarray | None = None,
    bm25: np.ndarray | None = None,
) -> list[VectorHit]:
    return [
        VectorHit(
            i,
            t,
            vectors[n],
            None if similarity is None else float(similarity[n]),
            None if bm25 is None else float(bm25[n]),
        )
        for n, (i, t) in enumerate(zip(ids, texts))
    ]


def owned_rows(rows: pa.Table, user_id: str) -> pa.Table:
    users = rows.column("user_id").to_pylist()
    if all(u == user_id for u in users):
        return rows
    return rows.filter(pa.array([u == user_id for u in users], pa.bool_()))


def vector_matrix(rows: pa.Table) -> np.ndarray:
    col = rows.column("vector")
    if rows.num_rows == 0:
        return np.zeros((0, 0), dtype=np.float32)
    flat: np.ndarray = col.combine_chunks().values.to_numpy(zero_copy_only=False)
    return flat.reshape(rows.num_rows, -1).astype(np.float32, copy=False)
