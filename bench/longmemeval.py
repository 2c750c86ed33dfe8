"""LongMemEval-S retrieval recall for memlens methods (protocol: ../shared/data/README.md), built on the engine's
benchmark importer and ``evaluate`` (the same numbers as the API).

    python bench/longmemeval.py ../shared/data/longmemeval/longmemeval_s-dev.json [--json OUT] [--preset NAME]
        [--evidence-ranks]

One store per question holding only its haystack (~500 turns), imported with ``import_benchmark("longmemeval",
...)``: each turn one item ``{role}: {content}`` with its session's date and the previous turn of its session as its
preceding text; ``now`` is the question's date. Reported per question type and overall: turn-level recall@k over the
``has_answer`` turns, and session-level recall (``session_any@k`` / ``session_all@k``: any / every answer session
among the sessions of the top-k turns), k = 5, 10. Methods and ``--evidence-ranks`` as in bench/locomo.py.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from evidence_ranks import evidence_ranks, print_evidence_ranks
from locomo import EMBEDDING_CACHE_HELP, EVIDENCE_RANKS_HELP, METHODS, print_table, run_units

from engine.config import parse_assignments
from engine.presets import PRESETS

SHOWN = ("recall@5", "recall@10", "session_any@5", "session_any@10", "session_all@10", "all@10")


def session_of(item_id: str) -> str:
    """``lme-<question>:<session>:<turn>`` -> ``<session>``."""
    return item_id.rsplit(":", 1)[0]


def session_scores(rows: list) -> dict[str, dict]:
    """Session-level recall per question type and overall, from each case's top memories."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for category, _, _, r in rows:
        gold = {session_of(e) for e in r.expected}
        row = {}
        for k in (5, 10):
            found = {session_of(i) for i in r.top[:k]}
            row[f"session_any@{k}"] = float(bool(gold & found))
            row[f"session_all@{k}"] = float(gold <= found)
        groups["overall"].append(row)
        groups[category or "(none)"].append(row)
    return {cat: {k: sum(x[k] for x in v) / len(v) for k in v[0]} for cat, v in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a named retrieval preset for the memlens methods")
    ap.add_argument("--limit", type=int, help="only the first N questions")
    ap.add_argument("--per-type", type=int, help="only the first N questions of each question type (a quick sample)")
    ap.add_argument("--preceding", choices=("previous-turn", "none"), default="previous-turn")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--embedding-cache", type=Path, help=EMBEDDING_CACHE_HELP)
    ap.add_argument("--evidence-ranks", action="store_true", help=EVIDENCE_RANKS_HELP)
    args = ap.parse_args()
    methods = args.methods.split(",")
    units = json.loads(args.path.read_text())[: args.limit or None]
    if args.per_type:
        by_type: dict[str, list] = defaultdict(list)
        for u in units:
            by_type[u["question_type"]].append(u)
        units = [u for group in by_type.values() for u in group[: args.per_type]]
    result = run_units(
        "longmemeval",
        args.path,
        units,
        args.preset,
        methods,
        parse_assignments(args.set) or None,
        args.preceding == "previous-turn",
        "longmemeval",
        args.embedding_cache,
    )
    rows = result.pop("_results")
    for m in methods:
        for cat, extra in session_scores(rows[m]).items():
            result["methods"][m][cat].update(extra)
    print_table(result, methods, SHOWN)
    if args.evidence_ranks:
        result["evidence_ranks"] = {m: evidence_ranks(rows[m]) for m in methods}
        print_evidence_ranks(result["evidence_ranks"], methods)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
