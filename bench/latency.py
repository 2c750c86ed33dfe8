"""Retrieval latency at scale: p50/p95 of retrieve (1 hop, 2 hops with the offline reasoner, trace write included)
next to the floor (embed the query + one LanceDB vector search on the same data), and replay of a stored 2-hop trace.

    python bench/latency.py [--items 100000 --episodes 10000 --skills 1000] [--store PATH] [--runs 60] [--build-only]
        [--set KEY=VALUE ...] [--sentences-per-item N --keys [--key-kinds sentences]]

``--store`` keeps the built store so a second run skips the (long) embedding step. ``--set`` passes retrieval
overrides to every retrieve (e.g. ``--set entity_strategy=true``: issue 30's target, 2 hops <= 2x the time of 1 hop).
The store's graph is what extraction on write drew from the synthetic sentences (names, places, topics).
``--sentences-per-item 2 --keys`` builds items of two sentences with their extra keys written (a sentence key each),
for ``--set memory_keys=sentences``: the keys table then has about three rows per item, indexed by ``optimize()``;
``--key-kinds sentences`` writes only the sentence keys (two per item), what ``memory_keys_search=candidates`` reads.
Targets (issue 3): 1-hop p50 <= 60 ms, 2-hop p50 <= 120 ms, ratio to the floor <= 3x, replay <= 20 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import table
from synthetic import DETAILS, NAMES, TOPICS, VERBS, sentences, timestamps

from engine import MemoryEngine, Settings
from engine.config import parse_assignments
from engine.providers.embedders import LocalMiniLM

USER = "bench"


def item_texts(items: int, per_item: int) -> list[str]:
    """The items' texts: one synthetic sentence each, or ``per_item`` of them (a conversation turn usually says more
    than one thing; with sentence keys each sentence is a key of its item)."""
    if per_item <= 1:
        return sentences(items)
    pool = sentences(items * per_item, seed=13)
    return [" ".join(pool[i * per_item : (i + 1) * per_item]) for i in range(items)]


def build(engine: MemoryEngine, items: int, episodes: int, skills: int, per_item: int = 1) -> None:
    """Fill (or top up, after an interrupted build) the bench user's store to the given sizes."""
    with engine.admin.deferred_upkeep():  # one compaction per table at the end, as an import does
        _build(engine, items, episodes, skills, per_item)
    engine.admin.optimize()


