"""``MemoryEngine``: the one front door. ``open()`` wires real backends; the engine's parts are its namespaces, and
each operation is defined once, in its part:

    engine.sessions    conversations: add_message, list_sessions, messages, prune ...   (memory/sessions.py)
    engine.working     working-memory slots, their history, reason                       (memory/working.py)
    engine.items       semantic memory: remember, memorize, reflect, get, list_items ... (memory/semantic.py)
    engine.episodes    episodic memory: record, get, list_episodes                       (memory/episodic.py)
    engine.skills      procedural memory: register, report_outcome, rank, mine ...       (memory/procedural.py)
    engine.graph       graph memory: entities, relations as of a time, neighbourhoods    (memory/graph.py)
    engine.timeline    recent facts and messages, the items around an item or a moment   (memory/timeline.py)
    engine.feedback    labels: label, report, retract, net, events                       (memory/feedback.py)
    engine.insights    the whole store: near-duplicates, echoes, blast radius ...        (memory/store_insights.py)
    engine.forgetting  forget and its log                                                (memory/forgetting.py)
    engine.maintenance consolidate, maintain (preview, apply) and its audit log          (memory/maintenance.py)
    engine.retrieval   retrieve, replay, search                                          (retrieval/namespace.py)
    engine.traces      stored traces: get, list_traces, export, why_not, from_json ...   (trace/traces.py)
    engine.evals       expectation sets, runs, comparisons                               (evaluation/)
    engine.admin       ingest, export, demo, stats, usage, reindex, repair ...           (store/admin.py)
    engine.imports     mem0, Letta and llmemory stores imported: mem0, letta, llmemory   (interop/imports.py)

Only records, plain data and named errors leave it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .config import Settings
from .evaluation import Evaluations
from .interop.imports import Imports
from .interop.otel_export import live_export_for
from .memory.base import Backends
from .memory.episodic import EpisodicMemory
from .memory.feedback import FeedbackLog
from .memory.forgetting import Forgetter
from .memory.graph import GraphMemory
from .memory.maintenance import Maintenance
from .memory.procedural import SkillLibrary
from .memory.semantic import SemanticMemory
from .memory.sessions import SessionStore
from .memory.store_insights import StoreInsights
from .memory.timeline import Timeline
from .memory.transfer import Transfer
from .memory.working import WorkingMemory
from .process_env import prepare_process_environment
from .providers.backends import UsageRelay, configured_backends
from .providers.embedders import Embedder
from .providers.llm import LLM
from .retrieval.namespace import Retrieval
from .store.admin import StoreAdmin
from .store.journal import WriteJournal
from .store.location import open_tables, store_location
from .store.vectors.index import VectorIndex
from .store.vectors.purges import VectorPurges
from .trace.traces import Traces

DB_FILE = "memlens.duckdb"
VECTOR_DIR = "vectors"
JOURNAL_DIR = "journal"


class MemoryEngine:
    """Agent memory on DuckDB + LanceDB with traced retrieval. Open with :meth:`open`; use its namespaces."""

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
        self.working = WorkingMemory(b, llm)
        self.episodes = EpisodicMemory(b)
        self.graph = GraphMemory(b)
        self.timeline = Timeline(b)
        self.items = SemanticMemory(b, llm, self.episodes)
        self.graph.extraction = self.items.graph_extraction  # engine.graph.extract uses the items' extractor
        self.skills = SkillLibrary(b, llm, self.episodes)
        self.feedback = FeedbackLog(b)
        self.insights = StoreInsights(b, self.feedback)
        self.traces = Traces(b)
        purges = VectorPurges(db, index, settings.forget_purge_grace_s)
        self.forgetting = Forgetter(b, self.traces.mark_forgotten, purges)
        self.maintenance = Maintenance(b, llm, self.items, self.episodes, self.skills, self.forgetting)
        self.graph.forgetter = self.forgetting  # engine.graph.forget writes the forget log through it
        self.retrieval = Retrieval(b, llm, self.traces, self.forgetting)
        self.evals = Evaluations(b, self.retrieval, self.items, self.traces)
        transfer = Transfer(
            b, self.sessions, self.working, self.items, self.episodes, self.skills, self.feedback, self.forgetting
        )
        self.admin = StoreAdmin(
            b, self.path, llm, self.sessions, self.items, self.episodes, self.skills, transfer, purges, self.evals
        )
        self.admin.display = self.location.display
        self.imports = Imports(self)  # mem0, Letta and llmemory stores imported (engine/interop/imports.py)
        # Retrievals, writes and forgets as OpenTelemetry spans when the otel_export setting is on (else None).
        self.otel_export = live_export_for(self)
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
        relay.target = engine.admin  # token usage of the OpenAI backends is recorded by the store's admin
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
