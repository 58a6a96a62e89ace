"""Forward-only migrations of the SQLite index.

Each migration is named ``mNNN_what`` and applied in one transaction together with the row
that records it. A released migration is never edited: a change is a new migration.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "Migration"]

Migration = tuple[str, Callable[[sqlite3.Connection], None]]


def m001_runs(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            scenario TEXT NOT NULL,
            model TEXT NOT NULL,
            model_served TEXT,
            provider TEXT,
            system_fingerprint TEXT,
            system_prompt_hash TEXT,
            base_prompt_hash TEXT,
            addon_name TEXT,
            addon_hash TEXT,
            variant TEXT,
            agent_name TEXT,
            agent_commit TEXT,
            agent_dirty INTEGER,
            started_at TEXT,
            ended_at TEXT,
            silent_update_detectable INTEGER NOT NULL,
            backfilled INTEGER NOT NULL,
            commands_run INTEGER,
            commands_denied INTEGER,
            duration_s REAL,
            tokens_in INTEGER,
            tokens_out INTEGER,
            cost_usd REAL,
            exit_status TEXT,
            sealed_at TEXT NOT NULL,
            manifest_sha256 TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            summary_json TEXT
        )
        """
    )
    db.execute(
        """
        CREATE TABLE run_tags (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        )
        """
    )
    for statement in (
        "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash)",
        "CREATE INDEX runs_prompt ON runs (system_prompt_hash)",
        "CREATE INDEX runs_scenario ON runs (scenario, model)",
        "CREATE INDEX runs_model_served ON runs (model_served)",
        "CREATE INDEX runs_variant ON runs (variant)",
        "CREATE INDEX runs_started ON runs (started_at)",
        "CREATE INDEX runs_agent_commit ON runs (agent_commit)",
        "CREATE INDEX run_tags_key_value ON run_tags (key, value)",
    ):
        db.execute(statement)


def m002_scores(db: sqlite3.Connection) -> None:
    """Judges' scores: one row per (run, judge id), and one per criterion result."""
    db.execute(
        """
        CREATE TABLE scores (
            run_id TEXT NOT NULL,
            judge_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            model TEXT,
            pack TEXT NOT NULL,
            verdict TEXT NOT NULL,
            diagnosis INTEGER,
            skipped_reason TEXT,
            created_at TEXT NOT NULL,
            score_json TEXT NOT NULL,
            PRIMARY KEY (run_id, judge_id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE score_criteria (
            run_id TEXT NOT NULL,
            judge_id TEXT NOT NULL,
            criterion TEXT NOT NULL,
            fired INTEGER,
            PRIMARY KEY (run_id, judge_id, criterion)
        )
        """
    )
    for statement in (
        "CREATE INDEX scores_judge_verdict ON scores (judge_id, verdict)",
        "CREATE INDEX scores_verdict ON scores (verdict)",
        "CREATE INDEX score_criteria_fired ON score_criteria (criterion, fired, judge_id)",
    ):
        db.execute(statement)


_M003_COLUMNS = (
    "run_id, scenario, model, model_served, provider, system_fingerprint, system_prompt_hash, "
    "base_prompt_hash, addon_name, addon_hash, variant, agent_name, agent_commit, agent_dirty, "
    "started_at, ended_at, silent_update_detectable, backfilled, commands_run, commands_denied, "
    "duration_s, tokens_in, tokens_out, cost_usd, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json"
)


def m003_run_kinds(db: sqlite3.Connection) -> None:
    """What each run is (agent, fixture, sentinel, variant). Runs indexed before kinds existed
    are agent runs, except those the fixtures runner recorded (its name is in their source).

    The table is rebuilt rather than altered: a column added by ALTER TABLE goes after the
    JSON columns, and every query filtering on it would read each row's overflow pages.
    run_tags is rebuilt around it, since dropping `runs` would cascade to its rows.
    """
    db.execute(
        """
        CREATE TABLE runs_m003 (
            run_id TEXT PRIMARY KEY,
            scenario TEXT NOT NULL,
            model TEXT NOT NULL,
            model_served TEXT,
            provider TEXT,
            system_fingerprint TEXT,
            system_prompt_hash TEXT,
            base_prompt_hash TEXT,
            addon_name TEXT,
            addon_hash TEXT,
            variant TEXT,
            agent_name TEXT,
            agent_commit TEXT,
            agent_dirty INTEGER,
            started_at TEXT,
            ended_at TEXT,
            silent_update_detectable INTEGER NOT NULL,
            backfilled INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'agent',
            commands_run INTEGER,
            commands_denied INTEGER,
            duration_s REAL,
            tokens_in INTEGER,
            tokens_out INTEGER,
            cost_usd REAL,
            exit_status TEXT,
            sealed_at TEXT NOT NULL,
            manifest_sha256 TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            summary_json TEXT
        )
        """
    )
    db.execute(
        f"INSERT INTO runs_m003 ({_M003_COLUMNS}, kind) SELECT {_M003_COLUMNS}, "
        "CASE WHEN json_extract(metadata_json, '$.source.runner') = 'agentledger fixtures' "
        "THEN 'fixture' ELSE 'agent' END FROM runs"
    )
    db.execute("CREATE TABLE run_tags_m003 AS SELECT run_id, key, value FROM run_tags")
    db.execute("DROP TABLE run_tags")
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_m003 RENAME TO runs")
    db.execute(
        """
        CREATE TABLE run_tags (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        )
        """
    )
    db.execute("INSERT INTO run_tags (run_id, key, value) SELECT * FROM run_tags_m003")
    db.execute("DROP TABLE run_tags_m003")
    # The indexes of m001, dropped with their tables; runs_kind counts runs by kind without
    # reading the table (queries filter on +kind, so it never replaces the selective ones).
    for statement in (
        "CREATE INDEX runs_kind ON runs (kind)",
        "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash)",
        "CREATE INDEX runs_prompt ON runs (system_prompt_hash)",
        "CREATE INDEX runs_scenario ON runs (scenario, model)",
        "CREATE INDEX runs_model_served ON runs (model_served)",
        "CREATE INDEX runs_variant ON runs (variant)",
        "CREATE INDEX runs_started ON runs (started_at)",
        "CREATE INDEX runs_agent_commit ON runs (agent_commit)",
        "CREATE INDEX run_tags_key_value ON run_tags (key, value)",
    ):
        db.execute(statement)


