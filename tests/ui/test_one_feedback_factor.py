"""The dashboard's feedback factor is the pipeline's: for every net count around the cap and every weight at its
bounds, the factor the feedback page shows equals the one the feedback stage records (engine.feedback_factor is the
one formula; the UI once carried a copy with its own defaults)."""

from __future__ import annotations

import dataclasses

import pytest

from engine import Settings
from engine.retrieval.stages import TemporalScores, feedback_scores
from engine.trace.records import CandidateInput
from ui.trace_data import feedback_factor

AT = "2026-01-01T00:00:00+00:00"
NETS = (-100, -6, -5, -4, -1, 0, 1, 2, 4, 5, 6, 100)
SETTINGS = [
    Settings(),
    Settings(feedback_weight=0.0),
    Settings(feedback_weight=1.0, feedback_cap=1),
    Settings(feedback_weight=0.3, feedback_cap=3),
    Settings(feedback_weight=0.5, feedback_cap=1000),
]


def _recorded_factors(nets: tuple[int, ...], settings: Settings) -> tuple[float, ...]:
    """The factors the pipeline's feedback stage records for candidates with these net counts."""
    inputs = [
        CandidateInput(f"m{n}", "semantic", "t", AT, 0.5, False, 0, 0, net, 0.5, None, "vector")
        for n, net in enumerate(nets)
    ]
    ones = (1.0,) * len(nets)
    temporal = TemporalScores((0,) * len(nets), ones, (0.5,) * len(nets), ones, ones)
    return feedback_scores(inputs, temporal, settings, hop=1).factor


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"w{s.feedback_weight}-cap{s.feedback_cap}")
def test_the_pages_factor_is_the_one_the_pipeline_records(settings):
    recorded = _recorded_factors(NETS, settings)
    # A store's settings (the record) and a trace's (its plain retrieval settings) give the same factor.
    assert tuple(feedback_factor(net, settings) for net in NETS) == recorded
    assert tuple(feedback_factor(net, settings.retrieval_dict()) for net in NETS) == recorded
    if settings.feedback_weight > 0 and settings.feedback_cap <= max(NETS):
        assert recorded[0] == pytest.approx(1.0 - settings.feedback_weight)  # clamped at -cap
        assert recorded[-1] == pytest.approx(1.0 + settings.feedback_weight)  # clamped at +cap


def test_an_older_trace_without_the_feedback_settings_gets_the_settings_defaults():
    defaults = Settings()
    older = {k: v for k, v in defaults.retrieval_dict().items() if k not in {"feedback_weight", "feedback_cap"}}
    assert tuple(feedback_factor(net, older) for net in NETS) == _recorded_factors(NETS, defaults)
    changed = dataclasses.replace(defaults, feedback_weight=0.9)
    assert feedback_factor(3, changed.retrieval_dict()) != feedback_factor(3, older)
