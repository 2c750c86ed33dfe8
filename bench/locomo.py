"""LoCoMo turn-level evidence recall for memlens retrieval methods (protocol: ../shared/data/README.md), built on the
engine's benchmark importer and ``evaluate`` (the same numbers as the API, the CLI and the Evaluations page).

    python bench/locomo.py ../shared/data/locomo/locomo10-dev.json [--json OUT] [--preset NAME] [--evidence-ranks]

One store per conversation (the protocol: BM25 statistics are the conversation's own), imported with
``import_benchmark("locomo", ...)``: every turn is a semantic item with text ``{speaker} said, "{text}"`` (plus ``and
shared {blip_caption}`` for image turns) and its session's date as ``created_at``. With ``--preceding previous-turn``
(the default) each turn has the turn before it in the same session as its ``preceding_text``, which its vector embeds
too (``preceding_text_weight``) and whose words in the question add to the turn's BM25 (``preceding_bm25_weight``);
``--preceding none`` writes bare turns (the protocol to the letter), for comparison.
Methods: ``vector`` (cosine only), ``bm25`` (LanceDB full text only), ``memlens`` (the pipeline, 1 hop) and
``memlens-multihop`` (2 hops, offline bridge reasoner). A memlens ranking is the pipeline's final order followed by
the candidates its relevance filter dropped (in hybrid order), so recall@25 is defined even when the filter is strict.
"Now" for time decay is the conversation's last session date plus one day (the importer's per-case ``now``).
``--evidence-ranks`` adds where each expected turn ranked (1-10, 11-25, 26-50, >50, never a candidate;
evidence_ranks.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import CachedEmbedder, table
from evidence_ranks import evidence_ranks, print_evidence_ranks

from engine import MemoryEngine, Settings
from engine.config import parse_assignments
from engine.evaluation.metrics import aggregate
from engine.presets import PRESETS, preset_overrides
from engine.providers.embedders import LocalMiniLM

EMBEDDING_CACHE_HELP = (
    "a pickled {text: vector} file of this model's vectors: reused, topped up, written back (reruns skip the encoder)"
)
EVIDENCE_RANKS_HELP = (
    "also print (and put in --json) where each expected memory ranked: 1-10, 11-25, 26-50, >50 or never a candidate"
)
METHODS = {
    "vector": ("vector", None),
    "bm25": ("bm25", None),
    "memlens": ("memlens", 1),
    "memlens-multihop": ("memlens", 2),
}
SHOWN = ("recall@5", "recall@10", "recall@25", "hit@10", "all@10")


def run_units(
    kind: str,
    path: Path,
    units: list,
    preset: str | None,
    methods: list[str],
    extra: dict | None,
    preceding: bool,
    label: str,
    embedding_cache: Path | None = None,
    model=None,
) -> dict:
    """Import each unit (conversation or question) into its own store, run every method on its set, and aggregate
    the per-case scores of all stores as the API does."""
    model = model or LocalMiniLM()  # bench/embedders.py passes the model it measures
    embedder = CachedEmbedder(embedding_cache, model) if embedding_cache else model
    rows: dict[str, list] = defaultdict(list)
    skipped, import_s, turns, graph_s = 0, 0.0, 0, 0.0
    graph: dict[str, int] = {}
    workdir = Path(tempfile.mkdtemp(prefix=f"memlens-{label}-"))
    try:
        for n, unit in enumerate(units):
            one = workdir / f"unit-{n}.json"
            one.write_text(json.dumps([unit]))
            # The items' extra keys are written when the memlens methods search them (--set memory_keys=..., or a
            # preset that does, such as deep), and only the kinds they search.
            searched = str({**preset_overrides(preset), **(extra or {})}.get("memory_keys", "off"))
            engine = MemoryEngine.open(
                settings=Settings.from_env(
                    {},
                    store=str(workdir / f"store-{n}"),
                    memory_keys_write=searched != "off",
                    memory_keys_write_kinds="all" if searched == "off" else searched,
                ),
                embedder=embedder,
            )
            t = time.perf_counter()
            report = engine.evals.import_benchmark(kind, str(one), "bench", preceding=preceding)
            engine.admin.optimize()
            import_s += time.perf_counter() - t
            t = time.perf_counter()
            # The graph the entity stage follows: drawn on write, or here for what the import left without one.
            engine.graph.extract()
            graph_s += time.perf_counter() - t
            for key, value in engine.graph.stats().items():
                graph[key] = graph.get(key, 0) + value
            skipped += report["skipped_no_evidence"]
            turns += report["turns"]
            if report["cases"]:
                for m in methods:
                    method, hops = METHODS[m]
                    run = engine.evals.evaluate(
                        "bench",
                        method=method,
                        hops=hops,
                        label=m,
                        preset=preset if method == "memlens" else None,
                        overrides=extra if method == "memlens" else None,
                    )
                    rows[m] += [(r.category, r.scores, r.latency_ms, r) for r in engine.evals.results(run.run_id)]
            engine.close()
            print(
                f"{report['users']} user(s) {n + 1}/{len(units)}: {report['turns']} turns, {report['cases']} cases",
                file=sys.stderr,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    result: dict = {
        "methods": {},
        "skipped_no_evidence": skipped,
        "preset": preset or "default",
        "preceding": "previous-turn" if preceding else "none",
        "turns": turns,
        "import_s": round(import_s, 2),
        "graph": graph,
        "graph_extract_s": round(graph_s, 2),
        "ms_per_query": {},
    }
    for m in methods:
        result["methods"][m] = aggregate((c, s, ms) for c, s, ms, _ in rows[m])
        lat = [ms for _, _, ms, _ in rows[m]]
        result["ms_per_query"][m] = sum(lat) / len(lat) if lat else None
    result["_results"] = rows
    return result


def print_table(result: dict, methods: list[str], shown=SHOWN) -> None:
    lines = []
    for m in methods:
        for cat, v in result["methods"][m].items():
            lines.append([m, cat, v["n"], *(v[k] for k in shown)])
    print(table(["method", "category", "n", *shown], lines))
    print(
        f"\npreset: {result['preset']}; preceding text: {result['preceding']}; cases skipped (no resolvable "
        f"evidence): {result['skipped_no_evidence']}; {result['turns']} turns imported in {result['import_s']} s; "
        + "; ".join(f"{m} {ms:.0f} ms/query" for m, ms in result["ms_per_query"].items() if ms is not None)
    )
    print(f"graph (offline extraction, {result['graph_extract_s']} s after import): {result['graph']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a named retrieval preset for the memlens methods")
    ap.add_argument("--limit-convs", type=int)
    ap.add_argument(
        "--preceding",
        choices=("previous-turn", "none"),
        default="previous-turn",
        help="each turn's preceding_text (default: the previous turn of its session)",
    )
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra retrieval overrides on top of the preset (for exploring, not for reporting)",
    )
    ap.add_argument("--embedding-cache", type=Path, help=EMBEDDING_CACHE_HELP)
    ap.add_argument("--evidence-ranks", action="store_true", help=EVIDENCE_RANKS_HELP)
    args = ap.parse_args()
    methods = args.methods.split(",")
    units = json.loads(args.path.read_text())[: args.limit_convs or None]
    result = run_units(
        "locomo",
        args.path,
        units,
        args.preset,
        methods,
        parse_assignments(args.set) or None,
        args.preceding == "previous-turn",
        "locomo",
        args.embedding_cache,
    )
    rows = result.pop("_results")
    print_table(result, methods)
    if args.evidence_ranks:
        result["evidence_ranks"] = {m: evidence_ranks(rows[m]) for m in methods}
        print_evidence_ranks(result["evidence_ranks"], methods)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
