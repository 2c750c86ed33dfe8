"""Hard-forgotten text in stored traces: the candidates' texts blanked, the assembled context rebuilt with a
placeholder, and the text replaced where the trace quotes it (question, hop queries, proposals). Works on a trace's
records (each step returns a new trace), inside the forget's transaction (TraceStore.mark_forgotten), which reads
the stored trace, redacts it and writes it back."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..retrieval.assembly import context_block
from ..retrieval.text import text_search_query
from .entity_links import EntityPath, HopEntity
from .records import CandidateTrace, HopTrace, ProposalDetails, RetrievalTrace, Tombstone

# What a hard-forgotten memory's text becomes in a trace's assembled context.
FORGOTTEN_TEXT = "[forgotten memory {id}]"
# What a hard-forgotten entity's name and relation's predicate become in the entity stage's records.
FORGOTTEN_ENTITY = "[forgotten entity {id}]"
FORGOTTEN_RELATION = "[forgotten relation {id}]"
REDACTED_PROPOSAL = "made from a forgotten memory's text"
REDACTED_QUERY = "[query made from a forgotten memory]"


def redact_trace(trace: RetrievalTrace, ids: Collection[str], tombstone: Tombstone) -> RetrievalTrace:
    """The trace with its candidates ``ids`` marked as forgotten with ``tombstone``.

    Soft (archived): only the mark; the text stays, as it does in the store. Hard: every copy of the memory's text
    goes: the candidates' ``text`` and ``preceding_text``, its block in the assembled ``context`` (the context is
    rebuilt from the ranking with a placeholder), and what the offline bridge reasoner quoted from it (``from_text``
    or ``also_from``, the names and terms it took, and the later hop's query made of them). Scores, ranks and ids
    stay, so the trace still explains the retrieval. A hard tombstone is never downgraded by a later soft one."""
    texts: dict[str, str] = {}
    forgotten = dict(trace.forgotten)

    def mark(c: CandidateTrace) -> CandidateTrace:
        # A key's text is the memory's own or (a ``next`` key) the text of the memory that answered it.
        if tombstone.hard and c.key is not None and (c.id in ids or c.key.sources() & set(ids)):
            c = dataclasses.replace(c, key=c.key.redacted())
        if c.id not in ids or (c.forgotten is not None and c.forgotten.hard):
            return c
        forgotten[c.id] = tombstone
        if not tombstone.hard:
            return dataclasses.replace(c, forgotten=tombstone)
        texts.setdefault(c.id, c.text or "")
        return dataclasses.replace(c, forgotten=tombstone, text="", preceding_text="")

    hops = tuple(dataclasses.replace(h, candidates=tuple(mark(c) for c in h.candidates)) for h in trace.hops)
    trace = dataclasses.replace(trace, hops=hops, forgotten=forgotten)
    if not tombstone.hard or not texts:
        return trace
    quoted = [t for t in texts.values() if t]

    # A hop's proposal is what made its query; the offline bridge reasoner's quotes the memory it took names from
    # (from_text), and the query is made of those names.
    def unquote(h: HopTrace) -> HopTrace:
        if h.hop > 1 and _quotes(h.proposal.to_dict(), quoted):
            return dataclasses.replace(
                h,
                proposal=ProposalDetails(redacted=REDACTED_PROPOSAL),
                query=REDACTED_QUERY,
                relevance_text=REDACTED_QUERY,
                text_query=None if h.text_query is None else REDACTED_QUERY,
                vector_query=None if h.vector_query is None else REDACTED_QUERY,
            )
        return h

    stop_details = {"redacted": REDACTED_PROPOSAL} if _quotes(trace.stop_details, quoted) else trace.stop_details
    return dataclasses.replace(
        trace,
        context=_redacted_context(trace, texts),
        hops=tuple(unquote(h) for h in trace.hops),
        stop_details=stop_details,
    )


def redact_quotes(trace: RetrievalTrace, texts: Mapping[str, str]) -> RetrievalTrace:
    """The trace with each hard-forgotten memory's text (``texts``: id -> the text retrieval showed for it) replaced
    where the trace quotes it outside its candidates: the question, each hop's query, relevance text and proposal,
    the reasoner's stop details. Exact substring matches of the whole text, longest first, each replaced with
    ``[forgotten memory <id>]``; a paraphrase or a part of the text is not recognised and stays."""
    pairs = sorted(((t, i) for i, t in texts.items() if t and t.strip()), key=lambda p: -len(p[0]))
    if not pairs:
        return trace
    patterns = [(_quote_pattern(text), text, item_id) for text, item_id in pairs]

    def sub(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, text, item_id in patterns:
                if text in value:
                    marker = FORGOTTEN_TEXT.format(id=item_id)
                    value = pattern.sub(lambda _: marker, value)  # noqa: B023 (used at once, in this iteration)
            return value
        if isinstance(value, list):
            return [sub(v) for v in value]
        if isinstance(value, dict):
            return {k: sub(v) for k, v in value.items()}
        return value

    # A hop's full-text query is its query's content words (text_search_words): a quote of a text shows there as
    # the text's own content words, with no stop word left to break the match.
    word_forms = [(text_search_query(text), item_id) for text, item_id in pairs]

    def full_text(h: HopTrace, query: str) -> str | None:
        if h.text_query is None:
            return None
        if query != h.query:  # the query quoted a forgotten text: what search was given is the redacted query's words
            return text_search_query(query)
        value = str(sub(h.text_query))
        for words, item_id in word_forms:
            if words.strip() and words in value:
                value = value.replace(words, FORGOTTEN_TEXT.format(id=item_id))
        return value

    def vector_text(h: HopTrace, query: str) -> str | None:
        # The query without its participants' names (participants.py): a quote with a name in it no longer matches
        # there whole, so a query that quoted a forgotten text leaves no part of it behind.
        if h.vector_query is None:
            return None
        return REDACTED_QUERY if query != h.query else str(sub(h.vector_query))

    def hop(h: HopTrace) -> HopTrace:
        query = sub(h.query)
        return dataclasses.replace(
            h,
            query=query,
            relevance_text=sub(h.relevance_text),
            proposal=ProposalDetails.from_dict(sub(h.proposal.to_dict())),
            text_query=full_text(h, query),
            vector_query=vector_text(h, query),
        )

    hops = tuple(hop(h) for h in trace.hops)
    return dataclasses.replace(trace, question=sub(trace.question), hops=hops, stop_details=sub(trace.stop_details))


def redact_graph(trace: RetrievalTrace, ids: Collection[str]) -> RetrievalTrace:
    """The trace with hard-forgotten graph rows (entity and relation ``ids``) taken out of what its entity stage
    recorded (entity_links.py): each such entity's name, where a hop started from it (and in the stage's summary
    among the strategies) or a candidate's path runs through it, and each such relation's predicate. Ids, distances
    and scores stay, so the trace still explains why the memory was found. (Where the question or a hop query names
    the entity, :func:`redact_quotes` replaces it.)"""
    if not ids:
        return trace

    def path(p: EntityPath) -> EntityPath:
        changes: dict[str, Any] = {}
        if p.entity_id in ids:
            changes["entity_name"] = FORGOTTEN_ENTITY.format(id=p.entity_id)
        if p.via_entity_id is not None and p.via_entity_id in ids:
            changes["via_entity_name"] = FORGOTTEN_ENTITY.format(id=p.via_entity_id)
        if p.relation_id is not None and p.relation_id in ids:
            changes["predicate"] = FORGOTTEN_RELATION.format(id=p.relation_id)
        return dataclasses.replace(p, **changes) if changes else p

    def candidate(c: CandidateTrace) -> CandidateTrace:
        if c.entity is None:
            return c
        links = dataclasses.replace(c.entity, paths=tuple(path(p) for p in c.entity.paths))
        return c if links == c.entity else dataclasses.replace(c, entity=links)

    def start(e: HopEntity) -> HopEntity:
        return dataclasses.replace(e, name=FORGOTTEN_ENTITY.format(id=e.id)) if e.id in ids else e

    # The stage's one-line summary per hop (strategies "entities", "entities_hop2") names its starting entities.
    names = {e.id: e.name for h in trace.hops for e in h.entities if e.id in ids}
    patterns = [(_quote_pattern(n), FORGOTTEN_ENTITY.format(id=i)) for i, n in names.items() if n.strip()]
    per_hop = dict(trace.strategies.per_hop)
    for key, value in per_hop.items():
        if key.startswith("entities") and isinstance(value, str):
            for pattern, marker in patterns:
                value = pattern.sub(lambda _: marker, value)  # noqa: B023 (used at once, in this iteration)
            per_hop[key] = value
    hops = tuple(
        dataclasses.replace(
            h, entities=tuple(start(e) for e in h.entities), candidates=tuple(candidate(c) for c in h.candidates)
        )
        for h in trace.hops
    )
    return dataclasses.replace(trace, hops=hops, strategies=dataclasses.replace(trace.strategies, per_hop=per_hop))


def graph_ids(trace: RetrievalTrace) -> set[str]:
    """The entity and relation ids the trace's entity stage recorded (a hard forget of one of them rewrites it)."""
    found = {e.id for h in trace.hops for e in h.entities}
    for h in trace.hops:
        for c in h.candidates:
            for p in c.entity.paths if c.entity is not None else ():
                found.update(i for i in (p.entity_id, p.via_entity_id, p.relation_id) if i)
    return found


