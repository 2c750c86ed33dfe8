"""Every setting, declared once with its default and help, and the environment variable that sets it (the process
environment memlens itself prepares is engine/process_env.py; raw values are parsed by engine/setting_values.py).

Retrieval defaults follow llmemory 0.2.x (see ``../shared/docs/llmemory-reference.md`` §6); where memlens differs the
help text says ``[memlens]``. :meth:`Settings.with_overrides` accepts ``KEY=VALUE`` strings (the CLI's ``--set``) or
typed values (per-call overrides from Python) and rejects unknown keys and out-of-range values.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput
from .retrieval_settings import HOPS_RANGE as HOPS_RANGE  # re-exported: config is where settings are looked up
from .retrieval_settings import RetrievalSettings
from .setting_values import coerce_setting, known_settings_hint, setting, short_repr

# Relative to the folder memlens is started in (like a datasette or sqlite file), never to where the code is
# installed: from a clone that is the repository's git-ignored data/store.
DEFAULT_STORE = "data/store"
# The bundled demo dataset ships as package data (the `data.demo` package), read wherever memlens is installed.
DEMO_DIR = importlib.resources.files("data.demo")


_s = setting


@dataclass(frozen=True)
class _CoreSettings:
    """Store, backends, session lifecycle, graph memory and maintenance."""

    # --- store and backends -------------------------------------------------------------------------------------
    store: str = _s(
        DEFAULT_STORE,
        "Store location: a folder (or file:// URI), or a team store's PostgreSQL DSN "
        "(postgresql://user:password@host:port/db; the password is never displayed).",
        env="MEMLENS_STORE",
    )
    vectors: str = _s(
        "",
        "Where the LanceDB vector tables live: empty for the store folder's vectors/; s3://bucket/prefix "
        "for a team store (endpoint, region and keys from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY; an http:// endpoint is allowed).",
        env="MEMLENS_VECTORS",
    )
    embedder: str = _s(
        "auto",
        "Embedder: local (the model local_model names), openai, or auto (openai when "
        "OPENAI_API_KEY is set and MEMLENS_EMBEDDER is not local).",
        choices=("auto", "local", "openai"),
        env="MEMLENS_EMBEDDER",
    )
    openai_api_key: str = _s("", "OpenAI (or compatible) API key. Never displayed.", secret=True, env="OPENAI_API_KEY")
    openai_base_url: str = _s("", "Base URL of an OpenAI-compatible server.", env="OPENAI_BASE_URL")
    chat_model: str = _s("gpt-4o-mini", "Chat model for LLM features.", env="MEMLENS_CHAT_MODEL")
    local_model: str = _s(
        "all-MiniLM-L6-v2",
        "[memlens] The local embedding model (embedder local, or auto without an API key); each keeps its own "
        "vector tables, so after a switch `reindex` builds the new model's vectors. all-MiniLM-L6-v2 is bundled; "
        "the others need their package (README, Embedders).",
        choices=("all-MiniLM-L6-v2", "all-mpnet-base-v2", "multilingual-e5-small-q4"),
        env="MEMLENS_LOCAL_MODEL",
    )
    embed_precision: str = _s(
        "auto",
        "Local model arithmetic: fp32, bf16 (about 2x faster on CPUs with AMX; vectors "
        "agree with fp32 to cosine > 0.9999; queries use a bf16 copy of the weights), or "
        "auto (bf16 "
        "on CPUs with native bf16).",
        choices=("auto", "fp32", "bf16"),
        env="MEMLENS_EMBED_PRECISION",
    )
    embedding_model: str = _s("text-embedding-3-small", "OpenAI embedding model.", env="MEMLENS_EMBEDDING_MODEL")
    llm_timeout_s: float = _s(60.0, "LLM request timeout in seconds.", lo=0.1, env="MEMLENS_LLM_TIMEOUT")
    llm_retries: int = _s(2, "LLM retries on 429/5xx/connection errors.", lo=0, hi=10, env="MEMLENS_LLM_RETRIES")
    llm_backoff_s: float = _s(
        0.5,
        "First retry delay in seconds, doubled per retry (llmemory: 0.5*2^(n-1)).",
        lo=0,
        hi=60,
        env="MEMLENS_LLM_BACKOFF",
    )
    max_text_chars: int = _s(32000, "Longest text accepted for a message, memory, step or slot value.", lo=100)
    preceding_text_weight: float = _s(
        0.4,
        "[memlens] How much an item's preceding_text (what came right before it, "
        "e.g. the previous turn of a conversation) counts in its vector: "
        "normalise(e(text) "
        "+ w*e(preceding_text)). Applied when an item is written; reindex rebuilds every "
        "vector with the current value. 0: stored but not embedded.",
        lo=0,
        hi=2,
    )
    memory_keys_write: bool = _s(
        False,
        "[memlens] Build each semantic memory's extra keys as it is written (engine/memory/memory_keys.py; "
        "`memlens keys` builds them for a stored store). Retrieval searches them when memory_keys is not off. Off "
        "by default, as memory_keys is: the facts key costs a second embedding per item.",
    )
    memory_keys_write_kinds: str = _s(
        "all",
        "[memlens] Which extra keys memory_keys_write (and `memlens keys`) builds: all, or only the kind a "
        "memory_keys setting searches (facts, next, sentences). The deep preset reads sentence keys only: writing "
        "those alone skips the facts key's extraction and embedding. A kind not written is not found by a search "
        "of it (the trace's key search then finds none).",
        choices=("all", "facts", "next", "sentences"),
    )
    lock_timeout_s: float = _s(20.0, "How long to wait for another process's DuckDB lock before StoreBusy.", lo=0)
    vector_index_min_rows: int = _s(
        10_000,
        "optimize() gives vector tables (the memories' keys tables too) with at least this many rows an "
        "approximate HNSW-SQ index (~10 ms instead of ~110 ms per search at 100k rows, "
        "recall@20 ~0.99); 0: always search exactly.",
        lo=0,
    )
    resident_vector_max_rows: int = _s(
        20_000,
        "Vector tables with at most this many rows (episodes and skills, "
        "usually) are held in memory: searched exactly by vector, ~5 ms less per "
        "search than a LanceDB query, and by full text with Lance's tokenizer and "
        "BM25 (~1.5-4 ms less per search, the same scores; not while a row "
        "deleted since the index's rebuild counts there); a copy is re-read "
        "after the table changes. 0: always ask LanceDB.",
        lo=0,
    )
    vector_version_retention_s: float = _s(
        600.0,
        "optimize() (run by writes every few thousand rows, and by "
        "`python -m engine optimize`) deletes LanceDB table versions replaced "
        "longer ago than this, with their files; LanceDB alone keeps them 7 days "
        "(a 100k-item store: 2.0 GB of LanceDB files instead of 0.24 GB). 0: "
        "keep only the latest, safe only when no other process uses the store.",
        lo=0,
    )
    db_linger_s: float = _s(
        1.0,
        "Keep the DuckDB file open this long after the last operation (0: close after "
        "each); another memlens process that is waiting gets it within ~20 ms anyway.",
        lo=0,
        hi=60,
    )
    read_only: bool = _s(
        False,
        "Open the store read-only, for browsing: nothing is written (no migrations, no "
        "vectors, no lock flags) and every write is refused with StoreReadOnly. A store whose folder "
        "cannot be written (a read-only file system) is opened read-only by itself.",
        env="MEMLENS_READ_ONLY",
    )
    pg_pool_size: int = _s(
        8,
        "A team store: the most PostgreSQL connections each process keeps in its pool (one per thread busy with the "
        "store at once; the server's max_connections must cover every process's pool).",
        lo=1,
        hi=1000,
        env="MEMLENS_PG_POOL_SIZE",
    )
    forget_purge_grace_s: float = _s(
        10.0,
        "A hard forget rewrites the LanceDB files that still hold the memory at "
        "once, and deletes the table versions that hold it this long after they were "
        "replaced (no query runs that long; see Forgetting). A process exiting sooner "
        "waits for it. 0: at once, safe only when no other process uses the store.",
        lo=0,
        hi=3600,
    )
    mcp_token: str = _s(
        "",
        "Bearer token the MCP HTTP server requires (Authorization: Bearer <token>); needed to "
        "bind to a non-loopback host. Never displayed.",
        secret=True,
        env="MEMLENS_MCP_TOKEN",
    )
    dashboard_token: str = _s(
        "",
        "Token the dashboard asks for before it shows any page (a sign-in form, once per browser session); needed, "
        "of at least 16 characters, when the dashboard listens beyond loopback (server.address). Never displayed.",
        secret=True,
        env="MEMLENS_DASHBOARD_TOKEN",
    )
    # --- session lifecycle (llmemory §1.6) ---------------------------------------------------------------------
    session_idle_minutes: int = _s(60, "Idle pruning: sessions inactive longer than this.", lo=1)
    session_stale_days: int = _s(30, "Stale pruning: sessions inactive longer than this many days.", lo=1)
    session_max_per_user: int = _s(500, "Max sessions kept per user (oldest evicted first).", lo=1)
    # --- graph memory and maintenance ---------------------------------------------------------------------------
    graph_extraction: str = _s(
        "auto",
        "[memlens] How entities and relations are drawn from memories as they are written: llm (the configured "
        "LLM, llmemory's prompt), offline (memlens's documented rules, engine/memory/graph_offline.py), auto (llm "
        "when an LLM is configured, else offline) or off.",
        choices=("auto", "llm", "offline", "off"),
        env="MEMLENS_GRAPH_EXTRACTION",
    )
    graph_exclusive_predicates: str = _s(
        "works_at,lives_in,current_job,current_city,employer,residence",
        "Comma-separated predicates that hold one value at a time (llmemory's six): a new value closes the old "
        "relation's validity and links it to what superseded it. Compared case-insensitively.",
    )
    episodic_ttl_days: float = _s(
        0.0,
        "Maintenance expires (soft-forgets) episodes older than this many days; 0 = never (ttl_episodic_days).",
        lo=0,
        env="MEMLENS_EPISODIC_TTL_DAYS",
    )
    procedural_ttl_days: float = _s(
        0.0,
        "Maintenance expires (soft-forgets) skills not updated for this many days; 0 = never (ttl_procedural_days).",
        lo=0,
        env="MEMLENS_PROCEDURAL_TTL_DAYS",
    )
    skill_mining_enabled: bool = _s(
        False, "Maintenance mines skills from recent episodes (skill_mining_enabled).", env="MEMLENS_SKILL_MINING"
    )
    near_duplicate_similarity: float = _s(
        0.9,
        "[memlens] Store insights: the least cosine similarity of two semantic memories' vectors that makes them "
        "near-duplicates (a refresh keeps pairs from this value up; the page can show a stricter one).",
        lo=0.5,
        hi=1.0,
    )
    # --- OpenTelemetry export (engine/interop/otel_export.py) ----------------------------------------------------
    otel_export: bool = _s(
        False,
        "[memlens] Export every retrieval (search_memory, with its hops and stages), write (create_memory, "
        "update_memory) and forget (delete_memory) as OpenTelemetry spans over OTLP/HTTP, batched off the "
        "retrieval's path. Where to: the standard OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT, "
        "..._HEADERS) variables, default http://localhost:4318. Needs opentelemetry-sdk and "
        "opentelemetry-exporter-otlp-proto-http (README, OpenTelemetry and Phoenix).",
        env="MEMLENS_OTEL_EXPORT",
    )
    otel_capture_content: bool = _s(
        True,
        "[memlens] Exported spans carry texts: the question, hop queries and the memories' contents (a "
        "hard-forgotten memory's never). Off: ids, scores and ranks only (the GenAI conventions' default).",
        env="MEMLENS_OTEL_CAPTURE_CONTENT",
    )


@dataclass(frozen=True)
class Settings(RetrievalSettings, _CoreSettings):
    """Every setting: the core ones above, then retrieval's (engine/retrieval_settings.py), in that order."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **explicit: Any) -> Settings:
        """Defaults, then environment variables, then explicit keyword values."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            var = f.metadata.get("env")
            if var and env.get(var):
                values[f.name] = env[var]
        base = cls()
        return base.with_overrides({**values, **explicit})

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """Every setting as data (name, default, help, choices, range) for docs, the CLI and the dashboard."""
        out = []
        for f in dataclasses.fields(cls):
            m = f.metadata
            out.append(
                {
                    "name": f.name,
                    "type": f.type if isinstance(f.type, str) else f.type.__name__,
                    "default": "" if m["secret"] else f.default,
                    "help": m["help"],
                    "choices": m["choices"],
                    "min": m["lo"],
                    "max": m["hi"],
                    "retrieval": m["retrieval"],
                    "env": m.get("env"),
                }
            )
        return out

    @classmethod
    def retrieval_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata["retrieval"])

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Settings:
        """A copy with ``overrides`` applied; strings are parsed to the field's type. Unknown keys are refused."""
        if not overrides:
            return self
        fields = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        if not isinstance(overrides, Mapping):
            raise InvalidInput(
                f"overrides must be a mapping of setting names to values, got {type(overrides).__name__}"
            )
        for key, raw in overrides.items():
            if not isinstance(key, str) or key not in fields:
                shown = short_repr(key)
                raise InvalidInput(f"unknown setting {shown!r}; {known_settings_hint(key, fields)}")
            changes[key] = coerce_setting(fields[key], raw)
        return dataclasses.replace(self, **changes)

    def retrieval_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.retrieval_keys()}

    @property
    def exclusive_predicates(self) -> frozenset[str]:
        """``graph_exclusive_predicates`` as normalised predicate names."""
        return frozenset(p for p in (normalise_predicate(x) for x in self.graph_exclusive_predicates.split(",")) if p)

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_api_key)

    @property
    def embedder_choice(self) -> str:
        if self.embedder == "auto":
            return "openai" if self.openai_api_key else "local"
        return self.embedder


def normalise_predicate(text: str) -> str:
    """llmemory's predicate form: stripped, lowercased, whitespace runs turned into ``_``."""
    return "_".join(str(text).strip().lower().split())


def parse_assignments(pairs: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}`` with a clear error for a malformed pair."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"expected KEY=VALUE, got {pair[:60]!r}")
        out[key.strip()] = value.strip()
    return out
