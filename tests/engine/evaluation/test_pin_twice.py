"""Pinning a trace's question into a set that already has it updates that case instead of adding a duplicate
(issue 32: pinning twice made two cases of one question)."""

from __future__ import annotations

from engine import MemoryEngine


def test_pinning_the_same_question_twice_keeps_one_case_with_the_new_expectation(empty_engine: MemoryEngine):
    e = empty_engine
    a = e.items.remember("pia", "Pia's bicycle is a green cargo bike")
    b = e.items.remember("pia", "Pia parks the bicycle in the courtyard shed")
    first = e.retrieval.retrieve("pia", "where does Pia park her bicycle")
    case = e.evals.pin(first.trace_id, [a.id, b.id], "bikes", category="parking")
    again = e.retrieval.retrieve("pia", "where does Pia park her bicycle")  # the same question asked another time
    updated = e.evals.pin(again.trace_id, [b.id], "bikes")
    assert updated.case_id == case.case_id and updated.expected == (b.id,) and updated.category == "parking"
    assert [c.case_id for c in e.evals.cases("bikes")] == [case.case_id]
    # Another set, or another user's same question, is a case of its own.
    other = e.evals.pin(again.trace_id, [a.id], "other-set")
    assert other.case_id != case.case_id
    q = e.items.remember("quin", "Quin has no bicycle")
    quin = e.retrieval.retrieve("quin", "where does Pia park her bicycle")
    e.evals.pin(quin.trace_id, [q.id], "bikes")
    assert len(e.evals.cases("bikes")) == 2
