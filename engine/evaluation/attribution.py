"""Per-hop attribution of a run: which hop, and which strategy, first found each expected memory, and what the later
hops changed in the context: an expected memory in the run's context that the first hop alone did not bring
(gained), and one the first hop alone brought that the run's context lost (lost). The first hop alone is the stored
trace replayed with one hop (no search, no embedding), so the comparison holds everything else equal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..trace.records import RetrievalTrace
from .records import CaseResult


@dataclass(frozen=True)
class GoldFinding:
    case_id: str
    memory_id: str
    first_hop: int | None  # the first hop whose candidates held it (None: no hop found it)
    strategy: str  # how that hop found it: the query's proposer and the search ("question · vector"); "" if none
    ranked_hop: int | None  # the hop whose copy of it the final ranking kept (a later hop may score it higher)
    in_context: bool  # in the run's context
    first_hop_context: bool  # in the context of the trace replayed with its first hop alone


@dataclass(frozen=True)
class HopAttribution:
    run_id: str
    run_cases: int  # the run's cases
    cases: int  # cases read: with a stored trace (the baselines have none), at most max_cases
    multi_hop_cases: int  # of them, cases whose trace ran more than one hop
    findings: tuple[GoldFinding, ...]  # one per expected memory of each traced case
    first_found: dict[str, int]  # "hop 1", "hop 2", ..., "never found" -> expected memories
    strategies: dict[str, int]  # "hop 2 · bridge entities · vector" -> expected memories first found that way
    gained: tuple[GoldFinding, ...]  # in the context only thanks to the later hops
    lost: tuple[GoldFinding, ...]  # in the first hop's context, pushed out by the later hops


def _strategy(trace: RetrievalTrace, memory_id: str) -> tuple[int | None, str]:
    for hop in trace.hops:
        for c in hop.candidates:
            if c.id == memory_id:
                return hop.hop, f"{hop.proposed_by} · {c.found_by}"
    return None, ""


def attribute(
    run_id: str,
    results: Iterable[CaseResult],
    load: Callable[[str], RetrievalTrace | None],
    first_hop_only: Callable[[RetrievalTrace], RetrievalTrace],
    max_cases: int,
) -> HopAttribution:
    """``load`` gives a case's stored trace (None when it is gone), ``first_hop_only`` replays a trace with one hop;
    the first ``max_cases`` traced cases are read."""
    findings: list[GoldFinding] = []
    cases = multi = total = 0
    for r in results:
        total += 1
        if cases >= max_cases:
            continue
        trace = load(r.trace_id) if r.trace_id else None
        if trace is None:
            continue
        cases += 1
        several = len(trace.hops) > 1
        multi += several
        alone = set(first_hop_only(trace).context_ids) if several else set(trace.context_ids)
        context = set(trace.context_ids)
        ranked = {m.id: m.hop for m in trace.ranking if m.rank is not None}
        for memory_id in r.expected:
            hop, how = _strategy(trace, memory_id)
            findings.append(
                GoldFinding(
                    r.case_id, memory_id, hop, how, ranked.get(memory_id), memory_id in context, memory_id in alone
                )
            )
    first = Counter(f"hop {f.first_hop}" if f.first_hop else "never found" for f in findings)
    ways = Counter(f"hop {f.first_hop} · {f.strategy}" for f in findings if f.first_hop)
    return HopAttribution(
        run_id,
        total,
        cases,
        multi,
        tuple(findings),
        dict(sorted(first.items(), key=lambda kv: (kv[0] == "never found", kv[0]))),
        dict(ways.most_common()),
        tuple(f for f in findings if f.in_context and not f.first_hop_context),
        tuple(f for f in findings if f.first_hop_context and not f.in_context),
    )
