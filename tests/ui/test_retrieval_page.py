"""The Retrieval trace page in AppTest: ask a question, read every hop, replay what-ifs, ask "why not?".

The module shares one demo store copy; each test asks its own question (or uses a user of its own), and checks what
the page shows against the engine's own record of the trace.
"""

from __future__ import annotations

import json
from pathlib import Path

from apptest_helpers import button, by_label, markdown_texts, no_errors, open_link, open_page, plain_texts, values

from engine import MemoryEngine
from ui.text import md_escape
from ui.trace_data import brevity_caption, speaker_caption, why_not

PAGE = "pages/retrieval.py"
TWO_HOP = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())


def metric(at, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, f"no metric {label!r}: {[m.label for m in at.metric]}"
    return str(found[0])


def ask(at, question: str, hops: int = 1, budget: int | None = None):
    at.text_area(key="trace_question").input(question)
    at.number_input(key="trace_hops").set_value(hops)
    if budget is not None:
        at.number_input(key="trace_budget").set_value(budget)
    button(at, "Retrieve").click().run()
    no_errors(at)
    return at


def test_on_an_empty_store_the_page_says_what_to_do(empty_app: MemoryEngine):
    at = open_page(PAGE)
    no_errors(at)
    assert any("store is empty" in v for v in values(at, "info"))
    assert not at.get("text_area")


def test_a_user_without_traces_gets_the_question_form_and_an_invitation(demo_app: MemoryEngine):
    demo_app.items.remember("newcomer", "Newcomer keeps notes in a paper notebook.")
    at = open_page(PAGE, user="newcomer")
    no_errors(at)
    assert at.text_area(key="trace_question") is not None
    assert any("No stored traces for newcomer" in v for v in values(at, "info"))
    assert not [s for s in values(at, "subheader") if s.startswith("Hop")]


def test_asking_a_two_hop_question_shows_each_hop_with_its_query_and_candidates(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=2)
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    assert (trace.question, len(trace.hops)) == (q["question"], 2)
    assert [s for s in values(at, "subheader") if s.startswith("Hop")] == ["Hop 1", "Hop 2"]
    codes = values(at, "code")
    assert trace.hops[0].query in codes and trace.hops[1].query in codes
    assert trace.hops[1].proposed_by == "offline:bridge_entities"
    assert any("the offline bridge" in v for v in values(at, "caption"))  # who proposed hop 2, in words
    shown_ids = set(at.dataframe[0].value["id"])
    assert shown_ids == {c.id for c in trace.hops[0].candidates}  # every hop-1 candidate, with its scores
    assert len(at.get("plotly_chart")) >= 2  # a score breakdown per hop
    assert trace.context in codes  # the assembled context, as text
    assert metric(at, "Context tokens") == f"{trace.context_tokens} / {trace.settings.retrieval.budget_tokens}"


def test_the_open_trace_is_fetched_not_retrieved_again_on_rerun(demo_app: MemoryEngine):
    q = TWO_HOP[1]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"])
    before = demo_app.traces.list_traces(q["user_id"]).total
    at.run()
    no_errors(at)
    assert demo_app.traces.list_traces(q["user_id"]).total == before
    assert at.text[0].value == q["question"]


def test_picking_a_stored_trace_opens_it_without_retrieving(demo_app: MemoryEngine):
    older = demo_app.retrieval.retrieve("mira", TWO_HOP[5]["question"])
    newer = demo_app.retrieval.retrieve("mira", TWO_HOP[6]["question"])
    at = open_page(PAGE, user="mira")
    assert at.session_state["trace_current_id"] == newer.trace_id  # the newest opens by default
    total = demo_app.traces.list_traces("mira").total
    at.selectbox(key="trace_pick").set_value(older.trace_id).run()
    no_errors(at)
    assert at.session_state["trace_current_id"] == older.trace_id
    assert at.text[0].value == older.question
    assert demo_app.traces.list_traces("mira").total == total


def test_whatif_with_the_original_settings_changes_no_rank(demo_app: MemoryEngine):
    q = TWO_HOP[2]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=2)
    button(at, "Replay with these settings").click().run()
    no_errors(at)
    assert (metric(at, "Rank changes"), metric(at, "Entered the context"), metric(at, "Left the context")) == (
        "0",
        "0",
        "0",
    )
    assert "Changed settings: none (the original settings)" in values(at, "text")


