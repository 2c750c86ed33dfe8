"""The bundled local embedders side by side: recall of plain vector search and of the default memlens pipeline
(1 hop), encode time, dimension and the weights' size on disk.

    python bench/embedders.py --models all-MiniLM-L6-v2,multilingual-e5-small-q4 --cache-dir DIR [--json OUT]
        [--locomo PATH] [--longmemeval PATH --lme-per-type N] [--multihop PATH] [--encode-sample N]

Each dataset runs exactly as its own script does (bench/locomo.py, bench/longmemeval.py, bench/multihop.py), with
the model under test instead of MiniLM; every model writes its own vector tables and keeps its own embedding cache
(``DIR/<dataset>-<model>.pkl``), so a rerun skips the encoder. Encode time is measured on the first
``--encode-sample`` distinct LoCoMo turn texts, after a warm-up, never from a cache. LongMemEval-S's haystacks take
long to encode with a slower model: ``--lme-per-type N`` measures the first N questions of each type, the same for
every model. Reported: LoCoMo and LongMemEval recall@10 (overall and per category), MuSiQue all@5 and recall@5.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

from _common import CachedEmbedder, table
from locomo import run_units
from multihop import run as run_multihop

from engine.providers.local_models import LOCAL_MODELS, local_embedder, weights_bytes

LOCOMO_METHODS = ["vector", "memlens"]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def locomo_turns(path: Path, count: int) -> list[str]:
    """The first ``count`` distinct turn texts of a LoCoMo file, as the importer words them."""
    out: dict[str, None] = {}
    for conv in json.loads(path.read_text()):
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    out[f'{turn["speaker"]} said, "{turn["text"]}"'] = None
    return list(out)[:count]


def encode_seconds_per_1k(model, texts: list[str]) -> float:
    model.embed(texts[:8])  # loads the weights; not timed
    t = time.perf_counter()
    for start in range(0, len(texts), 256):
        model.embed(texts[start : start + 256])
    return 1000 * (time.perf_counter() - t) / len(texts)


def lme_units(path: Path, per_type: int | None) -> list:
    units = json.loads(path.read_text())
    if not per_type:
        return units
    by_type: dict[str, list] = defaultdict(list)
    for u in units:
        by_type[u["question_type"]].append(u)
    return [u for group in by_type.values() for u in group[:per_type]]


def measure(name: str, args: argparse.Namespace) -> dict:
    info = LOCAL_MODELS[name]
    model = local_embedder(name)
    out: dict = {"model": name, "dim": info.dim, "weights_mb": round(weights_bytes(info) / 1e6, 1)}
    if args.locomo and args.encode_sample > 0:
        out["encode_s_per_1k"] = round(encode_seconds_per_1k(model, locomo_turns(args.locomo, args.encode_sample)), 2)
        out["load_avg"] = round(os.getloadavg()[0], 2)
    if args.locomo and not args.encode_only:
        res = run_units(
            "locomo", args.locomo, json.loads(args.locomo.read_text())[: args.locomo_convs], None, LOCOMO_METHODS,
            None, True, "locomo",
            args.cache_dir / f"locomo-{slug(name)}.pkl", model,
        )  # fmt: skip
        out["locomo"] = {m: {c: round(v["recall@10"], 3) for c, v in res["methods"][m].items()} for m in LOCOMO_METHODS}
        print(json.dumps({"model": name, "locomo": out["locomo"]}), file=sys.stderr)  # kept if a later set stops
    if args.longmemeval:
        units = lme_units(args.longmemeval, args.lme_per_type)
        res = run_units(
            "longmemeval", args.longmemeval, units, None, LOCOMO_METHODS, None, True, "longmemeval",
            args.cache_dir / f"lme-{slug(name)}.pkl", model,
        )  # fmt: skip
        out["lme"] = {m: {c: round(v["recall@10"], 3) for c, v in res["methods"][m].items()} for m in LOCOMO_METHODS}
        out["lme_questions"] = len(units)
        print(json.dumps({"model": name, "lme": out["lme"]}), file=sys.stderr)
    if args.multihop:
        cached = CachedEmbedder(args.cache_dir / f"{args.multihop.stem}-{slug(name)}.pkl", model)
        try:
            res = run_multihop(args.multihop, None, args.multihop_limit, {}, embedder=cached)
        finally:
            cached.save()
        out["multihop"] = {
            m: {"all@5": round(v["all@5"], 3), "recall@5": round(v["recall@5"], 3)}
            for m, v in res["methods"].items()
            if m in ("vector", "memlens-1hop")
        }
        out["multihop_questions"] = res["questions"]
        print(json.dumps({"model": name, "multihop": out["multihop"]}), file=sys.stderr)
    return out


def print_tables(results: list[dict]) -> None:
    rows = [
        [r["model"], r["dim"], r["weights_mb"], r.get("encode_s_per_1k", "-"), r.get("load_avg", "-")] for r in results
    ]
    print(table(["model", "dim", "weights MB", "encode s/1k turns", "load avg"], rows))
    for key, label in (("locomo", "LoCoMo recall@10"), ("lme", "LongMemEval-S recall@10")):
        have = [r for r in results if key in r]
        if not have:
            continue
        cats = list(have[0][key]["memlens"])
        print(f"\n{label}" + (f" ({have[0]['lme_questions']} questions)" if key == "lme" else ""))
        lines = [[r["model"], m, *(r[key][m].get(c, "-") for c in cats)] for r in have for m in LOCOMO_METHODS]
        print(table(["model", "method", *cats], lines))
    have = [r for r in results if "multihop" in r]
    if have:
        print(f"\nMuSiQue ({have[0]['multihop_questions']} questions)")
        lines = [[r["model"], m, v["all@5"], v["recall@5"]] for r in have for m, v in r["multihop"].items()]
        print(table(["model", "method", "all@5", "recall@5"], lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(LOCAL_MODELS))
    ap.add_argument("--cache-dir", type=Path, required=True, help="per-model embedding caches are kept here")
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--locomo-convs", type=int, help="only the first N LoCoMo conversations")
    ap.add_argument("--longmemeval", type=Path)
    ap.add_argument("--lme-per-type", type=int, help="only the first N questions of each LongMemEval type")
    ap.add_argument("--multihop", type=Path, help="a MuSiQue (or HotpotQA, 2Wiki) dev file")
    ap.add_argument("--multihop-limit", type=int, help="only the first N multi-hop questions")
    ap.add_argument("--encode-sample", type=int, default=1000, help="LoCoMo turns timed per model (0: none)")
    ap.add_argument("--encode-only", action="store_true", help="with --locomo: time the encoder only, no recall")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    names = args.models.split(",")
    unknown = [n for n in names if n not in LOCAL_MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {unknown}; choose from {list(LOCAL_MODELS)}")
    results = []
    for name in names:
        print(f"== {name}", file=sys.stderr)
        results.append(measure(name, args))
        if args.json:  # written after every model: a long run that stops keeps what it measured
            args.json.write_text(json.dumps(results, indent=2))
    print_tables(results)


if __name__ == "__main__":
    main()
