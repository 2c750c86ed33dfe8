"""Evaluation speed on the LoCoMo dev half imported once into one store: the import's turns/s next to the encoder
alone on the same texts, and a run's cases/s for 1 hop and 2 hops (every trace stored), plus the time the
Evaluations page spends reading a run's results.

    python bench/eval_speed.py ../shared/data/locomo/locomo10-dev.json [--store PATH]

The machine's load average is printed with the numbers: on a shared machine they move with other work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from _common import table

from engine import MemoryEngine, Settings
from engine.evaluation.importers import locomo_units
from engine.providers.embedders import LocalMiniLM
from ui.eval_data import case_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--store", type=Path, help="store folder (default: a temporary one, removed afterwards)")
    args = ap.parse_args()
    units = list(locomo_units(json.loads(args.path.read_text())))
    texts = list(dict.fromkeys(t["content"] for u in units for t in u.turns))
    embedder = LocalMiniLM()
    embedder.embed(texts[:64])  # load and warm the model
    rows = []
    t = time.perf_counter()
    embedder.embed(texts)
    encoder_s = time.perf_counter() - t
    rows.append(["encoder alone", len(texts), "texts", round(encoder_s, 1), round(len(texts) / encoder_s, 1)])
    store = args.store or Path(tempfile.mkdtemp(prefix="memlens-evalspeed-")) / "store"
    try:
        engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(store)), embedder=embedder)
        t = time.perf_counter()
        report = engine.evals.import_benchmark("locomo", str(args.path), "locomo-dev")
        import_s = time.perf_counter() - t
        rows.append(
            [
                "import (embed + write)",
                report["turns_added"],
                "turns",
                round(import_s, 1),
                round(report["turns_added"] / import_s, 1),
            ]
        )
        t = time.perf_counter()
        engine.admin.optimize()
        rows.append(["optimize after import", 1, "store", round(time.perf_counter() - t, 1), ""])
        runs = {}
        for hops in (1, 2):
            t = time.perf_counter()
            run = engine.evals.evaluate("locomo-dev", hops=hops, label=f"speed {hops} hop")
            took = time.perf_counter() - t
            runs[hops] = run
            rows.append(
                [
                    f"run, {hops} hop{'s' if hops > 1 else ''} (traces stored)",
                    run.cases,
                    "cases",
                    round(took, 1),
                    round(run.cases / took, 2),
                ]
            )
        t = time.perf_counter()
        results = engine.evals.results(runs[1].run_id)
        engine.evals.losses(runs[1].run_id)
        case_rows(results)
        rows.append(
            [
                "page data of one run (results, losses, case table)",
                len(results),
                "cases",
                round(time.perf_counter() - t, 2),
                "",
            ]
        )
        # Issue 32's views of a run: hop attribution (each 2-hop trace replayed with one hop) and calibration (the
        # signals, and the relevance threshold swept by replaying stored traces), as the Evaluations page reads them.
        t = time.perf_counter()
        att = engine.evals.attribution(runs[2].run_id)
        took = time.perf_counter() - t
        rows.append(
            ["hop attribution of the 2-hop run", att.cases, "cases", round(took, 2), round(att.cases / took, 1)]
        )
        t = time.perf_counter()
        cal = engine.evals.calibration(runs[2].run_id)
        took = time.perf_counter() - t
        replays = cal.swept_cases * len(cal.sweep)
        rows.append(
            ["calibration: signals and threshold sweep", replays, "replays", round(took, 2), round(replays / took, 1)]
        )
        print(table(["step", "n", "of", "seconds", "per second"], rows))
        print(
            f"\nimport rate / encoder rate: {(report['turns_added'] / import_s) / (len(texts) / encoder_s):.2f}; "
            f"recall@10 1 hop {runs[1].metrics['overall']['recall@10']:.3f}, 2 hops "
            f"{runs[2].metrics['overall']['recall@10']:.3f}; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores"
        )
        engine.close()
    finally:
        if args.store is None:
            shutil.rmtree(store.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
