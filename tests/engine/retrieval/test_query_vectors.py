"""Query vectors kept by text: the embedder's own vectors, embedded once per text, in batches when primed."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import InvalidInput
from engine.retrieval.query_vectors import QueryVectors


class CountingEmbedder:
    """The real MiniLM, recording each call's texts (so a test can see what was embedded and how)."""

    def __init__(self, real, nan: bool = False) -> None:
        self.real, self.name, self.dim, self.nan = real, real.name, real.dim, nan
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        vectors = np.array(self.real.embed(texts), dtype=np.float32)
        if self.nan:
            vectors[0, 3] = np.nan
        return vectors


def test_a_kept_vector_is_the_embedders_own_and_is_embedded_once(embedder):
    counting = CountingEmbedder(embedder)
    kept = QueryVectors(counting)
    first = kept.vector("Where is the lab printer?")
    again = kept.vector("Where is the lab printer?")
    assert np.array_equal(first, embedder.embed(["Where is the lab printer?"])[0])
    assert again is first and counting.calls == [["Where is the lab printer?"]]
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared between retrievals: read-only


def test_priming_embeds_the_missing_texts_in_batches_and_keeps_at_most_size(embedder):
    counting = CountingEmbedder(embedder)
    kept = QueryVectors(counting, size=4)
    kept.vector("q0")
    assert kept.prime(["q0", "q1", "q2", "q1", "q3", "q4"], batch=2) == 4  # q0 kept already, q1 asked twice
    assert counting.calls == [["q0"], ["q1", "q2"], ["q3", "q4"]]
    kept.vector("q4")
    kept.vector("q1")
    assert len(counting.calls) == 3  # both kept
    kept.vector("q0")  # the oldest (q0) had been dropped to keep 4
    assert counting.calls[-1] == ["q0"]


def test_a_broken_embedders_query_vector_is_refused(embedder):
    with pytest.raises(InvalidInput, match="NaN"):
        QueryVectors(CountingEmbedder(embedder, nan=True)).vector("anything")


def test_an_evaluation_embeds_its_questions_in_one_batch_and_ranks_as_without(demo_engine):
    demo_engine.evals.load_demo(run=False)
    questions = [c.question for c in demo_engine.evals.cases("demo")]
    fresh = demo_engine.retrieval.retrieve("ada", questions[0], hops=1, save=False)
    demo_engine.retrieval.pipeline.query_vectors = QueryVectors(
        CountingEmbedder(demo_engine.retrieval.pipeline.b.embedder)
    )
    counting = demo_engine.retrieval.pipeline.query_vectors.embedder
    demo_engine.evals.evaluate("demo", hops=1)
    assert counting.calls[0] == list(dict.fromkeys(questions))  # primed: one call before the first case
    again = demo_engine.retrieval.retrieve("ada", questions[0], hops=1, save=False)
    assert [(r.id, r.final) for r in again.ranking] == [(r.id, r.final) for r in fresh.ranking]
