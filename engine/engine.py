"""``MemoryEngine``: the one front door. It wires real backends and exposes every operation pages, the CLI, the MCP
server and agents need. Only records, plain data and named errors leave it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from .config import Settings, prepare_process_environment
from .errors import InvalidInput
from .evaluation import EvalRun, Evaluations
from .ids import check_id
from .memory.base import Backends
from .memory.episodic import EpisodicMemory
from .memory.feedback import FeedbackLog
from .memory.forgetting import Forgetter
from .memory.memorize import Memorizer, MemorizeResult
from .memory.procedural import SkillLibrary
from .memory.reasoning import Reasoner, ReasonResult
from .memory.reflection import Reflector
from .memory.semantic import SemanticMemory
from .memory.sessions import SessionStore
from .memory.skill_mining import MiningResult, SkillMiner, SkillProposal
from .memory.transfer import Transfer
from .memory.working import WorkingMemory
from .providers.backends import UsageRelay, configured_backends
from .providers.embedders import Embedder
from .providers.llm import LLM
from .records import (
    KINDS,
    Category,
    Episode,
    FeedbackEvent,
    ForgetLogEntry,
    ForgetResult,
    Item,
    Message,
    Page,
    PrunePlan,
    RankedSkill,
    SearchHit,
    SessionInfo,
    Skill,
    SkillOutcome,
    StoreStats,
    TracePrunePlan,
)
from .retrieval.pipeline import Retriever
from .retrieval.search import plain_search
from .store.admin import DemoProgress, StoreAdmin
from .store.journal import WriteJournal
from .store.location import open_tables, store_location
from .store.vectors.index import VectorIndex
from .store.vectors.purges import VectorPurges
from .trace.records import RetrievalTrace
from .trace.store import TraceStore, trace_from_dict
from .trace.why_not import MemoryState, WhyNot, why_not
from .validation import check_int, check_optional_int, parse_json

DB_FILE = "memlens.duckdb"
VECTOR_DIR = "vectors"
JOURNAL_DIR = "journal"


class MemoryEngine:
    """Agent memory on DuckDB + LanceDB with traced retrieval. Open with :meth:`open`."""

    def __init__(self, settings: Settings, embedder: Embedder, llm: LLM) -> None:
        prepare_process_environment()  # before LanceDB loads (VectorIndex), for every program that uses the engine
        self.settings = settings
        self.location = store_location(settings.store, settings.vectors)
        # An embedded store's folder; None for a team store (tables on PostgreSQL, vectors under s3://).
        self.path: Path | None = self.location.folder
        db, self.read_only = open_tables(self.location, settings, DB_FILE)
        index = VectorIndex(
            self.location.vectors,
            embedder.name,
            embedder.dim,
            settings.resident_vector_max_rows,
            settings.vector_version_retention_s,
            self.read_only,
            self.location.storage_options,
        )
        self.embedder = embedder
        self.llm = llm
        # Beside an embedded store; a team store's crashed writers' leftover vectors are found by `repair` instead.
        journal = WriteJournal(self.path / JOURNAL_DIR) if self.path is not None else None
        b = Backends(db, index, embedder, settings, journal)
        self._b = b
        self.sessions = SessionStore(b)
        self.working = WorkingMemory(b)
        self.semantic = SemanticMemory(b)
        self.episodic = EpisodicMemory(b)
        self.skills = SkillLibrary(b)
        self.feedback = FeedbackLog(b)
        self.traces = TraceStore(b)
        self.purges = VectorPurges(db, index, settings.forget_purge_grace_s)
        self.forgetter = Forgetter(b, self.traces.mark_forgotten, self.purges)
        self.transfer = Transfer(
            b, self.sessions, self.working, self.semantic, self.episodic, self.skills, self.feedback, self.forgetter
        )
        self.reflector = Reflector(self.episodic, self.semantic, llm)
        self.memorizer = Memorizer(self.semantic, llm)
        self.miner = SkillMiner(self.episodic, self.skills, llm)
        self.reasoning = Reasoner(self.working, llm)
        self.retriever = Retriever(b, llm, self.traces.save)
        self.admin = StoreAdmin(
            b, self.path, llm, self.sessions, self.semantic, self.episodic, self.skills, self.transfer, self.purges
        )
        self.admin.display = self.location.display
        self.evals = Evaluations(b, self)  # expectation sets, runs, comparisons (engine/evaluation)
        self.admin._recover_at_open()

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        vectors: str | None = None,
    ) -> MemoryEngine:
        """Open (or create) a store. ``path`` overrides ``settings.store`` (a folder, or a team store's
        ``postgresql://`` DSN) and ``vectors`` overrides ``settings.vectors`` (``s3://bucket/prefix``); backends
        default from settings."""
        settings = settings or Settings.from_env()
        if path is not None:
            settings = settings.with_overrides({"store": str(path)})
        if vectors is not None:
            settings = settings.with_overrides({"vectors": str(vectors)})
        relay = UsageRelay()
        embedder, llm = configured_backends(settings, embedder, llm, relay)
        engine = cls(settings, embedder, llm)
        relay.target = engine
        return engine

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Keep one database connection open for every call made inside the block (one page render, one agent
        step). Other processes wait for the block to end, so keep it short."""
        with self._b.db.hold():
            yield

    def close(self) -> None:
        """Let go of the store's database file now (it is reopened on the next call). An idle engine lets go by
        itself after ``db_linger_s``, and at once when another memlens process is waiting for the file."""
        self._b.db.close()

    # -- short-term memory ------------------------------------------------------------------------------------------
    def add_message(
        self, user_id: str, session_id: str, role: str, content: str, created_at: datetime | str | None = None
    ) -> Message:
        """Append one message to a session (created on first use)."""
        return self.sessions.add_messages([(user_id, session_id, role, content, created_at)])[0]

    def users(self) -> list[str]:
        return self.sessions.users()

    def list_sessions(
        self,
        user_id: str | None = None,
        search: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        return self.sessions.list_sessions(user_id, search, since, until, limit, offset)

    def get_session(self, user_id: str, session_id: str) -> SessionInfo:
        return self.sessions.get_session(user_id, session_id)

    def messages(self, user_id: str, session_id: str, limit: int = 200, offset: int = 0) -> Page:
        return self.sessions.messages(user_id, session_id, limit, offset)

    def prune_sessions(self, user_id: str, rule: str, apply: bool = False, now: datetime | None = None) -> PrunePlan:
        """Preview (default) or apply a lifecycle rule: idle, stale or max."""
        return self.sessions.prune(user_id, rule, apply, now)

    # -- working memory ---------------------------------------------------------------------------------------------
    def working_get(self, user_id: str, session_id: str) -> dict[str, Any]:
        return self.working.get(user_id, session_id)

    def working_update(
        self, user_id: str, session_id: str, slots: Mapping[str, Any], source: str = "api"
    ) -> dict[str, Any]:
        """Set several slots in one transaction; ``None`` removes a slot."""
        return self.working.update(user_id, session_id, slots, source)

    def working_set_json(
        self, user_id: str, session_id: str, slot: str, text: str, source: str = "ui"
    ) -> dict[str, Any]:
        """Set a slot from JSON text; invalid JSON raises InvalidInput and writes nothing."""
        from .memory.working import parse_json_value

        return self.working.update(user_id, session_id, {slot: parse_json_value(text, slot)}, source)

    def working_history(self, user_id: str, session_id: str, slot: str | None = None, limit: int = 100):
        return self.working.history(user_id, session_id, slot, limit)

    def working_restore(
        self, user_id: str, session_id: str, edit_id: int, which: str = "old", source: str = "ui"
    ) -> Any:
        return self.working.restore(user_id, session_id, edit_id, which, source)

    def working_clear(self, user_id: str, session_id: str, source: str = "api") -> int:
        return self.working.clear(user_id, session_id, source)

    def reason(
        self,
        user_id: str,
        session_id: str,
        template: str | Callable[[dict], str],
        into: str | None = "intermediate_reasoning",
        parse: str | Callable[[str], Any] | None = None,
    ) -> ReasonResult:
        """Fill ``{{slot}}`` from working memory, ask the LLM, write the answer into ``into`` (source ``llm``).
        Needs an LLM: without one (or when the call fails) raises LLMUnavailable and writes nothing."""
        return self.reasoning.reason(user_id, session_id, template, into, parse)

    # -- semantic memory --------------------------------------------------------------------------------------------
    def remember(
        self,
        user_id: str,
        content: str,
        category: str = "general",
        importance: float | None = None,
        evergreen: bool = False,
        provenance: Mapping | None = None,
        source: str = "api",
        created_at: datetime | str | None = None,
        preceding_text: str | None = None,
    ) -> Item:
        """Store one fact directly (llmemory's remember_fact). ``preceding_text``: what came right before it where it
        was said (e.g. the previous turn); stored with it and embedded into its vector
        (``Settings.preceding_text_weight``)."""
        item = self.semantic.prepare(
            user_id,
            content,
            category,
            importance,
            evergreen,
            provenance,
            source,
            created_at,
            preceding_text=preceding_text,
        )
        return self.semantic.add([item])[0]

    def remember_many(self, records: Iterable[Mapping[str, Any]]) -> list[Item]:
        """Store many facts in one batch (one embedding pass, one transaction)."""
        items = [self.semantic.prepare(**dict(r)) for r in records]
        return self.semantic.add(items)

    def memorize(
        self, user_id: str, text: str, category: str | None = None, importance: float | None = None
    ) -> list[Item]:
        """Write raw text: LLM fact extraction when configured, else one item in ``general`` (or ``category``).
        Each item's provenance method says which ran; :meth:`memorize_report` also returns the strategy."""
        return list(self.memorizer.memorize(user_id, text, category, importance).items)

    def memorize_report(
        self, user_id: str, text: str, category: str | None = None, importance: float | None = None
    ) -> MemorizeResult:
        """Like :meth:`memorize`, returning the strategy that ran, touched categories, new summaries and notes."""
        return self.memorizer.memorize(user_id, text, category, importance)

    def get_item(self, user_id: str, item_id: str) -> Item:
        return self.semantic.get(user_id, item_id)

    def list_items(
        self,
        user_id: str,
        category: str | None = None,
        query: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        return self.semantic.list_items(user_id, category, query, include_archived, limit, offset)

    def categories(self, user_id: str) -> list[Category]:
        return self.semantic.categories(user_id)

    # -- episodic memory --------------------------------------------------------------------------------------------
    def record_episode(
        self,
        user_id: str,
        steps: Sequence[Mapping[str, Any]],
        summary: str | None = None,
        outcome: str | None = None,
        importance: float | None = None,
        session_id: str | None = None,
        created_at: datetime | str | None = None,
    ) -> Episode:
        """Record a trajectory; a missing summary is derived from the actions."""
        ep = self.episodic.prepare(user_id, steps, summary, outcome, importance, session_id, created_at)
        return self.episodic.add([ep])[0]

    def get_episode(self, user_id: str, episode_id: str) -> Episode:
        return self.episodic.get(user_id, episode_id)

    def list_episodes(
        self,
        user_id: str,
        outcome: str | None = None,
        query: str | None = None,
        session_id: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        return self.episodic.list_episodes(user_id, outcome, query, session_id, include_archived, limit, offset)

    def reflect(self, user_id: str, window: int = 10) -> tuple[list[Item], str]:
        """Insights from the last ``window`` episodes, stored in ``insights``; returns them and the strategy."""
        check_int(window, "window", "window")
        return self.reflector.reflect(user_id, window)

    # -- procedural memory ------------------------------------------------------------------------------------------
    def register_skill(
        self,
        user_id: str,
        name: str,
        body: str,
        description: str = "",
        kind: str = "prompt",
        version: int | None = None,
        provenance: Mapping | None = None,
    ) -> Skill:
        """Register a skill; the same name again becomes the next version with fresh counters."""
        return self.skills.add([self.skills.prepare(user_id, name, body, description, kind, version, provenance)])[0]

    def report_outcome(self, user_id: str, skill_id: str, success: bool, episode_id: str | None = None) -> Skill:
        return self.skills.report_outcome(user_id, skill_id, success, episode_id)  # type: ignore[return-value]

    def mine_skills(self, user_id: str, window: int = 20, outcomes: Sequence[str] | None = None) -> MiningResult:
        """Skill PROPOSALS from the last ``window`` episodes; nothing is written until one is accepted."""
        return self.miner.mine(user_id, window, outcomes)

    def accept_skill_proposal(
        self,
        user_id: str,
        proposal: SkillProposal | Mapping[str, Any],
        name: str | None = None,
        body: str | None = None,
        description: str | None = None,
        kind: str | None = None,
    ) -> Skill:
        """Register a (possibly edited) proposal with provenance {method: skill_mining, sources: episodes}.
        Rejecting a proposal needs no call: proposals are never stored."""
        return self.miner.accept(user_id, proposal, name, body, description, kind)

    def get_skill(self, user_id: str, skill_id: str) -> Skill:
        return self.skills.get(user_id, skill_id)

    def rank_skills(
        self, user_id: str, query: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[RankedSkill]:
        """Skills by proven utility: Wilson lower bound first, rate and trials beside it."""
        return self.skills.rank(user_id, query, kind, limit)

    def skill_versions(self, user_id: str, name: str) -> list[Skill]:
        return self.skills.versions(user_id, name)

    def skill_outcomes(self, user_id: str, skill_id: str | None = None, name: str | None = None) -> list[SkillOutcome]:
        return self.skills.outcomes(user_id, skill_id, name)

    # -- feedback and forgetting ------------------------------------------------------------------------------------
    def label(
        self,
        user_id: str,
        item_id: str,
        label: str,
        trace_id: str | None = None,
        hop: int | None = None,
        note: str = "",
    ) -> FeedbackEvent:
        """Label a memory useful or harmful (optionally from a trace and hop)."""
        return self.feedback.record([self.feedback.prepare(user_id, item_id, label, trace_id, hop, note)])[0]

    def report_feedback(
        self,
        user_id: str,
        useful: Sequence[str] = (),
        harmful: Sequence[str] = (),
        trace_id: str | None = None,
        note: str = "",
    ) -> list[FeedbackEvent]:
        """llmemory's report_feedback: +1 per useful id, -1 per harmful id, in one transaction."""
        rows = [self.feedback.prepare(user_id, i, "useful", trace_id, None, note) for i in useful]
        rows += [self.feedback.prepare(user_id, i, "harmful", trace_id, None, note) for i in harmful]
        if not rows:
            raise InvalidInput("give at least one useful or harmful id")
        return self.feedback.record(rows)

    def feedback_net(self, user_id: str, ids: Sequence[str]) -> dict[str, int]:
        return self.feedback.net(user_id, ids)

    def feedback_events(
        self, user_id: str, item_id: str | None = None, trace_id: str | None = None, limit: int = 500
    ) -> list[FeedbackEvent]:
        return self.feedback.events(user_id, item_id, trace_id, limit)

    def unlabel(self, user_id: str, event_id: int) -> FeedbackEvent:
        """Undo a label: delete that feedback event (the memory's net goes back); returns the deleted event."""
        return self.feedback.retract(user_id, event_id)

    def memory_texts(self, user_id: str, ids: Sequence[str]) -> dict[str, str]:
        """Text of each memory id of a user, any kind, forgotten ones too (one query; unknown ids are absent)."""
        return self.feedback.memory_texts(user_id, ids)

    def forget(
        self, user_id: str, kind: str, ids: Sequence[str], reason: str, mode: str = "soft", actor: str = "api"
    ) -> ForgetResult:
        """Soft (archive, unretrievable) or hard (deleted everywhere) forgetting, with an audit entry."""
        return self.forgetter.forget(user_id, kind, ids, reason, mode, actor)

    def forget_log(self, user_id: str | None = None, limit: int = 1000) -> list[ForgetLogEntry]:
        return self.forgetter.log(user_id, limit)

    # -- search and retrieval ---------------------------------------------------------------------------------------
    def search(
        self, user_id: str, query: str, kind: str = "all", limit: int = 10, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Plain search without the ranking pipeline (engine/retrieval/search.py). ``hybrid``: (1-w)*cosine +
        w*BM25/max with w = ``bm25_weight``, over the union of vector and full-text hits; ``vector``: cosine only
        (no full-text search runs); ``fts``: LanceDB BM25 only."""
        return plain_search(self._b, user_id, query, kind, limit, mode)

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
        save: bool = True,
        preset: str | None = None,
    ) -> RetrievalTrace:
        """The traced pipeline; returns (and stores) the trace, whose ``context`` is what the agent gets.
        ``preset`` names a set of overrides (engine.presets; ``llmemory`` for parity), ``overrides`` win over it."""
        check_optional_int(hops, "hops", "hops")
        check_optional_int(budget, "budget", "budget_tokens")
        return self.retriever.retrieve(
            user_id, question, session_id, hops, budget, overrides, reasoner, now, save=save, preset=preset
        )

    def replay(self, trace_id: str, overrides: Mapping[str, Any] | None = None) -> RetrievalTrace:
        """Re-rank a stored trace under other settings without searching again."""
        return self.replay_trace(self.traces.get(trace_id), overrides)

    def replay_trace(self, trace: RetrievalTrace, overrides: Mapping[str, Any] | None = None) -> RetrievalTrace:
        """Replay a trace (stored, or read from JSON); memories forgotten in this store since are left out of the
        context and reported with reason ``forgotten``."""
        ids = sorted({c.id for h in trace.hops for c in h.candidates})
        forgotten = self.forgetter.tombstones(trace.user_id, ids) if ids else {}
        return self.retriever.replay(trace, overrides, forgotten)

    def get_trace(self, trace_id: str, user_id: str | None = None) -> RetrievalTrace:
        return self.traces.get(trace_id, user_id)

    def list_traces(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> Page:
        return self.traces.list_traces(user_id, limit, offset)

    def delete_trace(self, trace_id: str, user_id: str | None = None) -> None:
        self.traces.delete(trace_id, user_id)

    def prune_traces(
        self,
        older_than_days: float,
        user_id: str | None = None,
        keep_labelled: bool = True,
        apply: bool = False,
        now: datetime | None = None,
    ) -> TracePrunePlan:
        """Traces older than ``older_than_days`` (one user's or all); deleted only with ``apply``. Labelled traces
        are kept unless ``keep_labelled`` is false."""
        return self.traces.prune(older_than_days, user_id, keep_labelled, apply, now)

    def export_trace(self, trace_id: str) -> str:
        return json.dumps(self.traces.get(trace_id).to_dict(), ensure_ascii=False, indent=2)

    def memory_states(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryState]:
        """Whether each memory id of a user is active, archived, hard-forgotten (with the forget log's date and
        reason) or not in the store."""
        from .trace.memory_state import memory_states

        return memory_states(self._b, user_id, ids)

    def why_not(self, trace: RetrievalTrace | str, item_id: str) -> WhyNot:
        """Where a trace (or a stored trace's id) lost a memory: per hop the stage and rule; for a memory no hop saw,
        whether it was forgotten or is not in the store."""
        trace = self.traces.get(trace) if isinstance(trace, str) else trace
        check_id(item_id, "memory id")
        # The store's word even on a memory the trace saw: it may have been forgotten since (trace/why_not.py).
        state = self.memory_states(trace.user_id, [item_id])[item_id]
        return why_not(trace, item_id, state)

    def evaluate(
        self,
        set_name: str,
        preset: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        hops: int | None = None,
        label: str | None = None,
        method: str = "memlens",
        progress: Callable[[int, int], None] | None = None,
    ) -> EvalRun:
        """Run an expectation set through traced retrieval (``method`` memlens) or a plain ``vector`` / ``bm25``
        ranking and store the run; ``engine.evals`` has the sets, runs, results and comparisons."""
        return self.evals.evaluate(set_name, method, preset, overrides, hops, label, progress)

    @staticmethod
    def trace_from_json(text: str) -> RetrievalTrace:
        try:
            data = parse_json(text, "trace JSON", max_chars=50_000_000)
        except InvalidInput as exc:
            raise InvalidInput(f"not a memlens trace: {exc}") from None
        return trace_from_dict(data)

    # -- store administration (engine/store/admin.py) ------------------------------------------------------------
    def ingest_lines(
        self, lines: Iterable[str], progress: Callable[[str, int, int], None] | None = None, skip_existing: bool = False
    ) -> dict[str, int]:
        """Import JSONL records (all or nothing; a bad line is named); see StoreAdmin.ingest_lines for skip_existing."""
        return self.admin.ingest_lines(lines, progress, skip_existing)

    def export(self, user_id: str) -> Iterator[dict]:
        return self.admin.export(user_id)

    def demo_loaded(self) -> bool:
        return self.admin.demo_loaded()

    def load_demo(self, reset: bool = False, progress: DemoProgress | None = None, evaluation: bool = True) -> dict:
        """The demo dataset and (``evaluation``) its expectation set with a run; see StoreAdmin.load_demo."""
        return self.admin.load_demo(reset, progress, self.evals if evaluation else None)

    def delete_user(self, user_id: str) -> None:
        """Remove every row and vector of a user (used by demo reset and tests)."""
        self.admin.delete_user(user_id)

    def record_usage(
        self, user_id: str | None, operation: str, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        self.admin.record_usage(user_id, operation, model, input_tokens, output_tokens)

    def usage(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """Token usage per user and operation (from the API's usage fields)."""
        return self.admin.usage(user_id)

    def activity(
        self, user_id: str | None = None, since: datetime | str | None = None, until: datetime | str | None = None
    ) -> list[dict[str, Any]]:
        """Daily counts per kind (messages, items, episodes, outcomes, edits, labels, traces, forgets)."""
        return self.admin.activity(user_id, since, until)

    def episode_outcomes(self, user_id: str) -> dict[str, int]:
        """Active episodes per outcome label, most frequent first."""
        return self.admin.episode_outcomes(user_id)

    def stats(self) -> StoreStats:
        """Counts per memory kind and per user, the backends in use, and warnings about the store."""
        return self.admin.stats()

    def reindex(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """(Re)build this model's vector tables from the active memories in DuckDB."""
        return self.admin.reindex(progress)

    def optimize(self, vector_index: bool = True) -> list[str]:
        """Compact and index the vector tables (see StoreAdmin.optimize); returns the tables indexed now."""
        return self.admin.optimize(vector_index)

    def disk_bytes(self) -> int:
        return self.admin.disk_bytes()

    def orphans(self, kinds: Iterable[str] = KINDS) -> dict[str, dict[str, Any]]:
        """Per memory kind, the ids the two stores disagree on (see StoreAdmin.orphans)."""
        return self.admin.orphans(kinds)

    def repair(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, dict[str, int]]:
        """Make LanceDB agree with DuckDB again: orphans removed, missing vectors written, unreadable tables rebuilt."""
        return self.admin.repair(progress)

    def repair_ids(
        self, kind: str, ids: Sequence[str], progress: Callable[[str, int, int], None] | None = None
    ) -> dict[str, int]:
        return self.admin.repair_ids(kind, ids, progress)

    def check(self) -> list[str]:
        """Applied migrations, for diagnostics."""
        return self.admin.check()
