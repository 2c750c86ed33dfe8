"""The local embedder: float32 and bfloat16 arithmetic give the same vectors for every practical purpose."""

from __future__ import annotations

import numpy as np
import pytest

from engine import InvalidInput
from engine.providers.embedders import LocalMiniLM, native_bf16

TEXTS = [
    "Ada prefers window seats on long flights.",
    "The payments service moved to eu-central-1 after the incident review.",
    "Mira measured soil respiration at 1,970 m altitude with a portable chamber.",
    "Refunds over 400 EUR need a second approval (ticket 4821).",
] * 5  # 20 texts: a batch, so "auto" would choose bf16 on a CPU with native bf16


def test_bf16_vectors_agree_with_float32_vectors_and_are_unit_length():
    fp32 = LocalMiniLM(precision="fp32").embed(TEXTS)
    bf16 = LocalMiniLM(precision="bf16").embed(TEXTS)
    assert fp32.dtype == bf16.dtype == np.float32 and fp32.shape == bf16.shape == (20, 384)
    assert np.allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    agreement = (fp32 * bf16).sum(axis=1)
    assert agreement.min() > 0.9999
    # and they are still this model's vectors: the nearest neighbour of every bf16 vector is its own fp32 vector
    assert ((bf16 @ fp32[:4].T).argmax(axis=1) == np.arange(20) % 4).all()


def test_precision_auto_means_bf16_exactly_on_cpus_with_native_bf16():
    assert LocalMiniLM(precision="auto").uses_bf16() == native_bf16()
    assert LocalMiniLM(precision="bf16").uses_bf16() and not LocalMiniLM(precision="fp32").uses_bf16()


def test_a_bf16_query_vector_agrees_with_the_float32_one():
    """Queries (fewer than BATCH_MIN texts) use a bfloat16 copy of the weights under bf16."""
    for text in TEXTS[:4]:
        fp32 = LocalMiniLM(precision="fp32").embed([text])[0]
        bf16 = LocalMiniLM(precision="bf16").embed([text])[0]
        assert float(fp32 @ bf16) > 0.9999 and abs(float(np.linalg.norm(bf16)) - 1.0) < 1e-5


def test_an_unknown_precision_is_refused():
    with pytest.raises(InvalidInput, match="precision"):
        LocalMiniLM(precision="int4")


def test_a_few_texts_get_the_same_vectors_as_a_batch():
    """Up to BATCH_MIN - 1 texts skip encode()'s batching; the vectors must not depend on that."""
    few = LocalMiniLM(precision="fp32").embed(TEXTS[:4])
    batch = LocalMiniLM(precision="fp32").embed(TEXTS)[:4]
    single = np.vstack([LocalMiniLM(precision="fp32").embed([t]) for t in TEXTS[:4]])
    assert np.allclose(few, batch, atol=1e-5) and np.allclose(single, batch, atol=1e-5)
    assert np.allclose(np.linalg.norm(single, axis=1), 1.0, atol=1e-6)