def _build(engine: MemoryEngine, items: int, episodes: int, skills: int, per_item: int) -> None:
    have = engine.admin.stats()
    texts, times = item_texts(items, per_item), timestamps(items)
    for start in range(have.items, items, 2000):
        engine.items.remember_many(
            {
                "user_id": USER,
                "content": texts[i],
                "category": "notes",
                "created_at": times[i],
                "importance": 0.3 + 0.7 * ((i * 37) % 100) / 100,
            }
            for i in range(start, min(items, start + 2000))
        )
    steps = sentences(episodes * 3, seed=3)
    lines = [
        json.dumps(
            {
                "kind": "episode",
                "user_id": USER,
                "outcome": "success" if i % 3 else "failure",
                "steps": [{"observation": steps[3 * i], "action": steps[3 * i + 1], "result": steps[3 * i + 2]}],
                "created_at": times[i % items].isoformat(),
            }
        )
        for i in range(have.episodes, episodes)
    ]
    for start in range(0, len(lines), 2000):
        engine.admin.ingest_lines(lines[start : start + 2000])
    if have.skills < skills:
        lines = [
            json.dumps(
                {
                    "kind": "skill",
                    "user_id": USER,
                    "name": f"skill-{i % 400}",
                    "body": f"{VERBS[i % len(VERBS)]} {TOPICS[i % len(TOPICS)]} {DETAILS[i % len(DETAILS)]}",
                    "description": f"How {NAMES[i % len(NAMES)]} handles {TOPICS[(i * 7) % len(TOPICS)]}",
                }
            )
            for i in range(skills)
        ]
        engine.admin.ingest_lines(lines)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--skills", type=int, default=1_000)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--build-only", action="store_true", help="build (or top up) the store at --store, then stop")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="retrieval overrides")
    ap.add_argument(
        "--sentences-per-item", type=int, default=1, help="synthetic sentences per item when building (default 1)"
    )
    ap.add_argument(
        "--keys",
        action="store_true",
        help="write the items' extra keys when building (memory_keys_write), for --set memory_keys=...",
    )
    ap.add_argument(
        "--key-kinds",
        default="all",
        choices=("all", "facts", "next", "sentences"),
        help="which keys --keys writes (memory_keys_write_kinds; default all): sentences for the candidates' keys",
    )
    args = ap.parse_args()
    overrides = parse_assignments(args.set) or None
    store = args.store or Path(tempfile.mkdtemp(prefix="memlens-latency-")) / "store"
    embedder = LocalMiniLM()
    engine = MemoryEngine.open(
        settings=Settings.from_env(
            {}, store=str(store), memory_keys_write=args.keys, memory_keys_write_kinds=args.key_kinds
        ),
        embedder=embedder,
    )
    have = engine.admin.stats()
    if have.items < args.items or have.episodes < args.episodes or have.skills < args.skills:
        t = time.perf_counter()
        build(engine, args.items, args.episodes, args.skills, args.sentences_per_item)
        print(f"built the store in {time.perf_counter() - t:.0f}s at {store}")
    if args.build_only:
        return
    stats = engine.admin.stats()
    queries = [
        f"What did {NAMES[i % len(NAMES)]} decide about {TOPICS[(i * 3) % len(TOPICS)]}?" for i in range(args.runs)
    ]
    for q in queries[:5]:  # warm caches and the model
        engine.retrieval.retrieve(USER, q, hops=2, overrides=overrides)
    floor, one, two, replay = [], [], [], []
    stages: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    index = engine._b.index  # the floor is one raw LanceDB search: below the engine's public API on purpose
    trace_ids = []
    for q in queries:
        t = time.perf_counter()
        vec = embedder.embed([q])[0]
        index.vector_search("semantic", USER, vec, 20)
        floor.append(1000 * (time.perf_counter() - t))
        # An agent's question is new each time: no query vector kept from an earlier run (the queries repeat here).
        engine.retrieval.pipeline.query_vectors.clear()
        t = time.perf_counter()
        first = engine.retrieval.retrieve(USER, q, hops=1, overrides=overrides)
        one.append(1000 * (time.perf_counter() - t))
        engine.retrieval.pipeline.query_vectors.clear()
        t = time.perf_counter()
        second = engine.retrieval.retrieve(USER, q, hops=2, overrides=overrides)
        two.append(1000 * (time.perf_counter() - t))
        trace_ids.append(second.trace_id)
        for hops, trace in ((1, first), (2, second)):
            collect_stages(stages[hops], trace)
    for tid in trace_ids:
        trace = engine.traces.get(tid)
        t = time.perf_counter()
        engine.retrieval.replay_trace(trace, {"bm25_weight": 0.5})
        replay.append(1000 * (time.perf_counter() - t))
    f50 = statistics.median(floor)
    rows = [
        ["floor (embed + 1 vector search)", f"{f50:.1f}", f"{pct(floor, 0.95):.1f}", "1.0x"],
        [
            "retrieve, 1 hop",
            f"{statistics.median(one):.1f}",
            f"{pct(one, 0.95):.1f}",
            f"{statistics.median(one) / f50:.1f}x",
        ],
        # A second hop repeats the embedding and the searches (its query depends on the first hop's results,
        # so they cannot be batched): the per-hop ratio compares like with like.
        [
            "retrieve, 2 hops (offline reasoner)",
            f"{statistics.median(two):.1f}",
            f"{pct(two, 0.95):.1f}",
            f"{statistics.median(two) / f50:.1f}x ({statistics.median(two) / 2 / f50:.1f}x per hop)",
        ],
        ["replay of a stored 2-hop trace", f"{statistics.median(replay):.1f}", f"{pct(replay, 0.95):.1f}", ""],
    ]
    print(
        f"store: {stats.items} items, {stats.episodes} episodes, {stats.skills} skills for one user; "
        f"{len(queries)} queries; overrides: {overrides or 'none'}; graph: {engine.graph.stats(USER)}; "
        f"keys: {index.count_keys('semantic')}"
    )
    print(table(["operation", "p50 ms", "p95 ms", "vs floor p50"], rows))
    print()
    # The machine's speed drifts by +-20 % within minutes, and a ratio of two medians taken over a whole run moves with
    # it; each query's floor, 1 hop and 2 hops run back to back, so their own ratios see the same machine.
    print(
        "paired ratios (median over the queries of each query's own times): 1 hop / floor "
        f"{statistics.median(o / f for o, f in zip(one, floor)):.2f}x, 2 hops / 1 hop "
        f"{statistics.median(t / o for t, o in zip(two, one)):.2f}x"
    )
    print()
    print("where the time goes (median ms per retrieval, from the traces' timings):")
    names = list(dict.fromkeys([*stages[2], *stages[1]]))
    print(
        table(
            ["stage", "1 hop", "2 hops"],
            [[n, *(f"{statistics.median(stages[h][n]):.1f}" if n in stages[h] else "" for h in (1, 2))] for n in names],
        )
    )
    print(f"vector search: {first.strategies.vector_search}")
    print(f"full-text search: {first.strategies.full_text_search}")
    if "key_search" in first.strategies.to_dict():
        print(f"key search (vectors): {first.strategies.to_dict()['key_search']}")


def collect_stages(into: dict[str, list[float]], trace) -> None:
    """Per-stage times summed over hops (embed_query, search, candidates, scoring), plus the trace's own stages."""
    per: dict[str, float] = {}
    for hop in trace.hops:
        for name, ms in hop.timings_ms.as_dict().items():
            per[name] = per.get(name, 0.0) + ms
    for name, ms in trace.timings_ms.as_dict().items():
        if name.startswith("reasoner"):
            per["reasoner"] = per.get("reasoner", 0.0) + ms
        elif name in ("merge_and_assembly", "trace_write", "total"):
            per[name] = ms
    for name, ms in per.items():
        into.setdefault(name, []).append(ms)


if __name__ == "__main__":
    main()
