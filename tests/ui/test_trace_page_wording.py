"""The trace page says how a retrieval ran in words: who proposed each hop's query, how it was made, the strategies
of the whole trace; not the engine's names (``query_generation=question``, ``offline:bridge_entities``) nor its stored
JSON (``{"strategy": "as_is", "why": "<= 100 chars"}``)."""

from __future__ import annotations

import json
from pathlib import Path

from apptest_helpers import no_errors, open_link, values

from engine import MemoryEngine
from ui.trace_wording import proposal_lines, strategy_words

TWO_HOP = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())


def test_the_strategies_and_each_hops_proposal_are_said_in_words(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    trace = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    assert [h.proposed_by for h in trace.hops] == ["question", "offline:bridge_entities"]
    at = open_link("pages/retrieval.py", {"trace": trace.trace_id, "tab": "hops"})
    no_errors(at)
    captions = [c.replace("\\", "") for c in values(at, "caption")]  # as read: without markdown's escapes
    header = next(c for c in captions if c.startswith("Trace "))
    assert "first query: the question as asked" in header and "next queries: the offline bridge" in header
    assert "query_generation" not in header and "=" not in header
    proposed = [c for c in captions if c.startswith("Proposed by")]
    assert [c.split("**")[1] for c in proposed] == [
        "the question as asked",
        "the offline bridge: names in the results so far",
    ]
    assert not at.json  # no stored JSON on the page
    shown = "\n".join(values(at, "markdown")).replace("\\", "")
    assert "**how**: the question as it is" in shown and "at most 100 characters" in shown
    assert "**names taken**:" in shown and '{"' not in shown


def test_words_for_strategies_of_later_hops_and_unknown_keys():
    said = strategy_words({"vector_search_hop2": "semantic: exact", "reasoner": "my_reasoner", "new_thing": "x"})
    assert said == "vector search (hop 2): semantic: exact; next queries: my_reasoner; new thing: x"
    keys = strategy_words({"key_search_hop2": "semantic: exact"})
    assert keys == "vector search of the keys (hop 2): semantic: exact"
    assert proposal_lines({"question_overlap": 3.5, "names": ["Priya", "PR"], "extra_key": "<= 3 chars"}) == [
        ("words shared with the question", "3.5"),
        ("names taken", "Priya, PR"),
        ("extra key", "at most 3 characters"),
    ]
