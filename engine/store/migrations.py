"""Named, ordered schema migrations. Each runs once and is recorded in ``schema_migrations``.

Every table and sequence a migration creates is declared in the registry, engine/store/schema.py, which copy-store,
delete_user, export and the test snapshots read: tests/engine/store/test_schema_registry.py fails on one that is not.
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_core_tables",
        """
    CREATE TABLE sessions (
        user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL,
        created_at TIMESTAMPTZ, last_activity_at TIMESTAMPTZ,
        PRIMARY KEY (user_id, session_id));
    CREATE TABLE messages (
        user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL, seq INTEGER NOT NULL,
        role VARCHAR NOT NULL, content VARCHAR NOT NULL, tokens INTEGER NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (user_id, session_id, seq));
    CREATE SEQUENCE working_history_seq;
    CREATE TABLE working_slots (
        user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL, slot VARCHAR NOT NULL,
        value JSON, updated_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (user_id, session_id, slot));
    CREATE TABLE working_history (
        id BIGINT PRIMARY KEY DEFAULT nextval('working_history_seq'),
        user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL, slot VARCHAR NOT NULL,
        old_value JSON, new_value JSON, source VARCHAR NOT NULL, occurred_at TIMESTAMPTZ NOT NULL);
    CREATE TABLE items (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, category VARCHAR NOT NULL, content VARCHAR NOT NULL,
        importance DOUBLE NOT NULL, evergreen BOOLEAN NOT NULL, provenance JSON, source VARCHAR,
        created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, archived_at TIMESTAMPTZ);
    CREATE TABLE categories (
        user_id VARCHAR NOT NULL, name VARCHAR NOT NULL, summary VARCHAR NOT NULL, updated_at TIMESTAMPTZ,
        PRIMARY KEY (user_id, name));
    CREATE TABLE episodes (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, session_id VARCHAR, steps JSON NOT NULL,
        summary VARCHAR NOT NULL, outcome VARCHAR, importance DOUBLE NOT NULL, provenance JSON,
        created_at TIMESTAMPTZ NOT NULL, archived_at TIMESTAMPTZ);
    CREATE TABLE skills (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, name VARCHAR NOT NULL, version INTEGER NOT NULL,
        kind VARCHAR NOT NULL, description VARCHAR NOT NULL, body VARCHAR NOT NULL,
        success_count INTEGER NOT NULL DEFAULT 0, failure_count INTEGER NOT NULL DEFAULT 0, provenance JSON,
        created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, archived_at TIMESTAMPTZ);
    CREATE SEQUENCE skill_outcomes_seq;
    CREATE TABLE skill_outcomes (
        id BIGINT PRIMARY KEY DEFAULT nextval('skill_outcomes_seq'), skill_id VARCHAR NOT NULL,
        user_id VARCHAR NOT NULL, success BOOLEAN NOT NULL, episode_id VARCHAR, occurred_at TIMESTAMPTZ NOT NULL);
    CREATE SEQUENCE feedback_seq;
    CREATE TABLE feedback (
        id BIGINT PRIMARY KEY DEFAULT nextval('feedback_seq'), user_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL,
        label VARCHAR NOT NULL, delta INTEGER NOT NULL, trace_id VARCHAR, hop INTEGER, note VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL);
    CREATE SEQUENCE forget_log_seq;
    CREATE TABLE forget_log (
        id BIGINT PRIMARY KEY DEFAULT nextval('forget_log_seq'), user_id VARCHAR NOT NULL,
        memory_type VARCHAR NOT NULL, ids JSON NOT NULL, count INTEGER NOT NULL, mode VARCHAR NOT NULL,
        reason VARCHAR NOT NULL, actor VARCHAR NOT NULL, occurred_at TIMESTAMPTZ NOT NULL);
    CREATE TABLE traces (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, session_id VARCHAR, question VARCHAR NOT NULL,
        hops INTEGER NOT NULL, stop_reason VARCHAR, embedder VARCHAR, strategy VARCHAR, total_ms DOUBLE,
        context_ids JSON, body JSON NOT NULL, created_at TIMESTAMPTZ NOT NULL);
    CREATE TABLE llm_usage (
        user_id VARCHAR NOT NULL, operation VARCHAR NOT NULL, model VARCHAR, input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL, total_tokens BIGINT NOT NULL, occurred_at TIMESTAMPTZ NOT NULL);
    """,
    ),
    # A trace body is ~150-350 kB of JSON; DuckDB took ~200 ms to fetch one such string from a table of 1,000, and
    # ~10 ms to fetch it zlib-compressed as a BLOB (4x smaller). Older rows keep their JSON body.
    (
        "0002_trace_body_zlib",
        """
    ALTER TABLE traces ADD COLUMN body_zlib BLOB;
    ALTER TABLE traces ALTER COLUMN body DROP NOT NULL;
    """,
    ),
    # zstd level 1 packs a 2-hop trace (~300 kB) in ~0.7 ms where zlib level 1 took ~4 ms, and 15% smaller. The column
    # holds a zstd frame from now on, or a zlib stream for rows written between 0002 and 0003 (told apart by zstd's
    # magic number, which a zlib header never starts with).
    (
        "0003_trace_body_packed",
        """
    ALTER TABLE traces RENAME COLUMN body_zlib TO body_packed;
    """,
    ),
    # What came right before an item where it was said (e.g. the previous turn of a conversation); the item's vector
    # embeds it too (Settings.preceding_text_weight). Rows written before this migration have none.
    (
        "0004_item_preceding_text",
        """
    ALTER TABLE items ADD COLUMN preceding_text VARCHAR DEFAULT '';
    """,
    ),
    # Forgetting reaches traces: each trace lists the memories among its candidates, so a forget finds the traces to
    # redact (hard) or mark (soft) without unpacking every body; NULL for traces stored before this migration (a
    # forget unpacks those and fills the column in). A hard forget owes LanceDB a purge of the versions that still
    # hold the text: the owed purge is recorded in the forget's own transaction, so a crash cannot lose it.
    (
        "0005_forget_tombstones",
        """
    ALTER TABLE traces ADD COLUMN memory_ids VARCHAR[];
    CREATE TABLE vector_purges (kind VARCHAR PRIMARY KEY, requested_at TIMESTAMPTZ NOT NULL);
    """,
    ),
    # Evaluations: named expectation sets of cases (a question and the memories it should recall), runs of a set
    # through retrieval (settings, code version, store counts, metrics) and each case's result in a run (the trace it
    # produced, the ranks of its expected memories, where each miss was lost). Independent of 0005.
    (
        "0006_evaluations",
        """
    CREATE TABLE eval_sets (
        name VARCHAR PRIMARY KEY, description VARCHAR NOT NULL, created_at TIMESTAMPTZ NOT NULL);
    CREATE TABLE eval_cases (
        set_name VARCHAR NOT NULL, case_id VARCHAR NOT NULL, user_id VARCHAR NOT NULL, question VARCHAR NOT NULL,
        session_id VARCHAR, now TIMESTAMPTZ, expected JSON NOT NULL, category VARCHAR, source VARCHAR NOT NULL,
        added_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (set_name, case_id));
    CREATE TABLE eval_runs (
        id VARCHAR PRIMARY KEY, set_name VARCHAR NOT NULL, label VARCHAR NOT NULL, method VARCHAR NOT NULL,
        preset VARCHAR, overrides JSON, hops INTEGER, settings JSON, code_version VARCHAR, store_counts JSON,
        metrics JSON, status VARCHAR NOT NULL, cases INTEGER NOT NULL, started_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ);
    CREATE TABLE eval_results (
        run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, user_id VARCHAR NOT NULL, question VARCHAR NOT NULL,
        category VARCHAR, expected JSON NOT NULL, trace_id VARCHAR, ranks JSON NOT NULL, in_context JSON NOT NULL,
        lost JSON NOT NULL, scores JSON NOT NULL, latency_ms DOUBLE, top_ids JSON NOT NULL,
        PRIMARY KEY (run_id, case_id));
    """,
    ),
    # Graph memory (llmemory §3.6-3.8, with validity [memlens]): entities, the relations between them (a relation is
    # valid from ``valid_from`` until ``valid_to``, set when a newer value of an exclusive predicate superseded it,
    # ``superseded_by`` naming that relation), which memories mention which entity, and the audit log of
    # maintenance (consolidate, reflect, mine skills, expire): every change a maintenance run applied.
    (
        "0007_graph_and_maintenance",
        """
    CREATE TABLE entities (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, name VARCHAR NOT NULL, name_key VARCHAR NOT NULL,
        type VARCHAR NOT NULL, aliases JSON NOT NULL, provenance JSON, created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL, archived_at TIMESTAMPTZ);
    CREATE TABLE relations (
        id VARCHAR PRIMARY KEY, user_id VARCHAR NOT NULL, subject_id VARCHAR NOT NULL, predicate VARCHAR NOT NULL,
        object_id VARCHAR NOT NULL, valid_from TIMESTAMPTZ NOT NULL, valid_to TIMESTAMPTZ, superseded_by VARCHAR,
        sources JSON NOT NULL, method VARCHAR NOT NULL, confidence DOUBLE, created_at TIMESTAMPTZ NOT NULL,
        archived_at TIMESTAMPTZ, archive_reason VARCHAR);
    CREATE TABLE entity_mentions (
        user_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, kind VARCHAR NOT NULL, memory_id VARCHAR NOT NULL,
        method VARCHAR NOT NULL, created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (user_id, entity_id, kind, memory_id));
    CREATE SEQUENCE maintenance_log_seq;
    CREATE TABLE maintenance_log (
        id BIGINT PRIMARY KEY DEFAULT nextval('maintenance_log_seq'), user_id VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL, step VARCHAR NOT NULL, action VARCHAR NOT NULL, target_kind VARCHAR,
        target_ids JSON NOT NULL, detail JSON, actor VARCHAR NOT NULL, occurred_at TIMESTAMPTZ NOT NULL);
    """,
    ),
    # Labels per labeller: who gave each label, and labels that toggle instead of stacking. One (user, labeller,
    # trace, memory) has at most one current label; a change of mind keeps the earlier row with ``replaced_at`` set
    # and delta 0, so retrieval's sum(delta) counts each (labeller, trace, memory) once and the history stays
    # readable. Older rows get the labeller '' (not recorded); where they stacked on one (user, trace, memory), the
    # newest stays current and the earlier ones are marked replaced when the next one came. Independent of 0009-0011.
    (
        "0008_labels",
        """
    ALTER TABLE feedback ADD COLUMN labeller VARCHAR DEFAULT '';
    ALTER TABLE feedback ADD COLUMN replaced_at TIMESTAMPTZ;
    UPDATE feedback SET delta = 0, replaced_at = later.next_at FROM (
        SELECT id, lead(created_at) OVER (PARTITION BY user_id, item_id, trace_id ORDER BY created_at, id) AS next_at
        FROM feedback) AS later
        WHERE feedback.id = later.id AND later.next_at IS NOT NULL;
    """,
    ),
    # Store insights (issue 32): near-duplicate pairs of a user's semantic memories and echoes (memories repeating
    # what the agent was given earlier) take an all-pairs vector comparison, too slow for a page, so a refresh on
    # demand computes them into these tables, and the page reads them with the refresh's time beside them.
    (
        "0009_store_insights",
        """
    CREATE TABLE near_duplicates (
        user_id VARCHAR NOT NULL, a_id VARCHAR NOT NULL, b_id VARCHAR NOT NULL, similarity DOUBLE NOT NULL,
        PRIMARY KEY (user_id, a_id, b_id));
    CREATE TABLE echoes (
        user_id VARCHAR NOT NULL, memory_id VARCHAR NOT NULL, source VARCHAR NOT NULL, source_id VARCHAR NOT NULL,
        trace_id VARCHAR, given_at TIMESTAMPTZ NOT NULL, similarity DOUBLE NOT NULL,
        PRIMARY KEY (user_id, memory_id, source, source_id));
    CREATE TABLE insight_refreshes (
        user_id VARCHAR PRIMARY KEY, refreshed_at TIMESTAMPTZ NOT NULL, items INTEGER NOT NULL,
        pairs INTEGER NOT NULL, echoes INTEGER NOT NULL, min_similarity DOUBLE NOT NULL, seconds DOUBLE NOT NULL);
    """,
    ),
    # Where each trace came from (vocab.TraceOrigin: agent, dashboard, evaluation, import) and the preset it ran, as
    # columns, so the trace table filters them in SQL without unpacking bodies. Older rows: a trace an evaluation
    # result names is an evaluation trace, any other "unknown"; their preset stays NULL (it is inside the packed
    # body, which SQL cannot read). Independent of 0008-0010.
    (
        "0011_trace_origin",
        """
    ALTER TABLE traces ADD COLUMN origin VARCHAR DEFAULT 'unknown';
    ALTER TABLE traces ADD COLUMN preset VARCHAR;
    UPDATE traces SET origin = 'evaluation'
        WHERE id IN (SELECT trace_id FROM eval_results WHERE trace_id IS NOT NULL);
    """,
    ),
)
