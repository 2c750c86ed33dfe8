"""The offline graph extractor against hand-labelled triples and mentions, and what extraction adds to a write.

    python bench/graph_extraction.py [--locomo ../shared/data/locomo/locomo10-dev.json] [--labels FILE]
        [--demo data/demo/demo.jsonl] [--errors] [--overhead N] [--json OUT]

Labels (bench/labels/graph_triples.jsonl, written by hand BEFORE the extractor was run on those texts): one line per
text, ``{"source": "demo", "id": ...}`` (a demo item, text read from the demo file) or ``{"source": "locomo",
"conversation": ..., "dia_id": ...}`` (a LoCoMo turn, text built as the benchmark import builds it,
``{speaker} said, "{text}"`` plus `` and shared {caption}``; the LoCoMo text itself never enters the repository),
with the gold ``triples`` ([subject, predicate, object], first person resolved to the speaker, or "User" when a
demo note has no subject) and the proper names the text mentions (``mentions``). ``split`` is dev (looked at while
refining the rules) or test (held out: only its totals were read).

Scoring is strict: a triple counts when subject, predicate and object are equal after ``name_key`` (case, spacing,
a leading article) and ``normalise_predicate``, with only these predicate synonyms: loves/enjoys = likes,
married_to/has_spouse = spouse. Mentions are what a write links the text to (the extraction's entities and every
triple's subject and object, "User" left out), against the labelled names plus the gold triples' ends.

``--overhead N`` imports the first N LoCoMo conversations (all: 0) as the benchmark import does, into fresh stores,
with ``graph_extraction`` off and offline (twice each, interleaved), and prints the seconds and items per second of
each. With ``--locomo`` the offline extractor's own time over every LoCoMo turn is printed too.
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
from typing import Any

from _common import ROOT, table

from engine.config import normalise_predicate
from engine.memory.graph_offline import USER, OfflineExtractor
from engine.memory.graph_write import name_key

SYNONYMS = {"loves": "likes", "enjoys": "likes", "married_to": "spouse", "has_spouse": "spouse"}


def triple_key(s: str, p: str, o: str) -> tuple[str, str, str]:
    predicate = normalise_predicate(p)
    return name_key(s), SYNONYMS.get(predicate, predicate), name_key(o)


def locomo_texts(path: Path) -> dict[tuple[str, str], str]:
    """(conversation, dia_id) -> the item text of that turn."""
    out = {}
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        for key, turns in c.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            for t in turns:
                text = f'{t["speaker"]} said, "{t["text"]}"'
                if t.get("blip_caption"):
                    text += f" and shared {t['blip_caption']}"
                out[(conv["sample_id"], t["dia_id"])] = text
    return out


def demo_texts(path: Path) -> dict[str, str]:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["id"]: r["content"] for r in rows if r.get("kind") == "item"}


def score(labels: list[dict], texts: dict[Any, str], errors: bool) -> tuple[list[list[object]], dict]:
    extractor = OfflineExtractor()
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for label in labels:
        key = label["id"] if label["source"] == "demo" else (label["conversation"], label["dia_id"])
        text = texts[key]
        found = extractor.extract(text)
        gold = {triple_key(*t) for t in label["triples"]}
        got = {triple_key(t.subject, t.predicate, t.object) for t in found.triples}
        gold_m = {name_key(m) for m in label["mentions"]} | {k for t in gold for k in (t[0], t[2])}
        got_m = {name_key(n) for n, _ in found.entities} | {k for t in got for k in (t[0], t[2])}
        gold_m.discard(name_key(USER))
        got_m.discard(name_key(USER))
        for group in ((label["source"], label["split"]), (label["source"], "all"), ("all", label["split"])):
            c = counts[group]
            c["texts"] += 1
            c["gold"] += len(gold)
            c["extracted"] += len(got)
            c["correct"] += len(gold & got)
            c["gold_m"] += len(gold_m)
            c["extracted_m"] += len(got_m)
            c["correct_m"] += len(gold_m & got_m)
        if errors and (gold != got or gold_m != got_m):
            print(f"\n[{label['split']}] {text[:160]}")
            for t in sorted(gold - got):
                print("   missed   ", t)
            for t in sorted(got - gold):
                print("   wrong    ", t)
            if gold_m != got_m:
                print("   mentions missed", sorted(gold_m - got_m), " extra", sorted(got_m - gold_m))
    for split in ("dev", "test"):
        total = counts[("all", split)]
        for k, v in list(total.items()):
            counts[("all", "all")][k] += v
    rows = []
    for (source, split), c in sorted(counts.items()):
        rows.append(
            [
                source,
                split,
                c["texts"],
                c["gold"],
                c["extracted"],
                c["correct"],
                c["correct"] / c["extracted"] if c["extracted"] else 0.0,
                c["correct"] / c["gold"] if c["gold"] else 0.0,
                c["gold_m"],
                c["extracted_m"],
                c["correct_m"] / c["extracted_m"] if c["extracted_m"] else 0.0,
                c["correct_m"] / c["gold_m"] if c["gold_m"] else 0.0,
            ]
        )
    return rows, {f"{s}/{sp}": dict(c) for (s, sp), c in counts.items()}


def overhead(locomo: Path, limit: int) -> list[list[object]]:
    """Import-benchmark of LoCoMo into fresh stores with extraction off and offline: seconds and items/s."""
    from engine import MemoryEngine, Settings
    from engine.providers.embedders import LocalMiniLM

    embedder = LocalMiniLM()
    embedder.embed(["warm the model up before the first timed run"])
    rows: list[list[object]] = []
    for mode in ("off", "offline", "off", "offline"):  # twice each, interleaved: a shared machine drifts
        workdir = Path(tempfile.mkdtemp(prefix="memlens-graph-bench-"))
        try:
            settings = Settings.from_env({}, store=str(workdir / "store"), graph_extraction=mode)
            engine = MemoryEngine.open(settings=settings, embedder=embedder)
            t0 = time.perf_counter()
            counts = engine.evals.import_benchmark("locomo", str(locomo), "locomo", limit=limit or None)
            seconds = time.perf_counter() - t0
            items = int(counts.get("turns_added", 0))
            stats = engine.graph.stats()
            rows.append(
                [mode, items, seconds, items / seconds if seconds else 0.0, stats["entities"], stats["relations"]]
            )
            engine.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", type=Path, help="locomo10-dev.json (its turns are read from here, never stored)")
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "labels" / "graph_triples.jsonl")
    ap.add_argument("--demo", type=Path, default=ROOT / "data" / "demo" / "demo.jsonl")
    ap.add_argument("--errors", action="store_true", help="print each text's missed and wrong triples (dev only)")
    ap.add_argument(
        "--overhead", type=int, default=None, metavar="N", help="time import-benchmark of N conversations (0: all)"
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    texts: dict[Any, str] = dict(demo_texts(args.demo))
    if args.locomo:
        texts.update(locomo_texts(args.locomo))
    else:
        dropped = sum(1 for label in labels if label["source"] == "locomo")
        labels = [label for label in labels if label["source"] != "locomo"]
        print(f"no --locomo: {dropped} LoCoMo labels left out")
    if args.errors:
        labels_shown = [label for label in labels if label["split"] == "dev"]
        score(labels_shown, texts, True)
    t0 = time.perf_counter()
    rows, raw = score(labels, texts, False)
    seconds = time.perf_counter() - t0
    headers = ["source", "split", "texts", "gold", "extracted", "correct", "precision", "recall"]
    headers += ["gold_mentions", "mentions", "mention_p", "mention_r"]
    print(table(headers, rows))
    print(f"\n{sum(1 for _ in labels)} texts scored in {seconds:.2f}s")
    if args.locomo:
        turns = list(locomo_texts(args.locomo).values())
        t0, c0 = time.perf_counter(), time.process_time()
        extractor = OfflineExtractor()
        for text in turns:
            extractor.extract(text)
        alone, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"offline extractor alone: {len(turns)} turns in {alone:.2f}s, {cpu:.2f} CPU s "
            f"({len(turns) / max(cpu, 1e-9):.0f} turns per CPU second)"
        )
    result: dict[str, Any] = {"scores": raw}
    if args.overhead is not None:
        if not args.locomo:
            print("--overhead needs --locomo", file=sys.stderr)
            return 2
        over = overhead(args.locomo, args.overhead)
        print()
        print(table(["graph_extraction", "items", "seconds", "items_per_s", "entities", "relations"], over))
        result["overhead"] = over
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
