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
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInput
from .setting_values import coerce_setting, known_settings_hint, short_repr

# Relative to the folder memlens is started in (like a datasette or sqlite file), never to where the code is
# installed: from a clone that is the repository's git-ignored data/store.
DEFAULT_STORE = "data/store"
# The bundled demo dataset ships as package data (the `data.demo` package), read wherever memlens is installed.
DEMO_DIR = importlib.resources.files("data.demo")
# Hops per retrieval, lowest and highest: the hops setting, retrieve's argument, the CLI's --hops, the MCP tool and
# the dashboard's inputs all take this one range.
HOPS_RANGE: tuple[int, int] = (1, 5)


def _s(
    default: Any,
    help: str,
    *,
    choices: tuple[Any, ...] | None = None,
    lo: float | None = None,
    hi: float | None = None,
    retrieval: bool = False,
    secret: bool = False,
    env: str | None = None,
) -> Any:
    """One setting: its default, help, allowed values or range, whether a retrieval call may override it, whether
    it is a secret, and the environment variable that sets it (``env``; read by ``Settings.from_env`` only)."""
    return field(
        default=default,
        repr=not secret,
        metadata={
            "help": help,
            "choices": choices,
            "lo": lo,
            "hi": hi,
            "retrieval": retrieval,
            "secret": secret,
            "env": env,
        },
    )


