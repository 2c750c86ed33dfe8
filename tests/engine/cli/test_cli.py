"""`python -m engine`: the memory commands, run in-process against a copy of the demo store (issue 2 §8).

The subprocess path (the real `python -m engine`) is covered in test_cli_subprocess.py; hostile input in
test_cli_hostile.py; retrieve/trace/replay/feedback in test_cli_retrieval.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from engine import TYPED_SLOTS
from tests.support.cli import cli, copy_store, open_store
from tests.support.storecheck import snapshot


@pytest.fixture(scope="module")
def demo_store(demo_store_template: Path, tmp_path_factory) -> Path:
    """One demo store for the read-only tests of this module."""
    return copy_store(demo_store_template, tmp_path_factory.mktemp("cli-read") / "store")


@pytest.fixture
def store(demo_store_template: Path, tmp_path: Path) -> Path:
    """A private demo store for a test that writes."""
    return copy_store(demo_store_template, tmp_path / "store")


# -- listing ---------------------------------------------------------------------------------------------------------
def test_users_prints_the_demo_users_as_a_json_list_and_a_table_with_counts(demo_store):
    run = cli(demo_store, "--json", "users")
    assert run.code == 0 and run.err == ""
    assert run.json() == ["ada", "mira", "tomas"]
    table = cli(demo_store, "users").out.splitlines()
    assert table[0].split()[:3] == ["user", "sessions", "messages"]
    assert table[2].split()[:3] == ["ada", "6", "117"]


def test_json_is_accepted_before_or_after_the_command(demo_store):
    assert cli(demo_store, "users", "--json").json() == cli(demo_store, "--json", "users").json()


def test_sessions_lists_newest_first_with_counts_and_paginates(demo_store):
    rows = cli(demo_store, "--json", "sessions", "--user", "ada").json()
    assert [r["session_id"] for r in rows] == ["ada-s06", "ada-s05", "ada-s04", "ada-s03", "ada-s02", "ada-s01"]
    assert set(rows[0]) == {"user_id", "session_id", "created_at", "last_activity_at", "message_count", "token_count"}
    assert sum(r["message_count"] for r in rows) == 117
    page = cli(demo_store, "--json", "sessions", "--user", "ada", "--limit", "2", "--offset", "1").json()
    assert [r["session_id"] for r in page] == ["ada-s05", "ada-s04"]
    assert "sessions 2-3 of 6" in cli(demo_store, "sessions", "--user", "ada", "--limit", "2", "--offset", "1").out


def test_sessions_search_finds_sessions_by_message_text(demo_store):
    rows = cli(demo_store, "--json", "sessions", "--user", "ada", "--search", "ruff format --check").json()
    assert [r["session_id"] for r in rows] == ["ada-s01"]


def test_messages_come_in_order_with_roles_and_content(demo_store):
    rows = cli(demo_store, "--json", "messages", "--user", "ada", "--session", "ada-s01").json()
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["role"] == "system" and "Paylane" in rows[0]["content"]
    assert {"tool", "tool_result"} <= {r["role"] for r in rows}


def test_messages_of_an_unknown_session_is_a_one_line_error(demo_store):
    run = cli(demo_store, "messages", "--user", "ada", "--session", "no-such-session")
    assert run.code == 2 and run.one_error_line and "no-such-session" in run.err
    assert run.out == ""


def test_episodes_list_newest_first_and_filter_by_outcome(demo_store):
    rows = cli(demo_store, "--json", "episodes", "--user", "ada", "--outcome", "failure").json()
    assert rows and all(r["outcome"] == "failure" for r in rows)
    dates = [r["created_at"] for r in cli(demo_store, "--json", "episodes", "--user", "ada").json()]
    assert dates == sorted(dates, reverse=True)


# -- search and skills -----------------------------------------------------------------------------------------------
def test_search_returns_id_kind_text_score_best_first(demo_store):
    hits = cli(demo_store, "--json", "search", "--user", "ada", "who owns the refund reconciliation job").json()
    assert hits and all(set(h) == {"id", "kind", "text", "score"} for h in hits)
    assert hits[0]["id"] == "ada-item-026"  # "The refund reconciliation job is owned by Priya Raman."
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert len(hits) <= 10


def test_search_kind_and_limit_restrict_the_results(demo_store):
    hits = cli(
        demo_store,
        "--json",
        "search",
        "--user",
        "ada",
        "--kind",
        "procedural",
        "--limit",
        "3",
        "pull request description",
    ).json()
    assert len(hits) == 3 and {h["kind"] for h in hits} == {"procedural"}


def test_a_query_may_be_given_as_several_words(demo_store):
    quoted = cli(demo_store, "--json", "search", "--user", "ada", "refund reconciliation").json()
    words = cli(demo_store, "--json", "search", "--user", "ada", "refund", "reconciliation").json()
    assert quoted == words


def test_skills_are_ranked_by_wilson_lower_bound_with_rate_and_counts(demo_store):
    rows = cli(demo_store, "--json", "skills", "--user", "ada").json()
    required = {
        "id",
        "name",
        "version",
        "kind",
        "success_count",
        "failure_count",
        "success_rate",
        "wilson_lower",
        "rank",
    }
    assert rows and all(required <= set(r) for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["wilson_lower"] for r in rows] == sorted((r["wilson_lower"] for r in rows), reverse=True)
    for r in rows:
        trials = r["success_count"] + r["failure_count"]
        assert r["success_rate"] == pytest.approx(r["success_count"] / trials if trials else 0.5)
    # 40/50 beats a perfect 3/3: proven utility, not the raw rate
    names = {(r["name"], r["version"]): r["rank"] for r in rows}
    assert names[("pr-description", 2)] < names[("pr-description", 3)]


def test_skills_query_and_limit(demo_store):
    rows = cli(demo_store, "--json", "skills", "--user", "ada", "--query", "pr-description", "--limit", "2").json()
    assert len(rows) == 2 and {r["name"] for r in rows} == {"pr-description"}


# -- working memory --------------------------------------------------------------------------------------------------
def test_working_shows_typed_slots_first_then_custom_ones(demo_store):
    slots = cli(demo_store, "--json", "working", "--user", "ada", "--session", "ada-s05").json()
    assert list(slots)[:6] == list(TYPED_SLOTS)
    assert slots["incident_ref"] is not None and slots["current_task"] is not None


def test_working_set_writes_several_slots_in_one_transaction_and_prints_them(store, embedder):
    run = cli(
        store,
        "--json",
        "working",
        "--user",
        "ada",
        "--session",
        "ada-s01",
        "--set",
        'goals=["ship it"]',
        "--set",
        'budget={"tokens": 1200, "ok": true}',
        "--set",
        "scratchpad=null",
    )
    assert run.code == 0, run.err
    slots = run.json()
    assert slots["goals"] == ["ship it"] and slots["budget"] == {"tokens": 1200, "ok": True}
    history = open_store(store, embedder).working.history("ada", "ada-s01")
    assert {h.slot for h in history} == {"goals", "budget"} and {h.source for h in history} == {"cli"}


def test_working_set_with_one_invalid_json_value_writes_nothing(store, embedder):
    before = snapshot(open_store(store, embedder))
    run = cli(
        store,
        "working",
        "--user",
        "ada",
        "--session",
        "ada-s01",
        "--set",
        'goals=["fine"]',
        "--set",
        "scratchpad={not json",
    )
    assert run.code == 2 and run.one_error_line and "scratchpad" in run.err
    assert snapshot(open_store(store, embedder)) == before


# -- forgetting ------------------------------------------------------------------------------------------------------
def test_forget_reports_forgotten_and_unknown_ids_and_logs_the_reason(store):
    run = cli(
        store,
        "--json",
        "forget",
        "--user",
        "ada",
        "--kind",
        "semantic",
        "--ids",
        "ada-item-026",
        "no-such-item",
        "--reason",
        "wrong owner",
    )
    assert run.code == 0, run.err
    assert run.json() == {"forgotten": 1, "ids": ["ada-item-026"], "unknown": ["no-such-item"]}
    entry = cli(store, "--json", "forget-log", "--user", "ada").json()[0]
    assert entry["ids"] == ["ada-item-026"] and entry["reason"] == "wrong owner"
    assert entry["actor"] == "cli" and entry["mode"] == "soft" and entry["memory_type"] == "semantic"
    hits = cli(store, "--json", "search", "--user", "ada", "refund reconciliation job owner").json()
    assert "ada-item-026" not in {h["id"] for h in hits}


def test_hard_forget_removes_the_memory_from_search_and_export(store):
    run = cli(
        store,
        "--json",
        "forget",
        "--user",
        "ada",
        "--kind",
        "episodic",
        "--ids",
        "ep-ada-01",
        "--reason",
        "test",
        "--mode",
        "hard",
    )
    assert run.json()["forgotten"] == 1
    exported = [json.loads(line) for line in cli(store, "export", "--user", "ada").out.splitlines()]
    assert "ep-ada-01" not in {r.get("id") for r in exported}


def test_forget_log_lists_the_demo_entries_newest_first(demo_store):
    entries = cli(demo_store, "--json", "forget-log", "--user", "ada").json()
    assert {"ids", "count", "mode", "reason", "actor", "at", "memory_type"} <= set(entries[0])
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    assert any(e["mode"] == "hard" and e["ids"] == ["ep-ada-00-pii"] for e in entries)


# -- export and ingest -----------------------------------------------------------------------------------------------
def test_export_prints_one_json_record_per_line_of_every_kind(demo_store):
    run = cli(demo_store, "export", "--user", "tomas")
    records = [json.loads(line) for line in run.out.splitlines()]
    assert {r["kind"] for r in records} == {
        "category",
        "item",
        "episode",
        "skill",
        "outcome",
        "message",
        "working",
        "feedback",
        "forget_log",
        "entity",  # the graph the demo's memories were extracted into
        "relation",
        "mention",
    }
    assert {r["user_id"] for r in records} == {"tomas"}


def test_export_then_ingest_into_a_fresh_store_gives_the_identical_export(demo_store, tmp_path):
    exported = cli(demo_store, "export", "--user", "tomas").out
    path = tmp_path / "tomas.jsonl"
    path.write_text(exported, encoding="utf-8")
    fresh = tmp_path / "fresh"
    run = cli(fresh, "--json", "ingest", str(path))
    assert run.code == 0, run.err
    assert run.json()["counts"]["message"] == 81
    assert cli(fresh, "export", "--user", "tomas").out == exported


def test_ingest_reads_stdin_when_the_file_is_a_dash(tmp_path, monkeypatch):
    import io

    line = json.dumps({"kind": "message", "user_id": "u1", "session_id": "s1", "role": "user", "content": "hi"})
    monkeypatch.setattr("sys.stdin", io.StringIO(line + "\n"))
    run = cli(tmp_path / "s", "--json", "ingest", "-")
    assert run.code == 0 and run.json()["counts"]["message"] == 1


def test_ingest_twice_is_refused_and_the_second_run_writes_nothing(demo_store, tmp_path, embedder):
    path = tmp_path / "tomas.jsonl"
    path.write_text(cli(demo_store, "export", "--user", "tomas").out, encoding="utf-8")
    before = snapshot(open_store(demo_store, embedder))
    run = cli(demo_store, "ingest", str(path))
    assert run.code == 2 and run.one_error_line and "already exists" in run.err
    assert snapshot(open_store(demo_store, embedder)) == before


# -- lifecycle, reflection, stats ------------------------------------------------------------------------------------
def test_prune_previews_by_default_and_deletes_only_with_apply(store):
    preview = cli(store, "--json", "prune", "--user", "ada", "--rule", "stale").json()
    doomed = [s["session_id"] for s in preview["sessions"]]
    assert doomed and preview["applied"] is False and "ada-s01" in doomed
    assert len(cli(store, "--json", "sessions", "--user", "ada").json()) == 6
    assert "Rerun with --apply" in cli(store, "prune", "--user", "ada", "--rule", "stale").out
    slots_before = cli(store, "--json", "working", "--user", "ada", "--session", "ada-s05").json()
    applied = cli(store, "--json", "prune", "--user", "ada", "--rule", "stale", "--apply").json()
    assert applied["applied"] is True and [s["session_id"] for s in applied["sessions"]] == doomed
    left = {r["session_id"] for r in cli(store, "--json", "sessions", "--user", "ada").json()}
    assert left.isdisjoint(doomed)
    # working memory is never touched by pruning
    assert cli(store, "--json", "working", "--user", "ada", "--session", "ada-s05").json() == slots_before


def test_reflect_stores_insights_from_recent_episodes(store):
    run = cli(store, "--json", "reflect", "--user", "ada", "--window", "3")
    data = run.json()
    assert data["strategy"].startswith("reflection_offline")
    assert data["insights"] and all(i["category"] == "insights" for i in data["insights"])


def test_stats_counts_the_demo(demo_store):
    stats = cli(demo_store, "--json", "stats").json()
    assert stats["users"] == 3 and stats["messages"] == 265 and stats["sessions"] == 17
    assert stats["embedder"].startswith("all-MiniLM-L6-v2")
    assert "ada" in cli(demo_store, "stats").out


def test_demo_on_a_loaded_store_changes_nothing(store, embedder):
    before = snapshot(open_store(store, embedder))
    run = cli(store, "--json", "demo")
    assert run.code == 0 and run.json()["status"] == "already_loaded"
    assert snapshot(open_store(store, embedder)) == before


def test_reindex_rebuilds_vectors_for_every_active_memory(tmp_path):
    records = [
        {"kind": "item", "user_id": "zed", "id": f"zed-item-{n}", "content": f"Fact number {n} about tea."}
        for n in range(3)
    ]
    records += [
        {"kind": "episode", "user_id": "zed", "id": "zed-ep-1", "steps": [{"action": "boil water"}]},
        {"kind": "skill", "user_id": "zed", "id": "zed-sk-1", "name": "brew", "body": "Steep 3 minutes."},
    ]
    path = tmp_path / "zed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    store = tmp_path / "store"
    assert cli(store, "ingest", str(path)).code == 0
    run = cli(store, "--json", "reindex")
    assert run.code == 0 and run.json() == {"semantic": 3, "episodic": 1, "procedural": 1}
    assert "reindex: embedding semantic 3/3" in run.err
    assert cli(store, "--json", "stats").json()["warnings"] == []
    hits = cli(store, "--json", "search", "--user", "zed", "--kind", "semantic", "--limit", "3", "tea").json()
    assert {h["id"] for h in hits} == {"zed-item-0", "zed-item-1", "zed-item-2"}
    # the items' extra keys (engine/memory/memory_keys.py), built on demand: one facts key each
    run = cli(store, "--json", "keys", "--user", "zed")
    assert run.code == 0 and run.json() == {"users": 1, "items": 3, "keys": 3}
    assert cli(store, "keys").out.strip() == "Built 3 key(s) of 3 item(s) of 1 user(s)."
    # only the kinds asked for: these one-sentence facts have no sentence keys
    assert cli(store, "--json", "keys", "--kinds", "sentences").json() == {"users": 1, "items": 3, "keys": 0}
    refused = cli(store, "keys", "--kinds", "sentence")
    assert refused.code != 0 and "invalid choice" in refused.err


# -- global options and plain-text output ----------------------------------------------------------------------------
def test_store_comes_from_memlens_store_and_the_store_option_overrides_it(demo_store, tmp_path):
    import io

    from engine.cli import main

    out = io.StringIO()
    assert main(["--json", "users"], environ={"MEMLENS_STORE": str(demo_store)}, stdout=out) == 0
    assert json.loads(out.getvalue()) == ["ada", "mira", "tomas"]
    out, err = io.StringIO(), io.StringIO()
    assert (
        main(
            ["--store", str(tmp_path / "other"), "--json", "users"],
            environ={"MEMLENS_STORE": str(demo_store)},
            stdout=out,
            stderr=err,
        )
        == 2
    )
    # The option's store is the one looked at: a read does not create it (tests/engine/cli/test_read_commands.py).
    assert f"no store at {tmp_path / 'other'}" in err.getvalue() and not (tmp_path / "other").exists()


def test_help_prints_every_command_and_exits_zero(tmp_path):
    run = cli(tmp_path / "unused", "--help")
    assert run.code == 0 and run.err == ""
    for command in (
        "demo",
        "ingest",
        "export",
        "users",
        "sessions",
        "messages",
        "search",
        "skills",
        "working",
        "forget",
        "forget-log",
        "stats",
        "reindex",
        "prune",
        "episodes",
        "reflect",
        "retrieve",
        "trace",
        "replay",
        "feedback",
    ):
        assert f"    {command} " in run.out
    assert not (tmp_path / "unused").exists()  # nothing opened, nothing created


@pytest.mark.parametrize(
    "argv, header, expected",
    [
        (("sessions", "--user", "tomas"), "session", "tomas-s05"),
        (("messages", "--user", "ada", "--session", "ada-s01", "--limit", "3"), "role", "messages 1-3 of 20"),
        (("episodes", "--user", "mira", "--limit", "2"), "outcome", "episodes 1-2 of 12"),
        (("search", "--user", "ada", "refund reconciliation job"), "score", "ada-item-026"),
        (("skills", "--user", "ada"), "wilson_lo", "pr-description"),
        (("working", "--user", "ada", "--session", "ada-s05"), "slot", "incident_ref"),
        (("forget-log", "--user", "ada"), "reason", "ep-ada-00-pii"),
    ],
)
def test_without_json_commands_print_a_table(demo_store, argv, header, expected):
    run = cli(demo_store, *argv)
    assert run.code == 0 and run.err == ""
    lines = run.out.splitlines()
    assert header in lines[0].split() and set(lines[1]) <= {"-", " "}
    assert expected in run.out
    with pytest.raises(json.JSONDecodeError):
        json.loads(run.out)


def test_a_store_from_a_newer_memlens_is_a_one_line_error(tmp_path):
    store = tmp_path / "store"
    assert cli(store, "optimize").code == 0  # a write makes the store (a read would not)
    with duckdb.connect(str(store / "memlens.duckdb")) as conn:
        conn.execute("INSERT INTO schema_migrations(name) VALUES ('9999_from_the_future')")
    run = cli(store, "users")
    assert run.code == 2 and run.one_error_line
    assert "newer memlens" in run.err and "9999_from_the_future" in run.err


def test_a_corrupt_store_file_is_a_one_line_error(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "memlens.duckdb").write_text("not a database")
    run = cli(store, "users")
    assert run.code == 2 and run.one_error_line and "memlens.duckdb" in run.err


def test_optimize_reports_the_store_size_before_and_after(store):
    run = cli(store, "--json", "optimize")
    assert run.code == 0, run.err
    data = run.json()
    assert data["vector_indexes_built"] == []  # the demo's tables are far below vector_index_min_rows
    assert data["store_bytes_before"] > 0 and data["store_bytes_after"] > 0
    line = cli(store, "optimize").out
    assert line.startswith("Optimized; new vector indexes: none; store ")
    assert "vector_version_retention_s = 600 s" in line


def test_optimize_with_no_version_retention_shrinks_a_store_with_replaced_versions(store, embedder):
    engine = open_store(store, embedder)
    for n in range(3):
        engine.items.remember("ada", f"a note written in batch {n}", category="scratch")
    engine.admin.optimize(vector_index=False)  # compacts: the notes' versions are replaced, and kept for 600 s
    engine.close()

    data = cli(store, "--json", "optimize", "--version-retention", "0").json()

    assert data["store_bytes_after"] < data["store_bytes_before"]
    assert cli(store, "--json", "search", "--user", "ada", "a note written in batch 2").json()[0]["text"] == (
        "a note written in batch 2"
    )


def test_optimize_refuses_a_negative_version_retention(store):
    run = cli(store, "optimize", "--version-retention", "-1")
    assert run.code == 2 and "vector_version_retention_s" in run.err and "Traceback" not in run.err
