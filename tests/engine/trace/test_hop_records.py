"""A hop's proposal and cosines are typed records, written as the same JSON objects traces have always held (the
same keys, in the same order) and read back from every stored form: the golden fixtures, the flat cosine pairs
from before the compact format, a hop without cosines, a custom reasoner's own keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import HopSimilarity, InvalidInput, Proposal, ProposalDetails, Tombstone
from engine.trace.codec import trace_from_dict, trace_json
from engine.trace.redaction import FORGOTTEN_TEXT, REDACTED_PROPOSAL, REDACTED_QUERY, redact_quotes, redact_trace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
NAMES = sorted(p.name.removesuffix(".json") for p in FIXTURES.glob("*.json") if not p.name.endswith(".replay.json"))


def stored(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_every_stored_hop_is_written_back_with_the_same_proposal_and_cosines_in_the_same_key_order(name):
    data = stored(name)
    again = json.loads(trace_json(trace_from_dict(data)))
    for old, new in zip(data["hops"], again["hops"], strict=True):
        assert list(new["proposal"].items()) == list(old["proposal"].items())
        assert list(new["similarity"].items()) == list(old.get("similarity", {}).items())


def test_the_fixtures_hold_the_proposals_the_records_type():
    hops = [h for n in NAMES for h in stored(n)["hops"]]
    keys = {k for h in hops for k in h["proposal"]}
    assert {"strategy", "why", "names", "from_text", "question_overlap", "key_terms", "terms"} <= keys
    every = [h for n in NAMES for h in trace_from_dict(stored(n)).hops]
    bridge = next(h for h in every if h.proposed_by == "offline:bridge_entities")
    assert bridge.proposal.names and isinstance(bridge.proposal.names, tuple)
    assert bridge.proposal.terms and bridge.query.endswith(" ".join(bridge.proposal.terms))
    assert isinstance(bridge.proposal.question_overlap, float) and bridge.proposal.extra == {}
    plain = stored("default_1hop")["hops"][0]["proposal"]
    first = trace_from_dict(stored("default_1hop")).hops[0]
    assert (first.proposal.strategy, first.proposal.why) == (plain["strategy"], plain["why"])


def test_a_custom_reasoners_own_keys_are_kept_after_the_known_ones():
    details = {"custom": {"score": 1}, "why": "mine", "terms": ["a", "b"]}
    proposal = Proposal("a b", "custom", details)
    assert proposal.details == ProposalDetails(why="mine", terms=("a", "b"), extra={"custom": {"score": 1}})
    assert list(proposal.details.to_dict().items()) == [
        ("why", "mine"),
        ("terms", ["a", "b"]),
        ("custom", {"score": 1}),
    ]


def test_cosines_in_every_stored_form():
    compact = {"format": "cosine-int16-lower", "scale": 10000, "ids": ["a", "b"], "values": "AAA="}
    record = HopSimilarity.from_dict(compact)
    assert (record.recorded, record.ids, record.to_dict()) == (True, ("a", "b"), compact)
    pairs = {"a|b": 0.25}
    older = HopSimilarity.from_dict(pairs)
    assert (older.recorded, older.format, older.to_dict()) == (True, None, pairs)
    for nothing in (None, {}):
        assert not HopSimilarity.from_dict(nothing).recorded and HopSimilarity.from_dict(nothing).to_dict() == {}


def test_a_proposal_or_cosines_that_are_not_objects_is_not_a_trace():
    for field, bad in (("proposal", ["why"]), ("similarity", "cosines")):
        data = stored("default_1hop")
        data["hops"][0][field] = bad
        with pytest.raises(InvalidInput):
            trace_from_dict(data)


def test_a_hard_forget_of_the_memory_a_proposal_quotes_redacts_the_proposal_record():
    trace = trace_from_dict(stored("default_2hop_offline_mmr"))
    bridge = trace.hops[1].proposal
    source = next(c for c in trace.hops[0].candidates if bridge.from_text and bridge.from_text in c.text)
    hard = Tombstone(mode="hard", at="2026-01-01T00:00:00+00:00", actor="test")

    redacted = redact_trace(trace, {source.id}, hard)
    assert redacted.hops[1].proposal == ProposalDetails(redacted=REDACTED_PROPOSAL)
    assert redacted.hops[1].query == REDACTED_QUERY and redacted.hops[0].proposal == trace.hops[0].proposal
    assert json.loads(trace_json(redacted))["hops"][1]["proposal"] == {"redacted": REDACTED_PROPOSAL}

    quoted = redact_quotes(trace, {source.id: source.text})
    assert quoted.hops[1].proposal.from_text == FORGOTTEN_TEXT.format(id=source.id)
    assert quoted.hops[1].proposal.names == bridge.names and quoted.hops[1].proposal.terms == bridge.terms
