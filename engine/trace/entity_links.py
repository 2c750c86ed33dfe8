"""What the entity stage of a hop recorded (engine/retrieval/entity_strategy.py): the entities it started from
(:class:`HopEntity`: named in the hop's query, or proposed by the previous hop's results) and, per candidate, the
paths that linked the memory to them (:class:`EntityLinks` of :class:`EntityPath`) with the entity score they gave.

Every entity is recorded by id next to its name (``entity_id`` / ``entity_name``, ``via_entity_id`` /
``via_entity_name``, a hop's ``entities[].id`` / ``.name``): a hard forget of an entity finds the names to redact by
those ids. A trace from before the entity stage has none of these keys and reads back with none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from .hop_records import stored_object

__all__ = ["EntityLinks", "EntityPath", "HopEntity"]


@dataclass(frozen=True)
class HopEntity:
    """An entity a hop's entity stage started from: how it was found (``origin``: ``query`` when the hop's query
    names it, ``hop<n>_search`` when one of hop n's best search hits names it, ``hop<n>_result`` when a top result
    of hop n's ranking names it), how many memories name it (``mentions``) and its weight (inverse document
    frequency over the user's mentions: a name in 2 memories says far more than a speaker's name in 600; half of
    that for an entity a result named rather than the query). ``followed`` is false when more memories than
    ``entity_max_mentions`` name it: it then brings in none (and, under ``entity_common`` "ignore", links none)."""

    id: str
    name: str
    origin: str
    mentions: int
    weight: float
    followed: bool = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(**{k: data[k] for k in _HOP_ENTITY_KEYS if k in data})

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _HOP_ENTITY_KEYS}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()


_HOP_ENTITY_KEYS = ("id", "name", "origin", "mentions", "weight", "followed")


@dataclass(frozen=True)
class EntityPath:
    """How one starting entity reaches a memory: the memory names ``entity`` itself (``distance`` 0), or names
    ``via_entity``, which a relation (``relation_id``, ``predicate``, valid at the retrieval's clock) links to it
    (``distance`` 1). ``weight`` is the path's share of the score: the entity's weight times the distance decay."""

    entity_id: str
    entity_name: str
    distance: int
    weight: float
    relation_id: str | None = None
    predicate: str | None = None
    via_entity_id: str | None = None
    via_entity_name: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self) -> Self:
        if isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(**{k: data[k] for k in _PATH_KEYS if k in data})

    def to_dict(self) -> dict[str, Any]:
        plain = {k: getattr(self, k) for k in _PATH_KEYS[:4]}
        plain.update({k: getattr(self, k) for k in _PATH_KEYS[4:] if getattr(self, k) is not None})
        return plain

    def describe(self) -> str:
        """The path as a person reads it: "Caroline" or "Caroline -[lives_in]- Sweden (distance 1)"."""
        if self.distance == 0 or self.via_entity_name is None:
            return self.entity_name
        return f"{self.entity_name} -[{self.predicate}]- {self.via_entity_name} (distance {self.distance})"


_PATH_KEYS = (
    "entity_id",
    "entity_name",
    "distance",
    "weight",
    "relation_id",
    "predicate",
    "via_entity_id",
    "via_entity_name",
)


@dataclass(frozen=True)
class EntityLinks:
    """Why the entity stage linked a memory: its ``score`` (0..1, the share of the hop's entity weight its paths
    cover; the fusion adds ``entity_weight * score``) and the best ``paths`` per starting entity, best first.
    ``brought_in`` is true when the entity stage added the memory to the candidates (search had not found it)."""

    score: float
    paths: tuple[EntityPath, ...]
    brought_in: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Self | None) -> Self | None:
        if data is None or isinstance(data, cls):
            return data
        data = stored_object(cls, data)
        return cls(
            score=float(data.get("score") or 0.0),
            paths=tuple(EntityPath.from_dict(p) for p in data.get("paths") or ()),
            brought_in=bool(data.get("brought_in", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "paths": [p.to_dict() for p in self.paths], "brought_in": self.brought_in}

    def plain_fields(self) -> dict[str, Any]:
        return self.to_dict()

    def describe(self) -> str:
        return "; ".join(p.describe() for p in self.paths)
