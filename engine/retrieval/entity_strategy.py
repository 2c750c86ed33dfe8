"""The entity stage of a hop: the graph's second way to a memory, beside vector and full-text search.

Entities named in the hop's query (every 1..5-word span of it, compared with the user's entities by name key), and
at half weight those named by the ``entity_from_top`` best results (hop 1: of each of its own searches; later hops:
of the previous hop's ranking), bring in the memories that name them (``entity_mentions``, distance 0) and,
``entity_depth`` relations away (relations valid at the retrieval's clock), the memories naming their neighbours
(distance 1, at half the weight). Why: multi-hop evidence usually shares an entity with the question or with what
answers its first part, not its words.

Scores. An entity's weight is its inverse document frequency over the user's mentions, ``ln(1 + N / mentions)``: a
name in 2 memories says far more than a speaker's name in 600. A memory's entity score is the share of the hop's
entity weight its best path per starting entity covers (a path's weight: the entity's, halved per relation
followed; a question naming none is measured by its best result entity), capped at 1; the fusion adds
``entity_weight * score`` (stages.with_entity_part). An entity named by more than ``entity_max_mentions`` memories
scores the memories search found but brings in none. At most ``entity_top_k`` memories are brought in per hop, best
score first (ties by id, so reruns agree).

The stage reads the graph in the hop's own database connection (a few small queries); the memories it brings in
get their text and stored vector from the vector index (engine/store/vectors), then join the candidates like any
other hit (candidates.build_inputs), so every later stage and the trace treat them alike.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..config import Settings
from ..memory.graph_write import name_key
from ..store.sql.database import Connection
from ..trace.records import CandidateInput, CandidateTrace, EntityLinks, EntityPath, HopEntity, HopTrace
from ..vocab import FoundBy
from .hop_run import HopRun
from .text import CONTENT_STOP_WORDS

MAX_SPAN_WORDS = 5
# A relation followed halves the weight of what it reaches.
DISTANCE_DECAY = 0.5
# At most this many relations are followed per hop (the most recent first), and this many mentions read per entity.
MAX_RELATIONS = 200
_TOKEN = re.compile(r"[^\s\"“”()\[\]{},;:!?]+")
_EDGE = re.compile(r"^[^\w]+|[^\w+#]+$")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


@dataclass(frozen=True)
class EntityFinding:
    """What a hop's entity stage found: the entities it started from, and per linked memory its kind and links."""

    seeds: tuple[HopEntity, ...] = ()
    links: Mapping[str, tuple[str, EntityLinks]] = field(default_factory=dict)
    strategy: str = "off"

    def brought_in(self, found: Collection[str]) -> dict[str, list[str]]:
        """kind -> the linked memories search did not find (``found``), for the caller to fetch."""
        out: dict[str, list[str]] = {}
        for memory_id, (kind, _) in self.links.items():
            if memory_id not in found:
                out.setdefault(kind, []).append(memory_id)
        return out


def spans(text: str) -> list[str]:
    """The name keys of every 1..5-word span of ``text`` (punctuation at a word's ends and a possessive 's
    dropped), without single stop words: the names the text may mention."""
    words = [_POSSESSIVE.sub("", _EDGE.sub("", w)) for w in _TOKEN.findall(text)]
    words = [w for w in words if w]
    keys: dict[str, None] = {}
    for n in range(1, MAX_SPAN_WORDS + 1):
        for start in range(0, len(words) - n + 1):
            key = name_key(" ".join(words[start : start + n]))
            if n == 1 and (key in CONTENT_STOP_WORDS or len(key) < 2):
                continue
            keys[key] = None
    return list(keys)


