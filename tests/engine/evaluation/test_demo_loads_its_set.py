"""`python -m engine demo` and the dashboard's first start load the same demo: the dataset with its expectation set
and one run of it (issue 32: after the documented CLI demo, `eval-sets` listed nothing)."""

from __future__ import annotations

import shutil
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


def test_reset_reloads_the_set_with_the_dataset(tmp_path: Path, demo_store_template: Path, embedder):
    # The dataset as `demo` loaded it before: the suite's template is built by load_demo(evaluation=False).
    shutil.copytree(demo_store_template, tmp_path / "store")
    # A reset hard-forgets the old memories; only this process uses the store, so their purge may run soon (the test
    # waits for it at the end), not after the default 10 s.
    settings = Settings.from_env({}, store=str(tmp_path / "store"), forget_purge_grace_s=0.5)
    engine = MemoryEngine.open(settings=settings, embedder=embedder)
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
