"""Scoring's input records built by hand for the stage tests: one semantic candidate found by vector search, with no
importance, feedback or full-text score unless a test gives them."""

from __future__ import annotations

from typing import Any

from engine.trace.records import CandidateInput


def candidate_input(id: str, text: str, vector_similarity: float = 0.5, **fields: Any) -> CandidateInput:
    values: dict[str, Any] = {
        "kind": "semantic",
        "created_at": "2025-06-01T12:00:00+00:00",
        "importance": None,
        "evergreen": False,
        "success_count": 0,
        "failure_count": 0,
        "feedback_net": 0,
        "fts_score": None,
        "found_by": "vector",
        **fields,
    }
    return CandidateInput(id=id, text=text, vector_similarity=vector_similarity, **values)
