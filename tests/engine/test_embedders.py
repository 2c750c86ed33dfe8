"""The local embedder: float32 and bfloat16 arithmetic give the same vectors for every practical purpose."""

from __future__ import annotations

import numpy as np
import pytest

from engine import InvalidInput
from engine.providers.embedders import LocalMiniLM

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


def test_auto_uses_float32_for_a_single_query():
    assert not LocalMiniLM(precision="auto").uses_bf16(1)
    assert LocalMiniLM(precision="bf16").uses_bf16(1) and not LocalMiniLM(precision="fp32").uses_bf16(100)


def test_an_unknown_precision_is_refused():
    with pytest.raises(InvalidInput, match="precision"):
        LocalMiniLM(precision="int4")
