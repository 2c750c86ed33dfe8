"""What a new user's run found on the pages (issue 32), each checked through the real app in AppTest: "Why not?" on a
memory forgotten after its trace, the custom-slot form after a save, "Pin as expectation" (what it pre-selects, and
pinning twice), and a skill without outcomes."""

from __future__ import annotations

import math

from apptest_helpers import button, no_errors, open_page, values

from engine import MemoryEngine
from ui.text import md_escape

TRACE_PAGE = "pages/retrieval.py"


def test_why_not_on_a_memory_forgotten_after_the_trace_shows_its_tombstone(empty_app: MemoryEngine):
    engine = empty_app
    engine.admin.purges.grace_s = 0.5  # only this process reads the store: purge soon, not after the default 10 s
    gone = engine.items.remember("wren", "Wren keeps the allotment key under the blue bucket")
    engine.items.remember("wren", "Wren's allotment is plot 14 by the canal")
    trace = engine.retrieval.retrieve("wren", "where is the allotment key")
    assert gone.id in trace.context_ids
    engine.forgetting.forget("wren", "semantic", [gone.id], reason="moved the key", mode="hard", actor="researcher")
    at = open_page(TRACE_PAGE, user="wren", state={"trace_current_id": trace.trace_id})
    at.text_input(key="trace_wn_query").input(gone.id).run()
    no_errors(at)
    assert at.selectbox(key="trace_wn_item").value == gone.id
    verdict = engine.traces.why_not(trace.trace_id, gone.id)
    assert verdict.headline.startswith("Forgotten since this trace ran: hard-forgotten on ")
    assert "by researcher, reason: moved the key" in verdict.headline
    assert md_escape(verdict.headline) in values(at, "warning")
    assert not any("In the context" in v for v in values(at, "success"))  # before: only this, no tombstone
    engine.admin.purges.wait(60)


def test_the_custom_slot_form_is_empty_after_a_slot_is_added(demo_app: MemoryEngine):
    user, session = "ada", "ada-s05"
    at = open_page("pages/working_memory.py", user=user, session=session)
    at.text_input(key="wm_new_name").input("lunch_budget")
    at.text_area(key="wm_new_value").input('{"eur": 12}')
    button(at, "Add slot").click().run()
    no_errors(at)
    assert demo_app.working.get(user, session)["lunch_budget"] == {"eur": 12}
    assert at.text_input(key="wm_new_name").value == "" and at.text_area(key="wm_new_value").value == ""
    # A rejected slot keeps what was typed, for fixing.
    at.text_input(key="wm_new_name").input("Bad Name")
    at.text_area(key="wm_new_value").input("1")
    button(at, "Add slot").click().run()
    assert at.text_input(key="wm_new_name").value == "Bad Name"


def test_pin_preselects_the_labelled_useful_memories_and_pinning_again_updates_the_case(empty_app: MemoryEngine):
    engine = empty_app
    a = engine.items.remember("pia", "Pia's bicycle is a green cargo bike")
    b = engine.items.remember("pia", "Pia parks the bicycle in the courtyard shed")
    trace = engine.retrieval.retrieve("pia", "where does Pia park her bicycle")
    assert {a.id, b.id} <= set(trace.context_ids)
    at = open_page(TRACE_PAGE, user="pia", state={"trace_current_id": trace.trace_id})
    picker = at.multiselect(key=f"pin_ids_{trace.trace_id}")
    assert list(picker.value) == []  # before: every context memory, so a careless pin made a case its trace passes
    at.text_input(key="pin_new_set").input("bikes")
    picker.set_value([a.id, b.id])
    button(at, "Pin as expectation").click().run()
    no_errors(at)
    (case,) = engine.evals.cases("bikes")
    assert set(case.expected) == {a.id, b.id}

    engine.feedback.label("pia", b.id, "useful", trace_id=trace.trace_id)
    at = open_page(TRACE_PAGE, user="pia", state={"trace_current_id": trace.trace_id})
    assert list(at.multiselect(key=f"pin_ids_{trace.trace_id}").value) == [b.id]  # what the researcher judged
    at.selectbox(key="pin_set").set_value("bikes")
    button(at, "Pin as expectation").click().run()
    no_errors(at)
    (again,) = engine.evals.cases("bikes")  # one case, corrected: not a second copy
    assert again.case_id == case.case_id and again.expected == (b.id,)
    assert any(v.startswith(f"Updated the case {case.case_id}") for v in values(at, "success"))


def test_a_skill_without_outcomes_has_no_rate_in_the_table_or_the_chart(empty_app: MemoryEngine):
    engine = empty_app
    tried = engine.skills.register("sol", "tried-skill", "do it", description="has outcomes")
    for success in (True, True, False):
        engine.skills.report_outcome("sol", tried.id, success)
    untried = engine.skills.register("sol", "untried-skill", "not yet", description="no outcomes")
    at = open_page("pages/skills.py", user="sol")
    no_errors(at)
    frame = next(df for df in at.dataframe if "Wilson lower" in df.value.columns)
    table = frame.value.set_index("id")
    assert table.loc[tried.id, "success rate"] == 66.7
    rate = table.loc[untried.id, "success rate"]
    assert rate is None or math.isnan(rate)  # before: 50.0, a rate no outcome gave
    assert frame.proto.placeholder == "—"  # how the missing rate is drawn: a dash, no bar
    chart = at.get("plotly_chart")[0].proto.spec
    assert "tried-skill" in chart and "untried-skill" not in chart
    assert any("1 skill has no recorded outcome yet" in v for v in values(at, "caption"))