@dataclass(frozen=True)
class Settings:
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
        "Embedder: local (all-MiniLM-L6-v2, bundled), openai, or auto (openai when "
        "OPENAI_API_KEY is set and MEMLENS_EMBEDDER is not local).",
        choices=("auto", "local", "openai"),
        env="MEMLENS_EMBEDDER",
    )
    openai_api_key: str = _s("", "OpenAI (or compatible) API key. Never displayed.", secret=True, env="OPENAI_API_KEY")
    openai_base_url: str = _s("", "Base URL of an OpenAI-compatible server.", env="OPENAI_BASE_URL")
    chat_model: str = _s("gpt-4o-mini", "Chat model for LLM features.", env="MEMLENS_CHAT_MODEL")
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
    lock_timeout_s: float = _s(20.0, "How long to wait for another process's DuckDB lock before StoreBusy.", lo=0)
    vector_index_min_rows: int = _s(
        10_000,
        "optimize() gives vector tables with at least this many rows an "
        "approximate HNSW-SQ index (~10 ms instead of ~110 ms per search at 100k rows, "
        "recall@20 ~0.99); 0: always search exactly.",
        lo=0,
    )
    resident_vector_max_rows: int = _s(
        20_000,
        "Vector tables with at most this many rows (episodes and skills, "
        "usually) are searched exactly in memory, ~5 ms less per search than a "
        "LanceDB query; a copy is re-read after the table changes. 0: always ask "
        "LanceDB.",
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

    # --- retrieval (llmemory §6) --------------------------------------------------------------------------------
    top_k: int = _s(
        50,
        "Candidates per source (semantic, episodic, procedural) and per search (vector, full text).",
        lo=1,
        hi=1000,
        retrieval=True,
    )
    hops: int = _s(
        1,
        "Hops for retrieve() when not given; the CLI's --hops overrides.",
        lo=HOPS_RANGE[0],
        hi=HOPS_RANGE[1],
        retrieval=True,
    )
    query_condense_chars: int = _s(
        100, "Messages longer than this are condensed into a search query.", lo=1, retrieval=True
    )
    query_condense_words: int = _s(
        40,
        "[memlens] Content words the offline condensation keeps of a long message, in order (parity: 15, "
        "the LLM's 'under 15 words'). Fewer cut the end of a long question: LongMemEval dev recall@10 "
        "0.867 with 15, 0.873 with 20 to 60; LoCoMo unchanged.",
        lo=1,
        hi=500,
        retrieval=True,
    )
    hybrid_enabled: bool = _s(True, "Blend BM25 into the score (hybrid_search_enabled).", retrieval=True)
    bm25_weight: float = _s(0.5, "w, the lexical share of the hybrid score (see fusion).", lo=0, hi=1, retrieval=True)
    bm25_source: str = _s(
        "index",
        "Where bm25_raw comes from: candidates (parity: BM25 over the candidate "
        "set with "
        "llmemory's tokenizer) or index ([memlens]: LanceDB's BM25 over the whole table, with "
        "stemming and stop words; 0 for candidates the full-text search did not return).",
        choices=("candidates", "index"),
        retrieval=True,
    )
    preceding_bm25_weight: float = _s(
        0.5,
        "[memlens] How much the query's words in an item's preceding_text count "
        "towards its BM25: bm25_norm = (bm25_raw + v*bm25_preceding) / the candidates' "
        "maximum of that sum, bm25_preceding being BM25 of the candidates' preceding "
        "texts over the candidate set (llmemory's tokenizer). Only items with a "
        "preceding text are affected. 0: their own text only.",
        lo=0,
        hi=5,
        retrieval=True,
    )
    preceding_full_words: int = _s(
        20,
        "[memlens] An item's preceding text adds to its BM25 at the full preceding_bm25_weight when the item has at "
        "most this many words, and at weight*this/words when longer: a short reply means little without the "
        "message it answers, a long text stands on its own. 0: the full weight for every item (llmemory has none).",
        lo=0,
        hi=100_000,
        retrieval=True,
    )
    fusion: str = _s(
        "zscore",
        "How the cosine and the lexical score (BM25 plus the preceding text's share) become the "
        "hybrid score: weighted (llmemory: bm25_weight*bm25_norm + (1-bm25_weight)*cosine), zscore "
        "([memlens] sigmoid(w*z_bm25 + (1-w)*z_vector), each standardised over the query's candidates, "
        "so neither score's scale decides; 0.5 is an average candidate) or rrf "
        "([memlens] reciprocal rank fusion over the candidates: (1-w)*(k+1)/(k+rank_vector) + "
        "w*(k+1)/(k+rank_bm25), 1 for a candidate first on both).",
        choices=("weighted", "zscore", "rrf"),
        retrieval=True,
    )
    rrf_k: float = _s(
        60.0,
        "[memlens] k in reciprocal rank fusion (fusion=rrf): larger flattens the rank curve.",
        lo=1,
        hi=1000,
        retrieval=True,
    )
    relevance_filter: str = _s(
        "heuristic",
        "Relevance filter: heuristic (parity), llm ([memlens] judge, needs an LLM; falls back to heuristic), or off.",
        choices=("heuristic", "llm", "off"),
        retrieval=True,
    )
    relevance_keep_all_max: int = _s(
        5, "With this many candidates or fewer, the filter keeps all.", lo=0, retrieval=True
    )
    relevance_min_score: float = _s(
        0.5, "Heuristic: keep candidates whose score is at least this.", lo=0, hi=1, retrieval=True
    )
    relevance_min_word_chars: int = _s(
        4, "Heuristic: a shared word must have at least this many characters.", lo=1, retrieval=True
    )
    relevance_words: str = _s(
        "words",
        "Heuristic filter's shared-word check: words ([memlens] runs of letters and "
        "digits, so 'guitar?' is looked for as 'guitar') or raw (llmemory: whitespace-split words, punctuation "
        "included; 'guitar?' never matches a memory without the question mark). Both match "
        "substrings.",
        choices=("words", "raw"),
        retrieval=True,
    )
    relevance_protect_top: int = _s(
        5,
        "[memlens] The heuristic filter never drops a candidate ranked this high or "
        "higher by the vector or the full-text score among the candidates (0: off, "
        "llmemory).",
        lo=0,
        hi=1000,
        retrieval=True,
    )
    relevance_judge_threshold: float = _s(0.7, "LLM judge: keep relevance >= this.", lo=0, hi=1, retrieval=True)
    half_life_days: float = _s(30.0, "Time-decay half-life in days.", lo=0.001, retrieval=True)
    decay_floor: float = _s(
        0.9,
        "[memlens] decay = floor + (1-floor)*exp(-ln2/half_life*age): above 0, recency "
        "is a bounded preference and an old memory keeps at least this share of its score "
        "(0: llmemory's decay towards zero).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    clamp_future_age: bool = _s(
        True,
        "A memory dated after `now` counts as age 0 (llmemory floors its negative age, "
        "so a future memory decays above 1). False only reproduces traces stored before this "
        "setting existed.",
        retrieval=True,
    )
    importance_weight: float = _s(1.0, "Exponent on importance (0 disables importance).", lo=0, retrieval=True)
    skill_importance: str = _s(
        "success_rate",
        "Skill importance inside retrieval: success_rate (parity) or "
        "wilson ([memlens] 95% Wilson lower bound; an untried skill keeps the neutral 0.5).",
        choices=("success_rate", "wilson"),
        retrieval=True,
    )
    feedback_weight: float = _s(
        0.5, "w_f in factor = 1 + w_f*clamp(net,-cap,cap)/cap; 0 disables.", lo=0, hi=1, retrieval=True
    )
    feedback_cap: int = _s(5, "Cap on |net| feedback.", lo=1, retrieval=True)
    mmr_enabled: bool = _s(False, "Diversify with MMR (reorders only).", retrieval=True)
    mmr_lambda: float = _s(0.7, "MMR lambda: relevance vs diversity.", lo=0, hi=1, retrieval=True)
    mmr_similarity: str = _s(
        "jaccard",
        "MMR similarity: jaccard (parity) or embedding ([memlens] cosine).",
        choices=("jaccard", "embedding"),
        retrieval=True,
    )
    budget_tokens: int = _s(2000, "Context token budget (max_retrieval_tokens).", lo=1, hi=1_000_000, retrieval=True)
    assembly_mode: str = _s(
        "skip",
        "Budget overflow: skip ([memlens] default, continue with smaller memories) or "
        "stop (parity: stop at the first memory that does not fit).",
        choices=("skip", "stop"),
        retrieval=True,
    )
    context_max_items: int = _s(0, "[memlens] Cap on memories in the context (0 = no cap).", lo=0, retrieval=True)
    reasoner: str = _s(
        "auto",
        "Multi-hop reasoner: auto (llm when configured, else offline), llm, offline.",
        choices=("auto", "llm", "offline"),
        retrieval=True,
    )
    hop_weight: float = _s(
        0.9,
        "[memlens] Factor on the final scores of hop n's candidates, hop_weight^(n-1), "
        "before the multi-hop merge: below 1 a reasoner-proposed query's results must outscore "
        "the question's own by that margin to displace them (1 = parity; 2-hop recall@10 on the dev halves, "
        "LoCoMo / LongMemEval: 0.8 0.734/0.885, 0.9 0.742/0.884, 1.0 0.746/0.856).",
        lo=0,
        hi=1,
        retrieval=True,
    )
    reasoner_query: str = _s(
        "question+terms",
        "Offline reasoner's next query: terms (only the new names/key terms) or "
        "question+terms (the question's words plus them, [memlens] query expansion).",
        choices=("terms", "question+terms"),
        retrieval=True,
    )
    query_generator: str = _s(
        "auto",
        "Query generation for long messages: auto, llm, offline.",
        choices=("auto", "llm", "offline"),
        retrieval=True,
    )
    entity_strategy: bool = _s(
        False,
        "[memlens] The entity stage of each hop (engine/retrieval/entity_strategy.py): entities named in the "
        "hop's query or by its top results bring in the memories that name them (and, entity_depth relations "
        "away, their neighbours'), scored by how rare the entities are. Off by default, as measured with the "
        "offline extractor's graph (1 hop, recall@10, off -> on): LoCoMo 0.733 -> 0.735 (multi-hop 0.407 -> "
        "0.421), LongMemEval-S 0.873 -> 0.809; MuSiQue all@5 0.162 -> 0.171.",
        retrieval=True,
    )
    entity_weight: float = _s(
        0.2,
        "[memlens] What the entity stage adds to a linked candidate's hybrid score: entity_weight times its "
        "entity score (0..1, the share of the hop's entity weight that its paths cover).",
        lo=0,
        hi=5,
        retrieval=True,
    )
    entity_top_k: int = _s(
        20,
        "[memlens] Memories the entity stage may add per hop beyond what search found (best entity score first).",
        lo=0,
        hi=1000,
        retrieval=True,
    )
    entity_depth: int = _s(
        1,
        "[memlens] Relations the entity stage follows from a named entity (0: only memories naming it; 1: also "
        "those naming an entity one valid relation away, at half the weight).",
        lo=0,
        hi=2,
        retrieval=True,
    )
    entity_from_top: int = _s(
        5,
        "[memlens] The entity stage also follows the entities named by this many top results (at half weight): "
        "of each search at hop 1, of the previous hop's ranking at later hops (0 = only the query's entities).",
        lo=0,
        hi=50,
        retrieval=True,
    )
    entity_max_mentions: int = _s(
        100,
        "[memlens] An entity named by more memories than this (a speaker's own name) brings in none; see "
        "entity_common for what else it does.",
        lo=1,
        retrieval=True,
    )
    entity_common: str = _s(
        "ignore",
        "[memlens] An entity past entity_max_mentions: ignore (takes no part) or score (still adds to the "
        "candidates search found; LoCoMo adversarial questions, which name the wrong speaker, lose by it).",
        choices=("ignore", "score"),
        retrieval=True,
    )

    # ------------------------------------------------------------------------------------------------------------
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
