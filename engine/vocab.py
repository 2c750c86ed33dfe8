"""The engine's vocabulary: every closed set of names a trace, a page, the CLI or an MCP tool uses, as enums.

They are ``StrEnum``s so that a member *is* its string: it is written to JSON as the string stored traces have
always held, and a value read back from an older trace (a plain ``str``) compares equal to the member. Display
labels live here too, in one mapping per vocabulary (:data:`LOSS_LABELS`), so a page never spells a stage name
itself and the engine never decides by a label.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """A memory kind; each has its own DuckDB table and vector table."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


KINDS: tuple[Kind, ...] = tuple(Kind)
# What a forget can name beside the memory kinds: "graph", entities and relations (engine/memory/graph_forget.py);
# the forget log's memory_type is one of these.
GRAPH = "graph"
FORGET_TARGETS: tuple[str, ...] = (*KINDS, GRAPH)
# Each kind's DuckDB table: KIND_TABLES in engine/store/schema.py, the registry of tables.


class Stage(StrEnum):
    """The scoring stages a candidate is ranked after (a trace's ``ranks`` has one rank per stage it reached)."""

    HYBRID = "hybrid"
    FILTER = "filter"
    TEMPORAL = "temporal"
    FEEDBACK = "feedback"
    FINAL = "final"
    MMR = "mmr"


class Relevance(StrEnum):
    """The relevance filter's verdict on a candidate."""

    KEPT = "kept"
    DROPPED = "dropped"


class FoundBy(StrEnum):
    """Which search returned a candidate."""

    VECTOR = "vector"
    FTS = "fts"
    BOTH = "both"
    ENTITY = "entity"  # brought in by the entity stage alone; a searched hit it also linked is e.g. "both+entity"


class Reason(StrEnum):
    """Why a candidate is where it ended (a trace's ``context_reason`` and a ranking entry's ``reason``): in the
    context, or which stage kept it out. A replay's ranking adds the reasons it did not rank an old entry."""

    CONTEXT = "context"
    FILTERED = "filtered"  # dropped by the relevance filter
    MERGED = "merged"  # kept, but another hop's copy of the memory scored higher
    BUDGET = "budget"  # did not fit the token budget
    BUDGET_STOP = "budget_stop"  # assembly_mode=stop: an earlier memory did not fit
    CAP = "cap"  # context_max_items reached
    # a replay's entries for memories of the replayed trace that it did not rank
    FORGOTTEN = "forgotten"
    HOP_NOT_REPLAYED = "hop_not_replayed"


class LossStatus(StrEnum):
    """Where a memory was finally lost for a trace (the why-not verdict's ``status``), or ``context``."""

    CONTEXT = "context"
    BUDGET = "budget"
    BUDGET_STOP = "budget_stop"
    CAP = "cap"
    FILTERED = "filtered"
    NEVER = "never"  # no hop's search returned it
    ARCHIVED = "archived"  # soft-forgotten
    FORGOTTEN = "forgotten"  # hard-forgotten
    MISSING = "missing"  # not in the store, nor in the forget log
    HOP_NOT_REPLAYED = "hop_not_replayed"  # a replay's entry: the memory's hop was not replayed


# Statuses that say the memory could not have been found, whatever the retrieval settings: a why-not verdict's
# (LossStatus) or the store's (MemoryStatus), which share these values.
GONE: tuple[str, ...] = (LossStatus.ARCHIVED, LossStatus.FORGOTTEN, LossStatus.MISSING)


class MemoryStatus(StrEnum):
    """What the store says about a memory id now."""

    ACTIVE = "active"
    ARCHIVED = "archived"
    FORGOTTEN = "forgotten"
    MISSING = "missing"


class ForgetMode(StrEnum):
    SOFT = "soft"  # archived: the row stays, search skips it
    HARD = "hard"  # deleted, and its text redacted from stored traces


class HopStage(StrEnum):
    """What handled a memory at one hop, as the why-not analysis names it per hop."""

    SEARCH = "search"  # search did not return it
    FILTER = "filter"  # the relevance filter dropped it
    MERGE = "merge"  # another hop's copy won
    ASSEMBLY = "assembly"  # ranked, then placed by assembly (context, budget, budget_stop, cap)


class Strategy(StrEnum):
    """Who proposed a hop's query (a trace's ``proposed_by`` and ``strategies``); a custom reasoner is named by
    its callable instead."""

    QUESTION = "question"
    OFFLINE_KEYWORDS = "offline:keywords"
    LLM_QUERY = "llm:query"
    OFFLINE_BRIDGE = "offline:bridge_entities"
    LLM_REASONER = "llm:reasoner"


# The one mapping of loss statuses, placements and per-hop stages to the words pages and the CLI show.
LOSS_LABELS: dict[str, str] = {
    Reason.FILTERED: "relevance filter",
    Reason.MERGED: "multi-hop merge",
    Reason.BUDGET: "token budget",
    Reason.BUDGET_STOP: "token budget (stop mode)",
    Reason.CAP: "context item cap",
    Reason.CONTEXT: "in context",
    LossStatus.NEVER: "never a candidate",
    LossStatus.ARCHIVED: "archived (soft-forgotten)",
    LossStatus.FORGOTTEN: "forgotten (hard)",
    LossStatus.MISSING: "not in the store",
}
HOP_STAGE_LABELS: dict[HopStage, str] = {
    HopStage.SEARCH: "search",
    HopStage.FILTER: LOSS_LABELS[Reason.FILTERED],
    HopStage.MERGE: LOSS_LABELS[Reason.MERGED],
}


def loss_label(status: str) -> str:
    """The display words for a status or placement (itself when it has none, e.g. a replay's hop_not_replayed)."""
    return LOSS_LABELS.get(status, status)


class TraceOrigin(StrEnum):
    """Where a stored trace came from (the ``origin`` column of ``traces``, migration 0011): an agent's retrieval
    (the Python API, MCP or the CLI), a question asked on the dashboard, an evaluation run's case, a trace imported
    from its JSON, a LangGraph agent's search through memlens's store (engine/interop/langgraph_store.py);
    ``unknown`` for traces stored before origins were recorded that no evaluation result names."""

    AGENT = "agent"
    DASHBOARD = "dashboard"
    EVALUATION = "evaluation"
    IMPORT = "import"
    LANGGRAPH = "langgraph"
    UNKNOWN = "unknown"
