"""One writer of the concurrent-commit test: appends vectors to the same LanceDB tables under an s3:// prefix that
other writers (processes) append to at the same moment, through memlens' VectorIndex (compaction included).

Usage: python s3_vector_writer.py URI WRITER_NO BATCHES GO_FILE RESULT_FILE. Touches RESULT_FILE with the suffix
.ready once connected, then waits for GO_FILE so all writers start together; writes one small batch per loop (each
add() is one LanceDB commit); lists every acknowledged id in RESULT_FILE. An error ends the process with a traceback
and a non-zero exit code.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from engine.process_env import s3_storage_options  # noqa: E402
from engine.store.vectors.index import VectorIndex  # noqa: E402

DIM = 8
MODEL = "commit-test"


def main() -> None:
    uri, writer, batches, go, result = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
    index = VectorIndex(uri, MODEL, DIM, storage_options=s3_storage_options())
    index.table_names()  # LanceDB imported and connected before the start, so the writers' commits really race
    rng = np.random.default_rng(writer)
    Path(result).with_suffix(".ready").touch()
    while not go.exists():
        time.sleep(0.01)
    acked: list[str] = []
    for n in range(batches):
        kind = ("semantic", "episodic")[n % 2]  # two tables: commits to each race the other writers'
        ids = [f"w{writer}-b{n}-{k}" for k in range(3)]
        vectors = rng.normal(size=(3, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        index.add(kind, ids, ["u"] * 3, [f"text {i}" for i in ids], vectors)
        acked += ids
        if writer == 0 and n % 10 == 9:  # one process compacts now and then, as the engine does
            index.optimize()
    Path(result).write_text(json.dumps(acked))


if __name__ == "__main__":
    main()
