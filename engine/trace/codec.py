"""A trace's JSON form: the records to the stored UTF-8 JSON and back, from every earlier stored format (the
records' own ``from_dict`` fill in what an older trace lacks)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from ..errors import InvalidInput
from .records import (
    CandidateTrace,
    HopSimilarity,
    HopTrace,
    ProposalDetails,
    RankedMemory,
    RetrievalTrace,
    Strategies,
    Timings,
    Tombstone,
    TraceSettings,
)

__all__ = ["trace_from_dict", "trace_json", "trace_json_bytes"]


def trace_from_dict(data: dict[str, Any]) -> RetrievalTrace:
    """A stored trace's JSON object as records (:class:`~engine.errors.InvalidInput` when it is not a trace)."""
    try:
        hops = tuple(_hop(h) for h in data["hops"])
        return RetrievalTrace(
            **{
                **data,
                "hops": hops,
                "context_ids": tuple(data["context_ids"]),
                "ranking": tuple(RankedMemory.from_dict(r) for r in data["ranking"]),
                "settings": TraceSettings.from_dict(data["settings"]),  # an older trace's missing settings filled in
                "strategies": Strategies.from_dict(data["strategies"]),
                "timings_ms": Timings.from_dict(data["timings_ms"]),
                "forgotten": {i: Tombstone.from_dict(t) for i, t in (data.get("forgotten") or {}).items()},
            }
        )
    except (KeyError, TypeError, AttributeError) as exc:  # AttributeError: a ranking entry that is not an object
        raise InvalidInput(f"not a memlens trace: {exc}") from None


def _hop(h: dict[str, Any]) -> HopTrace:
    """A stored hop: its proposal as the record (a custom reasoner's keys kept), its cosines in the compact format,
    as older flat pairs, or absent (written back as ``{}``)."""
    return HopTrace(
        **{
            **h,
            "candidates": tuple(CandidateTrace(**c) for c in h["candidates"]),
            "proposal": ProposalDetails.from_dict(h["proposal"]),
            "similarity": HopSimilarity.from_dict(h.get("similarity")),
        }
    )


def trace_json_bytes(trace: RetrievalTrace) -> bytes:
    """The stored form of a trace: UTF-8 JSON. orjson writes a 2-hop trace (~200 candidates, ~300 kB) in ~0.6 ms,
    the json module in ~6 ms (measured, bench/latency.py store); the JSON is the same up to whitespace. orjson
    walks the records (dataclasses), dicts, lists and datetimes itself and refuses anything else. The records whose
    written form is not all their fields (the trace's settings, strategies, timings, ranking entries and tombstones,
    a hop's proposal, counts, timings and cosines) are handed over in that form (their ``plain_fields``); the
    candidates, a few hundred of them, stay records for orjson to walk, except the few that carry a tombstone."""
    fields = trace.plain_fields()
    fields["hops"] = [{**h.plain_fields(), "candidates": [_candidate(c) for c in h.candidates]} for h in trace.hops]
    return orjson.dumps(fields, option=orjson.OPT_NON_STR_KEYS)


def _candidate(c: CandidateTrace) -> CandidateTrace | dict[str, Any]:
    if c.forgotten is None:
        return c
    return {**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)}, "forgotten": c.forgotten.to_dict()}


def trace_json(trace: RetrievalTrace) -> str:
    return trace_json_bytes(trace).decode("utf-8")
