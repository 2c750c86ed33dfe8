"""Commands that only read never create the store they are pointed at, and the raw errors of issue 29 are named.

`python -m engine --store file:///some/new/dir stats` used to create that folder (migrated, empty) as a side effect
of looking. Every read invocation (engine/cli/read_commands.py) now exits 2 with one line naming the missing store
and leaves no folder; a write still creates the store on first use. `working_restore(..., "abc")` used to raise a raw
ValueError from ``int("abc")``.
"""

from __future__ import annotations

import argparse

import pytest

from engine import InvalidInput, MemoryEngine, Settings
from engine.cli.main import build_parser
from engine.cli.read_commands import READ_COMMANDS, READ_UNLESS
from tests.support.cli import cli
from tests.support.store_snapshot import snapshot

U = "ada"

READ_INVOCATIONS = {
    "users": [],
    "sessions": ["--user", U],
    "messages": ["--user", U, "--session", "s1"],
    "episodes": ["--user", U],
    "search": ["--user", U, "tea"],
    "skills": ["--user", U],
    "forget-log": ["--user", U],
    "stats": [],
    "export": ["--user", U],
    "trace": ["--id", "tr-1"],
    "traces": [],
    "export-otel": ["--user", U],
    "replay": ["--id", "tr-1"],
    "eval-sets": [],
    "eval-runs": [],
    "working": ["--user", U, "--session", "s1"],
    "prune": ["--user", U, "--rule", "idle"],
    "prune-traces": ["--older-than", "1"],
    "maintain": ["--user", U],
    "consolidate": ["--user", U, "--session", "s1"],
    "maintenance-log": [],
    "graph": ["entities", "--user", U],
}
# Every command that may write: a new command must be put on one side or the other (see the last test).
WRITE_COMMANDS = {
    "demo",
    "ingest",
    "forget",
    "reflect",
    "reindex",
    "keys",
    "repair",
    "optimize",
    "retrieve",
    "feedback",
    "mcp",
    "dashboard",  # its server loads the demo into a new store on a first start
    "copy-store",
    "eval",
    "import-benchmark",
    "import",  # import letta|llmemory|mem0 writes; its --dry-run into a store not there yet uses a scratch store
}


@pytest.mark.parametrize("command", sorted(READ_INVOCATIONS))
def test_a_read_command_on_a_store_that_does_not_exist_creates_nothing(tmp_path, command):
    target = tmp_path / "some" / "new" / "dir"
    run = cli(f"file://{target}", command, *READ_INVOCATIONS[command])
    assert run.code == 2, (run.out, run.err)
    assert run.one_error_line and "no store at" in run.err and str(target) in run.err, run.err
    assert not (tmp_path / "some").exists(), "no folder was created"


def test_a_read_command_in_an_empty_existing_folder_creates_no_store_in_it(tmp_path):
    run = cli(tmp_path, "stats")
    assert run.code == 2 and "no store at" in run.err
    assert list(tmp_path.iterdir()) == []


def test_a_write_still_creates_the_store_and_reads_then_see_it(tmp_path):
    store = tmp_path / "new"
    run = cli(f"file://{store}", "working", "--user", U, "--session", "s1", "--set", 'goals=["tea"]')
    assert run.code == 0, run.err
    assert (store / "memlens.duckdb").is_file()
    run = cli(f"file://{store}", "--json", "working", "--user", U, "--session", "s1")
    assert run.code == 0 and run.json()["goals"] == ["tea"]


def test_every_command_is_classified_as_read_or_write():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(sub.choices)
    reads = set(READ_COMMANDS) | set(READ_UNLESS)
    assert reads == set(READ_INVOCATIONS)
    assert not reads & WRITE_COMMANDS
    assert commands == reads | WRITE_COMMANDS, sorted(commands ^ (reads | WRITE_COMMANDS))


# -- working_restore's edit id ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit_id", ["abc", "1", 2.5, True, None, -1, 2**70])
def test_working_restore_refuses_an_edit_id_that_is_not_an_integer_by_name(tmp_path, embedder, edit_id):
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)
    e.working.update(U, "s1", {"goals": ["tea"]})
    before = snapshot(e)
    with pytest.raises(InvalidInput, match="edit id"):
        e.working.restore(U, "s1", edit_id)  # type: ignore[arg-type]
    assert snapshot(e) == before
    good = e.working.history(U, "s1")[0].id
    assert e.working.restore(U, "s1", good, "new") == ["tea"]
    e.close()