def find_entities(
    conn: Connection,
    user_id: str,
    texts: Sequence[str],
    kinds: Sequence[str],
    settings: Settings,
    now: datetime,
    previous: Sequence[tuple[str, str]] = (),
    previous_origin: str = "",
    found: Collection[str] = (),
) -> EntityFinding:
    """The entity stage of one hop: the entities ``texts`` name (and those of the ``previous`` hop's top
    (kind, memory id) results), and the memories of ``kinds`` they link to, with their scores and paths. Memories in
    ``found`` (what search returned) are linked by any entity; the others only by entities named by at most
    ``entity_max_mentions`` memories, and at most ``entity_top_k`` of them."""
    seeds = _seeds(conn, user_id, [k for t in texts for k in spans(t)], [m for _, m in previous], previous_origin)
    if not seeds:
        return EntityFinding(strategy="on (no entity named)")
    # What each entity reaches: itself at distance 0, its neighbours one valid relation away at distance 1.
    related = _relations(conn, user_id, list(seeds), now) if int(settings.entity_depth) >= 1 else []
    counts, total = _mention_counts(conn, user_id, list({*seeds, *(r[3] for r in related)}))
    cap = int(settings.entity_max_mentions)
    hop_entities = tuple(
        HopEntity(
            id=eid,
            name=name,
            origin=origin,
            mentions=counts.get(eid, 0),
            weight=round(_decay(origin) * math.log(1 + max(total, 1) / max(counts.get(eid, 0), 1)), 6),
            followed=counts.get(eid, 0) <= cap,
        )
        for eid, (name, origin) in seeds.items()
    )
    # An entity named everywhere (a conversation's speakers) says nothing about which memory answers; under
    # entity_common "score" it still scores what search found, under "ignore" it takes no part.
    live = [e for e in hop_entities if e.followed or settings.entity_common == "score"]
    weights = {e.id: e.weight for e in live}
    reach: dict[str, list[tuple[str, EntityPath]]] = {}  # target entity -> (seed, path)
    for e in live:
        reach.setdefault(e.id, []).append((e.id, EntityPath(e.id, e.name, 0, e.weight)))
    for seed, rel_id, predicate, other, other_name in related:
        if seed not in weights:
            continue
        weight = round(weights[seed] * DISTANCE_DECAY, 6)
        path = EntityPath(seed, seeds[seed][0], 1, weight, rel_id, predicate, other, other_name)
        reach.setdefault(other, []).append((seed, path))
    # A neighbour named by more than entity_max_mentions memories is as uninformative as such a seed.
    open_targets = [t for t in reach if counts.get(t, 0) <= cap]
    mentions = _mentions(conn, user_id, list(reach), open_targets, list(found), kinds, cap)
    best: dict[str, dict[str, EntityPath]] = {}  # memory -> seed -> its best path
    kind_of: dict[str, str] = {}
    for target, kind, memory_id in mentions:
        kind_of[memory_id] = kind
        for seed, path in reach.get(target, ()):
            have = best.setdefault(memory_id, {}).get(seed)
            if have is None or (path.weight, -path.distance) > (have.weight, -have.distance):
                best[memory_id][seed] = path
    # The share of what the query itself names; a question naming nothing is measured by its results' best.
    total_weight = sum(e.weight for e in live if e.origin == "query") or max(weights.values(), default=1.0) or 1.0
    scores = {
        m: round(min(1.0, sum(p.weight for p in per_seed.values()) / total_weight), 6) for m, per_seed in best.items()
    }
    # Records only for what is kept: every memory search found, and the entity_top_k best of the rest (ties by id).
    found_set = set(found)
    kept = [m for m in best if m in found_set]
    kept += heapq.nsmallest(
        int(settings.entity_top_k), (m for m in best if m not in found_set), key=lambda m: (-scores[m], m)
    )
    links: dict[str, tuple[str, EntityLinks]] = {}
    for memory_id in kept:
        paths = tuple(sorted(best[memory_id].values(), key=lambda p: (-p.weight, p.distance, p.entity_id)))
        links[memory_id] = (kind_of[memory_id], EntityLinks(scores[memory_id], paths, memory_id not in found_set))
    # Counts, not names: the names are in the hop's entities, beside their ids (which a hard forget redacts by).
    from_query = sum(1 for e in hop_entities if e.origin == "query")
    strategy = (
        f"on (depth {settings.entity_depth}): {from_query} entities named by the query, "
        f"{len(hop_entities) - from_query} by top results; {len(links)} memories linked"
    )
    return EntityFinding(hop_entities, links, strategy)


