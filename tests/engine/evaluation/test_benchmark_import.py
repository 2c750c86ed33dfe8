"""Benchmark importers on small files the tests write in each format: LoCoMo (locomo10.json) and LongMemEval
(longmemeval_s). Users, one item per turn with its session date and previous turn, the expectation set with
categories and per-case ``now``; importing twice changes nothing; the CLI command reports the same counts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import InvalidInput, MemoryEngine
from tests.support.cli import cli

LOCOMO = [
    {
        "sample_id": "conv-9",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy called Miso."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "A shiba inu.", "blip_caption": "a small dog"},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date key without a session, as in the real file
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I started pottery classes on Tuesdays."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Miso chewed my sandals again."},
            ],
        },
        "qa": [
            {"question": "What breed is Ana's puppy?", "answer": "shiba inu", "evidence": ["D1:03"], "category": 4},
            {
                "question": "What did Miso do and what breed is he?",
                "answer": "x",
                "evidence": ["D2:2; D1:3"],
                "category": 1,
            },
            {"question": "When does Ben do pottery?", "answer": "Tuesdays", "evidence": [], "category": 2},
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D9:9"], "category": 5},
        ],
    }
]
LONGMEMEVAL = [
    {
        "question_id": "q-001",
        "question_type": "single-session-user",
        "question": "What colour is my new bike?",
        "question_date": "2023/06/20 (Tue) 17:03",
        "answer": "green",
        "answer_session_ids": ["s-b"],
        "haystack_session_ids": ["s-a", "s-b"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/06/02 (Fri) 18:30"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "Any tips for baking sourdough?"},
                {"role": "assistant", "content": "Use a lively starter and a long cold proof."},
            ],
            [
                {"role": "user", "content": "I just bought a green gravel bike!", "has_answer": True},
                {"role": "assistant", "content": "Nice, gravel bikes are versatile."},
            ],
        ],
    },
    {
        "question_id": "q-002",
        "question_type": "temporal-reasoning",
        "question": "No evidence here?",
        "question_date": "2023/07/01 (Sat) 08:00",
        "answer": "x",
        "answer_session_ids": [],
        "haystack_session_ids": ["s-c"],
        "haystack_dates": ["2023/06/30 (Fri) 08:00"],
        "haystack_sessions": [[{"role": "user", "content": "Hello there."}]],
    },
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"locomo": tmp_path / "locomo.json", "longmemeval": tmp_path / "lme.json"}
    out["locomo"].write_text(json.dumps(LOCOMO))
    out["longmemeval"].write_text(json.dumps(LONGMEMEVAL))
    return out


def test_locomo_import_writes_turns_cases_and_is_idempotent(empty_engine: MemoryEngine, files):
    calls = []
    report = empty_engine.evals.import_benchmark(
        "locomo", str(files["locomo"]), "loco", progress=lambda *a: calls.append(a)
    )
    assert report == {
        "set": "loco",
        "benchmark": "locomo",
        "users": 1,
        "turns": 5,
        "turns_added": 5,
        "turns_already_stored": 0,
        "cases": 2,
        "skipped_no_evidence": 2,
    }
    assert ("turns", 5, 5) in calls
    item = empty_engine.items.get("conv-9", "conv-9:D1:3")
    assert item.content == 'Ana said, "A shiba inu." and shared a small dog'
    assert item.preceding_text == 'Ben said, "Congrats! What breed?"'
    assert item.created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert empty_engine.items.get("conv-9", "conv-9:D2:1").preceding_text == ""  # a session's first turn
    cases = {c.case_id: c for c in empty_engine.evals.cases("loco")}
    assert cases["conv-9:q0"].expected == ("conv-9:D1:3",) and cases["conv-9:q0"].category == "single-hop"
    assert cases["conv-9:q1"].expected == ("conv-9:D1:3", "conv-9:D2:2") and cases["conv-9:q1"].category == "multi-hop"
    assert cases["conv-9:q0"].now == datetime(2023, 6, 21, 10, 0, tzinfo=UTC)  # last session + 1 day
    again = empty_engine.evals.import_benchmark("locomo", str(files["locomo"]), "loco")
    assert (again["turns_added"], again["turns_already_stored"], again["cases"]) == (0, 5, 2)
    assert empty_engine.evals.get_set("loco").cases == 2
    run = empty_engine.evals.evaluate("loco")
    assert run.metrics["overall"]["n"] == 2 and run.metrics["single-hop"]["recall@5"] == 1.0


def test_longmemeval_import_takes_the_has_answer_turns_and_question_date(empty_engine: MemoryEngine, files):
    report = empty_engine.evals.import_benchmark("longmemeval", str(files["longmemeval"]), "lme")
    assert (report["users"], report["turns"], report["cases"], report["skipped_no_evidence"]) == (2, 5, 1, 1)
    (case,) = empty_engine.evals.cases("lme")
    assert case.user_id == "lme-q-001" and case.expected == ("lme-q-001:s-b:0",)
    assert case.category == "single-session-user" and case.now == datetime(2023, 6, 20, 17, 3, tzinfo=UTC)
    item = empty_engine.items.get("lme-q-001", "lme-q-001:s-b:1")
    assert item.content == "assistant: Nice, gravel bikes are versatile."
    assert item.preceding_text == "user: I just bought a green gravel bike!"
    assert item.created_at == datetime(2023, 6, 2, 18, 30, tzinfo=UTC)
    assert empty_engine.evals.import_benchmark("longmemeval", str(files["longmemeval"]), "lme")["turns_added"] == 0
    bm25 = empty_engine.evals.evaluate("lme", method="bm25")
    assert bm25.metrics["overall"]["hit@5"] == 1.0


def test_a_malformed_file_is_refused_before_anything_is_written(empty_engine: MemoryEngine, tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"conversation": {"session_1": []}}]))
    with pytest.raises(InvalidInput, match="LoCoMo conversation 0"):
        empty_engine.evals.import_benchmark("locomo", str(bad), "x")
    bad.write_text("{not json")
    with pytest.raises(InvalidInput, match="not JSON"):
        empty_engine.evals.import_benchmark("longmemeval", str(bad), "x")
    assert empty_engine.evals.sets() == [] and empty_engine.sessions.users() == []


def test_the_cli_imports_and_reports_counts(empty_engine: MemoryEngine, files):
    store = empty_engine.path
    empty_engine.close()
    run = cli(store, "import-benchmark", "locomo", str(files["locomo"]), "--set", "loco", "--json")
    assert run.code == 0, run.err
    assert run.json()["cases"] == 2 and "import locomo: turns 5/5" in run.err
    missing = cli(store, "import-benchmark", "locomo", str(files["locomo"]) + ".nope", "--set", "loco")
    assert missing.code == 2 and missing.one_error_line