def whatif(demo_app: MemoryEngine, setting: str, value):
    """Ask the third two-hop demo question, move one what-if slider, replay; the page and the engine's own replay."""
    q = TWO_HOP[2]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=2)
    trace_id = at.session_state["trace_current_id"]
    at.slider(key=f"trace_wi_{setting}").set_value(value)
    button(at, "Replay with these settings").click().run()
    no_errors(at)
    return at, demo_app.retrieval.replay(trace_id, {setting: value})


def test_whatif_with_a_small_budget_shows_what_leaves_the_context(demo_app: MemoryEngine):
    at, expected = whatif(demo_app, "budget_tokens", 50)
    left = [r.id for r in expected.ranking if r.context_change == "left"]
    assert left and metric(at, "Left the context") == str(len(left))
    assert any(v.startswith("Entered: —\nLeft: " + ", ".join(left)) for v in values(at, "text"))


def test_whatif_hop_weight_is_offered_for_a_two_hop_trace_and_replays_with_it(demo_app: MemoryEngine):
    at, expected = whatif(demo_app, "hop_weight", 0.5)
    moved = sum(1 for r in expected.ranking if r.rank_change)
    assert moved > 0  # halving the bridge hop's scores reorders the merged ranking
    assert metric(at, "Rank changes") == str(moved)
    assert any("hop_weight" in v for v in values(at, "text"))


def test_whatif_has_no_hop_weight_for_a_one_hop_trace(demo_app: MemoryEngine):
    at = ask(open_page(PAGE, user=TWO_HOP[2]["user_id"]), TWO_HOP[2]["question"], hops=1)
    assert not [s for s in at.slider if s.key == "trace_wi_hop_weight"]


def test_why_not_explains_a_searched_memory_as_the_trace_records_it(demo_app: MemoryEngine):
    q = TWO_HOP[3]
    # a small budget: on the small demo store one hop finds nearly everything, the budget keeps fact B out
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=1, budget=40)
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    at.text_input(key="trace_wn_query").input(q["bridge"]).run()
    no_errors(at)
    picker = at.selectbox(key="trace_wn_item")
    assert q["fact_b"] in picker.options[0] or any(q["fact_b"] in o for o in picker.options)
    picker.set_value(q["fact_b"]).run()
    expected = why_not(trace, q["fact_b"])
    shown = values(at, "success") + values(at, "warning") + values(at, "info")
    assert md_escape(expected.headline) in shown
    assert expected.status != "context"  # fact B did not fit (or needs the second hop)


def test_an_unknown_or_hostile_trace_id_is_a_readable_error(demo_app: MemoryEngine):
    at = open_page(PAGE, user="mira")
    at.text_input(key="trace_open_id").input("x' OR 1=1; --").run()
    button(at, "Open by id").click().run()
    assert not at.exception
    assert any("Cannot open trace" in v for v in values(at, "error"))
    at.text_input(key="trace_open_id").input("tr_doesnotexist").run()
    button(at, "Open by id").click().run()
    assert not at.exception
    assert any("no trace" in v for v in values(at, "error"))


def test_stored_markup_in_memories_and_questions_renders_as_text(demo_app: MemoryEngine):
    hostile = "Zanzibar <script>alert(1)</script> **bold** [link](http://x.test) $x^2$ :red[red]"
    demo_app.items.remember("mira", hostile + " " + "very long line " * 300)
    at = ask(open_page(PAGE, user="mira"), "Zanzibar **bold** <b>question</b>?")
    assert any("<script>alert(1)</script>" in v for v in plain_texts(at))  # shown, as text
    for text in markdown_texts(at):
        assert "<script>" not in text and "**bold**" not in text and "[link](" not in text and ":red[" not in text


def test_a_candidate_with_preceding_text_shows_it_beside_its_text(demo_app: MemoryEngine):
    item = demo_app.items.remember(
        "sam", 'Bob said, "Twice, and I loved the trams."', preceding_text='Alice said, "Have you ever been to Lisbon?"'
    )
    at = ask(open_page(PAGE, user="sam"), "Has Bob been to Lisbon?")
    table = at.dataframe[0].value.set_index("id")
    assert table.loc[item.id, "preceded_by"] == 'Alice said, "Have you ever been to Lisbon?"'
    assert table.loc[item.id, "bm25_preceding"] > 0  # 'been' and 'lisbon' are in the question it answered
    assert any("preceded_by is what came right before" in v for v in values(at, "caption"))
    assert by_label(at, "slider", "preceding_bm25_weight").value == 0.5  # a what-if control, at the trace's value


