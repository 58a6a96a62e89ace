"""Forward-only migrations of the PostgreSQL index, numbered as the SQLite index's.

The same names as `agentledger.store.migrations` (m001_runs ... m011_packed_criteria), so that
both indexes say which shape they are in the same words; each is PostgreSQL's own DDL for
that step. A migration is applied in one transaction together with the row of
``_migrations`` that records it, under an advisory lock, so that machines opening a new
database at once apply each step exactly once. A released migration is never edited: a change
is a new migration, here and in migrations.py alike.

Every text column has the "C" collation: values compare and sort byte by byte, as in SQLite
(so the two indexes answer in the same order), and a btree index serves a LIKE prefix.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "MIGRATION_LOCK"]

MIGRATION_LOCK = 0x61676C65  # "agle": the advisory lock every migrating connection takes
"""The key of the transaction-level advisory lock held while migrating."""

_T = 'TEXT COLLATE "C"'

m001_runs = (
    f"""
    CREATE TABLE runs (
        run_id {_T} PRIMARY KEY,
        scenario {_T} NOT NULL,
        model {_T} NOT NULL,
        model_served {_T},
        provider {_T},
        system_fingerprint {_T},
        system_prompt_hash {_T},
        base_prompt_hash {_T},
        addon_name {_T},
        addon_hash {_T},
        variant {_T},
        agent_name {_T},
        agent_commit {_T},
        agent_dirty INTEGER,
        started_at {_T},
        ended_at {_T},
        silent_update_detectable INTEGER NOT NULL,
        backfilled INTEGER NOT NULL,
        commands_run BIGINT,
        commands_denied BIGINT,
        duration_s DOUBLE PRECISION,
        tokens_in BIGINT,
        tokens_out BIGINT,
        cost_usd DOUBLE PRECISION,
        exit_status {_T},
        sealed_at {_T} NOT NULL,
        manifest_sha256 {_T} NOT NULL,
        metadata_json {_T} NOT NULL,
        summary_json {_T}
    )
    """,
    f"""
    CREATE TABLE run_tags (
        run_id {_T} NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        key {_T} NOT NULL,
        value {_T} NOT NULL,
        PRIMARY KEY (run_id, key)
    )
    """,
    "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash)",
    "CREATE INDEX runs_prompt ON runs (system_prompt_hash)",
    "CREATE INDEX runs_scenario ON runs (scenario, model)",
    "CREATE INDEX runs_model_served ON runs (model_served)",
    "CREATE INDEX runs_variant ON runs (variant)",
    "CREATE INDEX runs_started ON runs (started_at)",
    "CREATE INDEX runs_agent_commit ON runs (agent_commit)",
    "CREATE INDEX run_tags_key_value ON run_tags (key, value)",
)

m002_scores = (
    f"""
    CREATE TABLE scores (
        run_id {_T} NOT NULL,
        judge_id {_T} NOT NULL,
        kind {_T} NOT NULL,
        model {_T},
        pack {_T} NOT NULL,
        verdict {_T} NOT NULL,
        diagnosis INTEGER,
        skipped_reason {_T},
        created_at {_T} NOT NULL,
        score_json {_T} NOT NULL,
        PRIMARY KEY (run_id, judge_id)
    )
    """,
    f"""
    CREATE TABLE score_criteria (
        run_id {_T} NOT NULL,
        judge_id {_T} NOT NULL,
        criterion {_T} NOT NULL,
        fired INTEGER,
        PRIMARY KEY (run_id, judge_id, criterion)
    )
    """,
    "CREATE INDEX scores_judge_verdict ON scores (judge_id, verdict)",
    "CREATE INDEX scores_verdict ON scores (verdict)",
    "CREATE INDEX score_criteria_fired ON score_criteria (criterion, fired, judge_id)",
)

# What each run is; runs indexed before kinds existed are agent runs, except those the
# fixtures runner recorded (its name is in their source). PostgreSQL adds the column in place.
m003_run_kinds = (
    f"ALTER TABLE runs ADD COLUMN kind {_T} NOT NULL DEFAULT 'agent'",
    "UPDATE runs SET kind = 'fixture' "
    "WHERE metadata_json::jsonb #>> '{source,runner}' = 'agentledger fixtures'",
    "CREATE INDEX runs_kind ON runs (kind)",
)

# Labels of runs by people and outside sources; `current` marks the label each (run, source)
# stands by (its newest, when no label of the run supersedes it).
m004_labels = (
    f"""
    CREATE TABLE labels (
        label_id {_T} PRIMARY KEY,
        run_id {_T} NOT NULL,
        source_kind {_T} NOT NULL,
        source_name {_T} NOT NULL,
        verdict {_T},
        diagnosis INTEGER,
        supersedes {_T},
        created_at {_T} NOT NULL,
        current INTEGER NOT NULL DEFAULT 1,
        label_json {_T} NOT NULL
    )
    """,
    f"""
    CREATE TABLE label_criteria (
        label_id {_T} NOT NULL REFERENCES labels(label_id) ON DELETE CASCADE,
        criterion {_T} NOT NULL,
        fired INTEGER,
        PRIMARY KEY (label_id, criterion)
    )
    """,
    "CREATE INDEX labels_run ON labels (run_id, source_kind, source_name)",
    "CREATE INDEX labels_source ON labels (source_name, current, verdict)",
    "CREATE INDEX labels_supersedes ON labels (supersedes)",
)

# Covering indexes for the reports, as SQLite's m005: a report's pass over the runs and its
# lookup of each run's chosen score read an index alone, never the wide JSON rows.
m005_report_indexes = (
    "DROP INDEX runs_model_prompt",
    "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash) "
    "INCLUDE (model_served, started_at, scenario, kind, run_id)",
    "CREATE INDEX scores_chosen ON scores (run_id, judge_id) "
    "INCLUDE (verdict, diagnosis, created_at, kind)",
)

# As SQLite's m006: a label source's current labels are read from one covering index
# (label_criteria is already keyed by (label_id, criterion), which PostgreSQL's primary key
# index serves as SQLite's WITHOUT ROWID table does).
m006_label_lookups = (
    "CREATE INDEX labels_current ON labels (current, source_name, run_id, created_at, label_id) "
    "INCLUDE (source_kind, verdict)",
)

# As SQLite's m008: runs_started gains run_id, so a page of runs in start order (the viewer's
# runs list) and a filter's test of each run are found in the index alone.
m008_runs_started_run_id = (
    "DROP INDEX runs_started",
    "CREATE INDEX runs_started ON runs (started_at, run_id)",
)

# As SQLite's m009: the viewer's sorts by kind, commands run and commands denied walk an
# index of the column and run_id.
m009_sort_indexes = (
    "DROP INDEX runs_kind",
    "CREATE INDEX runs_kind ON runs (kind, run_id)",
    "CREATE INDEX runs_commands_run ON runs (commands_run, run_id)",
    "CREATE INDEX runs_commands_denied ON runs (commands_denied, run_id)",
)

# As SQLite's m010: the sort by scenario walks an index of scenario and run_id (holding what a
# report reads of a run, as runs_model_prompt does). And, PostgreSQL's own: a descending sort of
# a column that can be NULL (start time, commands run, commands denied) puts the runs without
# a value last, an order no index of the column gives (walked backwards, it puts NULL first), so
# the newest-first runs page sorted all 100,000 runs (120 ms) before these.
m010_sort_walks = (
    "CREATE INDEX runs_scenario_sort ON runs (scenario, run_id) "
    "INCLUDE (model, system_prompt_hash, model_served, started_at, kind)",
    "CREATE INDEX runs_started_desc ON runs (started_at DESC NULLS LAST, run_id DESC)",
    "CREATE INDEX runs_commands_run_desc ON runs (commands_run DESC NULLS LAST, run_id DESC)",
    "CREATE INDEX runs_commands_denied_desc ON runs (commands_denied DESC NULLS LAST, run_id DESC)",
)

# As SQLite's m011: each score's and label's criteria packed on its row (as index.py's
# packed_criteria packs them). Unlike SQLite, the packed text stays out of the covering
# indexes: a PostgreSQL index entry holds at most about 2.7 kB, and a pack with many long
# criterion ids would make its scores' writes fail outright.
m011_packed_criteria = (
    f"ALTER TABLE scores ADD COLUMN criteria_packed {_T}",
    "UPDATE scores SET criteria_packed = (SELECT string_agg(c.criterion || chr(31) || "
    "coalesce(c.fired::text, 'n'), chr(30) ORDER BY c.criterion) FROM score_criteria c "
    "WHERE c.run_id = scores.run_id AND c.judge_id = scores.judge_id)",
    f"ALTER TABLE labels ADD COLUMN criteria_packed {_T}",
    "UPDATE labels SET criteria_packed = (SELECT string_agg(c.criterion || chr(31) || "
    "coalesce(c.fired::text, 'n'), chr(30) ORDER BY c.criterion) FROM label_criteria c "
    "WHERE c.label_id = labels.label_id)",
)

MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    ("m001_runs", m001_runs),
    ("m002_scores", m002_scores),
    ("m003_run_kinds", m003_run_kinds),
    ("m004_labels", m004_labels),
    ("m005_report_indexes", m005_report_indexes),
    ("m006_label_lookups", m006_label_lookups),
    ("m008_runs_started_run_id", m008_runs_started_run_id),
    ("m009_sort_indexes", m009_sort_indexes),
    ("m010_sort_walks", m010_sort_walks),
    ("m011_packed_criteria", m011_packed_criteria),
]
"""Every migration of the PostgreSQL index, in order: (name, its statements)."""
