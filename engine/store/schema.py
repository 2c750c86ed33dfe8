"""The one list of the store's DuckDB tables: how each is scoped to a user, whether copy-store moves it, which
export record kind carries it, whether ``delete_user`` removes the user's rows from it, and the sequence its id
column draws from; and which table holds each memory kind.

Copy-store, delete_user, the export's coverage test and the test snapshots all read it, and tests compare it with
what the migrations create (tests/engine/store/test_table_registry.py: tables, user columns, sequences): a new table
that is not declared here fails them, so no part can miss it (the table list was written three times before, and one
copy missed two tables).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocab import Kind


@dataclass(frozen=True)
class TableSpec:
    name: str
    # The column holding the user's id (every per-user table has one, so a user's rows are found without a join);
    # None for a store-wide table (its rows belong to no one user).
    user_column: str | None
    copied: bool  # copy-store moves its rows
    # The export record kind that carries the user's rows, or None with ``why_not_exported`` saying why.
    exported_as: str | None = None
    why_not_exported: str = ""
    sequence: str | None = None  # the sequence its ``id`` column's default draws from

    @property
    def per_user(self) -> bool:
        """delete_user removes the user's rows from every per-user table."""
        return self.user_column is not None


# Parents before children (copy-store inserts in this order).
TABLES: tuple[TableSpec, ...] = (
    TableSpec("sessions", "user_id", True, "message"),  # made again by the session's messages
    TableSpec("messages", "user_id", True, "message"),
    TableSpec("working_slots", "user_id", True, "working"),
    TableSpec(
        "working_history",
        "user_id",
        True,
        why_not_exported="the export carries the slots' current values; their edit history stays in this store",
        sequence="working_history_seq",
    ),
    TableSpec("items", "user_id", True, "item"),
    TableSpec("categories", "user_id", True, "category"),
    TableSpec("episodes", "user_id", True, "episode"),
    TableSpec("skills", "user_id", True, "skill"),
    TableSpec("skill_outcomes", "user_id", True, "outcome", sequence="skill_outcomes_seq"),
    TableSpec("feedback", "user_id", True, "feedback", sequence="feedback_seq"),
    TableSpec("entities", "user_id", True, "entity"),
    TableSpec("relations", "user_id", True, "relation"),
    TableSpec("entity_mentions", "user_id", True, "mention"),
    TableSpec(
        "maintenance_log",
        "user_id",
        True,
        why_not_exported="the store's record of its maintenance runs, like the traces",
        sequence="maintenance_log_seq",
    ),
    TableSpec("forget_log", "user_id", True, "forget_log", sequence="forget_log_seq"),
    TableSpec("traces", "user_id", True, why_not_exported="a store's record of its retrievals (export-trace)"),
    TableSpec("llm_usage", "user_id", True, why_not_exported="the store's token bill, not the user's memory"),
    TableSpec("vector_purges", None, True, why_not_exported="store-wide: LanceDB purges a forget still owes"),
    TableSpec("eval_sets", None, True, why_not_exported="store-wide: a set may hold cases of several users"),
    TableSpec("eval_cases", "user_id", True, why_not_exported="evaluations are exported by eval commands"),
    TableSpec("eval_runs", None, True, why_not_exported="store-wide: a run's metrics cover all its cases"),
    TableSpec("eval_results", "user_id", True, why_not_exported="evaluations are exported by eval commands"),
    # Store insights: derived from the items, traces and messages, and computed again by a refresh.
    TableSpec("near_duplicates", "user_id", True, why_not_exported="derived: a store insights refresh recomputes it"),
    TableSpec("echoes", "user_id", True, why_not_exported="derived: a store insights refresh recomputes it"),
    TableSpec("insight_refreshes", "user_id", True, why_not_exported="derived: when store insights were refreshed"),
    # Each store's own record of its migrations (a copy's destination has applied them itself).
    TableSpec("schema_migrations", None, False, why_not_exported="the store's own migration record"),
)
BY_NAME = {t.name: t for t in TABLES}
COPIED = tuple(t.name for t in TABLES if t.copied)
PER_USER = tuple(t.name for t in TABLES if t.per_user)
SEQUENCES = {t.name: t.sequence for t in TABLES if t.sequence}
# Each memory kind's table (its rows; the vectors live in LanceDB tables named after the kind and the model). Keyed
# by str: a Kind is one, and so is a kind read from a trace, a command line or a JSONL record.
KIND_TABLES: dict[str, str] = {Kind.SEMANTIC: "items", Kind.EPISODIC: "episodes", Kind.PROCEDURAL: "skills"}
