"""The retriever: query generation, hops of search + scoring, reasoners, merge, MMR, assembly, the trace.

The logic is here; how long each stage took is measured around it (hop_run.StageTimer), and what a hop ran on and
produced is a record (hop_run.HopRun), not a dict. Replay's own steps are in replay.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..clock import parse_time, utcnow
from ..config import Settings
from ..errors import InvalidInput
from ..ids import check_id, check_text, new_id
from ..memory.base import Backends
from ..presets import preset_overrides
from ..providers.llm import LLM
from ..providers.llm_output import parse_number_list
from ..records import KINDS
from ..store.vectors.rows import VectorHit
from ..trace.key_links import KeyMatch
from ..trace.records import (
    CandidateInput,
    HopEntity,
    HopSimilarity,
    HopTrace,
    ProposalDetails,
    RetrievalTrace,
    Strategies,
    TimeWindow,
    Timings,
    Tombstone,
    TraceSettings,
)
from ..trace.replay import Relink, replay_ranking, replay_runs, replay_settings, tombstones
from ..vocab import Strategy
from .assembly import Assembly, assemble, merge, mmr, similarity_function, with_final_ranks
from .brevity import personal_word
from .candidates import LookedUp, build_inputs, search_sources
from .entity_strategy import EntityFinding, find_entities, relink, relinked
from .hop_run import HopRun, StageTimer, elapsed_ms, hop_trace, placement_key, ranking_entry
from .key_search import KEYED_KIND, candidate_key_matches, keys_on, start_key_search
from .participants import blend, hit_speakers, without_participants
from .query_vectors import QueryVectors
from .reasoners import DONE, CallableReasoner, LLMReasoner, OfflineBridgeReasoner, Proposal, Reasoner
from .similarity import CandidateCosines, cosine_lookup
from .speaker_stage import asks_about_user
from .stages import Scored, hop_lexical_weight, score_hop
from .text import condense_offline, text_search_query
from .time_stage import replay_window
from .time_window import question_window

SOURCES = KINDS
JUDGE_PROMPT = (
    "Rate how relevant each memory is to the question, from 0 (unrelated) to 1 (directly answers it).\n"
    "Question: {question}\n\nMemories:\n{memories}\n\n"
    "Reply with only a JSON array of numbers, one per memory, in order."
)
QUERY_PROMPT = (
    "Write a one-sentence search query of under 15 words for retrieving memories relevant to this "
    "message. Return only the query.\n\nMessage: {message}"
)


@dataclass(frozen=True)
class Request:
    """What one retrieval (or replay) answers: whose memories, which question, under which settings and clock."""

    user_id: str
    session_id: str | None
    question: str
    settings: Settings
    now: datetime
    sources: tuple[str, ...] = SOURCES
    time_window: TimeWindow | None = None  # the date window the question names (time_window.py)
    speaker: str | None = None  # the cue that the question asks about the user (speaker_stage.py)
    personal: str | None = None  # the question's first- or second-person word: no brevity stage (brevity.py)

    def with_question_cues(self) -> Request:
        """The request with its speaker cue (none while assistant_turn_penalty is 0) and its personal word (none
        while brevity_weight is 0) read from the question."""
        speaker = asks_about_user(self.question) if self.settings.assistant_turn_penalty > 0 else None
        personal = personal_word(self.question) if self.settings.brevity_weight > 0 else None
        return dataclasses.replace(self, speaker=speaker, personal=personal)


def stop_reason(query: str, seen: Sequence[str]) -> str | None:
    """Why the hops end before running ``query``, or None to run it."""
    if not query.strip():
        return "blank_query"
    if query.strip().upper() == DONE:
        return "done"
    if query in seen:
        return "repeated_query"
    return None


class Retriever:
    def __init__(self, b: Backends, llm: LLM, store_trace: Callable[[RetrievalTrace, Any], None]) -> None:
        self.b = b
        self.llm = llm
        self.store_trace = store_trace
        self.query_vectors = QueryVectors(b.embedder)

    # -- configuration ---------------------------------------------------------------------------------------------
    def settings_for(
        self, overrides: Mapping[str, Any] | None, hops: int | None, budget: int | None, preset: str | None = None
    ) -> Settings:
        # A preset is a named set of overrides; the call's own overrides win over it.
        changes = {**preset_overrides(preset), **dict(overrides or {})}
        if hops is not None:
            changes["hops"] = hops
        if budget is not None:
            changes["budget_tokens"] = budget
        settings = self.b.settings.with_overrides(changes)
        bad = [k for k in changes if k not in Settings.retrieval_keys()]
        if bad:
            # The retrieval settings by name would be a 1,000-character line (61 of them): the count and where.
            raise InvalidInput(
                f"{bad[0]} is not a retrieval setting; per-call overrides take the {len(Settings.retrieval_keys())} "
                "settings marked retrieval in docs/settings.md"
            )
        return settings

    def _reasoner(self, settings: Settings, reasoner: Any, user_id: str | None = None) -> Reasoner:
        if reasoner is not None:
            if hasattr(reasoner, "propose"):
                given: Reasoner = reasoner  # a Reasoner by duck typing: it proposes
                return given
            if callable(reasoner):
                return CallableReasoner(reasoner, getattr(reasoner, "__name__", "custom"))
            raise InvalidInput("reasoner must be a Reasoner or a callable (question, accumulated, hop) -> str")
        if settings.reasoner == "llm" or (settings.reasoner == "auto" and self.llm.available):
            return LLMReasoner(self.llm, user_id)
        return OfflineBridgeReasoner(mode=settings.reasoner_query)

    # -- the live pipeline ------------------------------------------------------------------------------------------
    def retrieve(
        self,
        user_id: str,
        question: str,
        session_id: str | None = None,
        hops: int | None = None,
        budget: int | None = None,
        overrides: Mapping[str, Any] | None = None,
        reasoner: Any = None,
        now: datetime | str | None = None,
        sources: Sequence[str] = SOURCES,
        save: bool = True,
        preset: str | None = None,
    ) -> RetrievalTrace:
        timer = StageTimer()
        check_id(user_id, "user id")
        if session_id is not None:
            check_id(session_id, "session id")
        check_text(question, "question", self.b.settings.max_text_chars)
        if save:  # the trace is written at the end: refuse before the work, not after
            self.b.db.refuse_if_read_only()
        settings = self.settings_for(overrides, hops, budget, preset)
        when = parse_time(now) if now is not None else utcnow()
        req = Request(user_id, session_id, question, settings, when, tuple(sources)).with_question_cues()
        read_by = None
        if settings.time_window != "off":
            with timer.stage("time_window"):
                window, read_by = question_window(question, when, settings.time_parser, self.llm, user_id)
            req = dataclasses.replace(req, time_window=window)
        with timer.stage("query_generation"):
            first = self._generate_query(question, settings, user_id)
        reasoner_obj = self._reasoner(settings, reasoner, user_id) if settings.hops > 1 else None
        strategies: dict[str, Any] = {
            "query_generation": first.proposed_by,
            "reasoner": reasoner_obj.name if reasoner_obj else "none (1 hop)",
            "relevance": settings.relevance_filter,
            "vector_search": "none (no search ran)",
            "full_text_search": "none (no search ran)",
        }
        if read_by is not None:
            strategies["time_window"] = read_by
        with self.b.db.hold() as conn:
            runs, stop, stop_details = self._run_hops(conn, req, first, reasoner_obj, strategies, timer)
            trace = self._finish(req, strategies, runs, stop, timer, preset=preset or "default")
            if stop != "max_hops":  # keep the reasoner's explanation of why it stopped
                trace = dataclasses.replace(trace, stop_details=stop_details)
            if save:
                with timer.stage("trace_write"):
                    self.store_trace(trace, conn)
        timer.since_start("total")
        return dataclasses.replace(trace, timings_ms=timer.timings())

    def _run_hops(
        self,
        conn: Any,
        req: Request,
        first: Proposal,
        reasoner: Reasoner | None,
        strategies: dict[str, Any],
        timer: StageTimer,
    ) -> tuple[list[HopRun], str, dict[str, Any]]:
        """Run hops until ``settings.hops`` or a stop reason; returns the hops, the stop reason and the reasoner's
        last proposal."""
        runs: list[HopRun] = []
        seen: list[str] = []
        cosines = CandidateCosines()
        looked_up = LookedUp()  # the DuckDB rows of every hop's candidates: a later hop asks only for new ones
        proposal = first
        stop_details: dict[str, Any] = {}
        for hop in range(1, req.settings.hops + 1):
            stop = stop_reason(proposal.query, seen)
            if hop > 1:  # the recorded decision: why this hop ran, or why the hops stopped before it
                strategies[f"hop{hop}"] = hop_decision(proposal, stop)
            if stop is not None:
                return runs, stop, stop_details
            seen.append(proposal.query)
            runs.append(
                self._run_hop(conn, req, hop, proposal, cosines, looked_up, strategies, runs[-1] if runs else None)
            )
            if hop >= req.settings.hops or reasoner is None:
                break
            with timer.stage(f"reasoner_hop{hop}"):
                accumulated = [s.inp.text for s in merge([r.scored for r in runs])]
                proposed = reasoner.propose(req.question, accumulated, hop, seen)
            proposal = Proposal(proposed.query.strip(), proposed.proposed_by, proposed.details)
            stop_details = {"proposed_by": proposal.proposed_by, "query": proposal.query, **proposal.details.to_dict()}
        return runs, "max_hops", stop_details

    def _search_without_participants(
        self,
        req: Request,
        qvec: np.ndarray,
        vector_query: str,
        hits: dict[str, tuple[list[VectorHit], list[VectorHit]]],
    ) -> tuple[np.ndarray, dict[str, tuple[list[VectorHit], list[VectorHit]]]]:
        """The participant stage (participants.py): the query's vector blended with that of ``vector_query`` (the
        query without its participants' names), and the vector searches run again with it; the full-text hits
        stay."""
        blended = blend(qvec, self.query_vectors.vector(vector_query), req.settings.participant_weight)
        again, _ = search_sources(
            self.b, req.user_id, vector_query, blended, req.sources, req.settings.top_k, searches=("vector",)
        )
        return blended, {kind: (again[kind][0], text_hits) for kind, (_, text_hits) in hits.items()}

    def _run_hop(
        self,
        conn: Any,
        req: Request,
        hop: int,
        proposal: Proposal,
        cosines: CandidateCosines,
        looked_up: LookedUp,
        strategies: dict[str, Any],
        previous: HopRun | None = None,
    ) -> HopRun:
        """Embed the query, search every source, follow the entities (when on), join the hits with DuckDB, (judge
        them,) and score them."""
        timer = StageTimer()
        query = proposal.query
        with timer.stage("embed_query"):
            qvec = self.query_vectors.vector(query)
        # The memories' extra keys (key_search.py) are searched beside the memories' own tables.
        pending_keys = start_key_search(self.b, req.user_id, query, qvec, req.sources, req.settings)
        with timer.stage("search"):
            words = text_search_query(query) if req.settings.text_search_words == "content" else query
            hits, modes = search_sources(
                self.b, req.user_id, query, qvec, req.sources, req.settings.top_k, text_query=words
            )
        record_search_modes(strategies, modes, hop, req.sources)
        vector_query = None
        # The first hop only: a later hop searches with its own vector (participants.py)
        if req.settings.participant_weight > 0 and hop == 1:
            vector_query = without_participants(query, hit_speakers(hits))
            if vector_query is not None:
                with timer.stage("participants"):
                    qvec, hits = self._search_without_participants(req, qvec, vector_query, hits)
        finding: EntityFinding = EntityFinding()
        entity_hits: dict[str, list[VectorHit]] = {}
        if req.settings.entity_strategy:
            with timer.stage("entities"):
                finding, entity_hits = self._entities(conn, req, hop, query, hits, previous)
            strategies["entities" if hop == 1 else f"entities_hop{hop}"] = finding.strategy
        keys: dict[str, KeyMatch] = {}
        key_hits: dict[str, list[VectorHit]] = {}
        if pending_keys is not None:  # what the key searches found once the others are done
            with timer.stage("keys"):
                keys, key_hits, how = pending_keys.finish(hits)
            record_search_modes(strategies, {"key_search": {KEYED_KIND: how}}, hop, [KEYED_KIND])
        elif keys_on(req.settings) and req.settings.memory_keys_search == "candidates" and KEYED_KIND in req.sources:
            with timer.stage("keys"):
                keys, how = candidate_key_matches(self.b, req.user_id, qvec, hits, req.settings)
            record_search_modes(strategies, {"key_search": {KEYED_KIND: how}}, hop, [KEYED_KIND])
        with timer.stage("candidates"):
            links = {m: lk for m, (_, lk) in finding.links.items()}
            inputs, vectors = build_inputs(
                self.b,
                conn,
                req.user_id,
                qvec,
                hits,
                entity_hits,
                links,
                key_hits=key_hits,
                keys=keys,
                looked_up=looked_up,
            )
            pairs = cosines.add_hop([i.id for i in inputs], vectors) if inputs else HopSimilarity()
        relevance_text = req.question if hop == 1 else query
        if req.settings.relevance_filter == "llm":
            with timer.stage("llm_judge"):
                inputs, strategies[f"relevance_hop{hop}"] = self._judge(inputs, relevance_text, req.user_id)
        staged: dict[str, float] = {}  # the stages inside scoring that are timed on their own (sessions)
        with timer.stage("scoring"):
            scored = score_hop(
                inputs,
                query,
                relevance_text,
                req.settings,
                req.now,
                hop,
                staged,
                window=req.time_window,
                speaker=req.speaker,
                personal=req.personal,
            )
        for name, ms in staged.items():
            timer.record(name, ms)
        return HopRun(
            hop,
            query,
            proposal.proposed_by,
            proposal.details,
            relevance_text,
            tuple(inputs),
            tuple(scored),
            pairs,
            timer.timings(),
            finding.seeds,
            hop_lexical_weight(inputs, req.settings, relevance_text, hop) if inputs else None,
            words if words != query else None,
            vector_query,
        )

    def _entities(
        self,
        conn: Any,
        req: Request,
        hop: int,
        query: str,
        hits: Mapping[str, tuple[list[VectorHit], list[VectorHit]]],
        previous: HopRun | None,
    ) -> tuple[EntityFinding, dict[str, list[VectorHit]]]:
        """The hop's entity stage (entity_strategy.py) and the rows of the memories it brings in."""
        found = {h.id for vec, fts in hits.values() for h in (*vec, *fts)}
        texts = [req.question, query] if hop == 1 and query != req.question else [query]
        n = int(req.settings.entity_from_top)
        if previous is None:  # the hop's own best hits, of each search (its ranking does not exist yet)
            top = [(kind, h.id) for kind, (vec, fts) in hits.items() for h in (*vec[:n], *fts[:n])]
            origin = f"hop{hop}_search"
        else:
            top = [(s.inp.kind, s.inp.id) for s in previous.scored if s.kept][:n]
            origin = f"hop{previous.hop}_result"
        finding = find_entities(conn, req.user_id, texts, req.sources, req.settings, req.now, top, origin, found)
        rows = {kind: self.b.index.rows_for(kind, req.user_id, ids) for kind, ids in finding.brought_in(found).items()}
        return finding, rows

    def _generate_query(self, message: str, settings: Settings, user_id: str) -> Proposal:
        """The first hop's query: the question itself when short, else a condensed form of it."""
        if len(message) <= settings.query_condense_chars:
            why = f"<= {settings.query_condense_chars} chars"
            return Proposal(message, Strategy.QUESTION, ProposalDetails(strategy="as_is", why=why))
        if settings.query_generator == "llm" or (settings.query_generator == "auto" and self.llm.available):
            result = self.llm.complete(QUERY_PROMPT.format(message=message), "query_generation", user_id)
            if result.ok and result.text.strip():
                query = result.text.strip().splitlines()[0][:300]
                return Proposal(query, Strategy.LLM_QUERY, ProposalDetails(strategy="llm"))
            fallback = condense_offline(message, settings.query_condense_words) or message[:201]
            details = ProposalDetails(strategy="offline", fallback=result.error)
            return Proposal(fallback, Strategy.OFFLINE_KEYWORDS, details)
        condensed = condense_offline(message, settings.query_condense_words) or message[:201]
        return Proposal(condensed, Strategy.OFFLINE_KEYWORDS, ProposalDetails(strategy="offline"))

    def _judge(self, inputs: list[CandidateInput], text: str, user_id: str) -> tuple[list[CandidateInput], str]:
        if not inputs or not self.llm.available:
            return inputs, "heuristic (no LLM configured)"
        # A reply means little without what it answered, which its vector also embeds: the judge sees both.
        memories = "\n".join(
            f"{n}. {i.text[:400]}" + (f" (said right after: {i.preceding_text[:200]})" if i.preceding_text else "")
            for n, i in enumerate(inputs, 1)
        )
        result = self.llm.complete(JUDGE_PROMPT.format(question=text, memories=memories), "relevance_judge", user_id)
        values = parse_number_list(result.text, len(inputs)) if result.ok else None
        if values is None:
            return inputs, f"heuristic (LLM judge failed: {result.error or 'malformed output'})"
        return [dataclasses.replace(i, llm_relevance=v) for i, v in zip(inputs, values)], "llm_judge"

    # -- shared by retrieve and replay ------------------------------------------------------------------------------
    def _finish(
        self,
        req: Request,
        strategies: dict[str, Any],
        runs: Sequence[HopRun],
        stop: str,
        timer: StageTimer,
        trace_id: str | None = None,
        replay_of: str | None = None,
        preset: str | None = None,
    ) -> RetrievalTrace:
        """Merge the hops, reorder by MMR, assemble the context, and write it all down as the trace."""
        with timer.stage("merge_and_assembly"):
            ranked, assembly = rank_and_assemble(req.settings, runs)
        placed = {placement_key(s): (s, p) for s, p in zip(ranked, assembly.placements)}
        hops = tuple(hop_trace(r, placed) for r in runs)
        ranking = tuple(ranking_entry(s, p) for s, p in zip(ranked, assembly.placements))
        used_settings = self._used_settings(req, preset)
        timer.since_start("pipeline")  # everything but the trace's write
        return RetrievalTrace(
            trace_id=trace_id or new_id("tr"),
            user_id=req.user_id,
            session_id=req.session_id,
            question=req.question,
            created_at=utcnow().isoformat(),
            settings=used_settings,
            strategies=Strategies.from_dict(strategies),
            hops=hops,
            stop_reason=stop,
            context=assembly.context,
            context_ids=tuple(s.inp.id for s in assembly.chosen),
            context_tokens=assembly.tokens_used,
            ranking=ranking,
            timings_ms=timer.timings(),
            replay_of=replay_of,
            time_window=req.time_window,
            speaker=req.speaker,
        )

    def _used_settings(self, req: Request, preset: str | None) -> TraceSettings:
        """The trace's record of what ran: every retrieval setting, the clock, the models, the preset's name
        (replays keep the original trace's, None when it had none)."""
        return TraceSettings.from_dict(
            {
                **req.settings.retrieval_dict(),  # only these: the store's other settings (and secrets) stay out
                "now": req.now.isoformat(),
                "embedder": self.b.embedder.name,
                "embedding_dim": self.b.embedder.dim,
                "llm": self.llm.name,
                **({"preset": preset} if preset is not None else {}),
            }
        )

    # -- replay ---------------------------------------------------------------------------------------------------
    def replay(
        self,
        trace: RetrievalTrace,
        overrides: Mapping[str, Any] | None = None,
        forgotten: Mapping[str, Mapping[str, Any] | Tombstone] | None = None,
        graph: bool = False,
    ) -> RetrievalTrace:
        """Re-rank a stored trace's candidates under other settings: no embedding, no search, no LLM call.

        A forgotten memory never enters the replayed context: the candidates the trace marks as forgotten and those
        in ``forgotten`` (id -> tombstone: the store's current state) are left out, and the ranking reports each of
        them with reason ``forgotten`` and its tombstone. With ``graph``, the entity stage links the recorded
        candidates as the graph is now (entity_strategy.relink): a changed graph shows in the ranking."""
        gone = tombstones(trace, forgotten)
        timer = StageTimer()
        settings = replay_settings(self.b.settings, trace, overrides)
        req = Request(trace.user_id, trace.session_id, trace.question, settings, parse_time(trace.settings.now))
        req = req.with_question_cues()
        req = dataclasses.replace(req, time_window=replay_window(trace, settings, req.now))
        if graph:
            with self.b.db.read() as conn:
                relink = self._relinker(conn, req)
                runs = replay_runs(
                    trace, req.settings, req.now, gone, relink, req.time_window, req.speaker, req.personal
                )
        else:
            runs = replay_runs(
                trace, req.settings, req.now, gone, window=req.time_window, speaker=req.speaker, personal=req.personal
            )
        stop = trace.stop_reason if settings.hops >= len(trace.hops) else "max_hops"
        new = self._finish(
            req,
            trace.strategies.to_dict(),
            runs,
            stop,
            timer,
            trace_id=f"{trace.trace_id}.replay",
            replay_of=trace.trace_id,
            preset=trace.settings.preset,
        )
        ranking = replay_ranking(trace, new, gone, settings.hops)
        seen = {c.id for h in trace.hops for c in h.candidates}
        return dataclasses.replace(
            new,
            ranking=ranking,
            timings_ms=Timings((("replay", elapsed_ms(timer.start)),)),
            forgotten={i: t for i, t in gone.items() if i in seen},
        )

    def _relinker(self, conn: Any, req: Request) -> Relink:
        """Replay's entity stage on the current graph (entity_strategy.relink), hop by hop."""

        def relink_hop(hop: HopTrace, previous: HopRun | None) -> tuple[tuple[HopEntity, ...], Any]:
            finding = relink(conn, req.user_id, req.question, hop, previous, req.settings, req.now, req.sources)
            return finding.seeds, lambda inp: relinked(inp, finding.links)

        return relink_hop


