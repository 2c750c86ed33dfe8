"""Ingest speed: semantic items per second end to end, embedding vs storage share, store size, peak RSS.

    python bench/ingest.py [--sizes 10000,100000] [--batch 1000] [--precision auto|fp32|bf16]

Each size goes into a fresh store in a temporary folder through ``engine.items.remember_many`` (the public batch
API: validation, embedding, LanceDB, DuckDB). The embedder is wrapped to time its own calls, so "embedding" is
the model's share of the same run and "storage" is everything else. Targets (issue 2): storage adds at most 15% over
embedding time; at least 350 items/s end to end on a 2-core machine. "model alone" is items / embedding seconds.
End to end stops once the items are searchable (compacted, full-text and user_id indexes current); building the
optional approximate vector index (``optimize()``, tables of ``vector_index_min_rows`` or more) is timed apart.
"old versions pruned" is the store's size once the LanceDB versions the run replaced are deleted (an
``optimize()`` with ``vector_version_retention_s=0``; by default they go 10 minutes after being replaced).
``--precision`` is the local model's arithmetic (the engine's ``embed_precision`` setting; ``auto`` is the default).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mb, table
from synthetic import sentences, timestamps

from engine import MemoryEngine, Settings
from engine.providers.embedders import LocalMiniLM


class TimedEmbedder:
    """The real model, with a stopwatch around each call."""

    def __init__(self, inner: LocalMiniLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        t = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t


def run(size: int, batch: int, embedder: TimedEmbedder, keys: bool = True) -> list:
    texts = sentences(size)
    times = timestamps(size)
    workdir = Path(tempfile.mkdtemp(prefix="memlens-ingest-"))
    try:
        engine = MemoryEngine.open(
            settings=Settings.from_env({}, store=str(workdir / "store"), memory_keys_write=keys), embedder=embedder
        )
        embedder.seconds = 0.0
        t = time.perf_counter()
        for start in range(0, size, batch):
            engine.items.remember_many(
                {"user_id": "bench", "content": texts[i], "category": "notes", "created_at": times[i]}
                for i in range(start, min(size, start + batch))
            )
        engine.admin.optimize(vector_index=False)  # compact + full-text/user_id indexes: searchable (exactly) from here
        total = time.perf_counter() - t
        embed = embedder.seconds
        t = time.perf_counter()
        engine.admin.optimize()  # the optional approximate vector index, reported on its own
        ann = time.perf_counter() - t
        disk = engine.admin.disk_bytes()
        engine.close()
        # Versions replaced within vector_version_retention_s (10 min) are kept for other processes' readers, so the
        # run leaves all of them; with no other process, they can go at once.
        engine = MemoryEngine.open(
            settings=Settings.from_env({}, store=str(workdir / "store"), vector_version_retention_s=0),
            embedder=embedder,
        )
        engine.admin.optimize(vector_index=False)
        pruned = engine.admin.disk_bytes()
        engine.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    store = total - embed
    return [
        size,
        f"{size / total:.0f}",
        f"{size / embed:.0f}",
        f"{total:.1f}",
        f"{embed:.1f}",
        f"{store:.1f}",
        f"{100 * store / embed:.1f}%",
        f"{ann:.1f}",
        f"{disk / 1e6:.0f} MB",
        f"{pruned / 1e6:.0f} MB",
        f"{peak_rss_mb():.0f} MB",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"))
    ap.add_argument(
        "--keys", default="on", choices=("on", "off"), help="write the items' extra keys (memory_keys_write)"
    )
    args = ap.parse_args()
    local = LocalMiniLM(precision=args.precision)
    embedder = TimedEmbedder(local)
    embedder.embed(["warm up the model"] * 32)
    rows = [run(int(s), args.batch, embedder, args.keys == "on") for s in args.sizes.split(",")]
    print(
        f"model: {local.name}, precision {args.precision} (bf16: {local.uses_bf16()}), "
        f"batches of {args.batch} through engine.items.remember_many, extra keys {args.keys}"
    )
    print(
        table(
            [
                "items",
                "items/s",
                "model alone items/s",
                "total s",
                "embedding s",
                "storage s",
                "storage/embedding",
                "ANN index s",
                "store size",
                "old versions pruned",
                "peak RSS",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
