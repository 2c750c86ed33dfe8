"""Hostile input at every CLI entry point: exit status 2, exactly one line on stderr, nothing on stdout and nothing
written to the store (every DuckDB and LanceDB table counted before and after)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import cli, copy_store, open_store
from tests.support.storecheck import snapshot

HOSTILE_IDS = ["a' OR '1'='1", "../etc", "a\x00b", "", " ", "x" * 200, "ada;DROP TABLE items", "ada\nroot", "ada\n"]
MEGABYTE = "word " * 200_000

ID_ENTRY_POINTS = [
    ("sessions", "--user", "{}"),
    ("messages", "--user", "{}", "--session", "ada-s01"),
    ("messages", "--user", "ada", "--session", "{}"),
    ("episodes", "--user", "{}"),
    ("search", "--user", "{}", "refund"),
    ("skills", "--user", "{}"),
    ("working", "--user", "{}", "--session", "ada-s01", "--set", "goals=1"),
    ("working", "--user", "ada", "--session", "{}", "--set", "goals=1"),
    ("forget", "--user", "{}", "--kind", "semantic", "--ids", "ada-item-001", "--reason", "r"),
    ("forget", "--user", "ada", "--kind", "semantic", "--ids", "ada-item-001", "{}", "--reason", "r"),
    ("forget-log", "--user", "{}"),
    ("export", "--user", "{}"),
    ("prune", "--user", "{}", "--rule", "max", "--apply"),
    ("reflect", "--user", "{}"),
    ("retrieve", "--user", "{}", "refund"),
    ("retrieve", "--user", "ada", "--session", "{}", "refund"),
    ("feedback", "--user", "{}", "--useful", "ada-item-001"),
    ("feedback", "--user", "ada", "--useful", "{}"),
    ("feedback", "--user", "ada", "--useful", "ada-item-001", "--trace", "{}"),
    ("trace", "--id", "{}"),
    ("replay", "--id", "{}"),
    ("traces", "--user", "{}"),
]

BAD_VALUES = [
    # empty, huge and NUL text
    ("search", "--user", "ada", ""),
    ("search", "--user", "ada", "   "),
    ("search", "--user", "ada", MEGABYTE),
    ("search", "--user", "ada", "ref\x00und"),
    ("retrieve", "--user", "ada", ""),
    ("retrieve", "--user", "ada", MEGABYTE),
    ("retrieve", "--user", "ada", "ref\x00und"),
    ("forget", "--user", "ada", "--kind", "semantic", "--ids", "ada-item-001", "--reason", ""),
    ("forget", "--user", "ada", "--kind", "semantic", "--ids", "ada-item-001", "--reason", MEGABYTE),
    ("feedback", "--user", "ada", "--useful", "ada-item-001", "--note", MEGABYTE),
    # invalid JSON and slot names for working memory
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals=[1, 2"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals="),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals=NaN"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals=Infinity"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "../x=1"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "goals\n=1"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", "x' OR '1'='1=1"),
    ("working", "--user", "ada", "--session", "ada-s01", "--set", json.dumps("x" * 300_000).join(["big=", ""])),
    # unknown kinds, modes and rules
    ("search", "--user", "ada", "--kind", "bogus", "refund"),
    ("search", "--user", "ada", "--kind", "semantic' OR '1'='1", "refund"),
    ("forget", "--user", "ada", "--kind", "bogus", "--ids", "ada-item-001", "--reason", "r"),
    ("forget", "--user", "ada", "--kind", "semantic", "--ids", "ada-item-001", "--reason", "r", "--mode", "x"),
    ("skills", "--user", "ada", "--kind", "bogus"),
    ("prune", "--user", "ada", "--rule", "bogus", "--apply"),
    # numbers out of range or not numbers
    ("sessions", "--user", "ada", "--limit", "0"),
    ("sessions", "--user", "ada", "--limit", "-1"),
    ("sessions", "--user", "ada", "--limit", "abc"),
    ("sessions", "--user", "ada", "--offset", "-5"),
    ("search", "--user", "ada", "--limit", "100000", "refund"),
    ("retrieve", "--user", "ada", "--hops", "9", "refund"),
    ("retrieve", "--user", "ada", "--budget", "0", "refund"),
    ("retrieve", "--user", "ada", "--now", "yesterday", "refund"),
    ("reflect", "--user", "ada", "--window", "0"),
    # missing or unknown commands and options
    (),
    ("bogus",),
    ("sessions",),
    ("forget", "--user", "ada", "--kind", "semantic", "--ids", "ada-item-001"),
    ("search", "--user", "ada", "--no-such-option", "refund"),
]


@pytest.fixture(scope="module")
def store(demo_store_template: Path, tmp_path_factory) -> Path:
    return copy_store(demo_store_template, tmp_path_factory.mktemp("cli-hostile") / "store")


@pytest.fixture(scope="module")
def engine(store: Path, embedder):
    return open_store(store, embedder)


def assert_refused_and_nothing_written(store: Path, engine, argv) -> str:
    before = snapshot(engine)
    run = cli(store, *argv)
    assert run.code == 2, (argv[:6], run.code, run.err)
    assert run.one_error_line, repr(run.err[:300])
    assert run.out == ""
    assert snapshot(engine) == before
    return run.err


@pytest.mark.parametrize(
    "template", ID_ENTRY_POINTS, ids=lambda t: "-".join(a for a in t if a.startswith("--") or a.isalpha())[:40]
)
def test_hostile_ids_are_refused_everywhere(store, engine, template):
    before = snapshot(engine)
    for bad in HOSTILE_IDS:  # one snapshot around all of them keeps this fast; any write would still show
        run = cli(store, *[bad if a == "{}" else a for a in template])
        assert run.code == 2 and run.one_error_line and run.out == "", (bad, run.err[:300])
        assert "\x00" not in run.err
    assert snapshot(engine) == before


@pytest.mark.parametrize("argv", BAD_VALUES, ids=lambda a: " ".join(x[:12] for x in a[:5]) or "no-command")
def test_bad_values_are_refused_with_one_line(store, engine, argv):
    assert_refused_and_nothing_written(store, engine, list(argv))


def test_an_error_message_names_the_rule_broken(store):
    err = cli(store, "sessions", "--user", "a' OR '1'='1").err
    assert err.startswith("error: argument --user/-u: invalid user id \"a' OR '1'='1\"")
    assert "letters, digits" in err
    assert "slot" in cli(store, "working", "--user", "ada", "--session", "s", "--set", "Bad-Slot=1").err
    assert "empty" in cli(store, "search", "--user", "ada", "").err


def test_a_store_path_that_is_a_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "not-a-folder"
    path.write_text("hello")
    run = cli(path, "users")
    assert run.code == 2 and run.one_error_line and "not a folder" in run.err
    assert path.read_text() == "hello"


# -- ingest: all or nothing, the bad line named ----------------------------------------------------------------------
GOOD = [
    {"kind": "message", "user_id": "zed", "session_id": "zed-s1", "role": "user", "content": "hello there"},
    {"kind": "item", "user_id": "zed", "id": "zed-item-1", "category": "general", "content": "Zed likes tea."},
    {"kind": "working", "user_id": "zed", "session_id": "zed-s1", "slot": "goals", "value": ["learn"]},
    {"kind": "skill", "user_id": "zed", "id": "zed-sk-1", "name": "brew", "body": "Boil water, steep 3 minutes."},
    {"kind": "outcome", "user_id": "zed", "skill_id": "zed-sk-1", "success": True},
]
BAD_LINES = {
    "invalid-json": '{"kind": "message", "user_id": ',
    "not-an-object": '["kind", "message"]',
    "unknown-kind": json.dumps({"kind": "memory", "user_id": "zed"}),
    "unknown-field": json.dumps({**GOOD[0], "sql": "DROP TABLE items"}),
    "quote-user": json.dumps({**GOOD[0], "user_id": "zed' OR '1'='1"}),
    "dotdot-session": json.dumps({**GOOD[0], "session_id": "../../etc"}),
    "nul-content": json.dumps({**GOOD[1], "id": "zed-item-2", "content": "tea\x00"}),
    "empty-content": json.dumps({**GOOD[1], "id": "zed-item-2", "content": "   "}),
    "megabyte-content": json.dumps({**GOOD[1], "id": "zed-item-2", "content": MEGABYTE}),
    "nan-importance": '{"kind": "item", "user_id": "zed", "id": "zed-item-2", "content": "x", "importance": NaN}',
    "unknown-memory-kind": json.dumps(
        {"kind": "forget_log", "user_id": "zed", "memory_type": "bogus", "ids": [], "mode": "soft", "reason": "r"}
    ),
    "bad-slot": json.dumps({**GOOD[2], "slot": "Bad Slot"}),
    "bad-role": json.dumps({**GOOD[0], "role": "root"}),
    "bad-time": json.dumps({**GOOD[0], "created_at": "last tuesday"}),
}


@pytest.mark.parametrize("what", sorted(BAD_LINES))
def test_ingest_names_the_bad_line_and_writes_nothing_from_the_file(store, engine, tmp_path, what):
    lines = [json.dumps(r) for r in GOOD[:3]] + [BAD_LINES[what]] + [json.dumps(r) for r in GOOD[3:]]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = assert_refused_and_nothing_written(store, engine, ["ingest", str(path)])
    assert "line 4" in err
    assert "zed" not in cli(store, "--json", "users").json()


def test_ingest_of_an_outcome_for_an_unknown_skill_writes_nothing(store, engine, tmp_path):
    path = tmp_path / "records.jsonl"
    bad = {"kind": "outcome", "user_id": "zed", "skill_id": "no-such-skill", "success": False}
    path.write_text("\n".join(json.dumps(r) for r in [*GOOD, bad]), encoding="utf-8")
    err = assert_refused_and_nothing_written(store, engine, ["ingest", str(path)])
    assert "no-such-skill" in err


def test_ingest_of_a_file_that_is_not_utf8_names_the_line(store, engine, tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(GOOD[0]).encode() + b"\n" + '{"content": "caf\xe9"}'.encode("latin-1") + b"\n")
    assert "line 2" in assert_refused_and_nothing_written(store, engine, ["ingest", str(path)])


@pytest.mark.parametrize("name", ["missing.jsonl", "."])
def test_ingest_of_a_missing_file_or_a_folder_is_one_line(store, engine, tmp_path, name):
    path = tmp_path / name
    assert_refused_and_nothing_written(store, engine, ["ingest", str(path)])


def test_the_good_lines_alone_do_ingest(tmp_path):
    """The control for the tests above: the same file without its bad line is accepted."""
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in GOOD) + "\n", encoding="utf-8")
    run = cli(tmp_path / "fresh", "--json", "ingest", str(path))
    assert run.code == 0, run.err
    assert run.json()["counts"] == {
        **run.json()["counts"],
        "message": 1,
        "item": 1,
        "working": 1,
        "skill": 1,
        "outcome": 1,
    }
