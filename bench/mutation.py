"""Mutation testing of the scoring stages, score records, assembly, replay and why-not: do the tests notice when
the code is subtly wrong?

Each mutant is one small change to a function's AST (a comparison flipped or relaxed, an arithmetic operator
swapped, a number changed, ``and``/``or`` swapped, a ``not`` removed, a condition negated, a ``return x`` made
``return None``, ``min``/``max`` swapped, a ``continue``/``break`` dropped). The tests that cover the modules run
against every mutant; a mutant is *killed* when they fail, *survives* when they pass (a behaviour no test pins),
and *times out* when it loops (counted as detected).

It never touches the repository it is run from (other people run tests there): the tree is copied to a temporary
folder, and that copy is what gets imported (checked). One interpreter imports the copy and collects the tests
once; each mutant then runs in a fork of it, with the mutated function's code swapped in (``__code__``: every
reference to the function, ``from .stages import score_hop`` included, sees the mutant) and a per-mutant timeout.
Only function bodies are mutated (not default arguments, annotations or module-level constants), so swapping one
function's code is the whole mutant (the operators: bench/_mutants.py). The score is (killed + timed out) / (mutants
- excluded - errors); an excluded mutant is an equivalent one, listed below with the reason no test can kill it.

    python bench/mutation.py                                  # all five modules, the default tests
    python bench/mutation.py --modules engine/trace/why_not.py --limit 50 --seed 1
    python bench/mutation.py --list                           # the mutants only
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from _common import table
from _mutants import Mutant, live_function, make_mutants, mutant_code

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
MODULES = (
    "engine/retrieval/stages.py",
    "engine/retrieval/scores.py",
    "engine/retrieval/assembly.py",
    "engine/trace/replay.py",
    "engine/trace/why_not.py",
)
# Fast and model-free (no embedding model, no store): pure functions over hand-made candidates and the golden
# traces. The pins come first: they are the quickest to fail.
TESTS = (
    "tests/engine/retrieval/test_stage_pins.py",
    "tests/engine/retrieval/test_assembly_pins.py",
    "tests/engine/trace/test_replay_pins.py",
    "tests/engine/trace/test_why_not_pins.py",
    "tests/engine/retrieval/test_retrieval_stages.py",
    "tests/engine/retrieval/test_retrieval_fusion.py",
    "tests/engine/trace/test_trace_records.py",
)
# Equivalent mutants: (module, function, source line stripped, mutation) -> why no test can tell them apart. A key
# that no longer matches (the line changed) simply stops excluding: the mutant is then run and reported.
_STAGES, _ASSEMBLY, _WHY_NOT = "engine/retrieval/stages.py", "engine/retrieval/assembly.py", "engine/trace/why_not.py"
_FEEDBACK = "return 1.0 + weight * max(-cap, min(cap, net)) / cap if (weight > 0 and net) else 1.0"
EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    (
        _STAGES,
        "_sigmoid",
        "return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))",
        "`>=` -> `>`",
    ): "at x = 0 both branches are exactly 0.5",
    (
        _STAGES,
        "_zscores",
        "return [(v - mean) / sd if sd > 1e-12 else 0.0 for v in values]",
        "`>` -> `>=`",
    ): "differs only at a standard deviation of exactly 1e-12",
    (_STAGES, "_shared_ranks", "ranks = [0] * len(values)", "`0` -> `1`"): "the loop overwrites every entry",
    (
        _STAGES,
        "_heuristic_verdicts",
        "vector_rank = _shared_ranks([i.vector_similarity for i in inputs]) if protect else [0] * n",
        "`0` -> `1`",
    ): "the placeholder ranks are read only when protect is > 0",
    (
        _STAGES,
        "_heuristic_verdicts",
        "lexical_rank = _shared_ranks(lexical.norm) if protect else [0] * n",
        "`0` -> `1`",
    ): "the placeholder ranks are read only when protect is > 0",
    (_STAGES, "feedback_factor", _FEEDBACK, "`>` -> `>=`"): "at weight 0 the factor is 1 + 0 = 1 either way",
    (
        _STAGES,
        "feedback_factor",
        _FEEDBACK,
        "`and` -> `or`",
    ): "with weight 0 or net 0 the formula gives 1 too; feedback_weight is validated to 0..1, feedback_cap to >= 1",
    (
        _ASSEMBLY,
        "mmr",
        "best, best_val, best_sim = remaining[0], -math.inf, 0.0",
        "`0.0` -> `1.0`",
    ): "the first candidate's finite value always beats -inf and overwrites best_sim",
    (
        _WHY_NOT,
        "_used_before",
        "return sum(r.tokens for r in trace.ranking if r.in_context and r.rank is not None and r.rank < rank)",
        "`<` -> `<=`",
    ): "the memory at `rank` is the one that did not fit: never in the context",
}
# Not copied: version control, caches, and the suite's artifacts (the copy needs only code, tests and data).
SKIP = (".git", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "test-artifacts", "__pycache__", "*.pyc")


# -- running them ---------------------------------------------------------------------------------------------------
def copy_tree(source: Path) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="memlens-mutation-")) / "tree"
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*SKIP), symlinks=True)
    return dest


def prepare(tree: Path, source: Path, tests: Sequence[str]) -> None:
    """Import the copy (never the installed package, which is ``source``) and collect the tests once, so each fork
    starts warm."""
    os.chdir(tree)
    sys.path.insert(0, str(tree))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
    if any(n == "engine" or n.startswith("engine.") for n in sys.modules):
        raise SystemExit("the engine was imported before the copy was put first on the path")
    import pytest

    importlib.import_module("engine")  # the copy's: checked below

    code = _quiet(lambda: pytest.main([*_pytest_args(tests), "--collect-only"]))
    if code != 0:
        raise SystemExit(f"collecting {' '.join(tests)} in the copy failed (pytest exit code {code})")
    bench = str(Path(__file__).resolve().parent)
    files = {n: str(getattr(m, "__file__", None) or "") for n, m in list(sys.modules.items())}
    stray = [n for n, f in files.items() if f.startswith(f"{source}{os.sep}") and not f.startswith(bench)]
    if stray or not files["engine"].startswith(f"{tree}{os.sep}"):
        raise SystemExit(f"imported from outside the copy: {stray[:5]}")


def _pytest_args(tests: Sequence[str]) -> list[str]:
    return ["-p", "no:cacheprovider", "-n", "0", "-x", "-q", "--no-header", *tests]


def _quiet(fn: Callable[[], T]) -> T:
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1), os.dup2(null, 2)
    try:
        return fn()
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)


def _fork(tests: Sequence[str], patch: tuple[types.FunctionType, types.CodeType] | None, show: bool) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 98
    try:
        if not show:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1), os.dup2(null, 2)
        if patch is not None:
            patch[0].__code__ = patch[1]
        import pytest

        code = int(pytest.main(_pytest_args(tests)))
    finally:
        os._exit(code)


def run_all(
    jobs: list[tuple[Mutant | None, tuple[types.FunctionType, types.CodeType] | None]],
    tests: Sequence[str],
    parallel: int,
    timeout: float,
    show: bool,
) -> dict[Mutant | None, str]:
    """Fork one child per mutant (``parallel`` at a time): pytest's exit code 0 survived, 1-3 killed (failed,
    interrupted by -x, or errored), others an error of the run itself."""
    results: dict[Mutant | None, str] = {}
    queue = list(jobs)
    running: dict[int, tuple[Mutant | None, float]] = {}
    shown = 0
    while queue or running:
        while queue and len(running) < parallel:
            m, patch = queue.pop(0)
            running[_fork(tests, patch, show)] = (m, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            m, _ = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            results[m] = "survived" if code == 0 else "killed" if code in (1, 2, 3) else f"error {code}"
        for child, (m, start) in list(running.items()):
            if time.monotonic() - start > timeout:
                os.kill(child, signal.SIGKILL)  # a mutant that loops: our own fork, by its pid
                os.waitpid(child, 0)
                running.pop(child)
                results[m] = "timeout"
        if len(results) // 50 > shown:  # a sign of life on long runs
            shown = len(results) // 50
            print(f"  {len(results)} of {len(jobs)} run", file=sys.stderr, flush=True)
        if not pid:
            time.sleep(0.01)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--modules", nargs="+", default=list(MODULES), help="target modules (paths in the repository)")
    p.add_argument("--functions", nargs="+", default=[], help="only these functions (qualified names, fnmatch)")
    p.add_argument("--tests", nargs="+", default=None, help="pytest paths/node ids (default: the fast pins)")
    p.add_argument("--limit", type=int, default=0, help="run a random sample of this many mutants (0: all)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1: the cores are shared)")
    p.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 4x the clean run + 5)")
    p.add_argument("--source", type=Path, default=ROOT, help="the tree to copy (default: this repository)")
    p.add_argument("--list", action="store_true", help="print the mutants and stop")
    p.add_argument("--keep", action="store_true", help="keep the copied tree")
    p.add_argument("--show-output", action="store_true", help="let the forked pytest runs print")
    args = p.parse_args(argv)
    started = time.monotonic()
    source = args.source.resolve()
    tests = args.tests or [t for t in TESTS if (source / t).exists()]
    for missing in [] if args.tests else sorted(set(TESTS) - set(tests)):  # moved? then fewer kills: say so
        print(f"warning: default test file {missing} is not there", file=sys.stderr)

    mutants: list[Mutant] = []
    for module in args.modules:
        mutants += make_mutants(module, (source / module).read_text(encoding="utf-8"), args.functions)
    if args.limit and args.limit < len(mutants):
        mutants = sorted(random.Random(args.seed).sample(mutants, args.limit), key=lambda m: (m.module, m.index))
    if args.list:
        for m in mutants:
            print(f"{m.module}:{m.line}  {m.qualname}  {m.desc}  | {m.source}")
        print(f"{len(mutants)} mutants")
        return 0

    tree = copy_tree(source)
    try:
        prepare(tree, source, tests)
        jobs: list[tuple[Mutant | None, tuple[types.FunctionType, types.CodeType] | None]] = []
        results: dict[Mutant | None, str] = {}
        asts = {m: ast.parse((tree / m).read_text(encoding="utf-8")) for m in args.modules}
        for m in mutants:
            if m.key in EQUIVALENT:
                results[m] = "excluded"
                continue
            module = sys.modules[m.module.removesuffix(".py").replace("/", ".")]
            try:
                fn = live_function(module, m.qualname)
                code = mutant_code(asts[m.module], str(tree / m.module), m)
                if code.co_freevars != fn.__code__.co_freevars:
                    raise LookupError("free variables differ")
            except (LookupError, KeyError, SyntaxError, ValueError) as e:
                results[m] = f"error ({e})"
                continue
            jobs.append((m, (fn, code)))
        clean_start = time.monotonic()
        clean = run_all([(None, None)], tests, 1, args.timeout or 600, args.show_output)[None]
        clean_s = time.monotonic() - clean_start
        if clean != "survived":
            print(f"the tests fail without any mutant ({clean}): fix them first", file=sys.stderr)
            return 2
        timeout = args.timeout or 4 * clean_s + 5
        print(f"{len(mutants)} mutants of {len(args.modules)} modules, {len(jobs)} to run", end="")
        print(f" ({len(mutants) - len(jobs)} excluded or not runnable); clean run {clean_s:.1f} s", end="")
        print(f"; timeout {timeout:.0f} s")
        print(f"tests: {' '.join(tests)}", flush=True)
        results.update(run_all(jobs, tests, max(1, args.jobs), timeout, args.show_output))
    finally:
        if args.keep:
            print(f"copy kept at {tree}")
        else:
            shutil.rmtree(tree.parent, ignore_errors=True)
    report(args.modules, mutants, results)
    print(f"run time {time.monotonic() - started:.0f} s")
    return 0


def report(modules: Sequence[str], mutants: Sequence[Mutant], results: dict[Mutant | None, str]) -> None:
    rows = []
    for module in [*modules, "total"]:
        ms = [m for m in mutants if module in (m.module, "total")]
        count = {k: sum(1 for m in ms if results[m].startswith(k)) for k in ("killed", "survived", "timeout")}
        excluded = sum(1 for m in ms if results[m] == "excluded")
        errors = sum(1 for m in ms if results[m].startswith("error"))
        scored = len(ms) - excluded - errors
        score = 100 * (count["killed"] + count["timeout"]) / scored if scored else 100.0
        rows.append([module, len(ms), count["killed"], count["survived"], count["timeout"], excluded, errors,
                     f"{score:.1f}%"])  # fmt: skip
    print(table(["module", "mutants", "killed", "survived", "timeout", "excluded", "errors", "score"], rows))
    for label in ("survived", "error"):
        listed = [m for m in mutants if results[m].startswith(label)]
        if listed:
            print(f"\n{label}:")
        for m in listed:
            extra = results[m][len(label) :]
            print(f"  {m.module}:{m.line} {m.qualname}: {m.desc}{extra}  | {m.source}")
    equivalent = [m for m in mutants if results[m] == "excluded"]
    if equivalent:
        print("\nexcluded (equivalent):")
    for m in equivalent:
        print(f"  {m.module}:{m.line} {m.qualname}: {m.desc}  | {m.source}  -- {EQUIVALENT[m.key]}")


if __name__ == "__main__":
    sys.exit(main())
