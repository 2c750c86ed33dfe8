"""The Feedback labelling page in AppTest: one-click labels from a trace (pointing at its trace and hop), the queue of
unlabelled memories, the ledger per memory, and the effect of labels on the next retrieval.

Traces are made through the engine the page uses; every label the page writes is checked through the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_helpers import button, markdown_texts, no_errors, open_link, open_page, plain_texts, values

from engine import MemoryEngine, RetrievalTrace
from ui.trace_data import shorten

PAGE = "pages/feedback.py"
TWO_HOP = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())


@pytest.fixture
def two_hop_trace(demo_app: MemoryEngine) -> RetrievalTrace:
    """A fresh two-hop trace of the first demo question (each test gets its own)."""
    q = TWO_HOP[0]
    return demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)


def label_button(at, trace: RetrievalTrace, item_id: str, label: str = "useful"):
    key = f"fb_{'u' if label == 'useful' else 'h'}_t_{trace.trace_id}_{item_id}"
    return at.button(key=key)


def test_on_an_empty_store_the_page_says_what_to_do(empty_app: MemoryEngine):
    at = open_page(PAGE)
    no_errors(at)
    assert any("store is empty" in v for v in values(at, "info"))
    assert not at.button


def test_a_user_without_traces_is_sent_to_the_trace_page_and_still_sees_the_ledger(demo_app: MemoryEngine):
    labelled = demo_app.feedback.events("tomas")
    assert labelled, "the demo has labels for tomas"
    at = open_page(PAGE, user="tomas")
    no_errors(at)
    assert any("Ask a question on the Retrieval trace page" in v for v in values(at, "info"))
    ledger = at.selectbox(key="fb_ledger_item")
    assert ledger.value == labelled[0].item_id  # the most recently labelled memory
    history = demo_app.feedback.events("tomas", item_id=ledger.value)
    assert any(v.startswith(f"{ledger.value}: {len(history)} label(s)") for v in values(at, "text"))


def test_labelling_from_a_trace_records_an_event_pointing_at_the_trace_and_hop(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    hop2 = next(r for r in two_hop_trace.ranking if r.in_context and r.hop == 2)
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    no_errors(at)
    at.text_input(key="fb_note").input("names the owner's timezone")
    label_button(at, two_hop_trace, hop2.id).click().run()
    no_errors(at)
    event = demo_app.feedback.events(user, item_id=hop2.id)[0]
    assert (event.label, event.delta, event.trace_id, event.hop, event.note) == (
        "useful",
        1,
        two_hop_trace.trace_id,
        2,
        "names the owner's timezone",
    )
    assert any("Labelled" in v for v in values(at, "success"))
    assert at.text_input(key="fb_note").value == ""  # the note went with that label
    # The ledger now shows this memory with the new event.
    assert at.selectbox(key="fb_ledger_item").value == hop2.id
    assert any(two_hop_trace.trace_id in v and "useful (+1)" in v and "hop 2" in v for v in values(at, "text"))


def test_a_harmful_label_counts_minus_one(demo_app: MemoryEngine, two_hop_trace: RetrievalTrace):
    user = two_hop_trace.user_id
    item = two_hop_trace.ranking[0]
    net_before = demo_app.feedback.net(user, [item.id]).get(item.id, 0)
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    label_button(at, two_hop_trace, item.id, "harmful").click().run()
    no_errors(at)
    assert demo_app.feedback.net(user, [item.id])[item.id] == net_before - 1
    event = demo_app.feedback.events(user, item_id=item.id)[0]
    assert (event.label, event.trace_id, event.hop) == ("harmful", two_hop_trace.trace_id, item.hop)


def test_the_queue_offers_unlabelled_context_memories_and_drops_one_once_labelled(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    queue_keys = [b.key for b in at.button if b.key and b.key.startswith("fb_u_q")]
    assert queue_keys
    labelled = demo_app.feedback.net(user, list(two_hop_trace.context_ids))
    queued = [k.split("_", 3)[3] for k in queue_keys]
    assert not set(queued) & set(labelled)  # only memories without any label
    first = queued[0]
    at.button(key=queue_keys[0]).click().run()
    no_errors(at)
    assert demo_app.feedback.events(user, item_id=first)[0].trace_id is not None
    assert first not in [b.key.split("_", 3)[3] for b in at.button if b.key and b.key.startswith("fb_u_q")]


def test_a_fresh_retrieval_shows_a_useful_label_raising_the_score(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    item = next(r for r in two_hop_trace.ranking if r.in_context and r.hop == 1)
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    label_button(at, two_hop_trace, item.id).click().run()
    no_errors(at)
    button(at, "Retrieve this question again").click().run()
    no_errors(at)
    rows = {r["id"]: r for r in at.dataframe[-1].value.to_dict("records")}
    assert rows[item.id]["final_after"] > rows[item.id]["final_before"]
    assert (
        demo_app.traces.list_traces(user).rows[0]["trace_id"] == two_hop_trace.trace_id
    )  # the comparison is not stored


def test_labelling_a_memory_deleted_meanwhile_is_a_readable_error(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    item = next(r for r in two_hop_trace.ranking if r.in_context and r.kind == "semantic")
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    events_before = demo_app.feedback.events(user, item_id=item.id)
    demo_app.forgetting.forget(user, "semantic", [item.id], reason="test: deleted by another process", mode="hard")
    label_button(at, two_hop_trace, item.id).click().run()
    assert not at.exception
    assert any("Could not label" in v for v in values(at, "error"))
    assert demo_app.feedback.events(user, item_id=item.id) == events_before  # nothing written


def test_stored_markup_in_labelled_memories_renders_as_text(demo_app: MemoryEngine):
    hostile = "Zanzibar ferry <script>alert(1)</script> **bold** [link](http://x.test) :red[red] $x^2$"
    item = demo_app.items.remember("mira", hostile + " " + "long line " * 400)
    trace = demo_app.retrieval.retrieve("mira", "When does the Zanzibar ferry leave?")
    assert item.id in trace.context_ids
    at = open_page(PAGE, user="mira", state={"trace_current_id": trace.trace_id})
    no_errors(at)
    label_button(at, trace, item.id).click().run()
    no_errors(at)
    assert any("<script>alert(1)</script> **bold**" in v for v in plain_texts(at))  # shown, as text
    for text in markdown_texts(at):
        assert "<script>" not in text and "**bold**" not in text and "[link](" not in text and ":red[" not in text


def test_labelling_from_the_queue_stays_on_the_queue_tab(demo_app: MemoryEngine, two_hop_trace: RetrievalTrace):
    user = two_hop_trace.user_id
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    at.session_state["fb_tab"] = "Unlabelled queue"  # what clicking the tab does
    at.run()
    assert at.query_params["tab"] == "unlabelled-queue"
    queue_keys = [b.key for b in at.button if b.key and b.key.startswith("fb_u_q")]
    at.button(key=queue_keys[0]).click().run()
    no_errors(at)
    assert any("Labelled" in v for v in values(at, "success"))  # the message above the tabs appeared
    assert at.session_state["fb_tab"] == "Unlabelled queue" and at.query_params["tab"] == "unlabelled-queue"


def test_the_ledger_shows_each_memory_s_text_and_all_labels_newest_first_with_a_link_to_their_trace(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    item = two_hop_trace.ranking[0].id
    demo_app.feedback.label(user, item, "useful", trace_id=two_hop_trace.trace_id, hop=1)
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id})
    at.selectbox(key="fb_ledger_item").set_value(item).run()
    no_errors(at)
    text = demo_app.feedback.memory_texts(user, [item])[item]
    assert text in values(at, "text")
    events = next(df.value for df in at.dataframe if "label" in df.value.columns and "open" in df.value.columns)
    assert list(events["when"]) == sorted(events["when"], reverse=True)
    first = events.iloc[0]
    assert first["item"] == item and first["text"] == shorten(text, 120)
    assert first["open"] == f"./retrieval?user={user}&trace={two_hop_trace.trace_id}&tab=hops&memory={item}"


def test_a_link_with_a_trace_id_opens_that_trace_for_labelling(demo_app: MemoryEngine, two_hop_trace: RetrievalTrace):
    at = open_link(PAGE, {"user": two_hop_trace.user_id, "trace": two_hop_trace.trace_id, "tab": "label-ledger"})
    no_errors(at)
    assert at.selectbox(key="fb_trace").value == two_hop_trace.trace_id
    assert at.session_state["fb_tab"] == "Label ledger"


def test_a_memory_to_label_links_to_the_message_it_came_from(demo_app: MemoryEngine):
    item = demo_app.items.remember(
        "ada",
        "Ada's favourite lighthouse is the Farol da Guia in Cascais.",
        provenance={"sources": [{"type": "message", "id": "ada-s01#2"}]},
    )
    trace = demo_app.retrieval.retrieve("ada", "Which lighthouse is Ada's favourite?")
    assert item.id in {c.id for h in trace.hops for c in h.candidates}
    at = open_link(PAGE, {"user": "ada", "trace": trace.trace_id})
    no_errors(at)
    links = [(link.proto.page, link.proto.query_string) for link in at.get("page_link")]
    assert any(p.endswith("sessions") and "session=ada-s01" in q and "message=2" in q for p, q in links), links
