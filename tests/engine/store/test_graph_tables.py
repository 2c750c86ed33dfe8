"""The graph tables go wherever the table registry sends a user's rows: copy-store moves them from a folder to a team
store (PostgreSQL) row for row, delete_user removes a user's graph on both stores and leaves the others', and the
store statistics count them."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings
from engine.records import Extraction, FactSource, SourcedExtraction, Triple
from engine.store.copy import copy_store

GRAPH_TABLES = {
    "entities": "id, user_id, name, name_key, type, CAST(aliases AS VARCHAR), created_at, updated_at, archived_at",
    "relations": "id, user_id, subject_id, predicate, object_id, valid_from, valid_to, superseded_by, "
    "CAST(sources AS VARCHAR), method, confidence, created_at, archived_at, archive_reason",
    "entity_mentions": "user_id, entity_id, kind, memory_id, method, created_at",
}


def build_graph(engine: MemoryEngine, user: str) -> dict[str, str]:
    """A user's small graph: a superseded version, an archived relation, a mention of a stored item."""
    item = engine.items.remember(user, f"{user} moved from Leeds to York")
    engine.graph.add_fact(user, "Ada", "lives_in", "Leeds", valid_from="2023-01-01T00:00:00Z")
    york = engine.graph.add_fact(
        user, "Ada", "lives_in", "York", valid_from="2024-01-01T00:00:00Z", sources=[FactSource("semantic", item.id)]
    )
    tea = engine.graph.add_fact(user, "Ada", "likes", "tea", confidence=0.5).relations_added[0]
    engine.graph.forget(user, [tea], "not true")
    se = SourcedExtraction(
        Extraction((("Ada", "person"), ("York", "place")), (Triple("Ada", "lives_in", "York"),), "offline"),
        engine.graph.relation(user, york.relations_added[0]).valid_from,
        ("semantic", item.id),
        (FactSource("semantic", item.id),),
    )
    with engine._b.db.write() as conn:
        engine.graph.write(conn, user, [se])
    return {"item": item.id, "tea": tea}


def graph_rows(engine: MemoryEngine, user: str | None = None) -> dict[str, list[tuple]]:
    where, params = ("WHERE user_id=?", [user]) if user else ("", [])
    with engine._b.db.read() as conn:
        return {
            t: [
                tuple(r) for r in conn.execute(f"SELECT {cols} FROM {t} {where} ORDER BY 1, 2, 3, 4", params).fetchall()
            ]
            for t, cols in GRAPH_TABLES.items()
        }


@pytest.mark.team_store
def test_copy_store_moves_the_graph_row_for_row_to_a_team_store(tmp_path, team_servers, embedder):
    settings = Settings.from_env({}, store=str(tmp_path / "src"), graph_extraction="off")
    src = MemoryEngine.open(settings=settings, embedder=embedder)
    build_graph(src, "ada")
    build_graph(src, "bob")
    with src._b.db.write() as conn:  # a maintenance run's audit entry (its table is copied too)
        conn.execute(
            "INSERT INTO maintenance_log (user_id, run_id, step, action, target_kind, target_ids, detail, actor, "
            "occurred_at) VALUES (?,?,?,?,?,?,?,?,now())",
            ["ada", "run-1", "expire", "archive", "episodic", '["ep-1"]', "{}", "test"],
        )
    before = graph_rows(src)
    assert all(before.values())
    src.close()
    dsn, vectors = team_servers.fresh("graph-copy")
    report = copy_store(str(src.path), dsn, destination_vectors=vectors)
    assert {t: report.rows[t] for t in (*GRAPH_TABLES, "maintenance_log")} == {
        **{t: len(rows) for t, rows in before.items()},
        "maintenance_log": 1,
    }
    team = MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=30), embedder=embedder, vectors=vectors)
    assert graph_rows(team) == before
    ada = team.graph.resolve("ada", "Ada")
    assert [r.object for r in team.graph.relations("ada", ada.id, as_of="2023-06-01T00:00:00Z").rows] == ["Leeds"]
    team.close()
    team_servers.drop(dsn)


@pytest.fixture
def engine(settings: Settings, embedder) -> MemoryEngine:
    """Extraction off: the graph rows are exactly the ones the tests write."""
    return MemoryEngine.open(settings=settings.with_overrides({"graph_extraction": "off"}), embedder=embedder)


@pytest.mark.both_stores
def test_delete_user_removes_the_users_graph_and_leaves_the_others(engine):
    e = engine
    build_graph(e, "ada")
    build_graph(e, "bob")
    bob = graph_rows(e, "bob")
    e.admin.delete_user("ada")
    assert graph_rows(e, "ada") == {t: [] for t in GRAPH_TABLES}
    assert graph_rows(e, "bob") == bob
    assert e.graph.resolve("ada", "Ada") is None and e.graph.resolve("bob", "Ada") is not None


@pytest.mark.both_stores
def test_store_stats_count_the_graph(engine):
    e = engine
    build_graph(e, "ada")
    stats = e.admin.stats()
    assert (
        stats.graph
        == e.graph.stats()
        == {
            "entities": 4,
            "relations": 1,
            "superseded": 1,
            "archived": 1,
            "mentions": 2,
        }
    )
    assert stats.per_user["ada"]["entities"] == 4 and stats.per_user["ada"]["relations"] == 1
