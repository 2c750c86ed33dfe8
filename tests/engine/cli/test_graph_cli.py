"""``memlens graph ...``: extract the graph of a store written before it, then list entities, relations (now, as of
a time, every version), a fact's timeline and an entity's neighbours, as tables and as JSON; hostile or wrong input
gets one error line and changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import MemoryEngine, Settings
from tests.support.cli import cli
from tests.support.store_snapshot import snapshot

U = "ada"


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    """A store whose items were written with extraction off (as before the graph existed), then extracted by the
    CLI once."""
    path = tmp_path_factory.mktemp("graph-cli") / "store"
    settings = Settings.from_env({}, store=str(path), graph_extraction="off")
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
    for year, text in (
        (2022, "Alice works at Acme."),
        (2024, "Alice works at Globex."),
        (2023, "Alice lives in Oslo."),
    ):
        engine.items.remember(U, text, created_at=datetime(year, 1, 1, tzinfo=UTC))
    engine.items.remember(U, "Bob Stone moved to Lima and Bob Stone works at Globex.")
    engine.items.remember("other", "Zed lives in Rome.")
    engine.close()
    run = cli(path, "--json", "graph", "extract", "--user", U)
    assert run.code == 0, run.err
    counts = run.json()
    assert (counts["mode"], counts["items"], counts["relations_added"], counts["superseded"]) == ("offline", 4, 5, 1)
    return path


def test_extract_again_finds_nothing_new_and_all_merges_instead_of_adding(store):
    again = cli(store, "--json", "graph", "extract", "--user", U).json()
    assert (again["items"], again["relations_added"]) == (0, 0)
    everything = cli(store, "--json", "graph", "extract", "--user", U, "--all").json()
    assert (everything["items"], everything["relations_added"], everything["relations_merged"]) == (4, 0, 5)
    table = cli(store, "graph", "extract", "--user", U)
    assert table.code == 0 and "relations_added" in table.out


def test_entities_most_mentioned_first_with_a_query_and_a_type(store):
    rows = cli(store, "--json", "graph", "entities", "--user", U).json()
    assert rows[0]["name"] == "Alice" and {r["name"] for r in rows} == {"Alice", "Acme", "Globex", "Oslo", "Bob Stone",
                                                                         "Lima"}  # fmt: skip
    assert [r["name"] for r in cli(store, "--json", "graph", "entities", "--user", U, "--query", "glob").json()] == [
        "Globex"
    ]
    places = cli(store, "--json", "graph", "entities", "--user", U, "--type", "place").json()
    assert {r["name"] for r in places} == {"Oslo", "Lima"}
    human = cli(store, "graph", "entities", "--user", U)
    assert human.code == 0 and "Alice" in human.out and "6 entities" in human.out


def test_relations_now_as_of_a_time_and_every_version(store):
    def objects(*extra: str) -> list[str]:
        run = cli(store, "--json", "graph", "relations", "--user", U, "--entity", "alice", *extra)
        assert run.code == 0, run.err
        return [r["object"] for r in run.json()]

    assert objects() == ["Globex", "Oslo"]
    assert objects("--as-of", "2023-06-01") == ["Oslo", "Acme"]
    assert objects("--history") == ["Globex", "Oslo", "Acme"]
    assert objects("--predicate", "Works At", "--as-of", "2022-06-01T00:00:00Z") == ["Acme"]
    (rel,) = cli(store, "--json", "graph", "relations", "--user", U, "--entity", "Lima").json()
    assert (rel["subject"], rel["predicate"], rel["method"]) == ("Bob Stone", "moved_to", "offline")
    assert rel["sources"][0]["type"] == "semantic"
    human = cli(store, "graph", "relations", "--user", U)
    assert "works_at" in human.out and "4 relations" in human.out


def test_timeline_shows_what_superseded_what(store):
    versions = cli(store, "--json", "graph", "timeline", "--user", U, "--entity", "Alice", "--predicate", "works_at")
    acme, globex = versions.json()
    assert (acme["object"], acme["superseded_by"], acme["valid_to"]) == ("Acme", globex["id"], globex["valid_from"])
    assert (globex["object"], globex["valid_to"]) == ("Globex", None)
    by_id = cli(store, "--json", "graph", "entities", "--user", U, "--query", "alice").json()[0]["id"]
    same = cli(store, "--json", "graph", "timeline", "--user", U, "--entity", by_id, "--predicate", "works_at").json()
    assert same == versions.json()
    human = cli(store, "graph", "timeline", "--user", U, "--entity", "Alice", "--predicate", "works_at")
    assert "superseded by" in human.out


def test_neighbours_within_a_depth_and_as_of_a_time(store):
    one = cli(store, "--json", "graph", "neighbours", "--user", U, "--entity", "Alice").json()
    assert {e["name"]: e["distance"] for e in one["entities"]} == {"Alice": 0, "Globex": 1, "Oslo": 1}
    two = cli(store, "--json", "graph", "neighbours", "--user", U, "--entity", "Alice", "--depth", "2").json()
    assert {e["name"]: e["distance"] for e in two["entities"]} == {
        "Alice": 0,
        "Globex": 1,
        "Oslo": 1,
        "Bob Stone": 2,
    }
    then = cli(store, "--json", "graph", "neighbours", "--user", U, "--entity", "Alice", "--as-of", "2022-06-01")
    assert {e["name"] for e in then.json()["entities"]} == {"Alice", "Acme"}
    only = cli(store, "--json", "graph", "neighbours", "--user", U, "--entity", "Alice", "--predicate", "lives_in")
    assert {e["name"] for e in only.json()["entities"]} == {"Alice", "Oslo"}
    human = cli(store, "graph", "neighbours", "--user", U, "--entity", "Alice")
    assert human.code == 0 and "hops" in human.out and "lives_in" in human.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["graph", "relations", "--user", U, "--entity", "'; DROP TABLE entities; --"], "no entity"),
        (["graph", "timeline", "--user", U, "--entity", "Nobody", "--predicate", "works_at"], "no entity"),
        (["graph", "neighbours", "--user", "other", "--entity", "Alice"], "no entity"),  # another user's names
        (["graph", "relations", "--user", U, "--as-of", "next tuesday"], "as of"),
        (["graph", "neighbours", "--user", U, "--entity", "Alice", "--depth", "9"], "depth"),
        (["graph", "entities", "--user", "bad user!"], "user"),
        (["graph", "entities", "--user", U, "--limit", "-1"], "limit"),
        (["graph", "timeline", "--user", U, "--entity", "Alice"], "--predicate"),
        (["graph", "extract", "--user", "x" * 300], "user"),
        (["graph"], "graph command"),
        (["graph", "frobnicate"], "invalid choice"),
    ],
)
def test_hostile_or_wrong_input_gets_one_error_line_and_changes_nothing(store, embedder, argv, message):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
    before = snapshot(engine)
    engine.close()
    run = cli(store, *argv)
    assert run.code == 2 and run.one_error_line and message in run.err, (run.out, run.err)
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
    assert snapshot(engine) == before
    engine.close()


def test_reading_the_graph_of_a_store_that_does_not_exist_creates_nothing(tmp_path):
    run = cli(tmp_path / "nothing", "graph", "entities", "--user", U)
    assert run.code == 2 and "no store at" in run.err
    assert not (tmp_path / "nothing").exists()
