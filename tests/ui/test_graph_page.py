"""The Graph page (issue 30): an entity's neighbourhood as a network filtered by depth, predicate and "as of" a date, a
fact's timeline with what superseded what and its source messages linked to the Sessions page, the relations table,
deep links, forgetting with the forget log, an empty store; and the source-message links on the Memories and Sessions
pages. Every graph here is made by hand through ``engine.graph.add_fact`` on a real store, so each expectation is
known exactly.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from apptest_helpers import (
    app_engine,
    button,
    markdown_texts,
    no_errors,
    open_link,
    open_page,
    plain_texts,
    values,
)

from engine import FactSource, MemoryEngine, Settings

PAGE = "pages/graph.py"
USER, SESSION = "ada", "work-s1"
HOSTILE = "<script>alert(1)</script> **bold** [link](http://x)"
RAW_MARKUP = ("<script>", "**bold**", "[link](http://x)")


def seed(engine: MemoryEngine) -> None:
    """Ada moved from Acme (Berlin) to Initech (Munich) in March 2026; she knows Bob, who works at Globex."""
    for n in range(1, 31):
        text = {3: "I work at Acme in Berlin.", 27: "I now work at Initech."}.get(n, f"small talk {n}")
        engine.sessions.add_message(USER, SESSION, "user", text)
    engine.items.remember(
        USER,
        "Ada works at Acme in Berlin.",
        "work",
        provenance={"sources": [{"type": "message", "id": f"{SESSION}#3"}], "method": "test"},
    )
    msg3, msg27 = FactSource("message", f"{SESSION}#3"), FactSource("message", f"{SESSION}#27")
    fact = engine.graph.add_fact
    fact(USER, "Ada", "works_at", "Acme", valid_from="2025-02-01T09:00:00Z", sources=[msg3], subject_type="person")
    fact(USER, "Acme", "located_in", "Berlin", valid_from="2025-02-01T09:00:00Z", sources=[msg3], object_type="place")
    fact(USER, "Ada", "works_at", "Initech", valid_from="2026-03-01T09:00:00Z", sources=[msg27])
    fact(USER, "Initech", "located_in", "Munich", valid_from="2026-03-01T09:00:00Z", object_type="place")
    fact(USER, "Ada", "knows", "Bob", valid_from="2025-06-01T09:00:00Z", object_type="person")
    fact(USER, "Bob", "works_at", "Globex", valid_from="2025-06-01T09:00:00Z", object_type="organization")
    fact(USER, "Ada", "likes", HOSTILE, valid_from="2025-05-01T09:00:00Z")
    engine.sessions.add_message("newcomer", "n-s1", "user", "hello")  # a user without a graph


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("graph-ui") / "store"
    # Extraction off: the graph is exactly the facts added below, whatever the extractor would draw
    settings = Settings.from_env({"MEMLENS_GRAPH_EXTRACTION": "off"}, store=str(path))
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    seed(engine)
    engine.close()
    return path


@pytest.fixture
def graph_app(graph_store: Path) -> Iterator[MemoryEngine]:
    """The dashboard on the module's graph store (tests here only read it)."""
    with app_engine(graph_store) as engine:
        yield engine


@pytest.fixture
def own_graph_app(graph_store: Path, tmp_path: Path) -> Iterator[MemoryEngine]:
    """The dashboard on a copy of the graph store, for a test that forgets."""
    shutil.copytree(graph_store, tmp_path / "store")
    with app_engine(tmp_path / "store") as engine:
        yield engine


def figure(at) -> dict:
    charts = at.get("plotly_chart")
    assert len(charts) == 1, "one network on the page"
    return json.loads(charts[0].proto.spec)


def node_names(at) -> set[str]:
    """The names of the network's entities, read back through the engine from the ids the nodes carry."""
    from ui.resources import get_engine

    ids = [d[1] for trace in figure(at)["data"] for d in trace["customdata"] if d[0] == "entity"]
    return {get_engine().graph.entity(USER, i).name for i in ids}


def edge_ids(at) -> set[str]:
    return {d[1] for trace in figure(at)["data"] for d in trace["customdata"] if d[0] == "relation"}


def open_entity(name: str, **params: str):
    return open_link(PAGE, {"user": USER, "entity": name, **params})


def test_an_empty_store_says_what_to_do(empty_app):
    at = open_page(PAGE)
    no_errors(at)
    assert any("the store is empty" in v for v in values(at, "info"))


def test_a_user_without_a_graph_is_told_how_to_get_one(graph_app):
    at = open_page(PAGE, user="newcomer")
    no_errors(at)
    note = " ".join(values(at, "info"))
    assert "has no graph yet" in note and "graph_extraction" in note and "memlens graph extract" in note
    assert not at.get("plotly_chart")


