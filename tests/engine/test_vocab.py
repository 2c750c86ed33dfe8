"""The one vocabulary (engine/vocab.py): members are the strings stored traces hold, the CLI and MCP accept exactly
the enums' values, every status has one display label, and the why-not analysis decides by the enums, never by
those labels."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import get_args

import orjson
import pytest

from engine import (
    GONE,
    KINDS,
    LOSS_LABELS,
    STAGE_NAMES,
    ForgetMode,
    Kind,
    LossStatus,
    Reason,
    to_plain,
    why_not,
)
from engine.cli.main import build_parser
from engine.mcp import server
from engine.trace import why_not as why_not_module
from engine.trace.codec import trace_from_dict
from engine.vocab import FORGET_TARGETS, HOP_STAGE_LABELS, HopStage

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"


def test_members_are_their_strings_in_every_written_form():
    assert KINDS == ("semantic", "episodic", "procedural") and Kind("episodic") is Kind.EPISODIC
    record = {Kind.SEMANTIC: [Reason.BUDGET_STOP, LossStatus.NEVER]}
    expected = {"semantic": ["budget_stop", "never"]}
    assert json.loads(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS)) == expected
    assert json.loads(json.dumps(to_plain(record))) == expected
    assert f"{Kind.PROCEDURAL}" == str(Kind.PROCEDURAL) == "procedural"  # table names and messages


def test_every_value_a_stored_trace_holds_is_a_member():
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for hop in data["hops"]:
            for c in hop["candidates"]:
                Kind(c["kind"]), Reason(c["context_reason"])  # noqa: B018 - raises on a value outside the enum
        for r in data["ranking"]:
            Kind(r["kind"]), Reason(r["reason"])  # noqa: B018


def test_the_cli_and_the_mcp_server_accept_exactly_the_enums_values():
    assert get_args(server.Kind) == KINDS and set(get_args(server.Mode)) == set(ForgetMode)
    assert get_args(server.ForgetKind) == FORGET_TARGETS
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "forget" in a.choices)  # noqa: SLF001
    forget_parser = sub.choices["forget"]
    choices = {a.dest: a.choices for a in forget_parser._actions if a.choices}  # noqa: SLF001
    assert tuple(choices["kind"]) == FORGET_TARGETS and tuple(choices["mode"]) == tuple(ForgetMode)


def test_each_status_has_one_label_and_the_page_name_is_that_mapping():
    assert STAGE_NAMES is LOSS_LABELS
    labelled = set(LossStatus) - {LossStatus.HOP_NOT_REPLAYED}  # a replay's entry: shown by its name
    assert labelled <= set(LOSS_LABELS) and set(GONE) <= labelled
    assert {Reason.FILTERED, Reason.MERGED, Reason.BUDGET, Reason.BUDGET_STOP, Reason.CAP} <= set(LOSS_LABELS)
    assert len(set(LOSS_LABELS.values())) == len(LOSS_LABELS)  # no two statuses read the same


def test_why_not_decides_by_the_stage_not_by_its_label(monkeypatch: pytest.MonkeyPatch):
    trace = trace_from_dict(json.loads((FIXTURES / "default_1hop.json").read_text(encoding="utf-8")))
    dropped = next(c for c in trace.hops[0].candidates if c.verdicts.relevance == "dropped")
    before = why_not(trace, dropped.id)
    assert before.status == LossStatus.FILTERED and before.rows[0]["stage"] == "relevance filter"
    # Reword every label: the verdict must not change, only the words shown.
    monkeypatch.setitem(HOP_STAGE_LABELS, HopStage.FILTER, "the judge")
    monkeypatch.setitem(why_not_module.HOP_STAGE_LABELS, HopStage.SEARCH, "the index")
    after = why_not(trace, dropped.id)
    assert after.status == before.status and after.rule == before.rule and after.hop == before.hop
    assert after.rows[0]["stage"] == "the judge"
    assert dataclasses.replace(after, rows=before.rows) == before
