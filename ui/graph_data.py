"""The Graph page's data as rows and positions: plain functions of engine records (no streamlit, no plotly).

- ``as_of_moment``: the "as of" date a person picks, as the moment the engine is asked about (the end of that day,
  UTC, so what was said during the day counts);
- ``radial_layout``: node positions for a neighbourhood, the start in the middle and each further hop on a wider
  ring, every ring ordered by where its neighbours on the inner ring sit (fewer crossing edges);
- ``relation_rows`` / ``timeline_rows``: an entity's relations and a fact's versions as table rows, with validity,
  what superseded what, method, confidence and sources in words.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

from engine import Entity, Neighbourhood, Relation

from .text import when

RING_GAP = 1.0  # the distance between rings: hop 1 on radius 1, hop 2 on radius 2, ...


def as_of_moment(day: date | None) -> datetime | None:
    """The moment an "as of" date stands for: the end of that day in UTC (None: now, the relations valid today)."""
    return None if day is None else datetime.combine(day, time.max, tzinfo=UTC)


def parse_day(text: str | None) -> date | None:
    """A ``YYYY-MM-DD`` date (or the date part of an ISO-8601 time) from a URL, else None."""
    if not text:
        return None
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        return None


def validity(rel: Relation) -> str:
    """Where a relation stands: valid now, superseded (closed by a newer value), or forgotten (archived)."""
    if rel.archived_at is not None:
        return "forgotten"
    if rel.valid_to is not None:
        return "superseded" if rel.superseded_by else "ended"
    return "valid"


def period(rel: Relation) -> str:
    """``2026-01-03 10:00:00 → 2026-03-01 09:00:00`` (``→ now`` while still valid)."""
    return f"{when(rel.valid_from)} → {when(rel.valid_to) if rel.valid_to else 'now'}"


def sources_text(rel: Relation, limit: int = 4) -> str:
    """The sources in words: ``message s1#3, semantic item-9`` (the first ``limit``, then how many more)."""
    shown = [f"{s.type} {s.id}" for s in rel.sources[:limit]]
    more = len(rel.sources) - limit
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "") if shown else "—"


def confidence_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def relation_rows(relations: Iterable[Relation], entity_id: str) -> list[dict[str, Any]]:
    """An entity's relations as rows: the direction seen from it (→ it is the subject, ← the object), the predicate,
    the other entity, validity, method, confidence and sources. The relation id comes first (forget takes it)."""
    rows = []
    for rel in relations:
        outgoing = rel.subject_id == entity_id
        rows.append(
            {
                "relation": rel.id,
                "direction": "→" if outgoing else "←",
                "predicate": rel.predicate,
                "other entity": rel.object if outgoing else rel.subject,
                "fact": rel.sentence,
                "status now": validity(rel),
                "valid from": when(rel.valid_from),
                "valid to": when(rel.valid_to) if rel.valid_to else "now",
                "method": rel.method,
                "confidence": confidence_text(rel.confidence),
                "sources": sources_text(rel),
            }
        )
    return rows


def timeline_rows(versions: Sequence[Relation]) -> list[dict[str, Any]]:
    """A fact's versions, oldest first, numbered; each says which version superseded it ("v3 at 2026-...")."""
    number = {rel.id: n for n, rel in enumerate(versions, start=1)}
    rows = []
    for n, rel in enumerate(versions, start=1):
        after = number.get(rel.superseded_by or "")
        rows.append(
            {
                "version": f"v{n}",
                "object": rel.object,
                "status": validity(rel),
                "valid from": when(rel.valid_from),
                "valid to": when(rel.valid_to) if rel.valid_to else "now",
                "superseded by": (f"v{after}" if after else rel.superseded_by or "—") if rel.superseded_by else "—",
                "method": rel.method,
                "confidence": confidence_text(rel.confidence),
                "sources": sources_text(rel),
                "relation": rel.id,
            }
        )
    return rows


def supersession_chain(versions: Sequence[Relation]) -> list[tuple[str, str, str]]:
    """(old object, new object, when) for every version superseded by another of ``versions``: what replaced what."""
    by_id = {rel.id: rel for rel in versions}
    out = []
    for rel in versions:
        newer = by_id.get(rel.superseded_by or "")
        if newer is not None:
            out.append((rel.object, newer.object, when(rel.valid_to)))
    return out


def predicates_of(relations: Iterable[Relation], subject_id: str) -> list[str]:
    """The predicates ``subject_id`` has as the subject, most used first (the facts whose timeline can be shown)."""
    counts: dict[str, int] = defaultdict(int)
    for rel in relations:
        if rel.subject_id == subject_id:
            counts[rel.predicate] += 1
    return sorted(counts, key=lambda p: (-counts[p], p))


def radial_layout(hood: Neighbourhood) -> dict[str, tuple[float, float]]:
    """Entity id -> (x, y): starts at the centre (spread on a small circle when several), hop d on the circle of
    radius d. Each ring is ordered by the mean angle of the entity's neighbours one ring in, so a neighbour sits
    near the entity that brought it in; ties by name, so the picture is the same on every run."""
    names = {e.id: e.name for e in hood.entities}
    rings: dict[int, list[str]] = defaultdict(list)
    for entity_id, d in hood.distance.items():
        if entity_id in names:
            rings[d].append(entity_id)
    neighbours: dict[str, set[str]] = defaultdict(set)
    for rel in hood.relations:
        neighbours[rel.subject_id].add(rel.object_id)
        neighbours[rel.object_id].add(rel.subject_id)
    angle: dict[str, float] = {}
    pos: dict[str, tuple[float, float]] = {}
    for d in sorted(rings):
        inner = {i: _mean_angle([angle[n] for n in neighbours[i] if n in angle]) for i in rings[d]}
        ordered = sorted(rings[d], key=lambda i: (inner[i], names[i], i))
        radius = RING_GAP * d if d else (0.0 if len(ordered) == 1 else 0.35)
        offset = inner[ordered[0]]  # the ring turned so that its first entity sits beside its inner neighbours
        for n, entity_id in enumerate(ordered):
            a = offset + 2 * math.pi * n / len(ordered)
            angle[entity_id] = a % (2 * math.pi)
            pos[entity_id] = (radius * math.cos(a), radius * math.sin(a))
    return pos


def _mean_angle(angles: Sequence[float]) -> float:
    """The circular mean of ``angles`` (radians, in [0, 2π)); 0 for none."""
    if not angles:
        return 0.0
    x = sum(math.cos(a) for a in angles)
    y = sum(math.sin(a) for a in angles)
    return math.atan2(y, x) % (2 * math.pi) if (x or y) else 0.0


def entity_label(entity: Entity, mentions: int | None = None) -> str:
    """``Ada Lovelace (person)``, with the number of memories naming it when known."""
    count = f" · {mentions} mention{'' if mentions == 1 else 's'}" if mentions is not None else ""
    return f"{entity.name} ({entity.type}){count}"