def test_without_preceding_texts_the_table_has_no_such_column(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"])
    assert "preceded_by" not in at.dataframe[0].value.columns
    assert "bm25_preceding" not in at.dataframe[0].value.columns
    assert not [w for w in at.slider if w.label == "preceding_bm25_weight"]


def test_typing_an_exact_memory_id_selects_that_memory_not_the_top_search_hit(demo_app: MemoryEngine):
    q = TWO_HOP[1]  # ada: fact A is ada-item-027
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=1)
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    at.text_input(key="trace_wn_query").input(q["fact_b"]).run()
    no_errors(at)
    assert at.selectbox(key="trace_wn_item").value == q["fact_b"]
    shown = values(at, "success") + values(at, "warning") + values(at, "info")
    assert md_escape(demo_app.traces.why_not(trace, q["fact_b"]).headline) in shown
    # Another exact id typed next is selected in its turn (the previous choice does not stick).
    at.text_input(key="trace_wn_query").input(q["fact_a"]).run()
    assert at.selectbox(key="trace_wn_item").value == q["fact_a"]
    # A soft-forgotten memory, found by its id only: the forget log's reason is shown.
    at.text_input(key="trace_wn_query").input("ada-item-049").run()
    no_errors(at)
    assert at.selectbox(key="trace_wn_item").value == "ada-item-049"
    assert any("archived" in v and "ruff replaced black" in v for v in values(at, "warning"))


