"""The graph tools as an MCP client sees them (``python -m engine --store S mcp`` over stdio): an entity's relations
valid now, as of a date or with their history, a breadth-first traversal with each relation's hop, and the versions
of one fact with what superseded what and where each came from. Entities are named by id or by name. An unknown
entity is a NotFound tool error; hostile names and values are refused, or found nowhere, and write nothing.

Facts (hand-made, with exclusive ``works_at``):
  Ada works_at Acme     2024-01-01 .. 2025-06-01, from message chat-1#2 and semantic item-1 (offline extractor)
  Ada works_at Globex   2025-06-01 .. now (it superseded the Acme one)
  Ada lives_in Lisbon   2025-02-01 .. now
  Bob knows Ada         2024-03-01 .. now
  Acme located_in Berlin, Globex located_in Paris, Paris capital_of France   2020-01-01 .. now
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from engine import MemoryEngine, Settings
from engine.records import FactSource
from tests.support.mcp_client import ROOT, SyncMcp, clean_env, ok, refused
from tests.support.store_snapshot import assert_unchanged, snapshot

pytestmark = pytest.mark.subprocess

USER = "graph-user"
EMPTY = "graph-nobody"


def seed(engine: MemoryEngine, user: str) -> None:
    g = engine.graph
    sources = (FactSource("message", "chat-1#2"), FactSource("semantic", "item-1"))
    g.add_fact(user, "Ada", "works_at", "Acme", valid_from="2024-01-01", sources=sources, method="offline",
               subject_type="person", object_type="organization")  # fmt: skip
    g.add_fact(user, "Ada", "works at", "Globex", valid_from="2025-06-01", sources=(FactSource("message", "chat-1#7"),))
    g.add_fact(user, "Ada", "lives_in", "Lisbon", valid_from="2025-02-01", object_type="place")
    g.add_fact(user, "Bob", "knows", "Ada", valid_from="2024-03-01", subject_type="person")
    for subject, predicate, obj in (
        ("Acme", "located_in", "Berlin"),
        ("Globex", "located_in", "Paris"),
        ("Paris", "capital_of", "France"),
    ):
        g.add_fact(user, subject, predicate, obj, valid_from="2020-01-01")


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("mcp-graph") / "store"
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(path)), embedder=embedder)
    seed(engine, USER)
    engine.close()
    return path


@pytest.fixture(scope="module")
def ids(reader) -> dict[str, str]:
    """Relation ids by sentence ("Ada works_at Acme") and entity ids by name."""
    out = {r.sentence: r.id for r in reader.graph.relations(USER, include_history=True).rows}
    out.update({e.name: e.id for e in reader.graph.list_entities(USER).rows})
    return out


def test_entities_are_listed_one_a_line_and_filtered_by_name(client, ids):
    lines = ok(client, "memory_graph_entities", user_id=USER).splitlines()
    assert lines[0] == "Found 8 entities (showing 8):"
    assert f"[{ids['Ada']}] Ada (person)" in lines and f"[{ids['Acme']}] Acme (organization)" in lines
    assert f"[{ids['Lisbon']}] Lisbon (place)" in lines
    assert ok(client, "memory_graph_entities", user_id=USER, query="pari").splitlines() == [
        "Found 1 entities (showing 1):",
        f"[{ids['Paris']}] Paris (concept)",
    ]
    assert ok(client, "memory_graph_entities", user_id=USER, limit=3).splitlines()[0] == "Found 8 entities (showing 3):"
    assert ok(client, "memory_graph_entities", user_id=USER, query="zzz") == "No entities match 'zzz'."
    assert ok(client, "memory_graph_entities", user_id=EMPTY) == "No entities found."


def test_relations_valid_now_newest_first_with_their_sources_and_extractor(client, ids):
    assert ok(client, "memory_graph_relations", user_id=USER, entity="Ada").splitlines() == [
        f"Relations of Ada [{ids['Ada']}] (valid now; showing 3 of 3):",
        f"[{ids['Ada works_at Globex']}] Ada works_at Globex (valid from 2025-06-01 00:00; from message chat-1#7; "
        "method manual)",
        f"[{ids['Ada lives_in Lisbon']}] Ada lives_in Lisbon (valid from 2025-02-01 00:00; from manual stated; "
        "method manual)",
        f"[{ids['Bob knows Ada']}] Bob knows Ada (valid from 2024-03-01 00:00; from manual stated; method manual)",
    ]


def test_relations_as_of_a_date_return_the_superseded_fact_valid_then(client, ids):
    acme = (
        f"[{ids['Ada works_at Acme']}] Ada works_at Acme (valid from 2024-01-01 00:00 until 2025-06-01 00:00; "
        f"superseded by {ids['Ada works_at Globex']}; from message chat-1#2, semantic item-1; method offline)"
    )
    assert ok(client, "memory_graph_relations", user_id=USER, entity="Ada", as_of="2024-06-01").splitlines() == [
        f"Relations of Ada [{ids['Ada']}] (valid at 2024-06-01 00:00; showing 2 of 2):",
        f"[{ids['Bob knows Ada']}] Bob knows Ada (valid from 2024-03-01 00:00; from manual stated; method manual)",
        acme,
    ]
    works = ok(client, "memory_graph_relations", user_id=USER, entity="Ada", predicate="Works At", as_of="2025-06-01")
    assert works.splitlines()[1].startswith(f"[{ids['Ada works_at Globex']}] Ada works_at Globex")  # from that instant
    assert ok(client, "memory_graph_relations", user_id=USER, entity="Ada", as_of="2000-01-01T00:00:00Z") == (
        f"No relations of Ada [{ids['Ada']}] (valid at 2000-01-01 00:00)."
    )


def test_relations_with_history_by_id_or_any_spelling_of_the_name(client, ids):
    history = ok(client, "memory_graph_relations", user_id=USER, entity=ids["Ada"], predicate="works_at",
                 include_history=True)  # fmt: skip
    lines = history.splitlines()
    assert lines[0] == f"Relations of Ada [{ids['Ada']}] (every version; showing 2 of 2):"
    assert [line.split(" (", 1)[0] for line in lines[1:]] == [
        f"[{ids['Ada works_at Globex']}] Ada works_at Globex",
        f"[{ids['Ada works_at Acme']}] Ada works_at Acme",
    ]
    assert ok(client, "memory_graph_relations", user_id=USER, entity="  aDA ", predicate="works_at") == ok(
        client, "memory_graph_relations", user_id=USER, entity=ids["Ada"], predicate="works_at"
    )
    assert ok(client, "memory_graph_relations", user_id=USER, entity="Berlin", limit=1).splitlines()[0] == (
        f"Relations of Berlin [{ids['Berlin']}] (valid now; showing 1 of 1):"
    )


def test_traverse_walks_both_directions_breadth_first_with_each_relations_hop(client, ids):
    def hops(text: str) -> list[tuple[int, str]]:
        return [(int(m[1]), m[2]) for m in re.finditer(r"^\[hop (\d)\] \[\S+\] (.+?) \(", text, re.M)]

    one = ok(client, "memory_graph_traverse", user_id=USER, entity="Ada", depth=1)
    assert one.splitlines()[0] == f"Graph around Ada [{ids['Ada']}], depth 1 (valid now): 4 entities, 3 relations"
    assert hops(one) == [(1, "Ada lives_in Lisbon"), (1, "Ada works_at Globex"), (1, "Bob knows Ada")]
    assert hops(ok(client, "memory_graph_traverse", user_id=USER, entity="Ada")) == [  # depth 2 by default
        (1, "Ada lives_in Lisbon"),
        (1, "Ada works_at Globex"),
        (1, "Bob knows Ada"),
        (2, "Globex located_in Paris"),
    ]
    wanted = ["works at", "located_in"]
    three = ok(client, "memory_graph_traverse", user_id=USER, entity="Ada", depth=3, predicates=wanted)
    assert hops(three) == [(1, "Ada works_at Globex"), (2, "Globex located_in Paris")]
    then = ok(client, "memory_graph_traverse", user_id=USER, entity="Ada", as_of="2024-06-01", depth=4)
    assert hops(then) == [(1, "Ada works_at Acme"), (1, "Bob knows Ada"), (2, "Acme located_in Berlin")]
    assert ok(client, "memory_graph_traverse", user_id=USER, entity="France", depth=3).splitlines()[1:] == [
        f"[hop 1] [{ids['Paris capital_of France']}] Paris capital_of France (valid from 2020-01-01 00:00; "
        "from manual stated; method manual)",
        f"[hop 2] [{ids['Globex located_in Paris']}] Globex located_in Paris (valid from 2020-01-01 00:00; "
        "from manual stated; method manual)",
        f"[hop 3] [{ids['Ada works_at Globex']}] Ada works_at Globex (valid from 2025-06-01 00:00; from message "
        "chat-1#7; method manual)",
    ]
    assert ok(client, "memory_graph_traverse", user_id=USER, entity="Lisbon", as_of="2024-01-01") == (
        f"Lisbon [{ids['Lisbon']}] has no relations (valid at 2024-01-01 00:00)."
    )


def test_a_facts_timeline_lists_its_versions_oldest_first(client, ids):
    assert ok(client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate="works_at").splitlines() == [
        f"Timeline of Ada [{ids['Ada']}] works_at: 2 version(s), oldest first:",
        f"1. [{ids['Ada works_at Acme']}] Ada works_at Acme (valid from 2024-01-01 00:00 until 2025-06-01 00:00; "
        f"superseded by {ids['Ada works_at Globex']}; from message chat-1#2, semantic item-1; method offline)",
        f"2. [{ids['Ada works_at Globex']}] Ada works_at Globex (valid from 2025-06-01 00:00; from message chat-1#7; "
        "method manual) — current",
    ]
    assert ok(client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate="born_in") == (
        f"No versions of Ada [{ids['Ada']}] born_in."
    )


def test_an_unknown_entity_is_a_clear_not_found(client):
    for tool, extra in (
        ("memory_graph_relations", {}),
        ("memory_graph_traverse", {}),
        ("memory_graph_timeline", {"predicate": "works_at"}),
    ):
        text = refused(client, tool, user_id=USER, entity="Zelda", **extra)
        assert text.endswith(f"NotFound: no entity named 'Zelda' (nor with that id) for user '{USER}'"), text
        assert "NotFound" in refused(client, tool, user_id=EMPTY, entity="Ada", **extra)


def test_bad_values_are_refused_naming_the_argument(client):
    assert "give as_of or include_history, not both" in refused(
        client, "memory_graph_relations", user_id=USER, entity="Ada", as_of="2024-01-01", include_history=True
    )
    assert "as_of" in refused(client, "memory_graph_relations", user_id=USER, entity="Ada", as_of="last spring")
    assert "as_of" in refused(client, "memory_graph_traverse", user_id=USER, entity="Ada", as_of="0001-01-01")
    assert "depth must be an integer from 1 to 4" in refused(
        client, "memory_graph_traverse", user_id=USER, entity="Ada", depth=5
    )
    assert "depth" in refused(client, "memory_graph_traverse", user_id=USER, entity="Ada", depth=0)
    assert "depth" in refused(client, "memory_graph_traverse", user_id=USER, entity="Ada", depth=True)
    assert "InvalidInput: predicate is empty" in refused(
        client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate=" "
    )
    assert "predicate" in refused(client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate="p" * 81)
    assert "number of predicates" in refused(
        client, "memory_graph_traverse", user_id=USER, entity="Ada", predicates=["knows"] * 51
    )
    assert "limit must be an integer from 1 to 1,000" in refused(
        client, "memory_graph_entities", user_id=USER, limit=10**6
    )
    assert "limit" in refused(client, "memory_graph_relations", user_id=USER, entity="Ada", limit=0)
    assert "entity" in refused(client, "memory_graph_relations", user_id=USER)


HOSTILE_NAMES = [
    ("quotes and SQL", "x'; DROP TABLE entities; --", "NotFound"),
    ("a path", "../../etc/passwd", "NotFound"),
    ("a LIKE pattern", "%", "NotFound"),
    ("a NUL byte", "Ada\x00", "InvalidInput"),
    ("blank", "   ", "InvalidInput"),
    ("40,000 characters", "A" * 40_000, "InvalidInput"),
]


@pytest.mark.parametrize("label,name,answer", HOSTILE_NAMES, ids=[h[0] for h in HOSTILE_NAMES])
def test_hostile_names_are_refused_or_found_nowhere_and_nothing_is_written(client, reader, label, name, answer):
    before = snapshot(reader)
    for tool, extra in (
        ("memory_graph_relations", {}),
        ("memory_graph_traverse", {}),
        ("memory_graph_timeline", {"predicate": "works_at"}),
    ):
        text = refused(client, tool, user_id=USER, entity=name, **extra)
        assert answer in text and len(text) < 400, (tool, text[:400])
    if answer == "NotFound":  # as a predicate, a strange name is just one no fact has
        assert ok(client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate=name).startswith("No versions")
    else:
        assert "InvalidInput" in refused(client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate=name)
        assert "InvalidInput" in refused(client, "memory_graph_entities", user_id=USER, query=name.strip() or "\x00")
    assert "InvalidInput: invalid user id" in refused(client, "memory_graph_entities", user_id=name)
    assert_unchanged(before, reader, f"a hostile entity name ({label})")


def test_forget_takes_graph_ids_and_the_graph_tools_no_longer_show_them(client, reader, ids):
    """Last in the module: it changes the graph the tests above read."""
    text = ok(client, "memory_forget", user_id=USER, kind="graph", ids=[ids["Bob knows Ada"]], reason="not true")
    assert text.startswith(f"Forgot 1 entries from graph memory for user {USER} (soft).")
    ok(client, "memory_forget", user_id=USER, kind="graph", ids=[ids["Lisbon"]], reason="user asked", mode="soft")
    assert ok(client, "memory_graph_relations", user_id=USER, entity="Ada").splitlines()[1:] == [
        f"[{ids['Ada works_at Globex']}] Ada works_at Globex (valid from 2025-06-01 00:00; from message chat-1#7; "
        "method manual)"
    ]
    assert "NotFound" in refused(client, "memory_graph_relations", user_id=USER, entity="Lisbon")
    assert "Lisbon" not in ok(client, "memory_graph_entities", user_id=USER)
    entry = reader.forgetting.log(USER)[0]
    assert (entry.memory_type, entry.reason, entry.actor) == ("graph", "user asked", "mcp")
    assert ids["Lisbon"] in entry.ids


@pytest.fixture(scope="module")
def team_client(team_servers, embedder):
    """The MCP server on a team store (PostgreSQL + LanceDB on S3), its graph and timeline seeded beforehand."""
    dsn, vectors = team_servers.fresh("mcp-graph")
    engine = MemoryEngine.open(dsn, Settings.from_env({}), embedder=embedder, vectors=vectors)
    seed(engine, USER)
    engine.items.add(
        [engine.items.prepare(USER, f"Team note {n}.", "log", created_at=f"2025-03-0{n + 1}T09:00:00Z", id=f"tn-{n}")
         for n in range(3)]
    )  # fmt: skip
    engine.sessions.add_message(USER, "chat-1", "user", "Just now on the team store.")
    engine.close()
    env = clean_env(MEMLENS_STORE=dsn, MEMLENS_VECTORS=vectors, **team_servers.aws_environ())
    c = SyncMcp(StdioServerParameters(command=sys.executable, args=["-m", "engine", "mcp"], env=env, cwd=str(ROOT)))
    yield c
    c.close()
    team_servers.drop(dsn)


@pytest.mark.team_store
def test_the_graph_and_timeline_tools_read_a_team_store_alike(team_client):
    as_of = ok(team_client, "memory_graph_relations", user_id=USER, entity="ada", as_of="2024-06-01").splitlines()
    assert [line.split("] ", 1)[1].split(" (", 1)[0] for line in as_of[1:]] == ["Bob knows Ada", "Ada works_at Acme"]
    assert "superseded by rel_" in as_of[2] and "from message chat-1#2, semantic item-1; method offline" in as_of[2]
    versions = ok(team_client, "memory_graph_timeline", user_id=USER, entity="Ada", predicate="works_at")
    assert versions.splitlines()[2].endswith("method manual) — current")
    hops = re.findall(r"^\[hop (\d)\] \[\S+\] (.+?) \(", ok(team_client, "memory_graph_traverse", user_id=USER,
                                                              entity="France", depth=3), re.M)  # fmt: skip
    assert hops == [("1", "Paris capital_of France"), ("2", "Globex located_in Paris"), ("3", "Ada works_at Globex")]
    assert "] Acme (organization)" in ok(team_client, "memory_graph_entities", user_id=USER, query="acm")
    around = ok(team_client, "memory_timeline_context", user_id=USER, item_id="tn-1").splitlines()
    assert around[2:] == [
        "    [2025-03-01 09:00] [log] Team note 0.",
        "TARGET:",
        ">>> [2025-03-02 09:00] [log] Team note 1.",
        "AFTER:",
        "    [2025-03-03 09:00] [log] Team note 2.",
    ]
    recent = ok(team_client, "memory_timeline", user_id=USER).splitlines()
    assert recent[1:] == ["- [MSG chat-1] [user] Just now on the team store.", "(Showing 1 of 1 entries)"]
    assert "NotFound" in refused(team_client, "memory_graph_relations", user_id=USER, entity="x'; DROP TABLE entities")
