"""The Retrieval trace page's preset picker: the form opens on the preset's values, the retrieval runs under the
preset, and only what the form changed is passed on top of it."""

from __future__ import annotations

from apptest_helpers import button, no_errors, open_page, values

from engine import PRESETS, MemoryEngine, Settings
from ui.preset_choice import preset_names, preset_summary
from ui.trace_ask import form_overrides

PAGE = "pages/retrieval.py"
USER = "ada"


def pick(at, preset: str):
    at.selectbox(key="trace_preset").set_value(preset).run()
    no_errors(at)
    return at


def test_the_picker_offers_every_preset_the_default_first():
    assert preset_names()[0] == "default"
    assert sorted(preset_names()) == sorted(PRESETS)


def test_a_preset_is_summarised_by_what_it_sets():
    assert preset_summary("default") == "The settings as they are (no preset)."
    deep = preset_summary("deep")
    assert deep.startswith("hops = 2 · memory_keys = sentences")
    # llmemory's parity preset sets dozens: the line names six and counts the rest
    assert preset_summary("llmemory").endswith(f"and {len(PRESETS['llmemory']) - 6} more")


def test_only_what_the_form_changed_is_an_override():
    base = Settings().with_overrides(PRESETS["deep"])
    assert form_overrides(base, base.relevance_filter, base.hybrid_enabled, base.mmr_enabled, True) == {}
    assert form_overrides(base, "off", base.hybrid_enabled, True, False) == {
        "relevance_filter": "off",
        "mmr_enabled": True,
        "feedback_weight": 0.0,
    }
    # feedback turned on under a preset that had it off takes the engine default's weight
    off = Settings().with_overrides({"feedback_weight": 0.0})
    assert form_overrides(off, off.relevance_filter, off.hybrid_enabled, off.mmr_enabled, True) == {
        "feedback_weight": Settings().feedback_weight
    }


def test_the_default_form_opens_on_the_engines_settings(demo_app: MemoryEngine):
    at = open_page(PAGE, user=USER)
    no_errors(at)
    assert at.selectbox(key="trace_preset").value == "default"
    assert at.number_input(key="trace_hops").value == demo_app.settings.hops
    assert "The settings as they are (no preset)." in values(at, "caption")


def test_picking_deep_opens_the_form_on_two_hops_and_the_trace_runs_under_it(demo_app: MemoryEngine):
    at = pick(open_page(PAGE, user=USER), "deep")
    assert at.number_input(key="trace_hops@deep").value == 2
    assert any(c.startswith("hops = 2 · memory_keys = sentences") for c in values(at, "caption"))
    at.text_area(key="trace_question").input("Which queue does the refund job drain?")
    button(at, "Retrieve").click().run()
    no_errors(at)
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    assert trace.settings.preset == "deep"
    assert len(trace.hops) >= 1 and trace.settings.retrieval.hops == 2
    assert trace.settings.retrieval.memory_keys == "sentences"
    assert trace.settings.retrieval.session_weight == 0.1
    assert any(" · preset deep · " in c for c in values(at, "caption"))  # the trace header names it


def test_a_change_in_the_form_applies_on_top_of_the_preset(demo_app: MemoryEngine):
    at = pick(open_page(PAGE, user=USER), "deep")
    at.number_input(key="trace_hops@deep").set_value(1)
    at.toggle(key="trace_mmr@deep").set_value(True)
    at.text_area(key="trace_question").input("Who owns the refund job?")
    button(at, "Retrieve").click().run()
    no_errors(at)
    trace = demo_app.traces.get(at.session_state["trace_current_id"])
    r = trace.settings.retrieval
    assert (trace.settings.preset, r.hops, r.mmr_enabled, r.memory_keys) == ("deep", 1, True, "sentences")


def test_a_preset_that_searches_keys_warns_while_the_user_has_none(demo_app: MemoryEngine):
    assert demo_app.admin.key_count(USER) == 0  # the demo store is written without keys
    at = pick(open_page(PAGE, user=USER), "deep")
    warned = [w for w in values(at, "warning") if "extra keys" in w]
    assert warned and "ada has none" in warned[0] and "memlens keys --kinds sentences" in warned[0]
    assert not [w for w in values(pick(at, "default"), "warning") if "extra keys" in w]

    # keys of other kinds are not the ones it searches: still warned
    demo_app.admin.build_keys(USER, kinds="facts")
    assert demo_app.admin.key_count(USER) > 0 and demo_app.admin.key_count(USER, "sentences") == 0
    at = pick(open_page(PAGE, user=USER), "deep")
    assert [w for w in values(at, "warning") if "extra keys" in w]

    demo_app.items.remember(USER, "The refund job drains the payments queue. It runs every night at two.")
    demo_app.admin.build_keys(USER, kinds="sentences")
    assert demo_app.admin.key_count(USER, "sentences") == 2
    at = pick(open_page(PAGE, user=USER), "deep")
    assert not [w for w in values(at, "warning") if "extra keys" in w]