def _decay(origin: str) -> float:
    """An entity named by a result rather than by the query is one step removed from the question."""
    return 1.0 if origin == "query" else DISTANCE_DECAY


# -- the graph's queries (parameters only: never a name in the SQL) ----------------------------------------------
def _seeds(
    conn: Connection, user_id: str, keys: list[str], memories: list[str], origin: str
) -> dict[str, tuple[str, str]]:
    """entity id -> (name, origin): the entities named by ``keys`` (origin ``query``), then those the
    ``memories`` name (``origin``), in one round trip."""
    if not keys and not memories:
        return {}
    rows = conn.execute(
        "SELECT e.id, e.name, 0 AS src FROM entities e WHERE e.user_id = ? AND e.archived_at IS NULL "
        "AND list_contains(?::VARCHAR[], e.name_key) "
        "UNION ALL SELECT DISTINCT e.id, e.name, 1 AS src FROM entity_mentions m JOIN entities e ON e.id = m.entity_id "
        "WHERE m.user_id = ? AND list_contains(?::VARCHAR[], m.memory_id) AND e.archived_at IS NULL "
        "ORDER BY src, id",
        [user_id, keys, user_id, memories],
    ).fetchall()
    seeds: dict[str, tuple[str, str]] = {}
    for eid, name, src in rows:
        seeds.setdefault(str(eid), (str(name), "query" if src == 0 else origin))
    return seeds


def _mention_counts(conn: Connection, user_id: str, entity_ids: list[str]) -> tuple[dict[str, int], int]:
    """How many memories name each entity, and how many mentions the user has in all (one round trip)."""
    rows = conn.execute(
        "SELECT entity_id, count(*) FROM entity_mentions WHERE user_id = ? AND list_contains(?::VARCHAR[], entity_id) "
        "GROUP BY entity_id UNION ALL SELECT NULL, count(*) FROM entity_mentions WHERE user_id = ?",
        [user_id, entity_ids, user_id],
    ).fetchall()
    total = next((int(r[1]) for r in rows if r[0] is None), 0)
    return {str(r[0]): int(r[1]) for r in rows if r[0] is not None}, total


def _relations(
    conn: Connection, user_id: str, entity_ids: list[str], now: datetime
) -> list[tuple[str, str, str, str, str]]:
    """(seed, relation id, predicate, the other entity, its name) for the relations of the seeds valid at
    ``now``, most recent first."""
    rows = conn.execute(
        "SELECT r.id, r.predicate, r.subject_id, s.name, r.object_id, o.name FROM relations r "
        "JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id "
        "WHERE r.user_id = ? AND r.archived_at IS NULL AND s.archived_at IS NULL AND o.archived_at IS NULL "
        "AND (list_contains(?::VARCHAR[], r.subject_id) OR list_contains(?::VARCHAR[], r.object_id)) "
        "AND r.valid_from <= ? AND (r.valid_to IS NULL OR r.valid_to > ?) "
        "ORDER BY r.valid_from DESC, r.id LIMIT ?",
        [user_id, entity_ids, entity_ids, now, now, MAX_RELATIONS],
    ).fetchall()
    seeds = set(entity_ids)
    out = []
    for rel_id, predicate, subj, subj_name, obj, obj_name in rows:
        if subj in seeds:
            out.append((str(subj), str(rel_id), str(predicate), str(obj), str(obj_name)))
        if obj in seeds:
            out.append((str(obj), str(rel_id), str(predicate), str(subj), str(subj_name)))
    return out


