"""Property-based fuzz of the validation wall (engine/validation.py) at the Python API, the CLI (in-process and as a
real subprocess) and JSONL ingest. Hypothesis generates hostile values: lone surrogates, NUL, oversized and blank
texts, JSON nested 65-5,000 levels, 5,000-digit and 10**20 integers, NaN/inf/1e30, bools and floats where integers
go, extreme and malformed dates, wrong types. Each call must raise a *named* engine error (MemlensError; exit 2 with one
``error:`` line on the CLI) and leave the store with **no change at all**: every row and column of every DuckDB and
LanceDB table, hashed (tests/support/store_snapshot.py), equal before and after.

Budget: ``API_EXAMPLES``, ``CLI_EXAMPLES`` and ``INGEST_EXAMPLES`` examples per property (derandomized, so CI runs
the same cases every time), ``deadline=None``. The module prints its table of inputs tried per entry point.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import MemlensError, MemoryEngine, Settings
from engine.cli import main
from engine.errors import InvalidInput
from tests.support.cli import ROOT, Run, cli, cli_subprocess
from tests.support.mcp_client import clean_env
from tests.support.store_snapshot import snapshot

# Some tests here start real processes (the CLI, the MCP server).
pytestmark = pytest.mark.subprocess

USER, SESSION, ITEM = "fuzz-user", "fuzz-s1", "fuzz-item"
API_EXAMPLES = 150
CLI_EXAMPLES = 40
INGEST_EXAMPLES = 60
FUZZ = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
TALLY: Counter = Counter()  # (entry point, outcome)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "store"


@pytest.fixture(scope="module")
def engine(store: Path, embedder) -> MemoryEngine:
    """A store with something of every kind, so a wrongly accepted update, forget or prune would show."""
    e = MemoryEngine.open(settings=Settings.from_env({}, store=str(store), lock_timeout_s=60), embedder=embedder)
    e.items.add([e.items.prepare(USER, "Ada drinks smoked lapsang tea.", id=ITEM)])
    e.sessions.add_message(USER, SESSION, "user", "Which tea do I like?")
    e.working.update(USER, SESSION, {"goals": ["find the tea"], "scratchpad": {"n": 1}})
    for n in range(3):
        e.episodes.record(USER, [{"action": f"brew tea {n}", "result": "ok"}], outcome="success")
    e.skills.register(USER, "brew", "Boil water, then steep.")
    trace = e.retrieval.retrieve(USER, "Which tea?")
    e.feedback.label(USER, ITEM, "useful", trace_id=trace.trace_id, hop=1)
    return e


@pytest.fixture(scope="module", autouse=True)
def report_tally():
    yield
    print("\nentry point      tried  clean  raw  accepted  partial writes")
    for point in ("api", "cli", "cli-subprocess", "ingest"):
        row = {k[1]: v for k, v in TALLY.items() if k[0] == point}
        print(
            f"{point:<16} {sum(v for k, v in row.items() if k != 'written'):>5}  {row.get('clean', 0):>5}  "
            f"{row.get('raw', 0):>3}  {row.get('accepted', 0):>8}  {row.get('written', 0):>14}"
        )


# -- hostile values --------------------------------------------------------------------------------------------------
def deep(n: int) -> list:
    value: list = []
    for _ in range(n - 1):
        value = [value]
    return value


surrogate = st.integers(0xD800, 0xDFFF).map(chr)
with_surrogate = st.tuples(st.text(max_size=8), surrogate, st.text(max_size=8)).map("".join)
with_nul = st.tuples(st.text(max_size=8), st.text(max_size=8)).map(lambda t: t[0] + "\x00" + t[1])
oversized = st.integers(32_001, 33_000).map(lambda n: "a" * n)
wrong_type = st.sampled_from([5, 2.5, True, [], {}, ["a"], {"a": 1}, b"bytes", object()])
# Texts that are invalid even where blank or absent would be allowed.
bad_text = st.one_of(with_surrogate, with_nul, oversized, wrong_type)
# ...and where a text is required, blank ones too.
bad_required_text = st.one_of(bad_text, st.sampled_from(["", "   ", "\n\t"]), st.none())
huge_int = st.integers(20, 5000).map(lambda n: int("9" * n))


def bad_int(lo: int, hi: int) -> st.SearchStrategy:
    """Not an int in [lo, hi]: below, above, huge, negative huge, bools, floats (NaN, inf, whole floats), text."""
    return st.one_of(
        st.integers(max_value=lo - 1),
        st.integers(min_value=hi + 1),
        huge_int,
        huge_int.map(lambda v: -v),
        st.sampled_from(
            [
                True,
                False,
                float("nan"),
                float("inf"),
                -float("inf"),
                1.5,
                float(lo),
                str(lo),
                "ten",
                [],
                {},
                2**40 if 2**40 > hi else -(2**40),
                10**20,
            ]
        ),
    )


bad_unit = st.one_of(
    st.floats(min_value=1.0001, max_value=1e300),
    st.floats(max_value=-1e-6, min_value=-1e300),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e30, True, "0.5", [], 10**400]),
)
bad_days = st.one_of(
    st.floats(min_value=36_500.01, max_value=1e300),
    st.floats(max_value=-1e-6, min_value=-1e300),
    st.sampled_from([float("nan"), float("inf"), True, "3", 10**400]),
)
bad_date = st.one_of(
    st.sampled_from(
        [
            "0001-01-01",
            "0001-01-01T00:00:00+01:00",
            "1899-12-31T23:59:59Z",
            "3000-01-01",
            "9999-12-31T23:59:59-05:00",
            "yesterday",
            "2024-13-45",
            "x" * 100,
            12345,
            1.5,
            True,
            [],
            datetime(1, 1, 1, tzinfo=UTC),
            datetime(9999, 12, 31, tzinfo=UTC),
            datetime(1850, 6, 1),
        ]
    ),
    st.integers(1, 1899).map(lambda y: f"{y:04d}-06-15"),
    st.integers(3000, 9999).map(lambda y: f"{y:04d}-06-15"),
    with_surrogate,
)


def bad_json_value() -> st.SearchStrategy:
    return st.one_of(
        st.integers(65, 5000).map(deep),
        st.integers(65, 300).map(lambda n: {"k": deep(n)}),
        with_surrogate,
        with_surrogate.map(lambda s: {s: 1}),
        with_nul.map(lambda s: {"k": s}),
        st.sampled_from(
            [
                float("nan"),
                float("inf"),
                [1.0, -float("inf")],
                {"n": float("nan")},
                2**64,
                -(2**70),
                {1: "int key"},
                {(1, 2): "tuple key"},
                {"a": {1, 2}},
                {"b": b"bytes"},
                object(),
                "x" * 260_000,
                ["y" * 1000] * 300,
            ]
        ),
        huge_int,
    )


bad_json_text = st.one_of(
    st.integers(65, 5000).map(lambda n: "[" * n + "]" * n),
    st.integers(20, 6000).map(lambda n: "9" * n),
    st.sampled_from(
        [
            "NaN",
            "[Infinity]",
            '{"a": -Infinity}',
            "[1, 2",
            "",
            "   ",
            '"\\ud800"',
            '{"\\udfff": 1}',
            "{'single': 'quotes'}",
            "x" * 300_000,
        ]
    ),
    with_surrogate.map(json.dumps),
)

# (label, hostile strategy, call)
API_CALLS: list[tuple[str, st.SearchStrategy, Callable[[MemoryEngine, Any], Any]]] = [
    ("remember.content", bad_required_text, lambda e, v: e.items.remember(USER, v)),
    ("remember.preceding_text", bad_text, lambda e, v: e.items.remember(USER, "fact", preceding_text=v)),
    ("remember.importance", bad_unit, lambda e, v: e.items.remember(USER, "fact", importance=v)),
    ("remember.created_at", bad_date, lambda e, v: e.items.remember(USER, "fact", created_at=v)),
    (
        "remember.provenance",
        bad_json_value(),
        lambda e, v: e.items.remember(USER, "fact", provenance={"sources": [], "x": v}),
    ),
    ("add_message.content", bad_required_text, lambda e, v: e.sessions.add_message(USER, SESSION, "user", v)),
    (
        "add_message.created_at",
        bad_date,
        lambda e, v: e.sessions.add_message(USER, SESSION, "user", "hi", created_at=v),
    ),
    ("working_update.value", bad_json_value(), lambda e, v: e.working.update(USER, SESSION, {"scratchpad": v})),
    (
        "working_update.slots",
        st.sampled_from([[], "goals", 5, None, {}]),
        lambda e, v: e.working.update(USER, SESSION, v),
    ),
    ("working_set_json.text", bad_json_text, lambda e, v: e.working.set_json(USER, SESSION, "scratchpad", v)),
    (
        "record_episode.action",
        bad_text.filter(bool),
        lambda e, v: e.episodes.record(USER, [{"action": v, "result": "ok"}]),
    ),
    ("record_episode.summary", bad_text, lambda e, v: e.episodes.record(USER, [{"action": "a"}], summary=v)),
    (
        "record_episode.outcome",
        st.one_of(with_surrogate, with_nul, st.just("o" * 65)),
        lambda e, v: e.episodes.record(USER, [{"action": "a"}], outcome=v),
    ),
    ("record_episode.importance", bad_unit, lambda e, v: e.episodes.record(USER, [{"action": "a"}], importance=v)),
    ("record_episode.created_at", bad_date, lambda e, v: e.episodes.record(USER, [{"action": "a"}], created_at=v)),
    ("register_skill.body", bad_required_text, lambda e, v: e.skills.register(USER, "s", v)),
    ("register_skill.description", bad_text, lambda e, v: e.skills.register(USER, "s", "body", description=v)),
    (
        "register_skill.version",
        bad_int(1, 1_000_000).filter(lambda v: v is not None),
        lambda e, v: e.skills.register(USER, "s", "body", version=v),
    ),
    ("label.hop", bad_int(1, 100), lambda e, v: e.feedback.label(USER, ITEM, "useful", hop=v)),
    ("label.note", bad_text.filter(lambda v: bool(v)), lambda e, v: e.feedback.label(USER, ITEM, "useful", note=v)),
    ("forget.reason", bad_required_text, lambda e, v: e.forgetting.forget(USER, "semantic", [ITEM], v, mode="hard")),
    ("search.query", bad_required_text, lambda e, v: e.retrieval.search(USER, v)),
    ("search.limit", bad_int(1, 1000), lambda e, v: e.retrieval.search(USER, "tea", limit=v)),
    ("retrieve.question", bad_required_text, lambda e, v: e.retrieval.retrieve(USER, v)),
    ("retrieve.hops", bad_int(1, 5), lambda e, v: e.retrieval.retrieve(USER, "tea", hops=v)),
    ("retrieve.budget", bad_int(1, 1_000_000), lambda e, v: e.retrieval.retrieve(USER, "tea", budget=v)),
    ("retrieve.now", bad_date, lambda e, v: e.retrieval.retrieve(USER, "tea", now=v)),
    (
        "retrieve.overrides",
        st.one_of(
            st.one_of(st.integers(max_value=0), st.integers(min_value=1_000_001), huge_int).map(
                lambda v: {"budget_tokens": v}
            ),
            st.just({"half_life_days": float("nan")}),
            st.just({5: 1}),
            st.just({"hops": deep(5000)}),
            st.just({"reasoner": "\ud800"}),
        ),
        lambda e, v: e.retrieval.retrieve(USER, "tea", overrides=v),
    ),
    ("reflect.window", bad_int(1, 1000), lambda e, v: e.items.reflect(USER, v)),
    ("mine_skills.window", bad_int(1, 1000), lambda e, v: e.skills.mine(USER, v)),
    (
        "list_items.query",
        bad_text.filter(lambda v: bool(v) and isinstance(v, str)),
        lambda e, v: e.items.list_items(USER, query=v),
    ),
    ("list_items.limit", bad_int(1, 10_000_000), lambda e, v: e.items.list_items(USER, limit=v)),
    ("list_items.offset", bad_int(0, 1_000_000_000), lambda e, v: e.items.list_items(USER, offset=v)),
    (
        "list_sessions.search",
        bad_text.filter(lambda v: bool(v) and isinstance(v, str)),
        lambda e, v: e.sessions.list_sessions(USER, search=v),
    ),
    ("prune_traces.older_than_days", bad_days, lambda e, v: e.traces.prune(v, apply=True, keep_labelled=False)),
    ("prune_traces.now", bad_date, lambda e, v: e.traces.prune(0, apply=True, keep_labelled=False, now=v)),
    ("prune_sessions.now", bad_date, lambda e, v: e.sessions.prune(USER, "stale", apply=True, now=v)),
    ("trace_from_json", bad_json_text, lambda e, v: e.traces.from_json(v)),
]


def attempt(point: str, engine: MemoryEngine, call: Callable[[], Any], label: str) -> None:
    """Run ``call``, which must raise a named engine error and change nothing."""
    before = snapshot(engine)
    try:
        call()
    except MemlensError:
        TALLY[(point, "clean")] += 1
    except Exception as exc:
        TALLY[(point, "raw")] += 1
        raise AssertionError(f"{label}: raw {type(exc).__name__}: {str(exc)[:200]}") from exc
    else:
        TALLY[(point, "accepted")] += 1
        raise AssertionError(f"{label}: a hostile value was accepted")
    finally:
        after = snapshot(engine)
        if after != before:
            TALLY[(point, "written")] += 1
    assert after == before, f"{label}: the store changed: {before.diff(after)}"


def api_case() -> st.SearchStrategy:
    return st.integers(0, len(API_CALLS) - 1).flatmap(lambda i: API_CALLS[i][1].map(lambda v: (i, v)))


@settings(max_examples=API_EXAMPLES, **FUZZ)
@given(case=api_case())
def test_fuzz_api_every_hostile_value_is_a_named_error_and_changes_nothing(engine, case):
    i, value = case
    label, _, call = API_CALLS[i]
    attempt("api", engine, lambda: call(engine, value), f"{label}={str(value)[:60]!r}")


@pytest.mark.parametrize("i", range(len(API_CALLS)), ids=[c[0] for c in API_CALLS])
def test_every_api_field_refuses_at_least_one_hostile_value(engine, i):
    """The property above samples fields at random; this makes sure each field is tried at least once."""
    label, strategy, call = API_CALLS[i]
    value = _first(strategy)
    attempt("api", engine, lambda: call(engine, value), f"{label}={str(value)[:60]!r}")


def _first(strategy: st.SearchStrategy) -> Any:
    """A deterministic example of ``strategy`` (hypothesis' minimal one)."""
    from hypothesis import find

    return find(strategy, lambda v: True, settings=settings(database=None, max_examples=1))


def test_the_snapshot_sees_an_update_that_row_counts_miss(engine):
    """The yardstick itself: an UPDATE of one slot changes no count but changes the snapshot."""
    before = snapshot(engine)
    engine.working.update(USER, SESSION, {"scratchpad": {"n": 2}})
    after = snapshot(engine)
    assert after != before and {k: v[0] for k, v in after.duckdb.items() if k != "working_history"} == {
        k: v[0] for k, v in before.duckdb.items() if k != "working_history"
    }
    engine.working.update(USER, SESSION, {"scratchpad": {"n": 1}})


# -- the CLI ---------------------------------------------------------------------------------------------------------
def cli_text(required: bool) -> st.SearchStrategy:
    base = st.one_of(
        st.tuples(st.text("abc ", max_size=5), st.integers(0xDC80, 0xDCFF).map(chr)).map("".join),
        with_surrogate,
        with_nul,
        oversized,
    )
    return st.one_of(base, st.sampled_from(["", "   "])) if required else base


def cli_int(lo: int, hi: int) -> st.SearchStrategy:
    return st.one_of(
        st.integers(max_value=lo - 1).map(str),
        st.integers(min_value=hi + 1).map(str),
        st.integers(20, 6000).map(lambda n: "9" * n),
        st.sampled_from(["nan", "inf", "1e30", "1.5", "-1", "ten", "0x10", "", "\udcff"]),
    )


cli_json = st.one_of(
    st.integers(65, 5000).map(lambda n: "[" * n + "]" * n),
    st.integers(20, 6000).map(lambda n: "9" * n),
    st.sampled_from(["NaN", "[Infinity]", '"\\ud800"', '{"\\udfff": 1}', "[1,", "\udcff"]),
)
cli_date = st.one_of(
    st.sampled_from(
        ["0001-01-01", "9999-12-31T23:59:59-05:00", "1899-12-31", "3000-01-01", "soon", "\udcff", "2024-02-30"]
    ),
    st.integers(1, 1899).map(lambda y: f"{y:04d}-01-01"),
)

CLI_CALLS: list[tuple[str, st.SearchStrategy, Callable[[str], list[str]]]] = [
    ("search QUERY", cli_text(True), lambda v: ["search", "--user", USER, v]),
    ("retrieve QUESTION", cli_text(True), lambda v: ["retrieve", "--user", USER, v]),
    ("retrieve --now", cli_date, lambda v: ["retrieve", "--user", USER, "--now", v, "tea"]),
    ("retrieve --hops", cli_int(1, 5), lambda v: ["retrieve", "--user", USER, "--hops", v, "tea"]),
    ("retrieve --budget", cli_int(1, 1_000_000), lambda v: ["retrieve", "--user", USER, "--budget", v, "tea"]),
    (
        "retrieve --set",
        cli_int(1, 1_000_000),
        lambda v: ["retrieve", "--user", USER, "--set", f"budget_tokens={v}", "tea"],
    ),
    ("reflect --window", cli_int(1, 1000), lambda v: ["reflect", "--user", USER, "--window", v]),
    ("working --set", cli_json, lambda v: ["working", "--user", USER, "--session", SESSION, "--set", f"goals={v}"]),
    (
        "forget --reason",
        cli_text(True),
        lambda v: ["forget", "--user", USER, "--kind", "semantic", "--ids", ITEM, "--mode", "hard", "--reason", v],
    ),
    ("feedback --note", cli_text(False), lambda v: ["feedback", "--user", USER, "--useful", ITEM, "--note", v]),
    ("sessions --search", cli_text(False), lambda v: ["sessions", "--user", USER, "--search", v]),
    (
        "prune-traces --older-than",
        st.sampled_from(["-1", "nan", "inf", "1e400", "36501", "9" * 5000, "\udcff"]),
        lambda v: ["prune-traces", "--older-than", v, "--include-labelled", "--apply"],
    ),
    ("--user", cli_text(True), lambda v: ["search", "--user", v, "tea"]),
]


def cli_case() -> st.SearchStrategy:
    return st.integers(0, len(CLI_CALLS) - 1).flatmap(lambda i: CLI_CALLS[i][1].map(lambda v: (i, v)))


def run_cli(point: str, engine: MemoryEngine, store: Path, argv: list[str], label: str, subprocess_run=False) -> str:
    label = label.encode("utf-8", "backslashreplace").decode()  # a report xdist can send (no surrogates)
    before = snapshot(engine)
    engine.close()
    try:
        run = cli_subprocess(store, *argv) if subprocess_run else cli(store, *argv)
    except Exception as exc:  # cli() re-raises unexpected errors (raise_unexpected=True)
        TALLY[(point, "raw")] += 1
        raise AssertionError(f"{label}: raw {type(exc).__name__}: {str(exc)[:200]}") from exc
    clean = run.code == 2 and run.one_error_line and not run.out
    TALLY[(point, "clean" if clean else ("accepted" if run.code == 0 else "raw"))] += 1
    after = snapshot(engine)
    if after != before:
        TALLY[(point, "written")] += 1
    assert clean, f"{label}: exit {run.code}, stderr {run.err[:300]!r}, stdout {run.out[:100]!r}"
    assert after == before, f"{label}: the store changed: {before.diff(after)}"
    return run.err


@settings(max_examples=CLI_EXAMPLES, **FUZZ)
@given(case=cli_case())
def test_fuzz_cli_every_hostile_argument_exits_2_with_one_line_and_changes_nothing(engine, store, case):
    i, value = case
    label, _, argv = CLI_CALLS[i]
    run_cli("cli", engine, store, argv(value), f"{label}={value[:60]!r}")


def test_cli_refuses_an_empty_store_location(tmp_path, monkeypatch):
    """``--store ""`` used to be the current directory, silently."""
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = main(["--store", "", "stats"], environ={}, stdout=out, stderr=err, raise_unexpected=True)
    run = Run(code, out.getvalue(), err.getvalue())
    assert run.code == 2 and run.one_error_line and "store location is empty" in run.err, run.err
    assert list(tmp_path.iterdir()) == [], "nothing was created in the current directory"
    TALLY[("cli", "clean")] += 1


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["retrieve", "--user", USER, "--now", "0001-01-01", "tea"], "outside the accepted range"),
        (["search", "--user", USER, "tea \udcff"], "lone surrogate U+DCFF"),  # the byte 0xff from a shell
        (
            ["working", "--user", USER, "--session", SESSION, "--set", "goals=" + "[" * 5000 + "]" * 5000],
            "nested more than 64 levels",
        ),
        (["reflect", "--user", USER, "--window", "9" * 5000], "--window"),
    ],
    # ASCII ids: xdist sends test ids between processes as UTF-8, which a lone surrogate cannot be
    ids=["date-0001", "lone-surrogate", "deep-json", "huge-window"],
)
def test_real_subprocess_refuses_hostile_arguments_with_one_line(engine, store, argv, expected):
    err = run_cli("cli-subprocess", engine, store, argv, " ".join(argv)[:60], subprocess_run=True)
    assert expected in err


