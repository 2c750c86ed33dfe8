"""LoCoMo turn-level evidence recall for memlens retrieval methods (protocol: ../shared/data/README.md).

    python bench/locomo.py ../shared/data/locomo/locomo10-dev.json [--json OUT] [--preset NAME]

One store per conversation; every turn is a semantic item with text ``{speaker} said, "{text}"`` (plus
``and shared {blip_caption}`` for image turns) and its session's date as ``created_at``. The question is the query.
With ``--preceding previous-turn`` (the default) each turn is written as memlens writes conversation turns: with the
turn before it in the same session as its ``preceding_text``, which its vector embeds too (``preceding_text_weight``,
0.4) and whose words in the question add to the turn's BM25 (``preceding_bm25_weight``, 0.5); the item's text, and so
full-text search, is the protocol's. ``--preceding none`` writes bare turns (the protocol to the letter), for
comparison.
Methods: ``vector`` (cosine only), ``bm25`` (LanceDB full text only), ``memlens`` (the pipeline, 1 hop) and
``memlens-multihop`` (2 hops, offline bridge reasoner). A memlens ranking is the pipeline's final order followed by
the candidates its relevance filter dropped (in hybrid order), so recall@25 is defined even when the filter is strict.

"Now" for time decay is the conversation's last session date plus one day (when the questions were asked), not the
wall clock: otherwise every 2023 memory would have decayed to ~0 and ties would decide the ranking.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import table

from engine import MemoryEngine, Settings
from engine.config import parse_assignments
from engine.presets import PRESETS, preset_overrides
from engine.providers.embedders import LocalMiniLM

EVIDENCE = re.compile(r"D(\d+):(\d+)")
KS = (5, 10, 25)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def parse_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(conv: dict) -> list[dict]:
    c = conv["conversation"]
    out = []
    for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        when = parse_date(c[f"{key}_date_time"])
        previous = None  # a session's first turn follows nothing
        for t in c[key]:
            text = f'{t["speaker"]} said, "{t["text"]}"'
            if t.get("blip_caption"):
                text += f' and shared {t["blip_caption"]}'
            out.append({"id": t["dia_id"], "content": text, "created_at": when, "preceding_text": previous})
            previous = text
    return out


def gold(qa: dict) -> set[str]:
    found = set()
    for ev in qa.get("evidence") or []:
        for s, t in EVIDENCE.findall(str(ev)):
            found.add(f"D{int(s)}:{int(t)}")
    return found


def memlens_ranking(trace) -> list[str]:
    ranked = [r["id"] for r in trace.ranking]
    seen = set(ranked)
    dropped = []
    for hop in trace.hops:
        for c in hop.candidates:
            if c.id not in seen and c.context_reason == "filtered":
                dropped.append((c.scores["hybrid"], c.id))
                seen.add(c.id)
    return ranked + [i for _, i in sorted(dropped, key=lambda t: -t[0])]


def run(path: Path, preset: str | None, limit_convs: int | None, methods: list[str],
        extra: dict | None = None, preceding: str = "previous-turn") -> dict:
    data = json.loads(path.read_text())[: limit_convs or None]
    embedder = LocalMiniLM()
    overrides = {**preset_overrides(preset), **(extra or {})}
    scores: dict[str, dict[str, list]] = {m: defaultdict(list) for m in methods}
    skipped = 0
    timing: dict[str, list[float]] = defaultdict(list)
    workdir = Path(tempfile.mkdtemp(prefix="memlens-locomo-"))
    try:
        for conv in data:
            user = re.sub(r"[^A-Za-z0-9._-]", "-", conv.get("sample_id", "conv"))
            engine = MemoryEngine.open(settings=Settings.from_env({}, store=str(workdir / user)), embedder=embedder)
            items = turns(conv)
            t = time.perf_counter()
            engine.remember_many({"user_id": user, "id": i["id"], "content": i["content"], "category": "dialog",
                                  "created_at": i["created_at"], "importance": None, "source": "locomo",
                                  "preceding_text": i["preceding_text"] if preceding == "previous-turn" else None}
                                 for i in items)
            engine.optimize()
            timing["ingest_s"].append(time.perf_counter() - t)
            now = max(i["created_at"] for i in items) + timedelta(days=1)
            for qa in conv["qa"]:
                g = gold(qa)
                if not g:
                    skipped += 1
                    continue
                cat = str(qa["category"])
                for m in methods:
                    t = time.perf_counter()
                    if m in ("vector", "bm25"):
                        hits = engine.search(user, qa["question"], kind="semantic", limit=max(KS),
                                             mode="vector" if m == "vector" else "fts")
                        ranking = [h.id for h in hits]
                    else:
                        trace = engine.retrieve(user, qa["question"], hops=2 if m == "memlens-multihop" else 1,
                                                now=now, overrides=overrides, save=False)
                        ranking = memlens_ranking(trace)
                    timing[m].append(time.perf_counter() - t)
                    row = {f"recall@{k}": len(g & set(ranking[:k])) / len(g) for k in KS}
                    row["hit@10"] = float(bool(g & set(ranking[:10])))
                    row["all@10"] = float(g <= set(ranking[:10]))
                    scores[m][cat].append(row)
                    scores[m]["overall"].append(row)
            print(f"{user}: {len(items)} turns, {len(conv['qa'])} questions", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result: dict = {"methods": {}, "skipped_no_evidence": skipped, "preset": preset or "default",
                    "preceding": preceding,
                    "ms_per_query": {m: 1000 * sum(v) / len(v) for m, v in timing.items() if m in methods}}
    for m in methods:
        result["methods"][m] = {cat: {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]} | {"n": len(rows)}
                                for cat, rows in sorted(scores[m].items())}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a named retrieval preset for the memlens methods")
    ap.add_argument("--limit-convs", type=int)
    ap.add_argument("--preceding", choices=("previous-turn", "none"), default="previous-turn",
                    help="each turn's preceding_text (default: the previous turn of its session)")
    ap.add_argument("--methods", default="vector,bm25,memlens,memlens-multihop")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra retrieval overrides on top of the preset (for exploring, not for reporting)")
    args = ap.parse_args()
    methods = args.methods.split(",")
    result = run(args.path, args.preset, args.limit_convs, methods, parse_assignments(args.set), args.preceding)
    rows = []
    for m in methods:
        for cat, v in result["methods"][m].items():
            name = "overall" if cat == "overall" else f"{cat} {CATEGORY_NAMES.get(int(cat), '')}"
            rows.append([m, name, v["n"], v["recall@5"], v["recall@10"], v["recall@25"], v["hit@10"], v["all@10"]])
    print(table(["method", "category", "n", "recall@5", "recall@10", "recall@25", "hit@10", "all@10"], rows))
    print(f"\npreset: {result['preset']}; preceding text: {result['preceding']}; QAs skipped (no resolvable "
          f"evidence): {result['skipped_no_evidence']}; "
          + "; ".join(f"{m} {ms:.0f} ms/query" for m, ms in result["ms_per_query"].items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