def _mentions(
    conn: Connection,
    user_id: str,
    targets: list[str],
    open_targets: list[str],
    found: list[str],
    kinds: Sequence[str],
    cap: int,
) -> list[tuple[str, str, str]]:
    """(entity, kind, memory id) of the mentions of ``targets`` among the memories search ``found``, and of
    ``open_targets`` anywhere (at most ``cap`` per entity)."""
    # The memories search found, by any entity; the rest by the entities named rarely enough (at most cap each).
    rows: list[Any] = conn.execute(
        "SELECT entity_id, kind, memory_id FROM entity_mentions WHERE user_id = ? "
        "AND list_contains(?::VARCHAR[], entity_id) AND list_contains(?::VARCHAR[], memory_id) "
        "AND list_contains(?::VARCHAR[], kind) "
        "UNION ALL SELECT entity_id, kind, memory_id FROM (SELECT entity_id, kind, memory_id, row_number() OVER "
        "(PARTITION BY entity_id ORDER BY memory_id) AS n FROM entity_mentions WHERE user_id = ? "
        "AND list_contains(?::VARCHAR[], entity_id) AND list_contains(?::VARCHAR[], kind)) AS ranked WHERE n <= ?",
        [user_id, targets, found, list(kinds), user_id, open_targets, list(kinds), cap],
    ).fetchall()
    return sorted({(str(e), str(k), str(m)) for e, k, m in rows})


# -- replay against the current graph ----------------------------------------------------------------------------
def relink(
    conn: Connection,
    user_id: str,
    question: str,
    hop: HopTrace,
    previous: HopRun | None,
    settings: Settings,
    now: datetime,
    sources: Sequence[str],
) -> EntityFinding:
    """The entity stage of a stored hop run again on the graph as it is now, over the hop's recorded candidates:
    the same texts and the same top results as live (hop 1's best hits of each search, from the recorded scores;
    later hops the replayed previous hop's ranking). It links candidates only: a memory the graph would bring in
    now and the trace never saw has no text or cosine in it (replay searches nothing)."""
    n = int(settings.entity_from_top)
    texts = [question, hop.query] if hop.hop == 1 and hop.query != question else [hop.query]
    if previous is None:
        top = _recorded_top(hop.candidates, n)
        origin = f"hop{hop.hop}_search"
    else:
        top = [(s.inp.kind, s.inp.id) for s in previous.scored if s.kept][:n]
        origin = f"hop{previous.hop}_result"
    ids = [c.id for c in hop.candidates]
    only_linking = dataclasses.replace(settings, entity_top_k=0)
    return find_entities(conn, user_id, texts, sources, only_linking, now, top, origin, ids)


def _recorded_top(candidates: Sequence[CandidateTrace], n: int) -> list[tuple[str, str]]:
    """The best ``n`` hits of each search per kind, as the hop's live entity stage took them."""
    top: list[tuple[str, str]] = []
    for kind in dict.fromkeys(str(c.kind) for c in candidates):
        mine = [c for c in candidates if str(c.kind) == kind]
        vec = [c for c in mine if c.found_by.split("+")[0] in (FoundBy.VECTOR, FoundBy.BOTH)]
        fts = [c for c in mine if c.found_by.split("+")[0] in (FoundBy.FTS, FoundBy.BOTH)]
        vec.sort(key=lambda c: -(c.scores.vector_similarity or 0.0))
        fts.sort(key=lambda c: -(c.scores.fts_score or 0.0))
        top += [(kind, c.id) for c in (*vec[:n], *fts[:n])]
    return top


def relinked(inp: CandidateInput, links: Mapping[str, tuple[str, EntityLinks]]) -> CandidateInput | None:
    """A recorded candidate with the current graph's links: None when only the entity stage had found it and the
    graph no longer links it (it would not have been a candidate)."""
    found = inp.found_by.split("+")[0]
    link = links[inp.id][1] if inp.id in links else None
    if found == FoundBy.ENTITY:
        return None if link is None else dataclasses.replace(inp, entity=dataclasses.replace(link, brought_in=True))
    return dataclasses.replace(inp, entity=link, found_by=f"{found}+{FoundBy.ENTITY}" if link else found)
