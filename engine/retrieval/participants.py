"""[memlens] The participant stage of a hop: a query that names a participant of the stored conversation is also
embedded without the name, and the vector search runs with the blend of the two vectors.

In a stored conversation every turn opens with its speaker (``Melanie said, "..."``, the importers' form), and the
other participant greets by name ("Hey Melanie!"). Asked "What books has John read?", the name pulls the query's
vector towards everything John says and every "Hey John" of the other side, greetings and small talk included,
while the words that carry the question ("books", "read") weigh less. Measured first outside the pipeline on the
LoCoMo dev half (plain vector search, recall@10): the question without its participants' names recalls 0.662
against the question's 0.566, with every category higher. But the name also says *who*: when both participants
talk about the same thing ("When did Jon visit networking events for his store?"), the question without it ranks
the other side's turns as high. So the stage keeps both: the hop's vector is ``(1 - w) * v(query) + w * v(query
without the names)``, normalised, with ``w = participant_weight``; full-text search keeps the query as it is.

**The first hop only.** A later hop's query is the question's words and the names and terms the reasoner found in
the first hop's results; searched with its own vector, it brings back the named speaker's own turns that the blend
let go, and the merge keeps the better of both. LoCoMo dev, 2 hops (recall@10): the stage on every hop 0.797
(multi-hop 0.499, temporal 0.892), on the first hop only 0.801 (multi-hop 0.505, temporal 0.898).

**A participant** is a speaker of a turn the hop's own search found: the name before ``said,`` at the start of a
memory's text (one or two capitalised words). Read from the hits, not from the store: no list to keep in step with
writes and forgets, and a store with no conversation never pays for it. A hop whose query names none of them (or
nothing but them) searches as before, and its trace has no ``vector_query``.

**Cost.** A hop that names a participant embeds one more text and runs its vector searches again (the first
searches found the participants); full-text search is not repeated. The candidates' cosines, the trace's
``vector_similarity``, are to the blended vector, and the hop records the text it blended in (``vector_query``).
The extra keys (memory_keys) follow the same vector when they are the candidates' own
(``memory_keys_search=candidates``); the keys table's search (``index``) starts beside the first searches, with the
query's own vector. Replay re-scores the recorded cosines, so it is exact; a what-if on ``participant_weight``
cannot re-embed and leaves the cosines as they were.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from ..store.vectors.rows import VectorHit

# A conversation turn as the benchmark importers write it: 'Melanie said, "..."' (the reasoner reads it too).
SPEAKER_PREFIX = re.compile(r"^([A-Z][\w'’-]*(?:[ \t][A-Z][\w'’-]*)?) said, ")


def speakers(texts: Iterable[str]) -> set[str]:
    """The speakers opening these texts (``Melanie said, ...``)."""
    return {m.group(1) for m in map(SPEAKER_PREFIX.match, texts) if m}


def hit_speakers(hits: Mapping[str, tuple[Sequence[VectorHit], Sequence[VectorHit]]]) -> set[str]:
    """The participants of the conversation a hop's searches found: the speakers of their hits."""
    return speakers(h.text for vec_hits, text_hits in hits.values() for h in (*vec_hits, *text_hits))


def without_participants(query: str, names: Collection[str]) -> str | None:
    """``query`` without the participants it names (a possessive ``'s`` goes with the name), or None when it names
    none of them or nothing else is left."""
    if not names:
        return None
    ordered = sorted(names, key=len, reverse=True)  # "Mary Ann" before "Mary"
    pattern = re.compile(r"(?<![\w'’-])(?:" + "|".join(re.escape(n) for n in ordered) + r")(?:['’]s)?(?![\w'’-])")
    stripped, count = pattern.subn(" ", query)
    if not count:
        return None
    rest = " ".join(stripped.split())
    # A query of names and punctuation only has nothing left to search for.
    return rest if re.search(r"\w", rest) else None


def blend(query_vector: np.ndarray, other: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * query_vector + weight * other``, scaled to unit length (cosines stay cosines)."""
    mixed = (1.0 - weight) * np.asarray(query_vector, dtype=np.float32) + weight * np.asarray(other, dtype=np.float32)
    norm = float(np.linalg.norm(mixed))
    if not np.isfinite(norm) or norm == 0.0:  # opposite vectors at 0.5: nothing to point with
        return np.asarray(query_vector, dtype=np.float32)
    return (mixed / norm).astype(np.float32)