def test_the_neighbourhood_now_shows_the_current_employer_and_grows_with_depth(graph_app):
    at = open_entity("Ada")
    no_errors(at)
    assert node_names(at) == {"Ada", "Initech", "Bob", HOSTILE}
    valid = graph_app.graph.relations(USER, graph_app.graph.resolve(USER, "Ada").id).rows
    assert edge_ids(at) == {r.id for r in valid}
    at.select_slider(key="graph_depth").set_value(2).run()
    no_errors(at)
    assert {"Munich", "Globex"} <= node_names(at)
    assert "Acme" not in node_names(at), "superseded: not valid now"
    assert at.query_params["depth"] == ["2"] or at.query_params["depth"] == "2"


def test_as_of_a_date_shows_what_was_valid_then(graph_app):
    at = open_entity("Ada", depth="2")
    at.date_input(key="graph_as_of").set_value(date(2025, 12, 31)).run()
    no_errors(at)
    assert {"Acme", "Berlin", "Bob", "Globex"} <= node_names(at)
    assert not {"Initech", "Munich"} & node_names(at)
    assert any("valid at the end of 2025-12-31" in v for v in values(at, "caption"))
    # before Bob was known (June 2025) only Acme, Berlin and the hostile liking
    at.date_input(key="graph_as_of").set_value(date(2025, 5, 15)).run()
    assert "Bob" not in node_names(at) and "Acme" in node_names(at)
    table = next(df.value for df in at.dataframe if "other entity" in df.value.columns)
    assert set(table["other entity"]) == {"Acme", HOSTILE}


def test_a_predicate_filter_keeps_only_those_relations(graph_app):
    at = open_entity("Ada", depth="2")
    at.multiselect(key="graph_predicates").set_value(["works_at"]).run()
    no_errors(at)
    # works_at from Ada only: the knows edge to Bob (and Bob's own works_at) is not followed
    assert node_names(at) == {"Ada", "Initech"}


def test_a_deep_link_to_a_fact_opens_its_timeline_with_what_superseded_what_and_its_source_messages(graph_app):
    at = open_entity("Ada", predicate="works_at")
    no_errors(at)
    assert at.session_state["graph_tab"] == "Timeline"
    timeline = next(df.value for df in at.dataframe if "superseded by" in df.value.columns)
    assert list(timeline["object"]) == ["Acme", "Initech"]
    assert list(timeline["status"]) == ["superseded", "valid"]
    assert list(timeline["superseded by"]) == ["v2", "—"]
    assert list(timeline["valid to"])[0] == "2026-03-01 09:00:00"
    assert any("What replaced what" in v and "Acme → Initech" in v for v in values(at, "markdown"))
    links = [(link.proto.page, link.proto.query_string) for link in at.get("page_link")]
    for seq in (3, 27):  # each version's message, linked to the Sessions page at it
        wanted = f"session={SESSION}&message={seq}"
        assert any(page.endswith("sessions") and wanted in qs for page, qs in links), links


def test_a_link_by_entity_id_and_a_bad_link_are_both_handled(graph_app):
    bob = graph_app.graph.resolve(USER, "Bob")
    at = open_link(PAGE, {"user": USER, "entity": bob.id})
    no_errors(at)
    assert at.session_state["graph_entity"] == bob.id
    assert node_names(at) == {"Bob", "Ada", "Globex"}
    at = open_link(PAGE, {"user": USER, "entity": "no such entity"})
    assert any("names no entity" in v for v in values(at, "warning"))


def test_moving_to_a_neighbour_redraws_around_it(graph_app):
    at = open_entity("Ada")
    bob = graph_app.graph.resolve(USER, "Bob")
    at.selectbox(key="graph_move_" + graph_app.graph.resolve(USER, "Ada").id).set_value(bob.id).run()
    button(at, "Move").click().run()
    no_errors(at)
    assert at.session_state["graph_entity"] == bob.id
    assert node_names(at) == {"Bob", "Ada", "Globex"}


def test_stored_markup_in_names_is_never_rendered(graph_app):
    at = open_entity("Ada")
    at.selectbox(key="graph_entity").set_value(graph_app.graph.resolve(USER, HOSTILE).id).run()
    no_errors(at)
    leaks = [t[:80] for t in markdown_texts(at) for m in RAW_MARKUP if m in t]
    assert not leaks
    assert any(HOSTILE in t for t in plain_texts(at)), "the name shown as plain text"
    spec = json.dumps(figure(at))
    assert "<script>" not in spec and "\\u003cscript" not in spec


