"""`python -m engine retrieve | trace | traces | replay | feedback` in-process on the demo store (issue 3 §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import DEMO_DIR
from tests.support.cli import cli, copy_store, open_store
from tests.support.storecheck import snapshot

TWO_HOP = json.loads((DEMO_DIR / "two_hop.json").read_text(encoding="utf-8"))
Q = next(q for q in TWO_HOP if q["user_id"] == "ada")  # fact A names an engineer; fact B gives her timezone


@pytest.fixture(scope="module")
def store(demo_store_template: Path, tmp_path_factory) -> Path:
    return copy_store(demo_store_template, tmp_path_factory.mktemp("cli-retrieval") / "store")


@pytest.fixture(scope="module")
def trace(store: Path) -> dict:
    """One two-hop retrieval, printed by the CLI, shared by the tests that read it."""
    run = cli(store, "retrieve", "--user", "ada", "--hops", "2", Q["question"])
    assert run.code == 0, run.err
    return run.json()


def test_retrieve_prints_the_trace_with_every_documented_key(trace):
    assert {"trace_id", "question", "settings", "hops", "stop_reason", "context", "context_ids", "timings_ms"} <= set(
        trace
    )
    assert trace["question"] == Q["question"] and trace["settings"]["hops"] == 2
    assert len(trace["hops"]) == 2
    for hop in trace["hops"]:
        assert {"query", "proposed_by", "candidates"} <= set(hop)
        for c in hop["candidates"]:
            assert {"id", "kind", "text", "scores", "verdicts", "in_context"} <= set(c)
            assert {
                "vector_similarity",
                "bm25_raw",
                "bm25_norm",
                "hybrid",
                "decay",
                "importance_factor",
                "feedback_factor",
                "final",
            } <= set(c["scores"])
    assert isinstance(trace["context"], str) and trace["context_ids"]
    assert trace["timings_ms"]["total"] > 0


def test_retrieve_two_hops_brings_the_bridging_fact_in_on_hop_two(trace):
    assert Q["fact_a"] in trace["context_ids"] and Q["fact_b"] in trace["context_ids"]
    assert trace["hops"][1]["proposed_by"].startswith("offline:")
    hop1_context = {c["id"] for c in trace["hops"][0]["candidates"] if c["in_context"]}
    assert Q["fact_b"] not in hop1_context


def test_trace_id_prints_the_stored_trace(store, trace):
    stored = cli(store, "trace", "--id", trace["trace_id"]).json()
    for key in ("trace_id", "question", "settings", "hops", "stop_reason", "context", "context_ids", "ranking"):
        assert stored[key] == trace[key]
    assert cli(store, "trace", "--id", trace["trace_id"], "--user", "ada").json()["trace_id"] == trace["trace_id"]


def test_trace_of_another_user_is_not_found(store, trace):
    run = cli(store, "trace", "--id", trace["trace_id"], "--user", "tomas")
    assert run.code == 2 and run.one_error_line and run.out == ""


def test_traces_lists_stored_traces_newest_first(store, trace):
    rows = cli(store, "--json", "traces", "--user", "ada").json()
    assert trace["trace_id"] in {r["trace_id"] for r in rows}
    assert [r["created_at"] for r in rows] == sorted((r["created_at"] for r in rows), reverse=True)
    assert trace["trace_id"] not in {r["trace_id"] for r in cli(store, "--json", "traces", "--user", "tomas").json()}


def test_a_cli_retrieval_is_an_agents_trace_and_traces_filters_by_origin_and_text(store, trace):
    words = Q["question"].split()[1].upper()  # any case
    rows = cli(store, "--json", "traces", "--origin", "agent", "--text", words).json()
    assert trace["trace_id"] in {r["trace_id"] for r in rows} and {r["origin"] for r in rows} == {"agent"}
    assert cli(store, "--json", "traces", "--origin", "dashboard", "--origin", "import").json() == []
    run = cli(store, "traces", "--origin", "robot")
    assert run.code == 2 and "robot" in run.err and run.out == ""


def test_replay_with_the_original_settings_gives_the_same_context_and_ranks(store, trace):
    replay = cli(store, "replay", "--id", trace["trace_id"]).json()
    assert replay["replay_of"] == trace["trace_id"]
    assert replay["context_ids"] == trace["context_ids"]
    assert all(r["old_rank"] == r["rank"] and r["rank_change"] == 0 for r in replay["ranking"])
    assert {r["context_change"] for r in replay["ranking"]} <= {"stayed", "out"}


def test_replay_under_a_small_budget_reports_memories_leaving_the_context(store, trace):
    replay = cli(store, "replay", "--id", trace["trace_id"], "--set", "budget_tokens=40").json()
    assert len(replay["context_ids"]) < len(trace["context_ids"])
    changes = {r["id"]: r["context_change"] for r in replay["ranking"]}
    assert "left" in changes.values()
    assert all({"old_rank", "rank", "context_change"} <= set(r) for r in replay["ranking"])
    assert replay["settings"]["budget_tokens"] == 40


def test_retrieve_settings_from_set_budget_and_hops_reach_the_trace(store):
    run = cli(
        store,
        "retrieve",
        "--user",
        "ada",
        "--budget",
        "300",
        "--set",
        "bm25_weight=0.5",
        "--set",
        "mmr_enabled=true",
        "refund rounding",
    )
    settings = run.json()["settings"]
    assert settings["budget_tokens"] == 300 and settings["bm25_weight"] == 0.5 and settings["mmr_enabled"] is True
    assert settings["hops"] == 1


def test_retrieve_now_sets_the_time_decay_is_computed_at(store):
    run = cli(store, "retrieve", "--user", "ada", "--now", "2026-12-01T00:00:00+00:00", "refund rounding")
    assert run.json()["settings"]["now"].startswith("2026-12-01")


@pytest.mark.parametrize(
    "pair, words",
    [
        ("no_such_setting=1", "unknown setting"),
        ("bm25_weight=2", "bm25_weight"),
        ("bm25_weight=0.3' OR '1'='1", "bm25_weight"),
        ("half_life_days=nan", "half_life_days"),
        ("store=/tmp/elsewhere", "not a retrieval setting"),
        ("openai_api_key=sk-x", "not a retrieval setting"),
        ("missing-equals", "KEY=VALUE"),
    ],
)
def test_retrieve_and_replay_refuse_bad_set_pairs_and_write_nothing(store, trace, embedder, pair, words):
    before = snapshot(open_store(store, embedder))
    for argv in (
        ("retrieve", "--user", "ada", "--set", pair, "refund"),
        ("replay", "--id", trace["trace_id"], "--set", pair),
    ):
        run = cli(store, *argv)
        assert run.code == 2 and run.one_error_line and words in run.err, (argv, run.err)
        assert run.out == ""
    assert snapshot(open_store(store, embedder)) == before


@pytest.mark.parametrize("bad_id", ["x' OR '1'='1", "../etc/passwd", "a\x00b", "", "no-such-trace", "t" * 200])
def test_trace_and_replay_refuse_hostile_or_unknown_ids(store, bad_id):
    for command in ("trace", "replay"):
        run = cli(store, command, "--id", bad_id)
        assert run.code == 2 and run.one_error_line and run.out == ""


def test_summary_prints_a_ranking_table_instead_of_json(store, trace):
    out = cli(store, "trace", "--id", trace["trace_id"], "--summary").out
    assert out.startswith(f"trace {trace['trace_id']}") and Q["fact_a"] in out
    assert "old" in cli(store, "replay", "--id", trace["trace_id"], "--summary").out


# -- feedback --------------------------------------------------------------------------------------------------------
@pytest.fixture
def private_store(demo_store_template: Path, tmp_path: Path) -> Path:
    return copy_store(demo_store_template, tmp_path / "store")


def test_feedback_from_a_trace_changes_the_next_retrieval(private_store):
    first = cli(private_store, "retrieve", "--user", "ada", "--hops", "2", Q["question"]).json()
    run = cli(
        private_store,
        "--json",
        "feedback",
        "--user",
        "ada",
        "--useful",
        Q["fact_b"],
        "--harmful",
        Q["fact_a"],
        "--trace",
        first["trace_id"],
        "--note",
        "checked by hand",
    )
    assert run.code == 0, run.err
    events = run.json()
    assert [(e["item_id"], e["label"], e["delta"]) for e in events] == [
        (Q["fact_b"], "useful", 1),
        (Q["fact_a"], "harmful", -1),
    ]
    assert {e["trace_id"] for e in events} == {first["trace_id"]}
    assert {e["labeller"] for e in events} == {"cli"}  # the default labeller of the command line
    again = cli(private_store, "retrieve", "--user", "ada", "--hops", "2", Q["question"]).json()
    factors = {c["id"]: c["scores"]["feedback_factor"] for h in again["hops"] for c in h["candidates"]}
    assert factors[Q["fact_b"]] > 1.0 and factors[Q["fact_a"]] < 1.0


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--useful", "no-such-item"), "no-such-item"),
        (("--useful", "ada-item-026", "--trace", "no-such-trace"), "no-such-trace"),
        (("--note", "why"), "at least one"),
        (("--useful", "ada-item-026", "--note", "x" * 5000), "note"),
        (("--useful", "ada-item-026", "--harmful", "it' OR '1'='1"), "invalid id"),
        (("--useful", "ada-item-026", "--labeller", "  "), "labeller is empty"),
    ],
)
def test_feedback_with_bad_input_writes_nothing(private_store, embedder, argv, words):
    before = snapshot(open_store(private_store, embedder))
    run = cli(private_store, "feedback", "--user", "ada", *argv)
    assert run.code == 2 and run.one_error_line and words in run.err, run.err
    assert snapshot(open_store(private_store, embedder)) == before


def test_prune_traces_previews_then_deletes_and_says_what_it_did(demo_store_template, tmp_path):
    store = copy_store(demo_store_template, tmp_path / "store")
    asked = cli(store, "retrieve", "--user", "ada", Q["question"]).json()["trace_id"]

    preview = cli(store, "prune-traces", "--older-than", "0")
    assert preview.code == 0, preview.err
    assert preview.out.startswith("Would delete 1 trace of every user created before ")
    assert asked in preview.out and preview.out.rstrip().endswith("Rerun with --apply to delete them.")
    assert [t["trace_id"] for t in cli(store, "--json", "traces").json()] == [asked]

    done = cli(store, "--json", "prune-traces", "--older-than", "0", "--user", "ada", "--apply").json()
    assert (done["count"], done["applied"], done["user_id"]) == (1, True, "ada")
    assert cli(store, "--json", "traces").json() == []


@pytest.mark.parametrize("days", ["-1", "nan", "week", "1e9"])
def test_prune_traces_refuses_a_bad_age_in_one_line(demo_store_template, tmp_path, days):
    store = copy_store(demo_store_template, tmp_path / "store")
    run = cli(store, "prune-traces", "--older-than", days, "--apply")
    assert run.code == 2 and run.err.startswith("error: argument --older-than") and "Traceback" not in run.err
