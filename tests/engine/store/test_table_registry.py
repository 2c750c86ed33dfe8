"""One table registry (engine/store/schema.py) for copy-store, delete_user, export and the test snapshots: every
table the migrations create is declared there, and delete_user leaves nothing of a user in any per-user table or in
any embedding model's vector tables (issue 29, deliver 3)."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings
from engine.store.schema import BY_NAME, PER_USER, TABLES
from engine.store.vectors.index import table_name
from tests.support.storecheck import row_counts

QUICK = {"lock_timeout_s": 30, "forget_purge_grace_s": 0.2}  # purges owed by delete_user run at once


@pytest.fixture
def engine(tmp_path, embedder) -> MemoryEngine:
    return MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store"), **QUICK), embedder=embedder)


@pytest.fixture(params=["embedded", "team"])
def any_engine(request, tmp_path, embedder) -> MemoryEngine:
    """An embedded store, or a team store (PostgreSQL + S3 on the session's local servers)."""
    if request.param == "embedded":
        return request.getfixturevalue("engine")
    servers = request.getfixturevalue("team_servers")
    dsn, vectors = servers.fresh(request.node.name)
    request.addfinalizer(lambda: servers.drop(dsn))
    return MemoryEngine.open(settings=Settings.from_env({}, store=dsn, vectors=vectors, **QUICK), embedder=embedder)


def test_every_table_the_migrations_create_is_declared_in_the_registry_and_no_other(engine):
    with engine._b.db.read() as conn:
        created = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                "AND schema_name = 'main'"
            ).fetchall()
        }
        columns = {
            (r[0], r[1])
            for r in conn.execute(
                "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = current_database()"
            ).fetchall()
        }
    assert created == set(BY_NAME)
    assert len(TABLES) == len(BY_NAME)  # no table declared twice
    for spec in TABLES:
        if spec.user_column is not None:
            assert (spec.name, spec.user_column) in columns, spec.name
        # a table export does not carry says why
        assert spec.exported_as or spec.why_not_exported, spec.name


def _populate(e: MemoryEngine, user: str) -> None:
    item = e.items.remember(user, f"{user} keeps the spare key under the blue flowerpot")
    e.sessions.add_message(user, "s1", "user", f"hello from {user}")
    e.working.update(user, "s1", {"goals": ["find the key"]})
    e.episodes.record(user, [{"action": "look", "result": "found"}], outcome="success")
    skill = e.skills.register(user, "find", "look under the pot")
    e.skills.report_outcome(user, skill.id, True)
    trace = e.retrieval.retrieve(user, "where is the spare key")
    e.feedback.label(user, item.id, "useful", trace_id=trace.trace_id)
    e.evals.add_case(f"set-{user}", user, "where is the spare key", [item.id], create_set=True)
    e.evals.evaluate(f"set-{user}", method="vector")


def _user_rows(e: MemoryEngine, user: str) -> dict[str, int]:
    with e._b.db.read() as conn:
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t} WHERE user_id=?", [user]).fetchone()[0]) for t in PER_USER
        }


def test_delete_user_removes_every_per_user_row_and_vectors_of_every_model(any_engine):
    engine = any_engine
    _populate(engine, "gone")
    _populate(engine, "kept")
    before_kept = _user_rows(engine, "kept")
    assert before_kept["eval_cases"] == 1 and before_kept["eval_results"] == 1
    # A second embedding model's tables (as after a model switch): a copy of this model's rows under its name.
    index = engine._b.index
    for kind in ("semantic", "procedural"):
        data = index.db.open_table(table_name(kind, index.model)).to_arrow()
        index.db.create_table(table_name(kind, "other-model"), data=data, schema=data.schema)

    # and a vector of the user's with no row (what a crash between the two stores leaves)
    index.add("semantic", ["orphan-1"], ["gone"], ["ghost text"], engine.embedder.embed(["ghost text"]))

    engine.admin.delete_user("gone")

    assert _user_rows(engine, "gone") == {t: 0 for t in PER_USER}
    assert _user_rows(engine, "kept") == before_kept
    for name in index.table_names():
        tb = index.db.open_table(name)
        assert tb.count_rows("user_id = 'gone'") == 0, name
    assert index.db.open_table(table_name("semantic", "other-model")).count_rows("user_id = 'kept'") == 1
    assert "gone" not in engine.sessions.users()
    # store-wide tables keep their rows: the sets and runs may hold other users' cases
    assert row_counts(engine)["eval_sets"] == 2
    assert engine.admin.purges.wait(60)


def test_a_table_the_registry_does_not_declare_fails_every_store_snapshot(engine):
    from tests.support.store_snapshot import snapshot

    snapshot(engine)
    with engine._b.db.write() as conn:
        conn.execute("CREATE TABLE undeclared_notes (user_id VARCHAR, note VARCHAR)")
    with pytest.raises(AssertionError, match="undeclared_notes"):
        snapshot(engine)
