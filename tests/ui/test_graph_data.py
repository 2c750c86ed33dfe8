"""The Graph page's plain pieces: "as of" dates, validity in words, timeline rows, the network's layout and figure,
and source links (ui/graph_data.py, ui/graph_figure.py, ui/memory_sources.py), on records built by hand."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime

from engine import Entity, FactSource, Neighbourhood, Relation
from ui.graph_data import (
    as_of_moment,
    parse_day,
    predicates_of,
    radial_layout,
    relation_rows,
    supersession_chain,
    timeline_rows,
    validity,
)
from ui.graph_figure import network_figure, selected_point
from ui.memory_sources import message_of, source_link, source_links

T0 = datetime(2025, 2, 1, 9, tzinfo=UTC)
T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def entity(eid: str, name: str, type: str = "concept") -> Entity:
    return Entity(eid, "u", name, type, (), {}, T0, T0)


def relation(rid: str, s: Entity, p: str, o: Entity, **kw) -> Relation:
    fields = {"valid_from": T0, "valid_to": None, "superseded_by": None, "sources": (), "method": "offline"}
    fields.update(kw)
    return Relation(
        rid,
        "u",
        s.id,
        s.name,
        p,
        o.id,
        o.name,
        fields["valid_from"],
        fields["valid_to"],
        fields["superseded_by"],
        tuple(fields["sources"]),
        fields["method"],
        fields.get("confidence"),
        T0,
        fields.get("archived_at"),
    )


ADA, ACME, INITECH, BERLIN = (
    entity("e1", "Ada", "person"),
    entity("e2", "Acme", "organization"),
    entity("e3", "Initech", "organization"),
    entity("e4", "Berlin", "place"),
)
OLD = relation("r1", ADA, "works_at", ACME, valid_to=T1, superseded_by="r2", sources=[FactSource("message", "s1#3")])
NEW = relation("r2", ADA, "works_at", INITECH, valid_from=T1, sources=[FactSource("message", "s1#27")], confidence=0.8)
WHERE = relation("r3", ACME, "located_in", BERLIN)


def test_an_as_of_date_means_the_end_of_that_day_in_utc_and_links_carry_plain_dates():
    assert as_of_moment(None) is None
    assert as_of_moment(date(2025, 12, 31)) == datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_day("2025-12-31") == date(2025, 12, 31)
    assert parse_day("2025-12-31T10:00:00Z") == date(2025, 12, 31)
    assert parse_day("yesterday") is None and parse_day(None) is None


def test_validity_and_the_timeline_say_what_superseded_what():
    assert [validity(r) for r in (OLD, NEW)] == ["superseded", "valid"]
    forgotten = relation("r9", ADA, "likes", BERLIN, archived_at=T1)
    assert validity(forgotten) == "forgotten"
    rows = timeline_rows([OLD, NEW])
    assert [(r["version"], r["object"], r["superseded by"], r["valid to"]) for r in rows] == [
        ("v1", "Acme", "v2", "2026-03-01 09:00:00"),
        ("v2", "Initech", "—", "now"),
    ]
    assert rows[0]["sources"] == "message s1#3" and rows[1]["confidence"] == "0.80"
    assert supersession_chain([OLD, NEW]) == [("Acme", "Initech", "2026-03-01 09:00:00")]


def test_relation_rows_are_seen_from_the_entity_and_predicates_are_its_own_as_subject():
    rows = relation_rows([OLD, WHERE], ACME.id)
    assert [(r["direction"], r["predicate"], r["other entity"]) for r in rows] == [
        ("←", "works_at", "Ada"),
        ("→", "located_in", "Berlin"),
    ]
    assert predicates_of([OLD, NEW, WHERE], ADA.id) == ["works_at"]


def hood(relations, start=ADA, distance=None) -> Neighbourhood:
    ents = {ADA.id: ADA, ACME.id: ACME, INITECH.id: INITECH, BERLIN.id: BERLIN}
    distance = distance or {ADA.id: 0, INITECH.id: 1, ACME.id: 1, BERLIN.id: 2}
    return Neighbourhood((start.id,), tuple(ents[i] for i in distance), tuple(relations), distance)


def test_the_layout_puts_the_start_in_the_middle_and_each_hop_on_its_own_ring():
    pos = radial_layout(hood([OLD, NEW, WHERE]))
    assert pos[ADA.id] == (0.0, 0.0)
    for eid, ring in ((ACME.id, 1), (INITECH.id, 1), (BERLIN.id, 2)):
        assert math.isclose(math.hypot(*pos[eid]), ring)
    assert pos[ACME.id] != pos[INITECH.id]
    # Berlin sits beside Acme, which brought it in, not across the circle
    assert math.dist(pos[BERLIN.id], pos[ACME.id]) < math.dist(pos[BERLIN.id], pos[INITECH.id])
    assert radial_layout(hood([OLD, NEW, WHERE])) == pos, "the same picture on every run"


def test_the_network_has_a_node_per_entity_by_type_and_an_edge_label_per_relation():
    fig = network_figure(hood([OLD, NEW, WHERE]))
    nodes = [t for t in fig.data if t.customdata[0][0] == "entity"]
    assert sorted(t.name for t in nodes) == ["organization", "person", "place"]
    assert sorted(d[1] for t in nodes for d in t.customdata) == sorted([ADA.id, ACME.id, INITECH.id, BERLIN.id])
    edges = [t for t in fig.data if t.customdata[0][0] == "relation"]
    assert len(edges) == 1 and sorted(d[1] for d in edges[0].customdata) == ["r1", "r2", "r3"]
    assert list(edges[0].text) == ["works_at", "works_at", "located_in"]
    assert "superseded: 2025-02-01 09:00:00 → 2026-03-01 09:00:00" in edges[0].hovertext[0]
    assert "sources: message s1#3" in edges[0].hovertext[0]
    assert len(fig.layout.annotations) == 3, "an arrow per relation"


def test_stored_markup_in_a_figure_is_escaped():
    evil = entity("e5", "<a href='http://x'>click</a>", "<b>type</b>")
    rel = relation("r5", ADA, "likes", evil)
    fig = network_figure(Neighbourhood((ADA.id,), (ADA, evil), (rel,), {ADA.id: 0, evil.id: 1}))
    spec = json.dumps(fig.to_plotly_json(), default=str)
    assert "<a href" not in spec and "<b>type" not in spec
    assert "&lt;a href=" in spec


def test_a_selected_node_or_edge_is_read_back_from_the_chart_selection():
    assert selected_point({"selection": {"points": [{"customdata": ["entity", "e2"]}]}}) == ("entity", "e2")
    assert selected_point({"selection": {"points": [{"customdata": ["relation", "r1"]}]}}) == ("relation", "r1")
    assert selected_point({"selection": {"points": []}}) is None
    assert selected_point(None) is None


def test_sources_become_links_to_the_page_that_shows_them():
    assert message_of("s1#27") == ("s1", 27)
    assert message_of("team#room#4") == ("team#room", 4), "a session id may hold #"
    assert message_of("s1") is None and message_of("s1#x") is None
    link = source_link("ada", {"type": "message", "id": "s1#27"})
    assert link is not None and link.page == "sessions"
    assert link.params == {"user": "ada", "session": "s1", "message": "27"}
    assert link.url == "./sessions?user=ada&session=s1&message=27"
    item = source_link("ada", FactSource("semantic", "item-9"))
    assert item is not None and (item.page, item.params) == ("memories", {"user": "ada", "memory": "item-9"})
    episode = source_link("ada", {"type": "episode", "id": "ep-1"})
    assert episode is not None and episode.params["episodes_episode"] == "ep-1"
    assert source_link("ada", {"type": "text_sha256", "id": "ab12"}) is None
    assert source_link("ada", {"type": "message"}) is None
    mixed = [FactSource("message", "s1#3"), FactSource("semantic", "i1"), FactSource("message", "s1#3")]
    assert [x.page for x in source_links("ada", mixed)] == ["sessions", "memories"], "in order, without repeats"
    assert [x.page for x in source_links("ada", mixed, messages_only=True)] == ["sessions"]