def _quote_pattern(text: str) -> re.Pattern[str]:
    """``text`` where it stands as itself, not inside a longer word: an entity's name "Ann" is redacted in "Ann's
    trip", not in "Anna" (an edge that is not a word character, like a quote's closing period, matches anywhere)."""
    head = r"(?<!\w)" if text[:1].isalnum() or text[:1] == "_" else ""
    tail = r"(?!\w)" if text[-1:].isalnum() or text[-1:] == "_" else ""
    return re.compile(head + re.escape(text) + tail)


def _quotes(details: Any, texts: Sequence[str]) -> bool:
    if not isinstance(details, dict):
        return False
    # The offline bridge reasoner quotes the best result (from_text) and the next best ones it took names from.
    quotes = [details.get("from_text"), *(details.get("also_from") or ())]
    return any(q and (q in t or t.startswith(str(q))) for q in quotes for t in texts)


def _redacted_context(trace: RetrievalTrace, texts: Mapping[str, str]) -> str:
    """The context rebuilt from the trace's ranking with each forgotten memory's text replaced (in the one context
    format, assembly.context_block). When the rebuild with the original texts does not give back the stored context (a
    format from another version), the texts are replaced where they stand instead."""
    context = trace.context or ""
    if not context:
        return context
    by_hop = {(h.hop, c.id): c for h in trace.hops for c in h.candidates}

    def render(replace: bool) -> str:
        memories: list[tuple[object, float, str]] = []
        for r in trace.ranking:
            if not r.in_context:
                continue
            c = by_hop.get((r.hop, r.id))
            if c is None:
                return ""
            text = texts.get(r.id, c.text or "")
            if replace and r.id in texts:
                text = FORGOTTEN_TEXT.format(id=r.id)
            memories.append((c.created_at, float(r.final or 0), text))
        return context_block(memories)

    if render(False) == context:
        return render(True)
    for item_id, text in texts.items():
        if text:
            context = context.replace(text, FORGOTTEN_TEXT.format(id=item_id))
    return context