def hop_decision(proposal: Proposal, stop: str | None) -> str:
    """Why a later hop ran or did not, in words: the reasoner's proposal (the names it bridges to and the result
    they came from) or its reason to stop."""
    d = proposal.details
    if stop is not None:
        why = d.why or d.fallback or ""
        return f"not run ({stop})" + (f": {why}" if why else "")
    names = f"; names {', '.join(d.names)} from a top result (overlap {d.question_overlap:g})" if d.names else ""
    keys = f"; key terms {', '.join(d.key_terms)}" if d.key_terms else ""
    return f"ran: {proposal.proposed_by} proposed {proposal.query[:120]!r}{names}{keys}"


def record_search_modes(
    strategies: dict[str, Any], modes: Mapping[str, Mapping[str, str]], hop: int, sources: Sequence[str]
) -> None:
    """How each source was searched, in the trace's strategies: hop 1's, and a later hop's where it differs."""
    for search, by_kind in modes.items():
        searched = ", ".join(f"{kind}: {by_kind[kind]}" for kind in sources)
        if hop == 1:
            strategies[search] = searched
        elif searched != strategies[search]:  # e.g. a small table became resident meanwhile
            strategies[f"{search}_hop{hop}"] = searched


def protect_first_hop(ranked: list[Scored], runs: Sequence[HopRun], top: int) -> list[Scored]:
    """[memlens] The first hop's ``top`` best kept memories first, in hop 1's order, then the rest of the merged
    ranking in its order: a later hop adds evidence below what the question itself found best, and never pushes
    that out (its scores are on its own query's scale, so its best look as good as hop 1's). A memory both hops
    found keeps the copy the merge chose (its hop and score), at hop 1's place."""
    if top <= 0 or len(runs) < 2:
        return ranked
    place = {_key(s): n for n, s in enumerate([s for s in runs[0].scored if s.kept][:top])}
    protected = sorted((s for s in ranked if _key(s) in place), key=lambda s: place[_key(s)])
    return protected + [s for s in ranked if _key(s) not in place]


def _key(s: Scored) -> str:
    return s.inp.id or s.inp.text


def rank_and_assemble(settings: Settings, runs: Sequence[HopRun]) -> tuple[list[Scored], Assembly]:
    """The hops' kept candidates merged into one ranking (hop 1's best ``hop_protect_top`` first, then reordered by
    MMR when on, each with its final rank), and the context assembled from it."""
    ranked = protect_first_hop(merge([r.scored for r in runs]), runs, int(settings.hop_protect_top))
    if settings.mmr_enabled and ranked:
        cosine = cosine_lookup([r.similarity for r in runs]) if settings.mmr_similarity == "embedding" else None
        ranked = mmr(ranked, settings.mmr_lambda, similarity_function(ranked, settings.mmr_similarity, cosine))
    ranked = with_final_ranks(ranked)
    return ranked, assemble(ranked, settings.budget_tokens, settings.assembly_mode, settings.context_max_items)
