"""``memlens import letta|llmemory``: the importers end to end through the CLI (in-process), as JSON and as the human
report; ``--dry-run`` writes nothing; a second import writes nothing and says so; a missing or bad source is one
error line and changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import cli, open_store

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "interop"
LETTA = FIXTURES / "letta_memgpt_agent.af"
LLMEMORY = FIXTURES / "llmemory_store"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("import-cli") / "store"


def test_letta_dry_run_reports_and_writes_nothing_then_the_import_writes_it(store, embedder):
    dry = cli(store, "import", "letta", str(LETTA), "--user", "brad", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    planned = dry.json()
    assert planned["dry_run"] and planned["written"] == {"item": 2, "message": 6, "working": 2}
    human = cli(store, "import", "letta", str(LETTA), "--user", "brad", "--dry-run")
    assert (
        human.code == 0 and "Would import from letta" in human.out and "Nothing was written (--dry-run)." in human.out
    )
    engine = open_store(store, embedder)
    try:
        assert engine.sessions.list_sessions("brad").total == 0 and engine.items.list_items("brad").total == 0
    finally:
        engine.close()
    run = cli(store, "--json", "import", "letta", str(LETTA), "--user", "brad")
    assert run.code == 0, run.err
    report = run.json()
    assert report["origin"] == "letta" and not report["dry_run"] and report["written"] == planned["written"]
    assert any(s["reason"].startswith("the system prompt") for s in report["skipped"])
    messages = cli(store, "--json", "messages", "--user", "brad", "--session", "letta:memgpt_agent")
    assert messages.code == 0 and len(messages.json()) == 6


def test_a_dry_run_into_a_store_that_does_not_exist_reports_and_creates_nothing(tmp_path):
    target = tmp_path / "not-yet"
    dry = cli(target, "import", "letta", str(LETTA), "--user", "brad", "--dry-run")
    assert dry.code == 0, dry.err
    assert "Would import from letta" in dry.out and "did not create it" in dry.out
    assert not target.exists()
    planned = cli(target, "--json", "import", "letta", str(LETTA), "--user", "brad", "--dry-run").json()
    assert planned["store_created"] is False and planned["written"] == {"item": 2, "message": 6, "working": 2}
    assert list(tmp_path.iterdir()) == []


def test_a_second_letta_import_says_everything_was_already_there(store):
    again = cli(store, "import", "letta", str(LETTA), "--user", "brad")
    assert again.code == 0, again.err
    lines = again.out.splitlines()
    assert lines[0] == f"Imported from letta ({LETTA}): nothing."
    assert lines[1] == "Already in the store (from an earlier import): 2 items, 6 messages, 2 working slots."
    assert "Left out" in again.out and "× the system prompt" in again.out


def test_llmemory_import_with_a_user_filter_as_json_and_as_text(store, tmp_path):
    root = tmp_path / "llmemory"
    shutil.copytree(LLMEMORY, root)
    shutil.copytree(root / "brad", root / "zoe")
    run = cli(store, "--json", "import", "llmemory", str(root), "--user", "zoe")
    assert run.code == 0, run.err
    report = run.json()
    assert report["origin"] == "llmemory" and report["written"]["item"] == 3 and "message" not in report["written"]
    assert report["written"]["relation"] == 3 and report["written"]["outcome"] == 4
    items = cli(store, "--json", "search", "--user", "zoe", "tea or coffee", "--kind", "semantic")
    assert items.code == 0, items.err
    assert "Brad prefers tea to coffee" in {hit["text"] for hit in items.json()}
    text = cli(store, "import", "llmemory", str(root))
    assert text.code == 0, text.err
    assert text.out.startswith(f"Imported from llmemory ({root}): ")  # brad's part of the store, and his sessions
    assert "3 messages" in text.out.splitlines()[0] and "Already in the store" in text.out


@pytest.mark.parametrize(
    "argv",
    [
        ("import", "letta", "/nonexistent/agent.af"),
        ("import", "llmemory", "/nonexistent/llmemory_data"),
        ("import", "llmemory", str(LLMEMORY), "--user", "nobody"),
    ],
)
def test_a_missing_source_is_one_error_line(store, argv):
    run = cli(store, *argv)
    assert run.code != 0 and run.one_error_line and run.out == ""


def test_a_bad_record_is_one_error_line_naming_it_and_nothing_is_written(store, tmp_path, embedder):
    data = json.loads(LETTA.read_text())
    data["passages"][0]["created_at"] = "yesterday-ish"
    bad = tmp_path / "bad.af"
    bad.write_text(json.dumps(data))
    run = cli(store, "import", "letta", str(bad), "--user", "someone")
    assert run.code != 0 and run.one_error_line, run.err
    assert "letta item 'passage-0'" in run.err and "created_at" in run.err
    engine = open_store(store, embedder)
    try:
        assert engine.sessions.list_sessions("someone").total == 0 and engine.items.list_items("someone").total == 0
    finally:
        engine.close()


def test_import_needs_a_system_and_a_source(store):
    for argv in (("import",), ("import", "letta"), ("import", "chroma", "x")):
        run = cli(store, *argv)
        assert run.code == 2 and run.one_error_line and "memlens import" in run.err