# -- deep links, labels from the trace, comparison, timings ----------------------------------------------------------
def test_a_link_opens_the_trace_on_its_tab_with_its_memory_and_the_url_keeps_them(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    t = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    memory = t.ranking[1].id
    at = open_link(PAGE, {"trace": t.trace_id, "tab": "why-not", "memory": memory})
    no_errors(at)
    assert at.session_state["trace_current_id"] == t.trace_id
    assert at.session_state["trace_tab"] == "Why not?"
    assert at.selectbox(key="app_user_select").value == q["user_id"]  # the trace's user, without ?user=
    assert at.session_state["trace_label_item"] == memory
    assert (at.query_params["trace"], at.query_params["tab"], at.query_params["user"]) == (
        t.trace_id,
        "why-not",
        q["user_id"],
    )
    at.session_state["trace_tab"] = "Hops"
    at.run()
    assert (at.query_params["tab"], at.query_params["memory"]) == ("hops", memory)


def test_the_older_trace_id_parameter_opens_the_trace_too(demo_app: MemoryEngine):
    q = TWO_HOP[1]
    t = demo_app.retrieval.retrieve(q["user_id"], q["question"])
    at = open_link(PAGE, {"user": q["user_id"], "trace_id": t.trace_id})
    no_errors(at)
    assert at.session_state["trace_current_id"] == t.trace_id
    assert at.query_params["trace"] == t.trace_id and "trace_id" not in at.query_params


def test_a_link_to_an_unknown_trace_says_so(demo_app: MemoryEngine):
    at = open_link(PAGE, {"user": "ada", "trace": "tr_does_not_exist"})
    assert not at.exception
    assert any(
        "Cannot open trace tr\\_does\\_not\\_exist" in v or "Cannot open trace tr_does_not_exist" in v
        for v in values(at, "error")
    )


def test_labelling_from_the_trace_shows_the_label_and_undo_removes_it(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    t = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    item = next(r for r in t.ranking if r.hop == 2)
    at = open_link(PAGE, {"trace": t.trace_id, "tab": "hops", "memory": item.id})
    at.button(key=f"trace_label_item_useful_{item.id}").click().run()
    no_errors(at)
    [event] = demo_app.feedback.events(q["user_id"], trace_id=t.trace_id)
    assert (event.item_id, event.label, event.hop) == (item.id, "useful", 2)
    assert any("label from this trace: **useful**" in v for v in values(at, "caption"))
    table = next(df.value for df in at.dataframe if "label" in df.value.columns)
    assert table.set_index("id").loc[item.id, "label"] == "useful" or item.id not in set(table["id"])
    at.button(key=f"trace_label_item_undo_{item.id}").click().run()
    no_errors(at)
    assert demo_app.feedback.events(q["user_id"], trace_id=t.trace_id) == []
    assert any(f"{md_escape(item.id)} · not labelled from this trace" in v for v in values(at, "caption"))
    assert at.session_state["trace_tab"] == "Hops"


def test_each_context_memory_can_be_labelled_from_the_context_tab(demo_app: MemoryEngine):
    q = TWO_HOP[1]
    t = demo_app.retrieval.retrieve(q["user_id"], q["question"])
    item = t.context_ids[0]
    at = open_link(PAGE, {"trace": t.trace_id, "tab": "context"})
    at.button(key=f"trace_ctx_harmful_{item}").click().run()
    no_errors(at)
    assert [(e.item_id, e.label) for e in demo_app.feedback.events(q["user_id"], trace_id=t.trace_id)] == [
        (item, "harmful")
    ]
    assert at.session_state["trace_tab"] == "Context"
    assert any("Labelled" in v for v in values(at, "success"))


def test_two_traces_side_by_side(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    one = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=1)
    two = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    at = open_link(PAGE, {"trace": one.trace_id, "trace_b": two.trace_id, "tab": "compare"})
    no_errors(at)
    assert at.selectbox(key="trace_b_pick").value == two.trace_id
    rows = next(df.value for df in at.dataframe if "rank_b" in df.value.columns)
    first = two.ranking[0]
    assert rows.set_index("id").loc[first.id, "rank_b"] == first.rank
    settings = next(df.value for df in at.dataframe if "setting" in df.value.columns)
    assert ("hops", "1", "2") in {tuple(r) for r in settings[["setting", "a", "b"]].values}
    entered = set(two.context_ids) - set(one.context_ids)
    assert metric(at, "Entered the context") == str(len(entered))
    assert at.query_params["trace_b"] == two.trace_id


def test_the_timings_tab_shows_where_the_time_went(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    t = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    at = open_link(PAGE, {"trace": t.trace_id, "tab": "timings"})
    no_errors(at)
    rows = next(df.value for df in at.dataframe if "starts at ms" in df.value.columns)
    stored = demo_app.traces.get(t.trace_id)
    assert rows["ms"].iloc[0] == round(stored.timings_ms.get("pipeline"), 2)
    assert any(s.strip() == "hop 2" for s in rows["stage"])
    assert at.get("plotly_chart")


def test_a_very_long_question_is_cut_in_the_header(demo_app: MemoryEngine):
    question = "Which timezone " + "very " * 4000 + "long?"
    t = demo_app.retrieval.retrieve("ada", question, save=True)
    at = open_link(PAGE, {"user": "ada", "trace": t.trace_id})
    no_errors(at)
    assert at.text[0].value == question[:600] + " …"
    assert question in values(at, "code")  # the whole of it, in an expander


def test_whatif_offers_the_fusion_the_decay_floor_and_the_filters_protection(demo_app: MemoryEngine):
    at, expected = whatif(demo_app, "relevance_protect_top", 0)
    no_errors(at)
    assert at.radio(key="trace_wi_fusion").value == demo_app.settings.fusion
    assert at.slider(key="trace_wi_decay_floor").value == demo_app.settings.decay_floor
    assert expected.settings.retrieval.relevance_protect_top == 0


def test_each_hop_says_its_bm25_weight_and_the_whatif_can_turn_the_adaptive_weight_off(demo_app: MemoryEngine):
    q = TWO_HOP[2]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"], hops=2)
    trace_id = at.session_state["trace_current_id"]
    trace = demo_app.traces.get(trace_id)
    for hop in trace.hops:  # the hop header, in words (engine/trace/hop_records.py FusionWeight.describe)
        assert "Fusion: " + md_escape(hop.fusion.describe()) in values(at, "caption")
    assert at.toggle(key="trace_wi_adaptive_bm25_events").value is demo_app.settings.adaptive_bm25_events
    toggle = at.toggle(key="trace_wi_adaptive_bm25")
    assert toggle.value is True
    toggle.set_value(False)
    button(at, "Replay with these settings").click().run()
    no_errors(at)
    expected = demo_app.retrieval.replay(trace_id, {"adaptive_bm25": False})
    assert "Changed settings: adaptive_bm25=False" in values(at, "text")
    assert metric(at, "Rank changes") == str(sum(1 for r in expected.ranking if r.rank_change))


def test_a_question_about_the_user_says_which_assistant_turns_it_lowered_and_the_whatif_can_undo_it(
    demo_app: MemoryEngine,
):
    user = "speaker_page"
    for text in (
        "user: The bike shop charged me $80 to fix the gears.",
        "assistant: A gear repair at a bike shop usually costs $50 to $100 for your bike.",
        "assistant: Bike repair costs vary with the shop and the bike you pay for.",
    ):
        demo_app.items.remember(user, text)
    at = ask(open_page(PAGE, user=user), "How much did I pay for my bike repair?")
    trace_id = at.session_state["trace_current_id"]
    trace = demo_app.traces.get(trace_id)
    lowered = [c.id for c in trace.hops[0].candidates if c.scores.hybrid_speaker_part is not None]
    assert trace.speaker == 'first person "i"' and len(lowered) == 2
    caption = speaker_caption(trace)
    assert caption is not None and "(2 candidate(s)" in caption
    assert md_escape(caption) in values(at, "caption")
    slider = at.slider(key="trace_wi_assistant_turn_penalty")
    assert slider.value == demo_app.settings.assistant_turn_penalty
    slider.set_value(0.0)
    button(at, "Replay with these settings").click().run()
    no_errors(at)
    expected = demo_app.retrieval.replay(trace_id, {"assistant_turn_penalty": 0.0})
    assert "Changed settings: assistant_turn_penalty=0.0" in values(at, "text")
    assert metric(at, "Rank changes") == str(sum(1 for r in expected.ranking if r.rank_change))


def test_a_question_about_others_says_which_short_turns_it_lowered_and_the_whatif_can_undo_it(
    demo_app: MemoryEngine,
):
    user = "brevity_page"
    opening = 'Jon said, "I went to a fair with my dance studio last week."'
    short = 'Gina said, "Wow, the fair for your dance studio! Awesome!"'
    long = (
        'Jon said, "At the fair I set up a booth for the dance studio, ran two free trial classes for kids, handed '
        "out flyers to every family that walked by, and signed up eleven new students for the autumn term, which is "
        'more than I hoped for, so next month I will run the same booth at the harvest market in the old square."'
    )
    demo_app.items.remember(user, opening)
    demo_app.items.remember(user, short, preceding_text=opening)
    demo_app.items.remember(user, long, preceding_text=short)
    at = ask(open_page(PAGE, user=user), "What did Jon do at the fair for his dance studio?")
    trace_id = at.session_state["trace_current_id"]
    trace = demo_app.traces.get(trace_id)
    lowered = [c for c in trace.hops[0].candidates if (c.scores.brevity_factor or 1.0) < 1.0]
    assert [c.text for c in lowered] == [short]
    caption = brevity_caption(trace)
    assert caption is not None and caption.startswith("Brevity stage: 1 short turn(s)")
    assert md_escape(caption) in values(at, "caption")
    slider = at.slider(key="trace_wi_brevity_weight")
    assert slider.value == demo_app.settings.brevity_weight
    slider.set_value(0.0)
    button(at, "Replay with these settings").click().run()
    no_errors(at)
    expected = demo_app.retrieval.replay(trace_id, {"brevity_weight": 0.0})
    assert "Changed settings: brevity_weight=0.0" in values(at, "text")
    assert metric(at, "Rank changes") == str(sum(1 for r in expected.ranking if r.rank_change))
    # A question in the first person: the stage is off, the page says why, and the What-if has no slider for it
    at = ask(open_page(PAGE, user=user), "What did I tell Gina about my dance studio?")
    personal = demo_app.traces.get(at.session_state["trace_current_id"])
    off = brevity_caption(personal)
    assert off == (
        'Brevity stage: off for this question (it speaks in the first or second person: "i"), where a short turn '
        "can be the whole answer"
    )
    assert md_escape(off) in values(at, "caption")
    assert not [s for s in at.slider if s.key == "trace_wi_brevity_weight"]


def test_whatif_has_no_assistant_turn_penalty_without_assistant_turns(demo_app: MemoryEngine):
    at = ask(open_page(PAGE, user=TWO_HOP[2]["user_id"]), TWO_HOP[2]["question"], hops=1)
    assert not [s for s in at.slider if s.key == "trace_wi_assistant_turn_penalty"]


def test_a_hop_says_what_its_full_text_search_was_given(demo_app: MemoryEngine):
    q = TWO_HOP[4]
    at = ask(open_page(PAGE, user=q["user_id"]), q["question"])
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    words = trace.hops[0].text_query
    assert words is not None and words != trace.hops[0].query
    assert any(v.startswith(f"Full-text search was given {md_escape(repr(words))}") for v in values(at, "caption"))


def test_a_hop_that_named_a_participant_says_what_its_vector_search_was_given(demo_app: MemoryEngine):
    user = "participants_page"
    for text in ('Jon said, "I opened my own dance studio downtown!"', 'Gina said, "Hey Jon, congrats on the studio!"'):
        demo_app.items.remember(user, text)
    at = ask(open_page(PAGE, user=user), "What did Jon open downtown?")
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    assert trace.hops[0].vector_query == "What did open downtown?"
    expected = f"Vector search was given the query blended with {md_escape(repr('What did open downtown?'))}"
    assert any(v.startswith(expected) for v in values(at, "caption"))
