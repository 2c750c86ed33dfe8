"""Multi-hop QA: does iterative retrieval find both (all) supporting paragraphs more often than one hop?

    python bench/multihop.py ../shared/data/multihop/musique_migres200-dev.jsonl [--json OUT] [--preset NAME]

Per question, its paragraphs become semantic items (text ``{title}: {paragraph}``) of a user of its own, and the
question is the query. Reports recall@5 and all@5 (every supporting paragraph in the top 5) for plain vector and
BM25 search, memlens with 1 hop, and memlens with 2 hops and the offline bridge reasoner. Time decay plays no part
here (all paragraphs are stored at the same instant).
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

from _common import table

from engine import MemoryEngine, Settings
from engine.config import parse_assignments
from engine.evaluation.runs import pipeline_ranking as memlens_ranking  # noqa: E402
from engine.presets import PRESETS, preset_overrides
from engine.providers.embedders import LocalMiniLM

KS = (2, 5, 10)
METHODS = ("vector", "bm25", "memlens-1hop", "memlens-2hop")


def load(path: Path, limit: int | None) -> list[dict]:
    """Questions as ``{"question", "paragraphs": [{"idx", "title", "paragraph_text", "is_supporting"}]}`` from any of
    the dev halves' formats (MuSiQue; HotpotQA/2Wiki with ``context`` + ``supporting_facts``; IRCoT's ``contexts``).
    Questions without paragraphs or without a supporting one are left out (2Wiki has some)."""
    rows = [as_musique(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("paragraphs") and any(p.get("is_supporting") for p in r["paragraphs"])]
    return rows[: limit or None]


def as_musique(row: dict) -> dict:
    if "paragraphs" in row:
        return row
    if "contexts" in row:  # IRCoT's HotpotQA: paragraphs with their own support flags
        paragraphs = [
            {"idx": n, "title": c["title"], "paragraph_text": c["paragraph_text"], "is_supporting": c["is_supporting"]}
            for n, c in enumerate(row["contexts"])
        ]
        return {"question": row["question_text"], "paragraphs": paragraphs}
    # HotpotQA / 2WikiMultihopQA: [title, sentences] pairs; a paragraph supports when a supporting fact names its title
    supporting = {title for title, _sentence in row.get("supporting_facts") or []}
    paragraphs = [
        {
            "idx": n,
            "title": title,
            "paragraph_text": " ".join(s.strip() for s in sentences),
            "is_supporting": title in supporting,
        }
        for n, (title, sentences) in enumerate(row.get("context") or [])
    ]
    return {"question": row["question"], "paragraphs": paragraphs}


def run(path: Path, preset: str | None, limit: int | None, extra: dict, embedder=None) -> dict:
    questions = load(path, limit)
    overrides = {**preset_overrides(preset), **extra}
    embedder = embedder or LocalMiniLM()  # bench/embedders.py passes the model it measures
    workdir = Path(tempfile.mkdtemp(prefix="memlens-multihop-"))
    scores: dict[str, list[dict]] = defaultdict(list)
    timing: dict[str, list[float]] = defaultdict(list)
    try:
        # The items' extra keys are written when the memlens methods search them (--set memory_keys=...), and only
        # the kinds they search.
        searched = str(overrides.get("memory_keys", "off"))
        engine = MemoryEngine.open(
            settings=Settings.from_env(
                {},
                store=str(workdir / "store"),
                memory_keys_write=searched != "off",
                memory_keys_write_kinds="all" if searched == "off" else searched,
            ),
            embedder=embedder,
        )
        records = []
        for n, q in enumerate(questions):
            user = f"q{n}"
            for p in q["paragraphs"]:
                records.append(
                    {
                        "user_id": user,
                        "id": f"q{n}-p{p['idx']}",
                        "category": "paragraph",
                        "content": f"{p['title']}: {p['paragraph_text']}",
                        "source": "multihop",
                    }
                )
        t = time.perf_counter()
        for start in range(0, len(records), 1000):
            engine.items.remember_many(records[start : start + 1000])
        engine.admin.optimize()
        print(f"{len(records)} paragraphs stored in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        engine.graph.extract()  # the graph the entity stage follows, for what the write left without one
        graph = engine.graph.stats()
        print(f"graph: {graph}", file=sys.stderr)
        for n, q in enumerate(questions):
            user = f"q{n}"
            gold = {f"q{n}-p{p['idx']}" for p in q["paragraphs"] if p.get("is_supporting")}
            for m in METHODS:
                t = time.perf_counter()
                if m in ("vector", "bm25"):
                    hits = engine.retrieval.search(
                        user, q["question"], kind="semantic", limit=max(KS), mode="vector" if m == "vector" else "fts"
                    )
                    ranking = [h.id for h in hits]
                else:
                    trace = engine.retrieval.retrieve(
                        user, q["question"], hops=2 if m == "memlens-2hop" else 1, overrides=overrides, save=False
                    )
                    ranking = memlens_ranking(trace)
                timing[m].append(time.perf_counter() - t)
                row = {}
                for k in KS:
                    row[f"recall@{k}"] = len(gold & set(ranking[:k])) / len(gold)
                    row[f"all@{k}"] = float(gold <= set(ranking[:k]))
                scores[m].append(row)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "dataset": path.name,
        "questions": len(questions),
        "preset": preset or "default",
        "overrides": extra,
        "graph": graph,
        "methods": {m: {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]} for m, rows in scores.items()},
        "ms_per_query": {m: 1000 * sum(v) / len(v) for m, v in timing.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--limit", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    result = run(args.path, args.preset, args.limit, parse_assignments(args.set))
    rows = [
        [m, *(v[f"recall@{k}"] for k in KS), *(v[f"all@{k}"] for k in KS), f"{result['ms_per_query'][m]:.0f}"]
        for m, v in result["methods"].items()
    ]
    print(table(["method", *(f"recall@{k}" for k in KS), *(f"all@{k}" for k in KS), "ms/query"], rows))
    print(f"\n{result['dataset']}: {result['questions']} questions; preset: {result['preset']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
