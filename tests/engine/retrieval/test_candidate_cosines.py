"""The candidate cosines a trace records for MMR replay: exact to 1e-4, symmetric, across hops, compact."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.retrieval.similarity import CandidateCosines, cosine_lookup


def unit(rows: list[list[float]]) -> np.ndarray:
    v = np.asarray(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_cosines_within_a_hop_are_the_dot_products_rounded_to_four_decimals():
    vectors = unit([[1, 0], [1, 1], [0, 1]])
    table = CandidateCosines()
    table.add_hop(["a", "b", "c"], vectors)
    assert table.cosine("a", "b") == pytest.approx(0.7071, abs=1e-9)
    assert table.cosine("b", "a") == table.cosine("a", "b")
    assert table.cosine("a", "c") == 0.0
    assert table.cosine("a", "a") == 0.0  # an item is never compared with itself
    assert table.cosine("a", "unknown") == 0.0


def test_a_later_hop_records_its_new_candidates_against_every_earlier_one_and_repeats_nothing():
    table = CandidateCosines()
    first = table.add_hop(["a", "b"], unit([[1, 0], [0, 1]]))
    second = table.add_hop(["b", "c", "c"], unit([[0, 1], [1, 1], [1, 1]]))
    assert first.ids == ("a", "b") and second.ids == ("c",)  # b was recorded by hop 1, c only once
    assert table.cosine("c", "a") == pytest.approx(0.7071, abs=1e-9)
    assert table.cosine("b", "c") == pytest.approx(0.7071, abs=1e-9)


def test_the_records_survive_json_and_decode_to_exactly_the_live_values():
    rng = np.random.default_rng(7)
    hops = [unit(rng.normal(size=(60, 384)).tolist()), unit(rng.normal(size=(60, 384)).tolist())]
    ids = [[f"m{i}" for i in range(60)], [f"m{i}" for i in range(30, 90)]]
    live = CandidateCosines()
    records = [live.add_hop(i, v) for i, v in zip(ids, hops)]
    stored = json.loads(json.dumps([r.to_dict() for r in records]))
    lookup = cosine_lookup(stored)
    every = [f"m{i}" for i in range(90)]
    assert all(lookup(a, b) == live.cosine(a, b) for a in every for b in every)
    assert len(json.dumps(stored)) < 12_000  # 90 candidates: 4,005 pairs, ~8 kB (the JSON pairs were ~140 kB)


def test_traces_from_before_the_compact_format_still_replay_from_their_pairs():
    lookup = cosine_lookup([{"a|b": 0.25}, {"c|a": -0.5}])
    assert lookup("b", "a") == 0.25 and lookup("a", "c") == -0.5 and lookup("b", "c") == 0.0


def test_no_recorded_cosines_means_no_lookup():
    assert cosine_lookup([{}, {}]) is None
