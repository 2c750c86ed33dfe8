"""`python -m engine demo` and the dashboard's first start load the same demo: the dataset with its expectation set
and one run of it (issue 32: after the documented CLI demo, `eval-sets` listed nothing)."""

from __future__ import annotations

from pathlib import Path

from engine import MemoryEngine, Settings
from tests.support.cli import cli


def test_the_cli_demo_loads_the_expectation_set_and_its_run(tmp_path: Path):
    store = tmp_path / "store"
    loaded = cli(store, "--json", "demo")
    assert loaded.code == 0, loaded.err
    assert loaded.json()["status"] == "loaded" and loaded.json()["counts"]["eval_case"] == 14
    (demo,) = cli(store, "--json", "eval-sets").json()
    assert (demo["name"], demo["cases"], demo["runs"]) == ("demo", 14, 1)
    again = cli(store, "--json", "demo")  # idempotent: nothing more, no second run
    assert again.json()["status"] == "already_loaded"
    assert cli(store, "--json", "eval-sets").json()[0]["runs"] == 1


def test_reset_reloads_the_set_with_the_dataset(tmp_path: Path, embedder):
    engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(tmp_path / "store")), embedder=embedder)
    engine.admin.load_demo(evaluation=False)  # as `demo` loaded it before (and as the test suite's template does)
    assert engine.evals.sets() == []
    assert engine.admin.load_demo() == {}  # loaded already: nothing changes; `demo --reset` brings the set
    counts = engine.admin.load_demo(reset=True)
    assert counts["item"] > 0 and counts["eval_case"] == 14
    (demo,) = engine.evals.sets()
    assert demo.name == "demo" and len(engine.evals.runs("demo")) == 1
    engine.evals.evaluate("demo", label="a second run")
    assert engine.admin.load_demo(reset=True)["eval_case"] == 14  # made again: the runs over deleted memories went
    assert [r.label for r in engine.evals.runs("demo")] == ["demo · default settings"]
    engine.admin.purges.wait(60)
