"""``why_not`` (engine/trace/why_not.py) pinned on the golden traces, without a store: for every status (in the
context, token budget, stop mode, item cap, relevance filter, multi-hop merge, never a candidate, archived,
forgotten, missing, forgotten since the trace ran) the exact headline, rule, stage, rank and hop, worked out by hand
from the fixture's numbers (tests/fixtures/traces/default_rrf_stop_budget.json: budget 60 tokens, stop mode, top_k
50; its first five memories take 14 + 14 + 11 + 7 + 11 = 57 tokens).

Fast and model-free: bench/mutation.py runs these against every mutant of why_not.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine import MemoryState, why_not
from engine.trace.codec import trace_from_dict
from engine.trace.why_not import drop_rule, forgotten_detail

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
QUESTION = "What does Priya drink in the morning?"
TOMB = {"mode": "hard", "at": "2026-11-02T10:15:42.123456+00:00", "actor": "ui", "reason": "duplicate"}
TOMB_TEXT = "hard-forgotten on 2026-11-02 10:15 by ui, reason: duplicate"


def stored(name: str = "default_rrf_stop_budget") -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def load(data: dict[str, Any] | None = None):
    return trace_from_dict(data if data is not None else stored())


def rows(verdict) -> list[dict[str, Any]]:
    return [dict(r) if isinstance(r, Mapping) else dataclasses.asdict(r) for r in verdict.rows]


def plain(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    data = dict(value) if isinstance(value, Mapping) else dataclasses.asdict(value)
    return {k: v for k, v in data.items() if v is not None}


def summary(v) -> tuple[Any, ...]:
    return (v.status, v.stage, v.rule, v.rank, v.hop, v.item_id)


# --- ranked memories -----------------------------------------------------------------------------------------------


def test_a_memory_in_the_context():
    v = why_not(load(), "item_17c4246c8b7e4329")
    assert summary(v) == ("context", "in context", "", 3, 1, "item_17c4246c8b7e4329")
    assert v.headline == "In the context at rank 3 (from hop 1)."
    assert rows(v) == [
        {"hop": 1, "query": QUESTION, "stage": "in context", "rule": "", "what happened": "found by both, final rank 3"}
    ]
    assert v.forgotten is None


def test_a_memory_lost_at_the_token_budget_says_how_many_tokens_were_left():
    v = why_not(load(), "item_accda5d4920b4b2f")  # rank 6, 8 tokens; ranks 1-5 used 57 of 60
    rule = "needs 8 tokens; 3 of 60 tokens were left"
    assert summary(v) == ("budget", "token budget", rule, 6, 1, "item_accda5d4920b4b2f")
    assert v.headline == f"Lost at the token budget (final rank 6, hop 1): {rule}."
    assert rows(v)[0]["stage"] == "token budget" and rows(v)[0]["rule"] == rule
    assert rows(v)[0]["what happened"] == f"found by vector, final rank 6: {rule}"


def test_the_tokens_left_count_only_the_memories_ranked_before_and_in_the_context():
    data = stored()
    # Rank 2 did not fit (skip mode), ranks 3-5 did: only rank 1's 14 tokens were used before rank 2.
    data["ranking"][1].update(in_context=False, reason="budget")
    for c in data["hops"][0]["candidates"]:
        if c["id"] == data["ranking"][1]["id"]:
            c.update(in_context=False, context_reason="budget")
    v = why_not(load(data), data["ranking"][1]["id"])
    assert (v.status, v.rule) == ("budget", "needs 14 tokens; 46 of 60 tokens were left")


def test_a_memory_after_a_stop_says_assembly_ended_there():
    v = why_not(load(), "ep_4243ee71d84346e7")
    rule = "assembly_mode=stop: an earlier memory did not fit, so assembly ended there"
    assert summary(v) == ("budget_stop", "token budget (stop mode)", rule, 8, 1, "ep_4243ee71d84346e7")
    assert v.headline == f"Lost at the token budget (stop mode) (final rank 8, hop 1): {rule}."


def test_a_memory_past_the_item_cap():
    data = stored()
    data["settings"]["context_max_items"] = 5
    data["ranking"][5].update(reason="cap")
    for c in data["hops"][0]["candidates"]:
        if c["id"] == data["ranking"][5]["id"]:
            c["context_reason"] = "cap"
    v = why_not(load(data), data["ranking"][5]["id"])
    assert summary(v) == ("cap", "context item cap", "context_max_items=5 reached", 6, 1, data["ranking"][5]["id"])
    assert v.headline == "Lost at the context item cap (final rank 6, hop 1): context_max_items=5 reached."


# --- filtered, merged, never ---------------------------------------------------------------------------------------


def test_a_memory_the_relevance_filter_dropped():
    v = why_not(load(), "item_949992a428f24680")
    rule = "score 0.430 < 0.5 and no shared word"
    what = f"found by vector (hybrid rank 11), dropped: {rule}"
    assert summary(v) == ("filtered", "relevance filter", rule, None, 1, "item_949992a428f24680")
    assert v.headline == f"Filtered out by the relevance filter at hop 1: {what}."
    assert rows(v) == [{"hop": 1, "query": QUESTION, "stage": "relevance filter", "rule": rule, "what happened": what}]


def test_a_memory_only_a_later_hop_found_and_filtered_is_filtered_at_that_hop():
    data = stored("default_2hop")
    gone = "item_e403f52aadac44e2"
    data["hops"][0]["candidates"] = [c for c in data["hops"][0]["candidates"] if c["id"] != gone]
    v = why_not(load(data), gone)
    assert (v.status, v.hop, v.rank) == ("filtered", 2, None)
    assert [r["stage"] for r in rows(v)] == ["search", "relevance filter"]
    assert rows(v)[0]["rule"] == "top_k=50 per source"
    assert rows(v)[0]["what happened"] == "not among the top 50 vector or full-text results"
    assert v.headline.startswith("Filtered out by the relevance filter at hop 2: found by vector (hybrid rank ")


def test_the_copy_a_merge_passed_over_names_the_hop_whose_copy_won():
    v = why_not(load(stored("default_2hop")), "item_182b1014789b4450")  # ranked 5th from hop 2
    assert summary(v) == ("context", "in context", "", 5, 2, "item_182b1014789b4450")
    first, second = rows(v)
    assert (first["hop"], first["stage"], first["rule"]) == (
        1,
        "multi-hop merge",
        "the copy found at hop 2 scored higher",
    )
    assert first["what happened"] == "kept (final 0.3720) but the copy found at hop 2 scored higher"
    assert (second["hop"], second["stage"], second["rule"], second["what happened"]) == (
        2,
        "in context",
        "",
        "found by both, final rank 5",
    )


def test_drop_rules_without_a_winner_a_rank_or_a_rule():
    trace = load(stored("default_2hop"))
    merged = next(c for c in trace.hops[0].candidates if c.context_reason == "merged")
    assert drop_rule(trace, merged, {}) == "another copy scored higher"
    assert drop_rule(trace, merged) == "the copy found at hop 2 scored higher"  # winners from the ranking
    data = stored()
    c = next(c for c in data["hops"][0]["candidates"] if c["context_reason"] == "filtered")
    c["verdicts"] = {"relevance": "dropped", "rule": ""}
    assert drop_rule(load(data), load(data).hops[0].candidates[-7]) == "dropped by the relevance filter"
    c.update(context_reason="budget", ranks={"hybrid": 10}, tokens=21)
    unranked = next(x for x in load(data).hops[0].candidates if x.id == c["id"])
    assert drop_rule(load(data), unranked) == "needs 21 tokens"
    c.update(context_reason="context")
    assert drop_rule(load(data), next(x for x in load(data).hops[0].candidates if x.id == c["id"])) == "context"


def test_a_memory_no_hop_found_was_never_a_candidate():
    v = why_not(load(), "item_nowhere")
    assert summary(v) == ("never", "never a candidate", "top_k=50 per source", None, None, "item_nowhere")
    assert v.headline == "Never a candidate: no hop's search (top 50 per source, vector and full text) returned it."
    assert rows(v) == [
        {
            "hop": 1,
            "query": QUESTION,
            "stage": "search",
            "rule": "top_k=50 per source",
            "what happened": "not among the top 50 vector or full-text results",
        }
    ]


def test_a_long_query_is_shortened_to_80_characters_with_its_whitespace_collapsed():
    data = stored()
    data["hops"][0]["query"] = "Where  does\nPriya " + "x" * 100
    (row,) = rows(why_not(load(data), "item_nowhere"))
    assert row["query"] == ("Where does Priya " + "x" * 100)[:79] + "…"
    assert len(row["query"]) == 80
    data["hops"][0]["query"] = "q" * 80
    assert rows(why_not(load(data), "item_nowhere"))[0]["query"] == "q" * 80


# --- what the store says now ---------------------------------------------------------------------------------------


def test_a_memory_never_found_and_not_in_the_store_is_missing():
    v = why_not(load(), "item_nowhere", MemoryState("item_nowhere", "missing"))
    assert summary(v) == ("missing", "not in the store", "", None, None, "item_nowhere")
    assert v.headline == "Never a candidate: No memory with this id is in the store (nor in the forget log)."
    assert [r["rule"] for r in rows(v)] == ["not in the store"]
    assert v.forgotten is None


def test_a_memory_never_found_because_it_was_archived():
    detail = "archived on 2026-11-02 10:15 by cli, reason: stale"
    v = why_not(load(), "item_nowhere", MemoryState("item_nowhere", "archived", "semantic", detail))
    assert summary(v) == ("archived", "archived (soft-forgotten)", detail, None, None, "item_nowhere")
    assert v.headline == f"Never a candidate: It is archived (soft-forgotten), so search cannot return it: {detail}."
    assert [r["rule"] for r in rows(v)] == ["archived (soft-forgotten)"]
    assert plain(v.forgotten) == {"mode": "soft"}


def test_a_memory_never_found_because_it_was_hard_forgotten_keeps_the_traces_tombstone():
    data = stored()
    data["forgotten"] = {"item_nowhere": TOMB}
    v = why_not(load(data), "item_nowhere", MemoryState("item_nowhere", "forgotten"))
    assert summary(v) == ("forgotten", "forgotten (hard)", "", None, None, "item_nowhere")
    assert v.headline == "Never a candidate: It was deleted (hard-forgotten)."
    assert plain(v.forgotten) == TOMB
    # A trace's mark of the other mode is not this forget's tombstone.
    data["forgotten"] = {"item_nowhere": {**TOMB, "mode": "soft"}}
    assert plain(why_not(load(data), "item_nowhere", MemoryState("item_nowhere", "forgotten")).forgotten) == {
        "mode": "hard"
    }


def test_a_memory_in_the_context_then_forgotten_is_forgotten_with_what_the_trace_did():
    state = MemoryState("item_17c4246c8b7e4329", "forgotten", "semantic", TOMB_TEXT)
    v = why_not(load(), "item_17c4246c8b7e4329", state)
    assert summary(v) == ("forgotten", "forgotten (hard)", TOMB_TEXT, 3, 1, "item_17c4246c8b7e4329")
    assert v.headline == (
        f"Forgotten since this trace ran: {TOMB_TEXT}. In this trace: in the context at rank 3 (from hop 1)."
    )
    assert plain(v.forgotten) == {"mode": "hard"}


def test_a_trace_marked_memory_without_the_stores_word_is_read_from_the_mark():
    data = stored()
    for c in data["hops"][0]["candidates"]:
        if c["id"] == "item_accda5d4920b4b2f":
            c["forgotten"] = {"mode": "soft", "at": "2026-11-03T08:00:59"}
    v = why_not(load(data), "item_accda5d4920b4b2f")
    rule = "archived on 2026-11-03 08:00 by someone unrecorded, reason: none given"
    assert summary(v) == ("archived", "archived (soft-forgotten)", rule, 6, 1, "item_accda5d4920b4b2f")
    assert v.headline.startswith(f"Forgotten since this trace ran: {rule}. In this trace: lost at the token budget")
    assert plain(v.forgotten) == {"mode": "soft", "at": "2026-11-03T08:00:59"}
    # The store says it is active again (imported since): the trace's mark is old news.
    active = why_not(load(data), "item_accda5d4920b4b2f", MemoryState("item_accda5d4920b4b2f", "active"))
    assert (active.status, active.forgotten) == ("budget", None)


def test_a_store_tombstone_without_detail_is_worded_from_the_traces_mark():
    data = stored()
    data["forgotten"] = {"item_17c4246c8b7e4329": TOMB}
    v = why_not(load(data), "item_17c4246c8b7e4329", MemoryState("item_17c4246c8b7e4329", "forgotten"))
    assert (v.status, v.rule, plain(v.forgotten)) == ("forgotten", TOMB_TEXT, TOMB)


@pytest.mark.parametrize(
    ("tomb", "text"),
    [
        (TOMB, TOMB_TEXT),
        (
            {"mode": "soft", "at": "2026-01-05T23:59:59", "actor": "cli"},
            "archived on 2026-01-05 23:59 by cli, reason: none given",
        ),
        ({"mode": "hard", "reason": "gdpr"}, "hard-forgotten, reason: gdpr"),
        ({"mode": "soft"}, "archived, reason: none given"),
    ],
)
def test_a_tombstone_reads_as_a_sentence_to_the_minute(tomb, text):
    assert forgotten_detail(tomb) == text


def test_another_memorys_tombstone_is_not_this_ones():
    data = stored()
    data["hops"][0]["candidates"][0]["forgotten"] = {"mode": "soft", "at": "2026-11-03T08:00:00"}
    v = why_not(load(data), "item_0edcdc6e8aac4c18")  # the second candidate; the first is marked
    assert (v.status, v.forgotten, v.rank) == ("context", None, 2)


def test_a_merged_copy_without_a_final_score_reads_as_zero():
    data = stored("default_2hop")
    c = next(c for c in data["hops"][0]["candidates"] if c["id"] == "item_182b1014789b4450")
    c["scores"] = {k: v for k, v in c["scores"].items() if k != "final"}
    first = rows(why_not(load(data), "item_182b1014789b4450"))[0]
    assert first["what happened"] == "kept (final 0.0000) but the copy found at hop 2 scored higher"
