"""Each formula and format has one definition, and the places that once carried a copy agree with it: the context
format (assembly and hard-forget redaction), plain search's blend (the pipeline's weighted fusion), the hops range
(setting, retrieve, CLI, pages), and what "the demo is loaded" means (the demo dataset's users, not one id)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from engine import HOPS_RANGE, InvalidInput, MemoryEngine, Settings
from engine.cli.main import UsageError, build_parser
from engine.config import DEMO_DIR
from engine.retrieval.search import _scores
from engine.retrieval.stages import fuse, lexical_scores
from engine.store.admin import demo_users
from engine.trace.records import CandidateInput
from engine.trace.redaction import FORGOTTEN_TEXT

ROOT = Path(__file__).resolve().parents[2]
U = "ada-test"


@pytest.fixture
def engine(tmp_path, embedder) -> MemoryEngine:
    settings = Settings.from_env({}, store=str(tmp_path / "store"), forget_purge_grace_s=0.2)
    return MemoryEngine.open(settings=settings, embedder=embedder)


# -- the context format ---------------------------------------------------------------------------------------------
def test_a_hard_forget_rebuilds_the_context_in_the_assemblys_format(engine):
    """The forgotten memory's text is also a part of another memory's text: rebuilding the context in the format it
    was assembled in replaces only the forgotten memory's own block. Were redaction's format to drift from the
    assembly's, it would fall back to replacing the text wherever it stands, and cut the other memory's text too."""
    short = "the spare key is under the blue flowerpot"
    long = f"Ada said that {short}, and the shed key hangs by the door"
    gone = engine.items.remember(U, short)
    kept = engine.items.remember(U, long)
    trace = engine.retrieval.retrieve(U, "where is the spare key under the flowerpot")
    assert {gone.id, kept.id} <= {r.id for r in trace.ranking if r.in_context}
    lines = trace.context.split("\n")
    assert lines.count(short) == 1 and lines.count(long) == 1

    engine.forgetting.forget(U, "semantic", [gone.id], reason="test", mode="hard")

    redacted = engine.traces.get(trace.trace_id).context
    expected = [FORGOTTEN_TEXT.format(id=gone.id) if line == short else line for line in lines]
    assert redacted.split("\n") == expected
    assert long in redacted
    engine.admin.purges.wait(60)


# -- plain search's blend -------------------------------------------------------------------------------------------
def _input(n: int, cosine: float, bm25: float | None) -> CandidateInput:
    return CandidateInput(
        f"m{n}", "semantic", f"text {n}", "2026-01-01T00:00:00+00:00", 0.5, False, 0, 0, 0, cosine, bm25, "both"
    )


@pytest.mark.parametrize("w", [0.0, 0.3, 0.5, 1.0])
def test_plain_search_scores_with_the_pipelines_weighted_fusion(w):
    inputs = [_input(0, 0.81, 12.5), _input(1, 0.42, None), _input(2, 0.66, 3.25), _input(3, 0.1, 0.0)]
    settings = Settings(bm25_weight=w, fusion="weighted", bm25_source="index", preceding_bm25_weight=0.0)
    fusion = fuse(inputs, lexical_scores(inputs, "unused with bm25_source=index", settings), settings)
    assert _scores(inputs, "hybrid", w) == [round(h, 6) for h in fusion.hybrid]
    # nothing found by full text: the vector part alone
    no_text = [_input(0, 0.81, None), _input(1, 0.42, 0.0)]
    assert _scores(no_text, "hybrid", w) == [round((1 - w) * 0.81, 6), round((1 - w) * 0.42, 6)]


def test_a_stores_plain_search_ranks_as_the_pipelines_fusion_would(engine):
    engine.items.remember(U, "The staging database password rotates every Monday")
    engine.items.remember(U, "Ada's favourite editor is Helix")
    engine.items.remember(U, "Staging deploys need a green build")
    hits = engine.retrieval.search(U, "staging database password", limit=100)
    assert len(hits) == 3 and any(h.fts_score for h in hits)
    inputs = [_input(n, h.vector_similarity, h.fts_score) for n, h in enumerate(hits)]
    settings = engine.settings.with_overrides({"fusion": "weighted", "preceding_bm25_weight": 0.0})
    fusion = fuse(inputs, lexical_scores(inputs, "", settings.with_overrides({"bm25_source": "index"})), settings)
    assert [h.score for h in hits] == [round(s, 6) for s in fusion.hybrid]


# -- the hops range -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command", [["retrieve", "--user", "u", "q"], ["eval", "--set", "demo"]], ids=["retrieve", "eval"]
)
def test_every_entry_point_takes_the_one_hops_range(command):
    lo, hi = HOPS_RANGE
    parser = build_parser()
    for hops in (lo, hi):
        assert parser.parse_args([*command, "--hops", str(hops)]).hops == hops
    for hops in (lo - 1, hi + 1):
        with pytest.raises(UsageError, match=f"from {lo} to {hi}, got {hops}"):
            parser.parse_args([*command, "--hops", str(hops)])
    assert Settings().with_overrides({"hops": hi}).hops == hi
    with pytest.raises(InvalidInput):
        Settings().with_overrides({"hops": hi + 1})
    (field,) = [f for f in Settings.describe() if f["name"] == "hops"]
    assert (field["min"], field["max"]) == HOPS_RANGE


def test_a_retrieval_refuses_hops_outside_the_range(engine):
    lo, hi = HOPS_RANGE
    for hops in (lo - 1, hi + 1):
        with pytest.raises(InvalidInput, match="hops"):
            engine.retrieval.retrieve(U, "anything", hops=hops)


def test_the_pages_hops_inputs_take_the_range_from_the_engine():
    inputs = []
    # ui/ too: a page's form may be drawn there (the Retrieval trace page's question form is ui/trace_ask.py).
    for path in sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "Hops"
            ):
                inputs.append(path.name)
                assert "HOPS_RANGE" in ast.unparse(node), f"{path.name}: {ast.unparse(node)}"
    assert sorted(inputs) == ["evaluations.py", "trace_ask.py", "trace_table.py"]


# -- the demo -------------------------------------------------------------------------------------------------------
def test_the_demo_is_known_by_its_datasets_users_not_by_an_id(engine):
    lines = (DEMO_DIR / "demo.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert demo_users() == tuple(sorted({r["user_id"] for r in records}))
    assert not engine.admin.demo_loaded()

    # A memory of someone else that happens to carry the id the engine once looked for is not the demo.
    first_item = next(r for r in records if r["kind"] == "item")
    stranger = {**first_item, "user_id": "not-a-demo-user"}
    engine.admin.ingest_lines([json.dumps(stranger)])
    assert not engine.admin.demo_loaded()

    # One of the demo's users, with none of the demo's item ids: the demo is there, and loading it leaves the store.
    last_user = demo_users()[-1]
    engine.items.remember(last_user, "a memory of the demo's user")
    assert engine.admin.demo_loaded()
    assert engine.admin.load_demo(evaluation=False) == {}
