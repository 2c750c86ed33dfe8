"""Where the evidence ends up: for each method and category, how many expected memories ranked 1-10, 11-25, 26-50,
beyond 50, or were never candidates at all (``--evidence-ranks`` of bench/locomo.py and bench/longmemeval.py).

Recall@10 says how much evidence made the top 10; this says what kind of work would bring the rest there. Evidence
ranked 11-50 is a scoring problem (the candidates were found, then ordered below others); evidence that was never a
candidate is a search problem (no search of the hop ranked it in its ``top_k``), which no rescoring can fix. Counts
are over expected memories (a question with three evidence turns counts three), so the shares differ from recall@10,
which averages per question. The baselines (vector, bm25) rank only their top 25 (``BASELINE_DEPTH`` of
engine/evaluation/runs.py): for them "never" means not in that top 25, and 26-50 and >50 stay empty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from _common import table

BUCKETS = ("1-10", "11-25", "26-50", ">50", "never")


def bucket(rank: int | None) -> str:
    """The bucket of a 1-based rank (None: not ranked at all)."""
    if rank is None:
        return "never"
    if rank <= 10:
        return "1-10"
    if rank <= 25:
        return "11-25"
    if rank <= 50:
        return "26-50"
    return ">50"


def evidence_ranks(rows: Iterable[tuple[Any, ...]]) -> dict[str, dict[str, int]]:
    """Counts per bucket, overall and per category, from ``run_units``' rows ``(category, scores, ms, result)``
    (``result.ranks``: expected id -> rank or None); ``n`` is the number of expected memories."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(("n", *BUCKETS), 0))
    for category, _, _, result in rows:
        for rank in result.ranks.values():
            for group in ("overall", category or "(none)"):
                counts[group]["n"] += 1
                counts[group][bucket(rank)] += 1
    return {"overall": counts["overall"], **{k: v for k, v in sorted(counts.items()) if k != "overall"}}


def print_evidence_ranks(by_method: dict[str, dict[str, dict[str, int]]], methods: Sequence[str]) -> None:
    """The buckets as shares of each row's expected memories, one row per method and category."""
    lines = []
    for m in methods:
        for category, c in by_method[m].items():
            n = c["n"]
            lines.append([m, category, n, *(c[b] / n if n else 0.0 for b in BUCKETS)])
    print(
        "\nwhere the evidence ranked (share of expected memories; never: not a candidate of any search, "
        "for vector and bm25 not in their top 25):"
    )
    print(table(["method", "category", "evidence", *BUCKETS], lines))
