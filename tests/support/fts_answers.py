"""Comparing two full-text answers (lists of VectorHit) the way LanceDB's own answers can be compared."""

from __future__ import annotations

import pytest


def assert_same_answer(got, want) -> None:
    """Same scores (to float32 precision) in the same order, the same rows at every score above the last one
    (LanceDB picks arbitrarily among rows tied at the k-th score), and each row with its own text and vector."""
    assert [h.fts_score for h in got] == pytest.approx([h.fts_score for h in want], abs=1e-4)
    last = want[-1].fts_score if want else 0.0
    assert {h.id for h in got if h.fts_score > last + 1e-4} == {h.id for h in want if h.fts_score > last + 1e-4}
    rows = {h.id: (h.text, h.vector.tobytes()) for h in want}
    for h in got:
        if h.id in rows:
            assert (h.text, h.vector.tobytes()) == rows[h.id]
