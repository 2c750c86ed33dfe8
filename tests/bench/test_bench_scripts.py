"""Every bench script runs on a tiny input and prints its table: real runs (the real engine, stores in temporary
folders, the local model, PostgreSQL where a script starts one), a few seconds each, so a script broken by a change of
the engine's API fails here rather than on the day someone measures with it.

Scripts that load the model run in processes forked from one runner that has the weights loaded already
(tests/bench/script_runner.py: each still its own process with its own exit code and output, as ``python bench/x.py``);
the others run as plain ``python bench/x.py``. Each runs in a temporary working folder, so none depends on the
current directory. The benchmarks' data sets (../shared/data) are replaced by tiny files in the same formats
(tests/bench/tiny_data.py). Speed is never asserted here: the numbers are the scripts' business, only their shape
and the counts that follow from the input are checked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bench.tiny_data import LONGMEMEVAL, write_locomo, write_longmemeval, write_multihop

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RUNNER = Path(__file__).with_name("script_runner.py")
# bench/ modules that are not scripts of their own, and where each is run: the table below must name every file.
LIBRARIES = {
    "_common.py": "imported by every script",
    "synthetic.py": "ingest.py and latency.py",
    "process_sampler.py": "suite_cpu.py",
    "mutation.py": "tests/bench/test_mutation_script.py (its own smoke test)",
    "peer_mem0.py": "tests/bench/test_peer_mem0_script.py (its own smoke test: mem0 and memlens workers)",
    "otel_overhead.py": "tests/bench/test_otel_overhead_script.py (its own smoke test: the script and its OTLP sink)",
    "_mutants.py": "mutation.py (how its mutants are made)",
    "evidence_ranks.py": "locomo.py and longmemeval.py (--evidence-ranks)",
}
SMOKE_TESTED = {
    "duckdb_handover.py",
    "embedders.py",
    "eval_speed.py",
    "graph_extraction.py",
    "ingest.py",
    "latency.py",
    "locomo.py",
    "longmemeval.py",
    "mcp_stdio_lines.py",
    "multihop.py",
    "page_speed.py",
    "suite_cpu.py",
    "team.py",
    "team_roundtrip.py",
}


@dataclass
class Run:
    rc: int
    out: str
    err: str
    seconds: float

    def ok(self) -> Run:
        assert self.rc == 0, f"exit {self.rc}\n--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-6000:]}"
        return self


def shell_env() -> dict[str, str]:
    """As a shell would run the scripts: no store chosen by the environment."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMLENS_")}


def bench_env() -> dict[str, str]:
    """``shell_env`` plus ``bench/`` on the import path, for the forked runner's children (a script run as
    ``python bench/x.py`` has its own folder there already)."""
    env = shell_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BENCH), env.get("PYTHONPATH", "")) if p)
    return env


class ScriptRunner:
    """tests/bench/script_runner.py, one per module: runs a script in a fresh fork of a model-loaded process."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.proc = subprocess.Popen(
            [sys.executable, str(RUNNER)],
            cwd=cwd,
            env=bench_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert json.loads(ready or "{}").get("ready"), f"the runner did not start (exit {self.proc.poll()})"
        self.count = 0

    def run(self, script: str, *args: str, timeout: float = 120) -> Run:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.count += 1
        out, err = self.cwd / f"{self.count}-{script}.out", self.cwd / f"{self.count}-{script}.err"
        request = {"script": str(BENCH / script), "args": list(args), "stdout": str(out), "stderr": str(err)}
        self.proc.stdin.write(json.dumps({**request, "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline() or '{"rc": "the runner died", "seconds": 0}')
        return Run(reply["rc"], out.read_text(), err.read_text(), reply["seconds"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Iterator[ScriptRunner]:
    r = ScriptRunner(tmp_path_factory.mktemp("bench-runner"))
    yield r
    r.close()


def plain(script: str, *args: str, cwd: Path, timeout: float = 120) -> Run:
    """``python bench/<script> args`` in ``cwd``, as the scripts' docstrings say to run them."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=cwd,
        env=shell_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, 0.0)


