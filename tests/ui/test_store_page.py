"""The Store insights page: usable on an empty store, every tab on the demo store without raw internals, a
near-duplicate pair merged from the page (through the forget log), and a memory's blast radius by deep link."""

from __future__ import annotations

import re

from apptest_helpers import all_texts, button, no_errors, open_link, open_page, values

PAGE = "pages/store.py"
TABS = ["Near-duplicates", "Echoes", "Unused memories", "Empty questions", "Stale facts", "Blast radius"]


def test_an_empty_store_says_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_a_pair_is_merged_from_the_page_and_every_tab_reads_in_words(demo_app):
    original = demo_app.items.list_items("ada", limit=1).rows[0]
    copy = demo_app.items.remember("ada", original.content, original.category)
    at = open_page(PAGE, user="ada")
    no_errors(at)
    assert any("Not computed yet" in v for v in values(at, "info"))
    button(at, "Refresh now").click().run()
    no_errors(at)
    assert any(v.startswith("Computed: ") for v in values(at, "success"))
    assert values(at, "text").count(original.content) == 2, "the pair side by side"
    pair_key = next(b.key for b in at.button if b.label == "Keep older, forget newer" and copy.id in b.key)
    at.button(key=pair_key).click().run()
    no_errors(at)
    assert demo_app.items.get("ada", copy.id).archived_at is not None
    entry = demo_app.forgetting.log("ada")[0]
    assert entry.ids == (copy.id,) and original.id in entry.reason and entry.actor == "ui"
    assert any(v.startswith("Forgot ") and "keeping" in v for v in values(at, "success"))
    for tab in TABS:
        at.session_state["store_tab"] = tab
        at.run()
        no_errors(at)
        shown = all_texts(at)
        assert "rank_final" not in shown and "{'" not in shown and " 1 runs" not in shown
        assert not re.search(r"\d\d:\d\d:\d\d\.\d", shown), "times to the second, not the microsecond"


def test_a_link_to_a_memory_opens_its_blast_radius(demo_app):
    trace = demo_app.retrieval.retrieve("ada", "what does Ada work on?")
    memory = trace.context_ids[0]
    demo_app.feedback.label("ada", memory, "harmful", trace_id=trace.trace_id)
    at = open_link(PAGE, {"user": "ada", "memory": memory})
    no_errors(at)
    assert at.session_state["store_tab"] == "Blast radius"
    traces = next(df.value for df in at.dataframe if "in the context" in df.value.columns)
    assert "at rank 1" in list(traces["in the context"]) and "harmful" in list(traces["labels"])
    assert any(m.label == "Harmful labels" and m.value == "1" for m in at.metric)
