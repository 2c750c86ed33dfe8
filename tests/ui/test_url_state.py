"""ui.url_state: the URL names every page shares (user, session, trace, trace_b, tab, memory), who wins between the
URL and the session, and tabs bound to ``tab``. A tiny script in AppTest stands in for a page."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ui.url_state import slug, trace_params, trace_url


def test_tab_labels_become_url_slugs():
    assert [slug(t) for t in ("Hops", "Context", "What-if", "Why not?", "Compare", "Timings")] == [
        "hops",
        "context",
        "what-if",
        "why-not",
        "compare",
        "timings",
    ]
    assert slug("Add a memory") == "add-a-memory"


def test_trace_links_are_relative_and_escaped():
    assert trace_url("tr_1", "ada", "why-not", "ada-item-027") == (
        "./retrieval?user=ada&trace=tr_1&tab=why-not&memory=ada-item-027"
    )
    assert trace_url("tr_1", "a b&c") == "./retrieval?user=a+b%26c&trace=tr_1&tab=hops"
    assert trace_params("tr_1") == {"trace": "tr_1", "tab": "hops"}


def _page():
    import streamlit as st

    from ui.url_state import incoming, url_tabs, write

    linked = incoming("memory")
    if linked:
        st.session_state["picked"] = linked
    st.session_state.setdefault("picked", "m1")
    write("memory", st.session_state["picked"])
    one, two = url_tabs(["First", "Why not?"], key="demo_tab")
    st.text(f"open: {st.session_state['demo_tab']}; picked: {st.session_state['picked']}")


def test_a_link_wins_once_then_the_session_is_the_truth_and_is_written_back():
    at = AppTest.from_function(_page)
    at.query_params.update({"memory": "m7", "tab": "why-not", "unrelated": "kept"})
    at.run()
    assert at.text[0].value == "open: Why not?; picked: m7"
    assert (at.query_params["memory"], at.query_params["tab"], at.query_params["unrelated"]) == (
        "m7",
        "why-not",
        "kept",
    )
    at.session_state["picked"] = "m9"  # the person picks another memory and tab
    at.session_state["demo_tab"] = "First"
    at.run()
    assert at.text[0].value == "open: First; picked: m9"
    assert (at.query_params["memory"], at.query_params["tab"]) == ("m9", "first")


def test_invalid_or_overlong_values_in_the_url_are_ignored():
    at = AppTest.from_function(_page)
    at.query_params.update({"memory": "x" * 500, "tab": "no-such-tab"})
    at.run()
    assert at.text[0].value == "open: First; picked: m1"
    assert (at.query_params["memory"], at.query_params["tab"]) == ("m1", "first")