def cells(line: str, starts: list[int]) -> list[str]:
    """A table line cut at the columns' start positions."""
    return [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every table ``bench/_common.table`` printed in ``text``: a header line, a line of dashes (a run of them per
    column, two spaces apart), then one line per row up to a blank line. Rows as {header: cell}."""
    lines = text.splitlines()
    found = []
    for n in range(1, len(lines)):
        if not re.fullmatch(r"-+(  -+)*", lines[n]):
            continue
        starts = [m.start() for m in re.finditer(r"-+", lines[n])]
        headers = cells(lines[n - 1], starts)
        rows = []
        for line in lines[n + 1 :]:
            if not line.strip():
                break
            rows.append(dict(zip(headers, cells(line, starts), strict=True)))
        found.append(rows)
    return found


def table_with(text: str, *headers: str) -> list[dict[str, str]]:
    """The one printed table that has these headers, with at least one row."""
    matching = [t for t in tables(text) if t and all(h in t[0] for h in headers)]
    assert len(matching) == 1, f"no table (or several) with columns {headers} in:\n{text[-3000:]}"
    return matching[0]


# -- the table parser the checks below rely on ----------------------------------------------------------------------
def test_the_table_reader_reads_what_common_table_prints():
    env = bench_env()  # _common, as the scripts import it
    code = "from _common import table; print('title'); print(table(['name', 'n'], [['a b', 1.5], ['c', 22]]))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert tables(out) == [[{"name": "a b", "n": "1.500"}, {"name": "c", "n": "22"}]]
    assert tables("no table here\n") == []


def test_every_bench_module_is_smoke_tested_or_named_as_a_library():
    files = {p.name for p in BENCH.glob("*.py")}
    assert files - SMOKE_TESTED - set(LIBRARIES) == set(), "a new bench script: give it a smoke test here"
    assert SMOKE_TESTED <= files
    # and each script named in SMOKE_TESTED is run by a test below
    assert set(re.findall(r'(?:run|plain)\(\s*"(\w+\.py)"', Path(__file__).read_text())) == SMOKE_TESTED


# -- model-free scripts, as plain subprocesses ----------------------------------------------------------------------
def test_duckdb_handover(tmp_path: Path):
    run = plain("duckdb_handover.py", "--procs", "2", "--seconds", "1", "--dir", str(tmp_path), cwd=tmp_path).ok()
    rows = table_with(run.out, "mode", "committed", "lost")
    assert [r["mode"] for r in rows] == ["plain", "flock"]
    assert all(int(r["procs"]) == 2 and int(r["committed"]) > 0 for r in rows)
    assert rows[1]["lost"] == "0"  # flock mode is the fix: it never loses a committed row


def test_team_roundtrip(tmp_path: Path):
    run = plain("team_roundtrip.py", "--n", "5", cwd=tmp_path).ok()
    rows = table_with(run.out, "store", "insert p50 ms", "select p95 ms")
    assert [r["store"].split(" ")[0] for r in rows] == ["embedded", "team"]
    assert "5 single-row write() transactions and 5 point reads" in run.out


def test_mcp_stdio_lines(tmp_path: Path):
    run = plain("mcp_stdio_lines.py", "--mb", "1", "--runs", "1", cwd=tmp_path).ok()
    rows = table_with(run.out, "line", "bytes", "max (s)")
    assert len(rows) >= 4 and any(r["line"].startswith("1 MB") for r in rows)
    assert all(int(r["bytes"]) >= 1_000_000 for r in rows)


def test_suite_cpu(tmp_path: Path):
    target = "tests/test_suite_layout.py::test_plain_pytest_runs_in_parallel"
    run = plain("suite_cpu.py", "--log", str(tmp_path / "p.jsonl"), "--", "-n", "0", target, cwd=tmp_path).ok()
    rows = table_with(run.out, "process kind", "processes", "CPU s")
    assert rows and "pytest exit 0" in run.out
    assert any(json.loads(line)["argv"] for line in (tmp_path / "p.jsonl").read_text().splitlines())


# -- scripts that load the model: forked from the runner ------------------------------------------------------------
def test_ingest(runner: ScriptRunner):
    run = runner.run("ingest.py", "--sizes", "12,20", "--batch", "8").ok()
    rows = table_with(run.out, "items", "items/s", "storage/embedding", "peak RSS")
    assert [r["items"] for r in rows] == ["12", "20"]


def test_graph_extraction(runner: ScriptRunner, tmp_path: Path):
    data = write_locomo(tmp_path)
    labels = tmp_path / "labels.jsonl"
    gold = [
        {"source": "locomo", "conversation": "conv-tiny", "dia_id": "D1:1", "split": "dev",
         "triples": [["Ana", "has_pet", "Miso"]], "mentions": ["Ana", "Miso"]},
        {"source": "locomo", "conversation": "conv-tiny", "dia_id": "D1:4", "split": "test", "triples": [],
         "mentions": ["Ben", "Lisbon"]},
        {"source": "demo", "id": "tomas-item-001", "split": "test", "triples": [["Tomas", "prefers", "rail"]],
         "mentions": ["Tomas"]},
    ]  # fmt: skip
    labels.write_text("".join(json.dumps(g) + "\n" for g in gold))
    run = runner.run("graph_extraction.py", "--locomo", str(data), "--labels", str(labels), "--overhead", "0").ok()
    rows = {(r["source"], r["split"]): r for r in table_with(run.out, "source", "precision", "recall", "mention_r")}
    assert (rows[("all", "all")]["texts"], rows[("all", "all")]["gold"]) == ("3", "2")
    assert (rows[("locomo", "all")]["texts"], rows[("demo", "all")]["gold"]) == ("2", "1")
    over = table_with(run.out, "graph_extraction", "items", "items_per_s")
    assert [r["graph_extraction"] for r in over] == ["off", "offline", "off", "offline"]
    assert {r["items"] for r in over} == {"7"}  # the tiny file's seven turns, each time
    assert [r["relations"] != "0" for r in over] == [False, True, False, True]
    assert "offline extractor alone: 7 turns" in run.out


def test_latency(runner: ScriptRunner, tmp_path: Path):
    store = tmp_path / "store"
    args = ("--items", "40", "--episodes", "4", "--skills", "3", "--runs", "3", "--store", str(store))
    run = runner.run("latency.py", *args, "--set", "entity_strategy=true").ok()
    rows = table_with(run.out, "operation", "p50 ms", "vs floor p50")
    assert [r["operation"].split(",")[0].split(" (")[0] for r in rows] == [
        "floor",
        "retrieve",
        "retrieve",
        "replay of a stored 2-hop trace",
    ]
    assert "store: 40 items, 4 episodes, 3 skills for one user; 3 queries" in run.out
    paired = re.search(r"1 hop / floor (\d+\.\d+)x, 2 hops / 1 hop (\d+\.\d+)x", run.out)
    assert paired and all(float(x) > 0 for x in paired.groups())  # each query's own ratios, drift cancelled
    stages = table_with(run.out, "stage", "1 hop", "2 hops")
    assert "entities" in [r["stage"] for r in stages]  # the entity stage's time, per hop (--set entity_strategy)
    # a second run reuses the store it built (no "built the store" line)
    again = runner.run("latency.py", *args, "--build-only").ok()
    assert "built the store" not in again.out


def test_latency_with_sentence_keys(runner: ScriptRunner, tmp_path: Path):
    args = ("--items", "30", "--episodes", "2", "--skills", "2", "--runs", "3", "--store", str(tmp_path / "store"))
    keyed = ("--sentences-per-item", "2", "--keys", "--set", "memory_keys=sentences")
    run = runner.run("latency.py", *args, *keyed).ok()
    # 30 items of two sentences: two sentence keys and a facts key each
    assert "store: 30 items, 2 episodes, 2 skills for one user; 3 queries" in run.out
    assert "keys: 90" in run.out
    stages = table_with(run.out, "stage", "1 hop", "2 hops")
    assert "keys" in [r["stage"] for r in stages]  # the wait for the key searches, per hop


CATEGORIES = {"multi-hop": "1", "single-hop": "1", "temporal": "1"}


def test_locomo(runner: ScriptRunner, tmp_path: Path):
    data = write_locomo(tmp_path)
    run = runner.run("locomo.py", str(data), "--json", str(tmp_path / "r.json"), "--evidence-ranks").ok()
    rows = table_with(run.out, "method", "category", "n", "recall@5", "all@10")
    methods = ["vector", "bm25", "memlens", "memlens-multihop"]
    assert [r["method"] for r in rows if r["category"] == "overall"] == methods
    # the tiny file's three questions, one of each category
    assert {r["category"]: r["n"] for r in rows} == dict(overall="3", **CATEGORIES)
    assert "cases skipped (no resolvable evidence): 0; 7 turns imported" in run.out
    result = json.loads((tmp_path / "r.json").read_text())
    assert list(result["methods"]) == methods and result["methods"]["bm25"]["overall"]["n"] == 3
    # where the evidence ranked: four evidence turns (the multi-hop question has two), each in one bucket
    ranks = table_with(run.out, "method", "category", "evidence", "1-10", "11-25", "26-50", ">50", "never")
    assert {(r["method"], r["category"]): r["evidence"] for r in ranks if r["method"] == "memlens"} == {
        ("memlens", "overall"): "4",
        ("memlens", "multi-hop"): "2",
        ("memlens", "single-hop"): "1",
        ("memlens", "temporal"): "1",
    }
    for r in ranks:
        assert sum(float(r[b]) for b in ("1-10", "11-25", "26-50", ">50", "never")) == pytest.approx(1.0, abs=0.002)
    # seven turns: every one is a candidate of the pipeline, so all its evidence ranks in the top 10
    assert result["evidence_ranks"]["memlens"]["overall"] == {
        "n": 4,
        "1-10": 4,
        "11-25": 0,
        "26-50": 0,
        ">50": 0,
        "never": 0,
    }


def test_longmemeval(runner: ScriptRunner, tmp_path: Path):
    data = write_longmemeval(tmp_path)
    run = runner.run("longmemeval.py", str(data), "--json", str(tmp_path / "r.json"), "--evidence-ranks").ok()
    rows = table_with(run.out, "method", "category", "n", "session_any@5", "session_all@10")
    overall = [r for r in rows if r["category"] == "overall"]
    assert [r["method"] for r in overall] == ["vector", "bm25", "memlens", "memlens-multihop"]
    assert all(r["n"] == str(len(LONGMEMEVAL)) for r in overall)
    assert {r["category"] for r in rows} == {"overall", "single-session-user", "temporal-reasoning"}
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["methods"]["memlens"]["overall"]["n"] == 2
    # where the evidence ranked: every method's expected memories, each counted in exactly one bucket
    ranks = result["evidence_ranks"]
    assert list(ranks) == ["vector", "bm25", "memlens", "memlens-multihop"]
    for by_category in ranks.values():
        assert all(c["n"] > 0 and sum(v for k, v in c.items() if k != "n") == c["n"] for c in by_category.values())
    shown = table_with(run.out, "method", "category", "evidence", "1-10", "never")
    assert {r["method"] for r in shown} == set(ranks)


def test_multihop(runner: ScriptRunner, tmp_path: Path):
    data = write_multihop(tmp_path)
    run = runner.run("multihop.py", str(data), "--json", str(tmp_path / "r.json")).ok()
    rows = table_with(run.out, "method", "recall@2", "all@5", "ms/query")
    assert [r["method"] for r in rows] == ["vector", "bm25", "memlens-1hop", "memlens-2hop"]
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["questions"] == 2 and list(result["methods"]) == [r["method"] for r in rows]
    # two supporting paragraphs of four: recall@2 is a fraction of them, recall@5 is all of them
    assert all(0 <= float(r["recall@2"]) <= 1 and r["recall@5"] == "1.000" for r in rows)


def test_embedders(runner: ScriptRunner, tmp_path: Path):
    locomo, lme, musique = write_locomo(tmp_path), write_longmemeval(tmp_path), write_multihop(tmp_path)
    args = ("--models", "all-MiniLM-L6-v2", "--cache-dir", str(tmp_path / "cache"), "--json", str(tmp_path / "r.json"))
    data = ("--locomo", str(locomo), "--longmemeval", str(lme), "--lme-per-type", "1", "--multihop", str(musique))
    run = runner.run("embedders.py", *args, *data, "--encode-sample", "5").ok()
    (model,) = table_with(run.out, "model", "dim", "weights MB", "encode s/1k turns")
    assert (model["model"], model["dim"]) == ("all-MiniLM-L6-v2", "384") and float(model["weights MB"]) > 50
    locomo_rows = table_with(run.out, "model", "method", "overall", "multi-hop")
    lme_rows = table_with(run.out, "model", "method", "overall", "single-session-user")
    assert [r["method"] for r in locomo_rows] == [r["method"] for r in lme_rows] == ["vector", "memlens"]
    musique_rows = table_with(run.out, "model", "method", "all@5", "recall@5")
    assert [r["method"] for r in musique_rows] == ["vector", "memlens-1hop"]
    (result,) = json.loads((tmp_path / "r.json").read_text())
    assert result["lme_questions"] == 2 and result["multihop_questions"] == 2  # one question per LongMemEval type
    # every dataset's vectors were kept in the model's own cache file, for the next run
    assert {p.name for p in (tmp_path / "cache").iterdir()} == {
        "locomo-all-minilm-l6-v2.pkl",
        "lme-all-minilm-l6-v2.pkl",
        f"{musique.stem}-all-minilm-l6-v2.pkl",
    }


def test_eval_speed(runner: ScriptRunner, tmp_path: Path):
    data = write_locomo(tmp_path)
    run = runner.run("eval_speed.py", str(data)).ok()
    rows = table_with(run.out, "step", "n", "seconds", "per second")
    by_step = {r["step"]: r for r in rows}
    assert by_step["import (embed + write)"]["n"] == "7"  # the tiny file's seven turns
    assert by_step["run, 1 hop (traces stored)"]["n"] == "3"  # and its three answerable questions
    assert by_step["hop attribution of the 2-hop run"]["n"] == "3"  # issue 32: each case's trace replayed
    assert by_step["calibration: signals and threshold sweep"]["n"] == "30"  # 3 traces at 10 thresholds
    assert "recall@10 1 hop" in run.out


def test_pages(runner: ScriptRunner, tmp_path: Path, demo_store_template: Path):
    demo = tmp_path / "demo"
    shutil.copytree(demo_store_template, demo)
    run = runner.run("page_speed.py", "--demo", str(demo), "--pages", "overview,retrieval timings", "--runs", "1").ok()
    rows = table_with(run.out, "page", "demo rerun s", "demo first s")
    assert [r["page"] for r in rows] == ["overview", "retrieval timings"]


def test_team(runner: ScriptRunner):
    # The team store only: the embedded store's path through the script is the same but for the store's address,
    # and each phase's agent is a process of its own that loads the model (the time this test takes).
    args = ("--stores", "team", "--writers", "1", "--readers", "0", "--kill", "1")
    run = runner.run("team.py", *args, "--duration", "1", "--kill-duration", "1", timeout=240).ok()
    rows = table_with(run.out, "store", "phase", "writes acked", "lost")
    assert [(r["store"], r["phase"]) for r in rows] == [("team", "load"), ("team", "kill")]
    assert all(r["lost"] == "0" and r["errors"] == "0" for r in rows)
    assert int(rows[0]["writes acked"]) > 0 and rows[0]["present"] == rows[0]["writes acked"]
    consistency = table_with(run.out, "store", "killed (SIGKILL at)", "orphans after repair")
    assert consistency[0]["orphans after repair"] == "0"
