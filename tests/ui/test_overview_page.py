"""The Overview page: counts, activity, recent traces, settings in use (never the API key), empty-store guidance."""

from __future__ import annotations

import duckdb
from apptest_helpers import ENTRY, all_texts, app_engine, button, no_errors, open_page, values
from streamlit.testing.v1 import AppTest

from ui.resources import get_engine

PAGE = "pages/overview.py"


def test_empty_store_explains_what_to_do_and_offers_the_demo(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert values(at, "title") == ["Overview"]
    assert any("The store is empty" in v for v in values(at, "info"))
    assert button(at, "Load the demo dataset")
    assert {m.label: m.value for m in at.metric}["Semantic items"] == "0"


def test_demo_store_shows_counts_per_kind_and_user_activity_and_settings(demo_app):
    stats = demo_app.admin.stats()
    at = open_page(PAGE)
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Users"] == str(stats.users) == "3"
    assert metrics["Semantic items"] == f"{stats.items:,}"
    assert metrics["Episodes"] == str(stats.episodes)
    per_user = at.dataframe[0].value
    assert sorted(per_user["user"]) == ["ada", "mira", "tomas"]
    assert int(per_user.set_index("user").loc["ada", "items"]) == stats.per_user["ada"]["items"]
    assert len(at.get("plotly_chart")) == 1, "activity over time is drawn"
    assert "Activity over time" in values(at, "subheader")
    assert any(stats.store in v for v in values(at, "code")), "the store location is shown"
    assert any("all-MiniLM-L6-v2" in v and "offline" in v for v in values(at, "code"))


def test_recent_traces_are_listed_newest_first(demo_app):
    trace = demo_app.retrieval.retrieve("tomas", "What medication must the friend joining the Dolomites trek carry?")
    at = open_page(PAGE)
    no_errors(at)
    traces = next(df.value for df in at.dataframe if "trace id" in df.value.columns)
    assert traces["trace id"].iloc[0] == trace.trace_id
    assert traces["question"].iloc[0] == trace.question


def test_activity_chart_can_be_limited_to_the_sidebar_user(demo_app):
    at = open_page(PAGE, user="mira")
    at.segmented_control(key="overview_scope").set_value("mira").run()
    no_errors(at)
    assert len(at.get("plotly_chart")) == 1


def test_the_api_key_is_never_shown_only_whether_it_is_set(tmp_path):
    secret = "sk-test-very-secret-0123456789"
    with app_engine(
        tmp_path / "store",
        OPENAI_API_KEY=secret,
        OPENAI_BASE_URL="http://user:pw@127.0.0.1:9/v1",
        MEMLENS_EMBEDDER="local",
    ):
        at = open_page(PAGE)
        no_errors(at)
        text = all_texts(at)
        assert secret not in text
        assert "user:pw" not in text
        settings = next(df.value for df in at.dataframe if "setting" in df.value.columns).set_index("setting")
        assert settings.loc["openai_api_key", "in use"] == "set (hidden)"
        assert settings.loc["openai_base_url", "in use"] == "http://***@127.0.0.1:9/v1"


def test_a_store_from_a_newer_memlens_is_a_readable_message_not_a_traceback(tmp_path, monkeypatch):
    store = tmp_path / "store"
    with app_engine(store) as engine:
        engine.close()
    with duckdb.connect(str(store / "memlens.duckdb")) as conn:
        conn.execute("INSERT INTO schema_migrations(name) VALUES ('9999_from_the_future')")
    monkeypatch.setenv("MEMLENS_STORE", str(store))
    get_engine.clear()
    try:
        at = AppTest.from_file(str(ENTRY), default_timeout=60).run()
    finally:
        get_engine.clear()
    assert not at.exception, [e.value for e in at.exception]
    [message] = values(at, "error")
    assert "could not be used" in message and "newer memlens" in message and "9999" in message


def test_old_traces_are_previewed_then_deleted_after_an_explicit_confirm(demo_app):
    demo_app.traces.prune(0, keep_labelled=False, apply=True)  # other tests' traces
    kept = demo_app.retrieval.retrieve("ada", "Who owns the refund reconciliation job?")
    demo_app.feedback.label("ada", kept.context_ids[0], "useful", trace_id=kept.trace_id, hop=1)
    dropped = demo_app.retrieval.retrieve("mira", "Who collects the pan traps before the first snow?")
    at = open_page(PAGE)
    at.number_input(key="overview_prune_days").set_value(0.0)
    button(at, "Preview what would be deleted").click().run()
    no_errors(at)
    assert any(
        "1 trace (" in v and "would be deleted" in v and "1 older trace with feedback labels will be kept" in v
        for v in values(at, "warning")
    )
    assert {dropped.trace_id} == set(
        next(df.value for df in at.dataframe if "trace id" in df.value.columns and len(df.value) == 1)["trace id"]
    )

    button(at, "Delete 1 trace").click().run()  # without ticking the box
    assert any("nothing was deleted" in v for v in values(at, "error"))
    assert demo_app.traces.list_traces().total == 2

    at.checkbox(key="overview_prune_sure").check()
    button(at, "Delete 1 trace").click().run()
    no_errors(at)
    assert any(v.startswith("Deleted 1 trace (") for v in values(at, "success"))
    assert [t["trace_id"] for t in demo_app.traces.list_traces().rows] == [kept.trace_id]


def test_the_store_size_is_shown_and_compacting_reports_it_before_and_after(demo_app):
    at = open_page(PAGE)
    assert any(v.startswith("Store location · ") and v.endswith(" MB on disk") for v in values(at, "caption"))

    button(at, "Compact now").click().run()

    no_errors(at)
    assert any(v.startswith("Compacted: ") and " MB before, " in v for v in values(at, "success"))
    section = next(e for e in at.expander if e.label == "Compact the store")
    assert any(str(m.value).startswith("Compacted: ") for m in section.success), "reported in its own section"
    assert section.proto.expanded, "which stays open"
    at.run()
    assert not any(str(v).startswith("Compacted: ") for v in values(at, "success")), "said once"


def test_each_recent_trace_opens_on_the_retrieval_trace_page(demo_app):
    trace = demo_app.retrieval.retrieve("tomas", "Who carries the first-aid kit on the trek?")
    at = open_page(PAGE)
    traces = next(df.value for df in at.dataframe if "trace id" in df.value.columns)
    assert traces["open"].iloc[0] == f"./retrieval?user=tomas&trace={trace.trace_id}&tab=hops"
    at.session_state["overview_traces"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    no_errors(at)
    [link] = [p for p in at.get("page_link") if "Open trace" in p.proto.label]
    assert trace.trace_id in link.proto.label and link.proto.page.endswith("retrieval")


def test_the_memories_extra_keys_are_counted_per_kind(demo_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("keys: none written" in v and "memlens keys" in v for v in values(at, "code"))

    demo_app.items.remember("mira", "The moth traps go out at dusk. Mira empties them before breakfast.")
    demo_app.admin.build_keys("mira", kinds="sentences")
    at = open_page(PAGE)
    no_errors(at)
    n = demo_app.admin.key_count(kinds="sentences")
    assert n >= 2  # this memory's two sentences, and those of mira's other memories of several
    assert any(f"keys: {n} written (facts 0 · next 0 · sentences {n})" in v for v in values(at, "code"))
