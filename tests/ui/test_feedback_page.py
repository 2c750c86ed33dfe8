"""The Feedback labelling page in AppTest: the labeller's queue (a name asked once, n of N, useful / harmful / skip /
undo), one-click labels from a trace that toggle (pointing at its trace and hop), agreement between labellers and
their labels made an expectation set, the ledger per memory, and the effect of labels on the next retrieval.

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


def progress(at) -> str:
    """The queue's "n of N"."""
    return at.get("progress")[0].proto.text


def test_the_queue_asks_a_name_once_then_labels_skips_and_undoes_with_n_of_n(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user = two_hop_trace.user_id
    at = open_page(PAGE, user=user)
    assert at.session_state["fb_tab"] == "Queue" and not at.get("progress")  # no queue before a name
    at.text_input(key="fb_labeller_name").input("queue tester")
    at.button(key="fb_labeller_go").click().run()
    no_errors(at)
    expected = demo_app.feedback.queue(user, "queue tester")
    assert len(expected) > 15  # every unlabelled memory of every trace: no "15+" cap
    assert progress(at) == f"1 of {len(expected)}"
    first, second, third = expected[:3]
    assert first.trace_id == two_hop_trace.trace_id  # the newest trace first
    at.button(key="fbq_useful").click().run()  # U
    no_errors(at)
    assert progress(at) == f"2 of {len(expected)}"
    at.button(key="fbq_harmful").click().run()  # H
    at.button(key="fbq_skip").click().run()  # S
    assert progress(at) == f"4 of {len(expected)}"
    mine = demo_app.feedback.events(user, labeller="queue tester", current_only=True)
    assert {(e.trace_id, e.item_id, e.label) for e in mine} == {
        (first.trace_id, first.item_id, "useful"),
        (second.trace_id, second.item_id, "harmful"),
    }
    assert {e.hop for e in mine} <= {1, 2} and None not in {e.hop for e in mine}  # the hop each came from
    at.button(key="fbq_undo_go").click().run()  # Z: back to the skipped one, nothing to take back
    assert progress(at) == f"3 of {len(expected)}"
    at.button(key="fbq_undo_go").click().run()  # Z: the harmful label comes off
    assert progress(at) == f"2 of {len(expected)}"
    assert [e.item_id for e in demo_app.feedback.events(user, labeller="queue tester", current_only=True)] == [
        first.item_id
    ]
    assert any("your label: **none yet**" in c for c in values(at, "caption"))
    at.button(key="fbq_prev").click().run()  # ←: the first one shows its label, and the queue keeps its count
    assert progress(at) == f"1 of {len(expected)}"
    assert any("your label: **useful**" in c for c in values(at, "caption"))
    shortcuts = {b.key: b.proto.shortcut for b in at.button if b.key and b.key.startswith("fbq_")}
    assert {k: shortcuts[k] for k in ("fbq_useful", "fbq_harmful", "fbq_skip", "fbq_undo_go")} == {
        "fbq_useful": "u",
        "fbq_harmful": "h",
        "fbq_skip": "s",
        "fbq_undo_go": "z",
    }
    at.button(key="fbq_rebuild").click().run()  # unlabelled only: what this labeller labelled is gone
    assert progress(at) == f"1 of {len(expected) - 1}"


def test_clicking_useful_twice_counts_once(demo_app: MemoryEngine, two_hop_trace: RetrievalTrace):
    user = two_hop_trace.user_id
    item = next(r for r in two_hop_trace.ranking if r.in_context)
    net_before = demo_app.feedback.net(user, [item.id]).get(item.id, 0)
    at = open_page(PAGE, user=user, state={"trace_current_id": two_hop_trace.trace_id, "labeller": "twice"})
    label_button(at, two_hop_trace, item.id).click().run()
    assert demo_app.feedback.net(user, [item.id])[item.id] == net_before + 1
    label_button(at, two_hop_trace, item.id).click().run()  # the same button again takes the label off
    no_errors(at)
    assert demo_app.feedback.net(user, [item.id])[item.id] == net_before
    assert any("Took the useful label off" in v for v in values(at, "success"))
    label_button(at, two_hop_trace, item.id, "harmful").click().run()
    label_button(at, two_hop_trace, item.id).click().run()  # a change of mind replaces the harmful label
    assert demo_app.feedback.net(user, [item.id])[item.id] == net_before + 1
    [current] = demo_app.feedback.events(user, item_id=item.id, trace_id=two_hop_trace.trace_id, current_only=True)
    assert (current.label, current.labeller) == ("useful", "twice")


def test_agreement_of_two_labellers_then_their_labels_become_an_expectation_set(
    demo_app: MemoryEngine, two_hop_trace: RetrievalTrace
):
    user, t = two_hop_trace.user_id, two_hop_trace
    for item, (a, b) in zip(
        t.context_ids[:4], [("useful",) * 2, ("useful", "harmful"), ("harmful",) * 2, ("harmful", "useful")]
    ):
        demo_app.feedback.label(user, item, a, trace_id=t.trace_id, labeller="kim")
        demo_app.feedback.label(user, item, b, trace_id=t.trace_id, labeller="lee")
    at = open_link(PAGE, {"user": user, "tab": "agreement-and-export"})
    no_errors(at)
    # 2 of 4 agreed; each said useful half the time: p_e = 0.5, kappa = (0.5 - 0.5) / 0.5 = 0
    assert "kim and lee: agreed on 2 of 4 shared items; Cohen's kappa 0.00 (less than chance)" in values(at, "text")
    at.selectbox(key="fb_export_labeller").set_value("kim").run()
    download = at.get("download_button")[0]
    assert download.proto.label == "Download 4 labels as JSONL"
    at.text_input(key="fb_export_set").input("kim-labels")
    button(at, "Make the expectation set").click().run()
    no_errors(at)
    assert any("Set kim-labels holds 1 case from these labels." in v.replace("\\", "") for v in values(at, "success"))
    [case] = demo_app.evals.cases("kim-labels")
    assert (case.question, set(case.expected)) == (t.question, set(t.context_ids[:2]))


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