def test_forgetting_a_relation_and_then_the_entity_is_audited(own_graph_app):
    engine = own_graph_app
    ada = engine.graph.resolve(USER, "Ada")
    knows = engine.graph.relations(USER, ada.id, predicate="knows").rows[0]
    at = open_entity("Ada", tab="forget")
    at.radio(key="graph_forget_what").set_value("relations").run()
    at.multiselect(key="graph_forget_rels").set_value([knows.id]).run()
    at.text_input(key="graph_forget_reason").input("wrong person")
    button(at, "Forget 1 graph record").click().run()
    assert any("Tick" in v for v in values(at, "error")), "no confirmation: nothing forgotten"
    assert engine.graph.relation(USER, knows.id).archived_at is None
    at.checkbox(key="graph_forget_sure").check()
    button(at, "Forget 1 graph record").click().run()
    no_errors(at)
    assert any("Forgot 1 graph record (soft)" in v for v in values(at, "success"))
    assert engine.graph.relation(USER, knows.id).archived_at is not None
    assert "Bob" not in node_names(at)
    log = [e for e in engine.forgetting.log(USER) if e.memory_type == "graph"]
    assert [(e.ids, e.reason, e.actor, e.mode) for e in log] == [((knows.id,), "wrong person", "ui", "soft")]
    assert "wrong person" in plain_texts(at), "the graph forget log on the page"

    at.radio(key="graph_forget_what").set_value("entity").run()
    at.text_input(key="graph_forget_reason").input("not needed")
    at.checkbox(key="graph_forget_sure").check()
    button(at, "Forget 1 graph record").click().run()
    no_errors(at)
    assert engine.graph.resolve(USER, "Ada") is None
    assert at.session_state["graph_entity"] != ada.id


def test_a_memory_links_to_the_message_it_came_from(graph_app):
    at = open_page("pages/memories.py", user=USER)
    no_errors(at)
    links = [(link.proto.page, link.proto.query_string) for link in at.get("page_link")]
    assert any(p.endswith("sessions") and "session=work-s1" in q and "message=3" in q for p, q in links), links


def test_a_message_link_opens_the_session_at_the_page_holding_it_and_marks_it(graph_app):
    at = open_link("pages/sessions.py", {"user": USER, "session": SESSION, "message": "27"})
    no_errors(at)
    assert at.session_state["sessions_open"] == (USER, SESSION)
    assert at.session_state["sessions_msg_page"] == 2, "messages 26-30 are on the second page of 25"
    assert "I now work at Initech." in values(at, "text")
    assert any("linked message" in v and v.startswith("#27") for v in values(at, "caption"))
    assert "I work at Acme in Berlin." not in values(at, "text")


def test_a_memory_in_a_retrieval_trace_links_to_the_message_it_came_from(own_graph_app):
    item = own_graph_app.items.list_items(USER).rows[0]
    trace = own_graph_app.retrieval.retrieve(USER, "Where does Ada work, Acme in Berlin?")
    assert item.id in trace.context_ids
    at = open_link("pages/retrieval.py", {"user": USER, "trace": trace.trace_id, "memory": item.id})
    no_errors(at)
    assert at.session_state["trace_label_item"] == item.id

    def message_links() -> int:
        links = [(link.proto.page, link.proto.query_string) for link in at.get("page_link")]
        return sum(p.endswith("sessions") and f"session={SESSION}&message=3" in q for p, q in links)

    assert message_links() == 2, "the memory to label (Hops tab) and the same memory in the Context tab"
    # and on the "Why not?" tab, where any memory of the user can be looked up
    at = open_link("pages/retrieval.py", {"user": USER, "trace": trace.trace_id, "tab": "why-not", "memory": item.id})
    no_errors(at)
    assert at.session_state["trace_wn_item"] == item.id
    assert message_links() == 3


@pytest.mark.team_store
def test_the_page_reads_a_team_store_alike(team_servers, embedder):
    """The same graph on PostgreSQL + LanceDB on S3: the network as of a date and a fact's timeline."""
    dsn, vectors = team_servers.fresh("graph-page")
    engine = MemoryEngine.open(dsn, Settings.from_env({"MEMLENS_GRAPH_EXTRACTION": "off"}), embedder=embedder,
                               vectors=vectors)  # fmt: skip
    seed(engine)
    engine.close()
    try:
        with app_engine(dsn, MEMLENS_VECTORS=vectors):  # a DSN where a folder would go: the env var takes both
            at = open_entity("Ada", depth="2", as_of="2025-12-31")
            no_errors(at)
            assert {"Acme", "Berlin", "Bob", "Globex"} <= node_names(at) and "Initech" not in node_names(at)
            at = open_entity("Ada", predicate="works_at")
            timeline = next(df.value for df in at.dataframe if "superseded by" in df.value.columns)
            assert list(timeline["object"]) == ["Acme", "Initech"] and list(timeline["superseded by"]) == ["v2", "—"]
    finally:
        team_servers.drop(dsn)


def test_a_read_only_store_offers_no_forget_but_still_browses(graph_store, tmp_path):
    # A copy: DuckDB refuses a read-only connection to a file this process may still hold open read-write (the
    # other tests' engine lingers on the module's store).
    shutil.copytree(graph_store, tmp_path / "store")
    with app_engine(tmp_path / "store", MEMLENS_READ_ONLY="1") as engine:
        assert engine.read_only
        at = open_entity("Ada", tab="forget")
        no_errors(at)
        assert {b.label for b in at.button} <= {"Move", "Open this fact's timeline"}, "only buttons that read"
        assert any("Read-only store: forgetting is not available here." in c for c in values(at, "caption"))
        assert node_names(at) == {"Ada", "Initech", "Bob", HOSTILE}
