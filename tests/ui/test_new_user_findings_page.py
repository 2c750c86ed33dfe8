"""What a new user's run through the dashboard found (issue 32, item 6), each checked on the page that showed it:
the score-breakdown caption of the fusion a trace ran with, a fresh "Memory to label" after a new question, "Open
both traces" landing on Compare, the forgotten rows' status beside the id, "Compact now" saying why the store grew,
and engine internals said in words (settings overrides, rules, times to the second, plurals).

The module shares one demo store copy; each test makes the traces, labels and runs it reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from apptest_helpers import button, no_errors, open_link, open_page, values

from engine import MemoryEngine
from ui.text import md_escape
from ui.trace_links import trace_params
from ui.wording import fusion_caption

TRACE_PAGE = "pages/retrieval.py"
TWO_HOP = json.loads((Path(__file__).resolve().parents[2] / "data" / "demo" / "two_hop.json").read_text())
SECOND = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")  # the one format times are shown in
RAW_RULE = re.compile(r"^(score [\d.]+ (<|>=)|top_\d|word_overlap|llm_judge)")


def plain(texts: list[str]) -> list[str]:
    """Markdown strings as a person reads them (md_escape's backslashes removed)."""
    return [t.replace("\\", "") for t in texts]


def ask(at, question: str):
    at.text_area(key="trace_question").input(question)
    at.number_input(key="trace_hops").set_value(1)
    button(at, "Retrieve").click().run()
    no_errors(at)
    return at


def test_the_score_breakdown_caption_gives_the_fusion_each_trace_ran_with(demo_app: MemoryEngine):
    q = TWO_HOP[0]
    at = ask(open_page(TRACE_PAGE, user=q["user_id"]), q["question"])
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    assert trace.settings.retrieval.fusion == "zscore"  # the default fusion
    assert md_escape(fusion_caption(trace.settings.retrieval)) in values(at, "caption")
    captions = plain(values(at, "caption"))
    assert any("zscore" in c and "sigmoid" in c for c in captions)
    assert not any("(1−w)·similarity" in c for c in captions)  # the weighted formula is not the zscore one
    weighted = demo_app.retrieval.retrieve(q["user_id"], q["question"], overrides={"fusion": "weighted"})
    at = open_link(TRACE_PAGE, {"trace": weighted.trace_id, "tab": "hops"})
    no_errors(at)
    assert md_escape(fusion_caption(weighted.settings.retrieval)) in values(at, "caption")
    assert any("weighted" in c and "(1−w)·similarity" in c for c in plain(values(at, "caption")))


def test_a_new_question_starts_memory_to_label_at_its_own_first_memory(demo_app: MemoryEngine):
    q = TWO_HOP[1]
    at = ask(open_page(TRACE_PAGE, user=q["user_id"]), q["question"])
    first = demo_app.traces.get(at.session_state["trace_current_id"])
    picked = first.ranking[2].id  # not the first: a memory the next trace of the same question has too
    at.selectbox(key="trace_label_item").set_value(picked).run()
    assert at.selectbox(key="trace_label_item").value == picked
    at = ask(at, q["question"])
    second = demo_app.traces.get(at.session_state["trace_current_id"])
    assert second.trace_id != first.trace_id and picked in {r.id for r in second.ranking}
    assert at.selectbox(key="trace_label_item").value == second.ranking[0].id != picked


def test_opening_two_traces_to_compare_lands_on_the_compare_tab(demo_app: MemoryEngine):
    q = TWO_HOP[2]
    a = demo_app.retrieval.retrieve(q["user_id"], q["question"])
    b = demo_app.retrieval.retrieve(q["user_id"], q["question"], hops=2)
    # the link "Open both traces" (Evaluations, Compare two runs) follows: ui.trace_links.open_trace_page
    at = open_link(TRACE_PAGE, trace_params(a.trace_id, trace_b=b.trace_id))
    no_errors(at)
    assert at.session_state["trace_tab"] == "Compare"
    assert at.session_state["trace_b_pick"] == b.trace_id
    assert at.query_params["tab"] == "compare"


def test_forgotten_rows_show_their_status_beside_the_id(demo_app: MemoryEngine):
    item = demo_app.items.remember("ada", "The status column test item: the old staging bucket is retired.")
    demo_app.forgetting.forget("ada", "semantic", [item.id], "test: retired", mode="soft")
    at = open_page("pages/memories.py", user="ada")
    at.toggle(key="memories_archived").set_value(True).run()
    no_errors(at)
    table = at.dataframe[0].value
    assert list(table.columns).index("status") <= 1  # not after the long content, off-screen
    assert str(table.set_index("id").loc[item.id, "status"]).startswith("forgotten ")  # the newest: on page 1


def test_compact_now_says_why_the_store_grew(demo_app: MemoryEngine):
    for n in range(4):  # one version per write: compaction has small files to merge
        demo_app.items.remember("ada", f"Compaction note {n}: the nightly job rotates log file {n}.")
    at = open_page("pages/overview.py")
    button(at, "Compact now").click().run()
    no_errors(at)
    [message] = plain(values(at, "success"))
    sizes = re.findall(r"([\d.]+) (B|kB|MB|GB)", message)
    assert message.startswith("Compacted:") and len(sizes) >= 2, message
    # Compaction writes merged copies while the replaced files stay for the retention period: the store grows.
    assert "more)" in message, message
    assert "vector_version_retention_s" in message and "another process" in message


def test_a_run_shows_its_settings_rules_and_counts_in_words(demo_app: MemoryEngine):
    if "demo" not in {s.name for s in demo_app.evals.sets()}:
        demo_app.evals.load_demo()
    at = open_page("pages/evaluations.py", user="ada")
    no_errors(at)
    label = at.selectbox(key="ev_set").format_func("demo")
    assert label.endswith("· 1 run"), label  # not "1 runs"
    run = demo_app.evals.evaluate("demo", overrides={"bm25_weight": "0.3"}, label="w 0.3")
    at.run()
    at.selectbox(key="ev_run").set_value(run.run_id).run()
    no_errors(at)
    caption = next(c for c in values(at, "caption") if c.startswith("method "))
    assert "bm25 weight 0\\.3" in caption and "{" not in caption, caption
    assert "semantic items" in caption  # the store snapshot as counts, not a dict
    cases = next(d.value for d in at.dataframe if "where lost" in d.value.columns)
    rules = [r for cell in cases["rule"] for r in str(cell).split("; ") if r]
    assert any("relevance threshold" in r for r in rules), rules  # the demo set loses some at the filter
    assert not [r for r in rules if RAW_RULE.match(r)], rules


def test_times_are_shown_to_the_second_and_tombstones_without_internal_names(demo_app: MemoryEngine):
    q = TWO_HOP[3]
    trace = demo_app.retrieval.retrieve(q["user_id"], q["question"])
    semantic = [r.id for r in trace.ranking if r.in_context and r.kind == "semantic"]
    demo_app.feedback.label(q["user_id"], semantic[0], "useful", trace_id=trace.trace_id, hop=1)
    demo_app.forgetting.forget(q["user_id"], "semantic", [semantic[1]], "test: no longer true", mode="hard")
    at = open_link(TRACE_PAGE, {"trace": trace.trace_id, "tab": "hops"})
    no_errors(at)
    forgotten = next(d.value for d in at.dataframe if "by" in d.value.columns and "reason" in d.value.columns)
    assert "forget_log_id" not in forgotten.columns
    assert all(SECOND.match(str(t)) for t in forgotten["forgotten at (UTC)"])
    header = next(c for c in values(at, "caption") if c.startswith("Trace "))
    assert re.search(r" · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · ", header) and not re.search(r"\dT\d", header)
    at = open_page("pages/feedback.py", user=q["user_id"])
    no_errors(at)
    events = next(d.value for d in at.dataframe if "when" in d.value.columns)
    assert len(events) and all(SECOND.match(str(t)) for t in events["when"]), list(events["when"])[:3]


def test_the_hop_tables_rank_columns_are_headed_in_words(demo_app: MemoryEngine):
    q = TWO_HOP[4]
    trace = demo_app.retrieval.retrieve(q["user_id"], q["question"])
    at = open_link(TRACE_PAGE, {"trace": trace.trace_id, "tab": "hops"})
    no_errors(at)
    hop_table = next(d for d in at.dataframe if "rank_final" in d.value.columns)  # the key stays the record's field
    headers = {key: shown.get("label") for key, shown in json.loads(hop_table.proto.columns).items()}
    assert headers["rank_final"] == "final rank"  # the new user read "rank_final"
    ranks = [c for c in hop_table.value.columns if c.startswith("rank_") and c in headers]
    assert ranks and all(headers[c] and "_" not in headers[c] for c in ranks), headers
