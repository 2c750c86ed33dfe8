"""Shared bits for the benchmarks: import path, the model loaded once, tables printed as text."""

from __future__ import annotations

import os
import resource
from collections.abc import Sequence
from pathlib import Path

# The repository (for the benchmarks that run its app.py or read its tests' fixtures); the engine itself is imported
# as the installed package (`pip install -e .`).
ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table with right-aligned numbers."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=False))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths, strict=False)))
    return "\n".join(out)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _numeric(s: str) -> bool:
    try:
        float(s.rstrip("%x"))
        return True
    except ValueError:
        return False


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class CachedEmbedder:
    """The local model with a file of vectors it already computed (``--embedding-cache PATH``, a pickled
    ``{text: vector}``): a rerun of a benchmark on the same data skips the encoder, which dominates its time on a
    small CPU. Texts not in the file are embedded by the model and added; ``save()`` writes the file back. The
    vectors are the model's own, so the rankings are the same as without the cache."""

    def __init__(self, path: Path, model) -> None:
        import pickle

        self.path = Path(path)
        self.model = model
        self.name = model.name
        self.dim = model.dim
        self.vectors: dict = pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        self.misses = 0

    def embed(self, texts: Sequence[str]):
        import numpy as np

        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.misses += len(missing)
            self.vectors.update(zip(missing, self.model.embed(missing), strict=True))
        return np.stack([self.vectors[t] for t in texts]).astype("float32") if texts else self.model.embed([])

    def embed_query(self, texts: Sequence[str]):
        """A model that embeds questions apart (a query prefix, engine.providers.embedders.embed_queries) keeps
        their vectors apart in the file too; any other model's questions are plain texts."""
        import numpy as np

        if not hasattr(self.model, "embed_query"):
            return self.embed(texts)
        keys = ["\0query\0" + t for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.vectors))
        if missing:
            self.misses += len(missing)
            self.vectors.update(zip(["\0query\0" + t for t in missing], self.model.embed_query(missing), strict=True))
        return np.stack([self.vectors[k] for k in keys]).astype("float32") if keys else self.model.embed_query([])

    def save(self) -> None:
        import pickle

        self.path.write_bytes(pickle.dumps(self.vectors))
