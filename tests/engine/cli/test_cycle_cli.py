"""``memlens maintain``, ``memlens consolidate`` and ``memlens maintenance-log`` (issue 30): a preview by default that
prints each step's changes, ``--apply`` to make them, and the audit log of what was applied."""

from __future__ import annotations

import pytest

from engine import MemoryEngine, Settings
from tests.support.cli import cli
from tests.support.store_snapshot import assert_unchanged, snapshot

U = "ada"
STEPS = [{"action": "open the runbook"}, {"action": "restart the worker"}]


@pytest.fixture
def store(tmp_path, embedder):
    path = tmp_path / "store"
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(path), lock_timeout_s=30), embedder=embedder)
    e.sessions.add_message(U, "s1", "user", "I switched to decaf in March.")
    for _ in range(2):
        e.episodes.record(U, STEPS, outcome="success")
    e.close()
    return path, e


def test_maintain_previews_each_step_and_writes_nothing(store):
    path, e = store
    before = snapshot(e)

    run = cli(path, "maintain", "--user", U, "--mine-skills")

    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].startswith("Preview of maintenance run run_") and lines[0].endswith("5 change(s)")
    assert "consolidate: 2 change(s) [s1: consolidate_offline]" in lines
    assert any(
        line.startswith("  - new general memory item_") and "'I switched to decaf in March.'" in line for line in lines
    )
    assert "reflect: 2 change(s) [reflection_offline]" in lines
    assert any(line.startswith("  - register skill open_the_runbook_then_restart_the_worker") for line in lines)
    assert lines[-1] == "Rerun with --apply to make these changes."
    assert_unchanged(before, e, "memlens maintain without --apply")


def test_maintain_apply_then_the_log_shows_every_change_and_a_second_run_has_none(store):
    path, e = store
    applied = cli(path, "--json", "maintain", "--user", U, "--apply", "--no-reflect")
    assert applied.code == 0, applied.err
    report = applied.json()
    assert report["applied"] is True and [s["name"] for s in report["steps"]] == [
        "consolidate",
        "reflect",
        "mine_skills",
        "expire",
    ]
    assert report["steps"][1]["note"] == "skipped" and report["steps"][2]["note"] == "skipped"  # setting is off

    log = cli(path, "--json", "maintenance-log", "--user", U).json()
    assert sorted((r["step"], r["action"]) for r in log) == [
        ("consolidate", "consolidated"),
        ("consolidate", "memorize"),
    ]
    assert {r["actor"] for r in log} == {"cli"} and {r["run_id"] for r in log} == {report["run_id"]}
    table = cli(path, "maintenance-log", "--run", report["run_id"])
    assert table.code == 0 and "memorize" in table.out and "s1#1" in table.out

    again = cli(path, "maintain", "--user", U, "--apply", "--no-reflect")
    assert again.code == 0 and again.out.splitlines()[0].endswith(": 0 change(s)")


def test_consolidate_a_session_with_clear_session(store):
    path, e = store
    preview = cli(path, "consolidate", "--user", U, "--session", "s1", "--clear-session")
    assert preview.code == 0 and "  - clear session s1 (1 messages)" in preview.out
    assert e.sessions.list_sessions(U).total == 1

    run = cli(path, "consolidate", "--user", U, "--session", "s1", "--apply", "--clear-session")

    assert run.code == 0 and run.out.startswith("Applied maintenance run")
    assert e.sessions.list_sessions(U).total == 0
    assert [i.content for i in e.items.list_items(U).rows] == ["I switched to decaf in March."]


@pytest.mark.parametrize(
    "argv",
    [
        ["maintain", "--user", "bad user"],
        ["maintain", "--user", U, "--window", "0"],
        ["maintain", "--user", U, "--mining-window", "x"],
        ["consolidate", "--user", U],
        ["consolidate", "--user", U, "--session", "../s"],
        ["maintenance-log", "--run", "r'; --"],
    ],
)
def test_bad_arguments_are_one_error_line_and_write_nothing(store, argv):
    path, e = store
    before = snapshot(e)
    run = cli(path, *argv)
    assert run.code == 2 and run.one_error_line, run.err
    assert_unchanged(before, e, " ".join(argv))


def test_the_log_of_an_empty_store_says_so(store):
    path, _ = store
    assert cli(path, "maintenance-log").out == "(no maintenance-log entries)\n"
