"""The retriever: query generation, hops of search + scoring, reasoners, merge, MMR, assembly, the trace, replay."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..clock import parse_time, utcnow
from ..config import Settings
from ..errors import InvalidInput
from ..ids import check_id, check_text, new_id
from ..memory.base import Backends
from ..presets import preset_overrides
from ..providers.llm import LLM
from ..providers.llm_output import parse_number_list
from ..records import KINDS
from .candidates import build_inputs, search_sources
from .reasoners import DONE, CallableReasoner, LLMReasoner, OfflineBridgeReasoner, Proposal
from .similarity import CandidateCosines, cosine_lookup
from .stages import Scored, assemble, merge, mmr, score_hop, similarity_function
from .text import condense_offline
from .trace import CandidateInput, CandidateTrace, HopTrace, RetrievalTrace

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


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class Retriever:
    def __init__(self, b: Backends, llm: LLM, store_trace: Callable[[RetrievalTrace, Any], None]) -> None:
        self.b = b
        self.llm = llm
        self.store_trace = store_trace

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
            raise InvalidInput(
                f"{bad[0]} is not a retrieval setting; per-call overrides take: {', '.join(Settings.retrieval_keys())}"
            )
        return settings

    def _reasoner(self, settings: Settings, reasoner: Any, user_id: str | None = None):
        if reasoner is not None:
            if hasattr(reasoner, "propose"):
                return reasoner
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
        t_start = time.perf_counter()
        check_id(user_id, "user id")
        if session_id is not None:
            check_id(session_id, "session id")
        check_text(question, "question", self.b.settings.max_text_chars)
        if save:  # the trace is written at the end: refuse before the work, not after
            self.b.db.refuse_if_read_only()
        settings = self.settings_for(overrides, hops, budget, preset)
        now = parse_time(now) if now is not None else utcnow()
        strategies: dict[str, Any] = {}
        timings: dict[str, float] = {}

        t = time.perf_counter()
        query, proposed_by, proposal = self._generate_query(question, settings, user_id)
        strategies["query_generation"] = proposed_by
        timings["query_generation"] = _ms(t)
        reasoner_obj = self._reasoner(settings, reasoner, user_id) if settings.hops > 1 else None
        strategies["reasoner"] = reasoner_obj.name if reasoner_obj else "none (1 hop)"
        strategies["relevance"] = settings.relevance_filter
        strategies["vector_search"] = strategies["full_text_search"] = "none (no search ran)"

        hop_scored: list[list[Scored]] = []
        hop_meta: list[dict] = []
        seen: list[str] = []
        cosines = CandidateCosines()
        stop_reason = "max_hops"
        stop_details: dict = {}
        with self.b.db.hold() as conn:
            for hop in range(1, settings.hops + 1):
                if not query.strip():
                    stop_reason = "blank_query"
                    break
                if query.strip().upper() == DONE:
                    stop_reason = "done"
                    break
                if query in seen:
                    stop_reason = "repeated_query"
                    break
                seen.append(query)
                hop_t: dict[str, float] = {}
                t = time.perf_counter()
                qvec = self.b.embedder.embed([query])[0]
                hop_t["embed_query"] = _ms(t)
                t = time.perf_counter()
                hits, modes = search_sources(self.b, user_id, query, qvec, sources, settings.top_k)
                hop_t["search"] = _ms(t)
                for search, by_kind in modes.items():
                    searched = ", ".join(f"{kind}: {by_kind[kind]}" for kind in sources)
                    if hop == 1:
                        strategies[search] = searched
                    elif searched != strategies[search]:  # e.g. a small table became resident meanwhile
                        strategies[f"{search}_hop{hop}"] = searched
                t = time.perf_counter()
                inputs, vectors = build_inputs(self.b, conn, user_id, qvec, hits)
                pairs = cosines.add_hop([i.id for i in inputs], vectors) if inputs else {}
                hop_t["candidates"] = _ms(t)
                relevance_text = question if hop == 1 else query
                if settings.relevance_filter == "llm":
                    t = time.perf_counter()
                    inputs, judge = self._judge(inputs, relevance_text, user_id)
                    strategies[f"relevance_hop{hop}"] = judge
                    hop_t["llm_judge"] = _ms(t)
                t = time.perf_counter()
                scored = score_hop(inputs, query, relevance_text, settings, now, hop)
                hop_t["scoring"] = _ms(t)
                hop_scored.append(scored)
                hop_meta.append(
                    {
                        "query": query,
                        "proposed_by": proposed_by,
                        "proposal": proposal,
                        "relevance_text": relevance_text,
                        "timings": hop_t,
                        "pairs": pairs,
                        "inputs": inputs,
                    }
                )
                if hop >= settings.hops:
                    break
                t = time.perf_counter()
                accumulated = [s.inp.text for s in merge(hop_scored)]
                prop: Proposal = reasoner_obj.propose(question, accumulated, hop, seen)  # type: ignore[union-attr]
                timings[f"reasoner_hop{hop}"] = _ms(t)
                query, proposed_by, proposal = prop.query.strip(), prop.proposed_by, prop.details
                stop_details = {"proposed_by": proposed_by, "query": query, **proposal}
            trace = self._finish(
                user_id,
                session_id,
                question,
                settings,
                now,
                strategies,
                hop_scored,
                hop_meta,
                stop_reason,
                timings,
                t_start,
                preset=preset or "default",
            )
            if stop_reason != "max_hops":  # keep the reasoner's explanation of why it stopped
                trace = dataclasses.replace(trace, stop_details=stop_details)
            if save:
                t = time.perf_counter()
                self.store_trace(trace, conn)
                timings["trace_write"] = _ms(t)
        timings["total"] = _ms(t_start)
        return dataclasses.replace(trace, timings_ms=dict(timings))

    def _generate_query(self, message: str, settings: Settings, user_id: str) -> tuple[str, str, dict]:
        if len(message) <= settings.query_condense_chars:
            return message, "question", {"strategy": "as_is", "why": f"<= {settings.query_condense_chars} chars"}
        if settings.query_generator == "llm" or (settings.query_generator == "auto" and self.llm.available):
            result = self.llm.complete(QUERY_PROMPT.format(message=message), "query_generation", user_id)
            if result.ok and result.text.strip():
                return result.text.strip().splitlines()[0][:300], "llm:query", {"strategy": "llm"}
            fallback = condense_offline(message) or message[:201]
            return fallback, "offline:keywords", {"strategy": "offline", "fallback": result.error}
        return condense_offline(message) or message[:201], "offline:keywords", {"strategy": "offline"}

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
        user_id,
        session_id,
        question,
        settings: Settings,
        now: datetime,
        strategies: dict,
        hop_scored: list[list[Scored]],
        hop_meta: list[dict],
        stop_reason: str,
        timings: dict,
        t_start: float,
        trace_id: str | None = None,
        replay_of: str | None = None,
        preset: str | None = None,
    ) -> RetrievalTrace:
        t = time.perf_counter()
        ranked = merge(hop_scored)
        if settings.mmr_enabled and ranked:
            cosine = cosine_lookup([m["pairs"] for m in hop_meta]) if settings.mmr_similarity == "embedding" else None
            ranked = mmr(ranked, settings.mmr_lambda, similarity_function(ranked, settings.mmr_similarity, cosine))
        context, chosen, used = assemble(
            ranked, settings.budget_tokens, settings.assembly_mode, settings.context_max_items
        )
        for n, s in enumerate(ranked, 1):
            s.ranks["final"] = n
        timings["merge_and_assembly"] = _ms(t)
        hops = tuple(self._hop_trace(n, scored, meta) for n, (scored, meta) in enumerate(zip(hop_scored, hop_meta), 1))
        ranking = tuple(
            {
                "id": s.inp.id,
                "kind": s.inp.kind,
                "hop": s.hop,
                "final": s.final,
                "rank": s.ranks["final"],
                "in_context": s.in_context,
                "reason": s.reason,
                "tokens": s.tokens,
            }
            for s in ranked
        )
        used_settings = {
            **settings.retrieval_dict(),
            "now": now.isoformat(),
            "embedder": self.b.embedder.name,
            "embedding_dim": self.b.embedder.dim,
            "llm": self.llm.name,
        }
        if preset is not None:  # replays keep the original trace's preset name
            used_settings["preset"] = preset
        timings["pipeline"] = _ms(t_start)
        return RetrievalTrace(
            trace_id=trace_id or new_id("tr"),
            user_id=user_id,
            session_id=session_id,
            question=question,
            created_at=utcnow().isoformat(),
            settings=used_settings,
            strategies=strategies,
            hops=hops,
            stop_reason=stop_reason,
            context=context,
            context_ids=tuple(s.inp.id for s in chosen),
            context_tokens=used,
            ranking=ranking,
            timings_ms=timings,
            replay_of=replay_of,
        )

    @staticmethod
    def _hop_trace(n: int, scored: list[Scored], meta: dict) -> HopTrace:
        order = {inp.id: k for k, inp in enumerate(meta["inputs"])}
        cands = tuple(
            CandidateTrace(
                id=s.inp.id,
                kind=s.inp.kind,
                text=s.inp.text,
                found_by=s.inp.found_by,
                created_at=s.inp.created_at,
                evergreen=s.inp.evergreen,
                stored_importance=s.inp.importance,
                success_count=s.inp.success_count,
                failure_count=s.inp.failure_count,
                search_order=order[s.inp.id],
                scores=dict(s.scores),
                verdicts=dict(s.verdicts),
                ranks=dict(s.ranks),
                in_context=s.in_context,
                context_reason=s.reason or "filtered",
                tokens=s.tokens,
                preceding_text=s.inp.preceding_text,
            )
            for s in scored
        )
        kept = sum(1 for s in scored if s.kept)
        return HopTrace(
            hop=n,
            query=meta["query"],
            proposed_by=meta["proposed_by"],
            relevance_text=meta["relevance_text"],
            proposal=meta["proposal"],
            candidates=cands,
            counts={"found": len(scored), "kept": kept, "dropped": len(scored) - kept},
            timings_ms=meta["timings"],
            similarity=meta["pairs"],
        )

    # -- replay ---------------------------------------------------------------------------------------------------
    def replay(
        self,
        trace: RetrievalTrace,
        overrides: Mapping[str, Any] | None = None,
        forgotten: Mapping[str, dict] | None = None,
    ) -> RetrievalTrace:
        """Re-rank a stored trace's candidates under other settings: no embedding, no search, no LLM call.

        A forgotten memory never enters the replayed context: the candidates the trace marks as forgotten and those
        in ``forgotten`` (id -> tombstone: the store's current state) are left out, and the ranking reports each of
        them with reason ``forgotten`` and its tombstone."""
        gone = {c.id: c.forgotten for h in trace.hops for c in h.candidates if c.forgotten}
        gone.update(trace.forgotten or {})
        gone.update(forgotten or {})
        t_start = time.perf_counter()
        base = {k: trace.settings[k] for k in Settings.retrieval_keys() if k in trace.settings}
        settings = self.b.settings.with_overrides({**base, **dict(overrides or {})})
        bad = [k for k in (overrides or {}) if k not in Settings.retrieval_keys()]
        if bad:
            raise InvalidInput(f"{bad[0]} is not a retrieval setting")
        now = parse_time(trace.settings["now"])
        hop_scored, hop_meta = [], []
        for hop in trace.hops[: settings.hops]:
            inputs = [
                candidate_input(c) for c in sorted(hop.candidates, key=lambda c: c.search_order) if c.id not in gone
            ]
            hop_scored.append(score_hop(inputs, hop.query, hop.relevance_text, settings, now, hop.hop))
            hop_meta.append(
                {
                    "query": hop.query,
                    "proposed_by": hop.proposed_by,
                    "proposal": hop.proposal,
                    "relevance_text": hop.relevance_text,
                    "timings": {},
                    "pairs": hop.similarity,
                    "inputs": inputs,
                }
            )
        stop = trace.stop_reason if settings.hops >= len(trace.hops) else "max_hops"
        new = self._finish(
            trace.user_id,
            trace.session_id,
            trace.question,
            settings,
            now,
            dict(trace.strategies),
            hop_scored,
            hop_meta,
            stop,
            {},
            t_start,
            trace_id=f"{trace.trace_id}.replay",
            replay_of=trace.trace_id,
            preset=trace.settings.get("preset"),
        )
        old = {r["id"]: r for r in trace.ranking}
        ranking = []
        for r in new.ranking:
            o = old.get(r["id"])
            ranking.append(
                {
                    **r,
                    "old_rank": o["rank"] if o else None,
                    "rank_change": (o["rank"] - r["rank"]) if o else None,
                    "old_in_context": bool(o and o["in_context"]),
                    "context_change": _context_change(bool(o and o["in_context"]), r["in_context"]),
                }
            )
        new_ids = {r["id"] for r in new.ranking}
        for o in trace.ranking:
            if o["id"] not in new_ids:
                reason = (
                    "forgotten" if o["id"] in gone else "hop_not_replayed" if o["hop"] > settings.hops else "filtered"
                )
                ranking.append(
                    {
                        "id": o["id"],
                        "kind": o["kind"],
                        "hop": o["hop"],
                        "final": None,
                        "rank": None,
                        "in_context": False,
                        "reason": reason,
                        "tokens": o.get("tokens", 0),
                        "old_rank": o["rank"],
                        "rank_change": None,
                        "old_in_context": o["in_context"],
                        "context_change": _context_change(o["in_context"], False),
                        **({"forgotten": gone[o["id"]]} if o["id"] in gone else {}),
                    }
                )
        timings = {"replay": _ms(t_start)}
        seen = {c.id for h in trace.hops for c in h.candidates}
        return dataclasses.replace(
            new, ranking=tuple(ranking), timings_ms=timings, forgotten={i: t for i, t in gone.items() if i in seen}
        )


def _context_change(before: bool, after: bool) -> str:
    return {(False, True): "entered", (True, False): "left", (True, True): "stayed"}.get((before, after), "out")


def candidate_input(c: CandidateTrace) -> CandidateInput:
    return CandidateInput(
        id=c.id,
        kind=c.kind,
        text=c.text,
        created_at=c.created_at,
        importance=c.stored_importance,
        evergreen=c.evergreen,
        success_count=c.success_count,
        failure_count=c.failure_count,
        feedback_net=int(c.scores.get("feedback_net") or 0),
        vector_similarity=c.scores["vector_similarity"],
        fts_score=c.scores.get("fts_score"),
        found_by=c.found_by,
        llm_relevance=c.scores.get("llm_relevance"),
        preceding_text=c.preceding_text,
    )