def test_real_subprocess_refuses_store_empty_string(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "--store", "", "stats"],
        cwd=tmp_path,
        env={**clean_env(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert list(tmp_path.iterdir()) == [], "nothing was created in the current directory"
    assert run.code == 2 and run.one_error_line and "store location is empty" in run.err, run.err
    TALLY[("cli-subprocess", "clean")] += 1


# -- JSONL ingest ----------------------------------------------------------------------------------------------------
def record_line(kind: str, field: str, value_json: str, **others: Any) -> str:
    base = {"kind": kind, **others}
    return json.dumps(base)[:-1] + f', "{field}": {value_json}}}'


def as_json(value: Any) -> str:
    """JSON text for a hostile value, with what json.dumps cannot write (NaN is written as NaN) left raw."""
    if isinstance(value, str) and value.startswith("RAW:"):
        return value[4:]
    return json.dumps(value, allow_nan=True)


raw = st.one_of(
    st.integers(65, 5000).map(lambda n: "RAW:" + "[" * n + "]" * n),
    st.integers(20, 6000).map(lambda n: "RAW:" + "9" * n),
    st.integers(0xD800, 0xDFFF).map(lambda c: f'RAW:"x\\u{c:04x}"'),
    st.sampled_from(["RAW:NaN", "RAW:Infinity", "RAW:1e400", "RAW:-1e30"]),
)
ingest_text = st.one_of(raw, with_nul, oversized, st.sampled_from([5, True, [], {}, None, "", "  "]))
ITEM_BASE = {"user_id": USER, "content": "a fact"}
INGEST_CASES: list[tuple[str, st.SearchStrategy, Callable[[str], str]]] = [
    ("item.content", ingest_text, lambda v: record_line("item", "content", v, user_id=USER)),
    (
        "item.importance",
        st.one_of(raw, st.sampled_from([1.5, -0.1, True, "0.5"])),
        lambda v: record_line("item", "importance", v, **ITEM_BASE),
    ),
    (
        "item.created_at",
        st.sampled_from(["0001-01-01", "3000-01-01", "9999-12-31T23:59:59-05:00", "never", 5]),
        lambda v: record_line("item", "created_at", v, **ITEM_BASE),
    ),
    (
        "item.provenance",
        st.one_of(raw, st.just([1]), st.just("text")),
        lambda v: record_line("item", "provenance", v, **ITEM_BASE),
    ),
    (
        "working.value",
        raw,
        lambda v: record_line("working", "value", v, user_id=USER, session_id=SESSION, slot="goals"),
    ),
    (
        "forget_log.count",
        st.one_of(
            st.integers(max_value=-1), st.integers(min_value=1_000_001), raw, st.sampled_from([1e30, 2.5, True, "7"])
        ),
        lambda v: record_line(
            "forget_log", "count", v, user_id=USER, memory_type="semantic", ids=["gone-1"], mode="hard", reason="r"
        ),
    ),
    (
        "feedback.hop",
        st.one_of(st.integers(max_value=0), st.integers(min_value=101), raw, st.sampled_from([True, 1.0])),
        lambda v: record_line("feedback", "hop", v, user_id=USER, item_id=ITEM, label="useful"),
    ),
    (
        "skill.version",
        st.one_of(st.integers(max_value=0), st.integers(min_value=1_000_001), raw, st.sampled_from([2**40, True, 3.0])),
        lambda v: record_line("skill", "version", v, user_id=USER, name="s2", body="b"),
    ),
    (
        "episode.steps",
        st.one_of(raw, st.sampled_from([[], "steps", [{"action": "\x00"}], [5]])),
        lambda v: record_line("episode", "steps", v, user_id=USER),
    ),
    (
        "message.content",
        ingest_text,
        lambda v: record_line("message", "content", v, user_id=USER, session_id=SESSION, role="user"),
    ),
    (
        "outcome.at",
        st.sampled_from(["0001-01-01", "3000-06-01", "x"]),
        lambda v: record_line("outcome", "at", v, user_id=USER, skill_id="nope", success=True),
    ),
    (
        "whole line",
        st.sampled_from(["RAW:" + "[" * 5000, 'RAW:{"kind": "item", "user_id": "\\ud800"}', "RAW:[]"]),
        lambda v: v[4:],
    ),
]


def ingest_case() -> st.SearchStrategy:
    return st.integers(0, len(INGEST_CASES) - 1).flatmap(lambda i: INGEST_CASES[i][1].map(lambda v: (i, v)))


@settings(max_examples=INGEST_EXAMPLES, **FUZZ)
@given(case=ingest_case(), good_lines=st.integers(0, 3))
def test_fuzz_ingest_a_hostile_line_is_named_and_nothing_of_the_file_is_written(engine, case, good_lines):
    i, value = case
    label, _, build = INGEST_CASES[i]
    bad = build(as_json(value) if label != "whole line" else value)
    good = [json.dumps({"kind": "item", "user_id": USER, "content": f"good fact {n}"}) for n in range(good_lines)]
    lines = [*good, bad, *good]

    def call() -> None:
        try:
            engine.admin.ingest_lines(lines)
        except InvalidInput as exc:
            assert f"line {good_lines + 1}" in str(exc), str(exc)
            raise

    attempt("ingest", engine, call, f"{label}={str(value)[:60]!r}")