def m004_labels(db: sqlite3.Connection) -> None:
    """Labels of runs by people and outside sources: one row per label, one per criterion answer.

    `current` is 1 for the label each (run, source) stands by: its newest, when no label of
    the run supersedes it. The index keeps it up to date as labels arrive.
    """
    db.execute(
        """
        CREATE TABLE labels (
            label_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            source_name TEXT NOT NULL,
            verdict TEXT,
            diagnosis INTEGER,
            supersedes TEXT,
            created_at TEXT NOT NULL,
            current INTEGER NOT NULL DEFAULT 1,
            label_json TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE label_criteria (
            label_id TEXT NOT NULL REFERENCES labels(label_id) ON DELETE CASCADE,
            criterion TEXT NOT NULL,
            fired INTEGER,
            PRIMARY KEY (label_id, criterion)
        )
        """
    )
    for statement in (
        "CREATE INDEX labels_run ON labels (run_id, source_kind, source_name)",
        "CREATE INDEX labels_source ON labels (source_name, current, verdict)",
        "CREATE INDEX labels_supersedes ON labels (supersedes)",
    ):
        db.execute(statement)


def m005_report_indexes(db: sqlite3.Connection) -> None:
    """Covering indexes for the reports, so that their scans read no wide row.

    A report walks the selected runs and looks up each one's chosen score and its criteria.
    The rows of `runs` (metadata JSON) and `scores` (score JSON) are kilobytes wide; reading
    them for a few short columns was most of a report's time over a large index.

    - runs_model_prompt keeps its name and leading columns (model, system_prompt_hash: the
      `runs --model --prompt-hash` lookup) and gains every column a report groups or filters
      on, so that a report's pass over the runs reads the index alone.
    - scores_chosen holds what a report reads of a score, found by (run, judge).
    - score_criteria becomes a WITHOUT ROWID table keyed by (run, judge, criterion): the
      lookup of a score's criteria reads the table's own b-tree, with `fired` in it.
    """
    db.execute("DROP INDEX runs_model_prompt")
    db.execute(
        "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash, model_served, "
        "started_at, scenario, kind, run_id)"
    )
    db.execute(
        "CREATE INDEX scores_chosen ON scores (run_id, judge_id, verdict, diagnosis, "
        "created_at, kind)"
    )
    db.execute(
        """
        CREATE TABLE score_criteria_m005 (
            run_id TEXT NOT NULL,
            judge_id TEXT NOT NULL,
            criterion TEXT NOT NULL,
            fired INTEGER,
            PRIMARY KEY (run_id, judge_id, criterion)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        "INSERT INTO score_criteria_m005 (run_id, judge_id, criterion, fired) "
        "SELECT run_id, judge_id, criterion, fired FROM score_criteria"
    )
    db.execute("DROP TABLE score_criteria")
    db.execute("ALTER TABLE score_criteria_m005 RENAME TO score_criteria")
    db.execute("CREATE INDEX score_criteria_fired ON score_criteria (criterion, fired, judge_id)")


def m006_label_lookups(db: sqlite3.Connection) -> None:
    """Reading a label source's current labels with their criteria, for agreement over
    100,000 runs, from indexes alone.

    - labels_current holds what agreement reads of a label, in the order it reads them:
      the current labels of one source by run (a label's row holds its JSON, kilobytes
      that a scan would otherwise read for a few short columns).
    - label_criteria becomes a WITHOUT ROWID table keyed by (label_id, criterion), as
      score_criteria did in m005: a label's answers come from the table's own b-tree.
    """
    db.execute(
        "CREATE INDEX labels_current ON labels (current, source_name, run_id, created_at, "
        "label_id, source_kind, verdict)"
    )
    db.execute(
        """
        CREATE TABLE label_criteria_m006 (
            label_id TEXT NOT NULL REFERENCES labels(label_id) ON DELETE CASCADE,
            criterion TEXT NOT NULL,
            fired INTEGER,
            PRIMARY KEY (label_id, criterion)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        "INSERT INTO label_criteria_m006 (label_id, criterion, fired) "
        "SELECT label_id, criterion, fired FROM label_criteria"
    )
    db.execute("DROP TABLE label_criteria")
    db.execute("ALTER TABLE label_criteria_m006 RENAME TO label_criteria")


def m008_runs_started_run_id(db: sqlite3.Connection) -> None:
    """runs_started keeps its name and gains run_id: a page of runs in start order (the
    viewer's runs list, `query_sorted`) is found in the index alone, and a filter's test of
    each run (a score, a label, a tag: by run_id) reads no wide row either.

    Without it a deep page (offset 75,000 of 100,000) read every row before it for its id,
    about 300 ms; with it, 50 ms. It replaces the old index, so writes keep the same count.
    """
    db.execute("DROP INDEX runs_started")
    db.execute("CREATE INDEX runs_started ON runs (started_at, run_id)")


def m009_sort_indexes(db: sqlite3.Connection) -> None:
    """The viewer's sorts (kind, commands run, commands denied) each walk an index of the
    sorted column and run_id, as m008 made for the start time: a page is the index's next
    rows, and a filter's test of each run (a score, a label, a tag: by run_id) reads no wide
    row. runs_kind (kind alone) is replaced, so kind keeps one index.

    Without them a sorted, filtered page read every matching run's row (kilobytes of JSON)
    to sort them: 0.5 to 1 s over 100,000 runs.
    """
    db.execute("DROP INDEX runs_kind")
    db.execute("CREATE INDEX runs_kind ON runs (kind, run_id)")
    db.execute("CREATE INDEX runs_commands_run ON runs (commands_run, run_id)")
    db.execute("CREATE INDEX runs_commands_denied ON runs (commands_denied, run_id)")


def m010_sort_walks(db: sqlite3.Connection) -> None:
    """The sort by scenario walks an index of scenario and run_id, as m009's sorts do, that
    also holds every column a report's pass over the runs reads (as runs_model_prompt does):
    whenever SQLite picks it, for a page or for a report, no wide row is read. runs_scenario
    (scenario, model) stays for the scenario and model filters.

    Without it a page sorted by scenario read each run's wide row for its id, and sorted each
    scenario's runs apart: a filter few runs match (a judge that scored a few of them) took
    200 ms over 100,000 runs; with it, 90 ms.
    """
    db.execute(
        "CREATE INDEX runs_scenario_sort ON runs (scenario, run_id, model, system_prompt_hash, "
        "model_served, started_at, kind)"
    )


def _packed(table: str, match: str) -> str:
    """The criteria rows of `table` (``c``) where `match`, packed as index.py's
    `packed_criteria` packs them: sorted by criterion (byte order, as Python's), NULL for none."""
    return (
        "(SELECT group_concat(criterion || char(31) || coalesce(fired, 'n'), char(30)) "
        f"FROM (SELECT criterion, fired FROM {table} c WHERE {match} ORDER BY criterion))"
    )


def m011_packed_criteria(db: sqlite3.Connection) -> None:
    """Each score's and label's criterion results packed on its own row (criteria_packed),
    in the covering index agreement reads (scores_chosen, labels_current): one index scan
    gives a source's verdicts and criteria, with no lookup of criteria rows per run.

    score_criteria and label_criteria stay (the reports count firings from them); the column
    is added by ALTER TABLE, after the JSON, since it is read from the indexes alone. Over
    100,000 runs the lookups were three quarters of reading a label source (0.17 s of 0.24).
    """
    db.execute("ALTER TABLE scores ADD COLUMN criteria_packed TEXT")
    db.execute(
        "UPDATE scores SET criteria_packed = "
        + _packed("score_criteria", "c.run_id = scores.run_id AND c.judge_id = scores.judge_id")
    )
    db.execute("DROP INDEX scores_chosen")
    db.execute(
        "CREATE INDEX scores_chosen ON scores (run_id, judge_id, verdict, diagnosis, "
        "created_at, kind, criteria_packed)"
    )
    db.execute("ALTER TABLE labels ADD COLUMN criteria_packed TEXT")
    db.execute(
        "UPDATE labels SET criteria_packed = "
        + _packed("label_criteria", "c.label_id = labels.label_id")
    )
    db.execute("DROP INDEX labels_current")
    db.execute(
        "CREATE INDEX labels_current ON labels (current, source_name, run_id, created_at, "
        "label_id, source_kind, verdict, criteria_packed)"
    )


MIGRATIONS: list[Migration] = [
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
