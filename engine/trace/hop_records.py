"""What a hop's trace says beside its candidates: how its query was made (:class:`ProposalDetails`), the cosines
between the candidates it saw first (:class:`HopSimilarity`) and its counts (:class:`HopCounts`).

Each record is written as the JSON object hops have always held (``to_dict``) and read back from every earlier
stored form (``from_dict``): a stored hop without ``similarity``, a flat ``{"a|b": cosine}`` mapping from before
the compact format, a proposal with keys of another version or a custom reasoner's own keys. A hop's BM25 weight
(:class:`FusionWeight`) is written only by traces since ``adaptive_bm25``; an older hop has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

__all__ = ["PROPOSAL_KEYS", "FusionWeight", "HopCounts", "HopSimilarity", "ProposalDetails", "SIMILARITY_FORMAT"]

# The keys the query generator and the reasoners write, in the order they write them (so a proposal is written
# back with its keys in the order it was stored).
PROPOSAL_KEYS = (
    "strategy",
    "why",
    "fallback",
    "raw",
    "names",
    "from_text",
    "question_overlap",
    "also_from",
    "key_terms",
    "terms",
    "redacted",
)
_LIST_KEYS = frozenset({"names", "also_from", "key_terms", "terms"})


def stored_object(cls: type, data: object) -> Mapping[str, Any]:
    """The stored JSON object a record is read from: None reads as an empty one; another record type or any other
    value is refused, as a stored non-object would be."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise TypeError(f"not a stored {cls.__name__}: {type(data).__name__}")
    return data


@dataclass(frozen=True)
class ProposalDetails:
    """How a hop's query was made, as its proposer explained it. Hop 1's query generator writes ``strategy``
    (as_is | llm | offline) with ``why`` or ``fallback``; the offline bridge reasoner the
    ``names`` it took, the result they came ``from_text`` (``also_from`` the next ones), its ``question_overlap``,
    the ``key_terms`` it added and the query's ``terms``; the LLM reasoner its ``raw`` reply or the ``fallback``
    (an LLM error); a reasoner that stopped says ``why``. A hard forget replaces a proposal that quoted the
    forgotten text with ``redacted``. A key none of them writes (a custom reasoner's, another version's) is kept in
    ``extra`` and written back after them."""

    strategy: str | None = None
    why: str | None = None
    fallback: str | None = None
    raw: str | None = None  # the LLM reasoner's reply, first 500 characters
    names: tuple[str, ...] | None = None
    from_text: str | None = None  # first 200 characters of the result the names came from
    question_overlap: float | None = None
    also_from: tuple[str, ...] | None = None
    key_terms: tuple[str, ...] | None = None
    terms: tuple[str, ...] | None = None
    redacted: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        known: dict[str, Any] = {k: data[k] for k in PROPOSAL_KEYS if k in data}
        for k in _LIST_KEYS & known.keys():
            known[k] = tuple(known[k]) if known[k] is not None else None
        return cls(
            **known,
            extra={k: v for k, v in data.items() if k not in PROPOSAL_KEYS},
        )

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = {}
        for k in PROPOSAL_KEYS:
            value = getattr(self, k)
            if value is not None:
                plain[k] = list(value) if k in _LIST_KEYS else value
        return {**plain, **self.extra}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


# The compact form engine/retrieval/similarity.py writes (its FORMAT).
SIMILARITY_FORMAT = "cosine-int16-lower"


@dataclass(frozen=True)
class HopSimilarity:
    """The cosines of the candidates a hop saw first against every candidate seen before them (the strict lower
    triangle of the retrieval's similarity matrix: engine/retrieval/similarity.py), so MMR replays without
    embedding: ``ids`` in order and ``values``, base64 int16 in units of 1/``scale``. A trace from before that
    format holds a flat ``{"a|b": cosine}`` mapping instead (``pairs``, written back as it came); a hop with
    nothing recorded is empty (:attr:`recorded` false) and written as ``{}``."""

    format: str | None = None
    scale: int | None = None
    ids: tuple[str, ...] = ()
    values: str = ""
    pairs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def recorded(self) -> bool:
        return self.format is not None or bool(self.pairs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        if "format" not in data:
            return cls(pairs=dict(data))
        ids = tuple(data.get("ids") or ())
        return cls(format=data["format"], scale=data.get("scale"), ids=ids, values=data.get("values") or "")

    def to_dict(self) -> dict[str, Any]:
        if self.format is None:
            return dict(self.pairs)
        return {"format": self.format, "scale": self.scale, "ids": list(self.ids), "values": self.values}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


@dataclass(frozen=True)
class HopCounts:
    """How many candidates a hop's search found, and how many the relevance filter kept and dropped."""

    found: int = 0
    kept: int = 0
    dropped: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(**{k: int(v) for k, v in data.items() if k in ("found", "kept", "dropped")})

    def to_dict(self) -> dict[str, int]:
        return {"found": self.found, "kept": self.kept, "dropped": self.dropped}


@dataclass(frozen=True)
class FusionWeight:
    """The BM25 weight a hop's fusion used (``weight``) against the one set (``set_weight``), and why
    (engine/retrieval/lexical_weight.py): ``rule`` is fixed, few candidates, no positive cosine, clear head, flat,
    between or compares events (with its ``cue``); ``ratio`` the ``rank``-th best cosine over the best when it was
    measured."""

    set_weight: float
    weight: float
    rule: str
    rank: int | None = None
    ratio: float | None = None
    cue: str | None = None  # rule "compares events": how the question compares them (event_comparison.py)

    @property
    def lowered(self) -> bool:
        return self.weight < self.set_weight

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self | None:
        if isinstance(data, cls) or data is None:
            return data
        data = stored_object(cls, data)
        return cls(
            set_weight=float(data["set_weight"]),
            weight=float(data["weight"]),
            rule=str(data["rule"]),
            rank=data.get("rank"),
            ratio=data.get("ratio"),
            cue=data.get("cue"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"set_weight": self.set_weight, "weight": self.weight, "rule": self.rule}
        if self.rank is not None:
            out["rank"] = self.rank
        if self.ratio is not None:
            out["ratio"] = self.ratio
        if self.cue is not None:
            out["cue"] = self.cue
        return out

    def describe(self) -> str:
        """In words, for the trace page and why-not: 'BM25 weight 0.05 of 0.5: the cosine ranking has a clear head
        (5th best / best = 0.58)'."""
        head = f"BM25 weight {self.weight:.3g}" + (f" of {self.set_weight:.3g}" if self.lowered else "")
        measured = f" ({_ordinal(self.rank)} best cosine / best = {self.ratio:.2f})" if self.ratio is not None else ""
        why = {
            "fixed": "as set (adaptive_bm25 off)",
            "few candidates": f"as set: {self.rank} candidates or fewer",
            "no positive cosine": "as set: no candidate has a positive cosine",
            "clear head": "the cosine ranking has a clear head, so BM25 does not count" + measured,
            "flat": "the cosines are flat, so BM25 counts fully" + measured,
            "between": "the cosine ranking has a head, so BM25 counts less" + measured,
            "compares events": f"as set: the question compares events ({self.cue}), so a clear cosine head may "
            "hold only one of them",
        }.get(self.rule, self.rule + measured)
        return f"{head}: {why}"


def _ordinal(n: int | None) -> str:
    if n is None:
        return "k-th"
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
