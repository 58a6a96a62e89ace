"""Forward-only migrations of the index: one list for every engine.

Each migration is a function named ``mNNN_what``, registered in order by `@migration`, that
returns its statements in a `Dialect`: the column types come from the dialect's type map
(``{text}``, ``{bigint}``, ``{real}``), a covering index from `Dialect.covering_index`, and
where the engines take different roads to one shape (SQLite rebuilds a table that PostgreSQL
alters in place) the function says so. The engine applies a migration in one transaction
together with the row of ``_migrations`` that records it (`SqlIndex.migrate`).

A released migration is never edited: a change is a new migration. tests/golden holds every
statement the released ones gave, per engine, and the test of this module compares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from agentledger.store.index.dialect import Dialect

__all__ = ["MIGRATIONS", "Migration", "migration"]


class Migration(NamedTuple):
    """One step of the schema: its name (what `_migrations` records) and its statements."""

    name: str
    build: Callable[[Dialect], list[str]]

    def statements(self, dialect: Dialect) -> list[str]:
        """The step's statements in `dialect`, in order."""
        return self.build(dialect)


MIGRATIONS: list[Migration] = []
"""Every migration, in the order they are applied."""


def migration(build: Callable[[Dialect], list[str]]) -> Callable[[Dialect], list[str]]:
    """Register `build` as the next migration, under its function's name."""
    MIGRATIONS.append(Migration(build.__name__, build))
    return build


_RUNS = """
    CREATE TABLE {table} (
        run_id {{text}} PRIMARY KEY,
        scenario {{text}} NOT NULL,
        model {{text}} NOT NULL,
        model_served {{text}},
        provider {{text}},
        system_fingerprint {{text}},
        system_prompt_hash {{text}},
        base_prompt_hash {{text}},
        addon_name {{text}},
        addon_hash {{text}},
        variant {{text}},
        agent_name {{text}},
        agent_commit {{text}},
        agent_dirty INTEGER,
        started_at {{text}},
        ended_at {{text}},
        silent_update_detectable INTEGER NOT NULL,
        backfilled INTEGER NOT NULL,{kind}
        commands_run {{bigint}},
        commands_denied {{bigint}},
        duration_s {{real}},
        tokens_in {{bigint}},
        tokens_out {{bigint}},
        cost_usd {{real}},
        exit_status {{text}},
        sealed_at {{text}} NOT NULL,
        manifest_sha256 {{text}} NOT NULL,
        metadata_json {{text}} NOT NULL,
        summary_json {{text}}
    )
"""
_KIND = "\n        kind {text} NOT NULL DEFAULT 'agent',"
_RUN_TAGS = """
    CREATE TABLE run_tags (
        run_id {text} NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        key {text} NOT NULL,
        value {text} NOT NULL,
        PRIMARY KEY (run_id, key)
    )
"""
_RUN_INDEXES = [
    "CREATE INDEX runs_model_prompt ON runs (model, system_prompt_hash)",
    "CREATE INDEX runs_prompt ON runs (system_prompt_hash)",
    "CREATE INDEX runs_scenario ON runs (scenario, model)",
    "CREATE INDEX runs_model_served ON runs (model_served)",
    "CREATE INDEX runs_variant ON runs (variant)",
    "CREATE INDEX runs_started ON runs (started_at)",
    "CREATE INDEX runs_agent_commit ON runs (agent_commit)",
    "CREATE INDEX run_tags_key_value ON run_tags (key, value)",
]


@migration
def m001_runs(d: Dialect) -> list[str]:
    """Sealed runs, one row each, and their tags."""
    return [d.ddl(_RUNS.format(table="runs", kind="")), d.ddl(_RUN_TAGS), *_RUN_INDEXES]


_SCORE_CRITERIA = """
    CREATE TABLE {table} (
        run_id {{text}} NOT NULL,
        judge_id {{text}} NOT NULL,
        criterion {{text}} NOT NULL,
        fired INTEGER,
        PRIMARY KEY (run_id, judge_id, criterion)
    ){clustered}
"""


@migration
def m002_scores(d: Dialect) -> list[str]:
    """Judges' scores: one row per (run, judge id), and one per criterion result."""
    scores = """
        CREATE TABLE scores (
            run_id {text} NOT NULL,
            judge_id {text} NOT NULL,
            kind {text} NOT NULL,
            model {text},
            pack {text} NOT NULL,
            verdict {text} NOT NULL,
            diagnosis INTEGER,
            skipped_reason {text},
            created_at {text} NOT NULL,
            score_json {text} NOT NULL,
            PRIMARY KEY (run_id, judge_id)
        )
    """
    return [
        d.ddl(scores),
        d.ddl(_SCORE_CRITERIA.format(table="score_criteria", clustered="")),
        "CREATE INDEX scores_judge_verdict ON scores (judge_id, verdict)",
        "CREATE INDEX scores_verdict ON scores (verdict)",
        "CREATE INDEX score_criteria_fired ON score_criteria (criterion, fired, judge_id)",
    ]


_M003_COLUMNS = (
    "run_id, scenario, model, model_served, provider, system_fingerprint, system_prompt_hash, "
    "base_prompt_hash, addon_name, addon_hash, variant, agent_name, agent_commit, agent_dirty, "
    "started_at, ended_at, silent_update_detectable, backfilled, commands_run, commands_denied, "
    "duration_s, tokens_in, tokens_out, cost_usd, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json"
)


@migration
def m003_run_kinds(d: Dialect) -> list[str]:
    """What each run is (agent, fixture, sentinel, variant). Runs indexed before kinds existed
    are agent runs, except those the fixtures runner recorded (its name is in their source).

    PostgreSQL adds the column in place. SQLite rebuilds the table rather than altering it: a
    column added by ALTER TABLE goes after the JSON columns, and every query filtering on it
    would read each row's overflow pages; run_tags is rebuilt around it (dropping `runs` would
    cascade to its rows), and the indexes of m001, dropped with their tables, made again.
    """
    fixture = f"{d.json_text('metadata_json', 'source', 'runner')} = 'agentledger fixtures'"
    if not d.plan_hints:
        return [
            d.ddl("ALTER TABLE runs ADD COLUMN kind {text} NOT NULL DEFAULT 'agent'"),
            f"UPDATE runs SET kind = 'fixture' WHERE {fixture}",
            "CREATE INDEX runs_kind ON runs (kind)",
        ]
    # runs_kind counts runs by kind without reading the table (queries filter on +kind, so it
    # never replaces the selective ones).
    return [
        d.ddl(_RUNS.format(table="runs_m003", kind=_KIND)),
        f"INSERT INTO runs_m003 ({_M003_COLUMNS}, kind) SELECT {_M003_COLUMNS}, "
        f"CASE WHEN {fixture} THEN 'fixture' ELSE 'agent' END FROM runs",
        "CREATE TABLE run_tags_m003 AS SELECT run_id, key, value FROM run_tags",
        "DROP TABLE run_tags",
        "DROP TABLE runs",
        "ALTER TABLE runs_m003 RENAME TO runs",
        d.ddl(_RUN_TAGS),
        "INSERT INTO run_tags (run_id, key, value) SELECT * FROM run_tags_m003",
        "DROP TABLE run_tags_m003",
        "CREATE INDEX runs_kind ON runs (kind)",
        *_RUN_INDEXES,
    ]


_LABEL_CRITERIA = """
    CREATE TABLE {table} (
        label_id {{text}} NOT NULL REFERENCES labels(label_id) ON DELETE CASCADE,
        criterion {{text}} NOT NULL,
        fired INTEGER,
        PRIMARY KEY (label_id, criterion)
    ){clustered}
"""


@migration
def m004_labels(d: Dialect) -> list[str]:
    """Labels of runs by people and outside sources: one row per label, one per criterion answer.

    `current` is 1 for the label each (run, source) stands by: its newest, when no label of
    the run supersedes it. The index keeps it up to date as labels arrive.
    """
    labels = """
        CREATE TABLE labels (
            label_id {text} PRIMARY KEY,
            run_id {text} NOT NULL,
            source_kind {text} NOT NULL,
            source_name {text} NOT NULL,
            verdict {text},
            diagnosis INTEGER,
            supersedes {text},
            created_at {text} NOT NULL,
            current INTEGER NOT NULL DEFAULT 1,
            label_json {text} NOT NULL
        )
    """
    return [
        d.ddl(labels),
        d.ddl(_LABEL_CRITERIA.format(table="label_criteria", clustered="")),
        "CREATE INDEX labels_run ON labels (run_id, source_kind, source_name)",
        "CREATE INDEX labels_source ON labels (source_name, current, verdict)",
        "CREATE INDEX labels_supersedes ON labels (supersedes)",
    ]


def _clustered(d: Dialect, table: str, step: str, create: str, columns: str) -> list[str]:
    """SQLite: `table` rebuilt as a WITHOUT ROWID table keyed by its primary key (a lookup
    reads the table's own b-tree, every column in it). PostgreSQL's primary key index already
    serves such a lookup: nothing to do."""
    if not d.plan_hints:
        return []
    temporary = f"{table}_{step}"
    return [
        d.ddl(create.format(table=temporary, clustered=" WITHOUT ROWID")),
        f"INSERT INTO {temporary} ({columns}) SELECT {columns} FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {temporary} RENAME TO {table}",
    ]


@migration
def m005_report_indexes(d: Dialect) -> list[str]:
    """Covering indexes for the reports, so that their scans read no wide row.

    A report walks the selected runs and looks up each one's chosen score and its criteria.
    The rows of `runs` (metadata JSON) and `scores` (score JSON) are kilobytes wide; reading
    them for a few short columns was most of a report's time over a large index.

    - runs_model_prompt keeps its name and leading columns (model, system_prompt_hash: the
      `runs --model --prompt-hash` lookup) and carries every column a report groups or filters
      on, so that a report's pass over the runs reads the index alone.
    - scores_chosen holds what a report reads of a score, found by (run, judge).
    - score_criteria is keyed by (run, judge, criterion) with `fired` in its own b-tree.
    """
    clustered = _clustered(
        d, "score_criteria", "m005", _SCORE_CRITERIA, "run_id, judge_id, criterion, fired"
    )
    return [
        "DROP INDEX runs_model_prompt",
        d.covering_index(
            "runs_model_prompt",
            "runs",
            ["model", "system_prompt_hash"],
            ["model_served", "started_at", "scenario", "kind", "run_id"],
        ),
        d.covering_index(
            "scores_chosen",
            "scores",
            ["run_id", "judge_id"],
            ["verdict", "diagnosis", "created_at", "kind"],
        ),
        *clustered,
        *(
            ["CREATE INDEX score_criteria_fired ON score_criteria (criterion, fired, judge_id)"]
            if clustered
            else []
        ),
    ]


@migration
def m006_label_lookups(d: Dialect) -> list[str]:
    """Reading a label source's current labels with their criteria, for agreement over
    100,000 runs, from indexes alone: labels_current holds what agreement reads of a label,
    in the order it reads them (a label's row holds its JSON, kilobytes a scan would read for
    a few short columns), and label_criteria is keyed by (label_id, criterion) as
    score_criteria was in m005."""
    return [
        d.covering_index(
            "labels_current",
            "labels",
            ["current", "source_name", "run_id", "created_at", "label_id"],
            ["source_kind", "verdict"],
        ),
        *_clustered(d, "label_criteria", "m006", _LABEL_CRITERIA, "label_id, criterion, fired"),
    ]


@migration
def m008_runs_started_run_id(d: Dialect) -> list[str]:
    """runs_started keeps its name and gains run_id: a page of runs in start order (the
    viewer's runs list, `query_sorted`) is found in the index alone, and a filter's test of
    each run (a score, a label, a tag: by run_id) reads no wide row either.

    Without it a deep page (offset 75,000 of 100,000) read every row before it for its id,
    about 300 ms; with it, 50 ms. It replaces the old index, so writes keep the same count.
    """
    return ["DROP INDEX runs_started", "CREATE INDEX runs_started ON runs (started_at, run_id)"]


@migration
def m009_sort_indexes(d: Dialect) -> list[str]:
    """The viewer's sorts (kind, commands run, commands denied) each walk an index of the
    sorted column and run_id, as m008 made for the start time: a page is the index's next
    rows, and a filter's test of each run reads no wide row. runs_kind (kind alone) is
    replaced, so kind keeps one index. Without them a sorted, filtered page read every
    matching run's row (kilobytes of JSON) to sort them: 0.5 to 1 s over 100,000 runs.
    """
    return [
        "DROP INDEX runs_kind",
        "CREATE INDEX runs_kind ON runs (kind, run_id)",
        "CREATE INDEX runs_commands_run ON runs (commands_run, run_id)",
        "CREATE INDEX runs_commands_denied ON runs (commands_denied, run_id)",
    ]


@migration
def m010_sort_walks(d: Dialect) -> list[str]:
    """The sort by scenario walks an index of scenario and run_id, as m009's sorts do, that
    also carries every column a report's pass over the runs reads (as runs_model_prompt
    does): for a page or for a report, no wide row is read (a filter few runs match, sorted
    by scenario: 200 ms over 100,000 runs before, 90 ms after).

    PostgreSQL's own: a descending sort of a column that can be NULL (start time, commands
    run, commands denied) puts the runs without a value last, an order no index of the column
    gives (walked backwards, it puts NULL first), so the newest-first runs page sorted all
    100,000 runs (120 ms) before these. (SQLite sorts NULL first: backwards, last.)
    """
    scenario_sort = d.covering_index(
        "runs_scenario_sort",
        "runs",
        ["scenario", "run_id"],
        ["model", "system_prompt_hash", "model_served", "started_at", "kind"],
    )
    if d.plan_hints:
        return [scenario_sort]
    return [
        scenario_sort,
        "CREATE INDEX runs_started_desc ON runs (started_at DESC NULLS LAST, run_id DESC)",
        "CREATE INDEX runs_commands_run_desc ON runs (commands_run DESC NULLS LAST, run_id DESC)",
        "CREATE INDEX runs_commands_denied_desc ON runs "
        "(commands_denied DESC NULLS LAST, run_id DESC)",
    ]


def _packed(d: Dialect, table: str, match: str) -> str:
    """The criteria rows of `table` (``c``) where `match`, packed as rows.py's
    `packed_criteria` packs them: sorted by criterion (byte order, as Python's), NULL for none."""
    if d.plan_hints:
        return (
            "(SELECT group_concat(criterion || char(31) || coalesce(fired, 'n'), char(30)) "
            f"FROM (SELECT criterion, fired FROM {table} c WHERE {match} ORDER BY criterion))"
        )
    return (
        "(SELECT string_agg(c.criterion || chr(31) || coalesce(c.fired::text, 'n'), chr(30) "
        f"ORDER BY c.criterion) FROM {table} c WHERE {match})"
    )


@migration
def m011_packed_criteria(d: Dialect) -> list[str]:
    """Each score's and label's criterion results packed on its own row (criteria_packed):
    agreement reads a source's verdicts and criteria with no lookup of criteria rows per run
    (over 100,000 runs the lookups were three quarters of reading a label source). The
    criteria tables stay (the reports count firings from them).

    SQLite carries the column in the covering indexes agreement reads (scores_chosen,
    labels_current). PostgreSQL does not: an index entry holds at most about 2.7 kB, and a
    pack with many long criterion ids would make its scores' writes fail outright.
    """
    scores = [
        d.ddl("ALTER TABLE scores ADD COLUMN criteria_packed {text}"),
        "UPDATE scores SET criteria_packed = "
        + _packed(d, "score_criteria", "c.run_id = scores.run_id AND c.judge_id = scores.judge_id"),
    ]
    labels = [
        d.ddl("ALTER TABLE labels ADD COLUMN criteria_packed {text}"),
        "UPDATE labels SET criteria_packed = "
        + _packed(d, "label_criteria", "c.label_id = labels.label_id"),
    ]
    if not d.plan_hints:
        return [*scores, *labels]
    return [
        *scores,
        "DROP INDEX scores_chosen",
        "CREATE INDEX scores_chosen ON scores (run_id, judge_id, verdict, diagnosis, "
        "created_at, kind, criteria_packed)",
        *labels,
        "DROP INDEX labels_current",
        "CREATE INDEX labels_current ON labels (current, source_name, run_id, created_at, "
        "label_id, source_kind, verdict, criteria_packed)",
    ]


@migration
def m012_decisions(d: Dialect) -> list[str]:
    """Gate decisions, one row each, and the runs each one read: a suite's history and the
    decisions that read a run are one lookup, where reading them meant every decision file."""
    decisions = """
        CREATE TABLE decisions (
            decision_id {text} PRIMARY KEY,
            kind {text} NOT NULL,
            subject {text} NOT NULL,
            outcome {text} NOT NULL,
            supersedes {text},
            created_at {text} NOT NULL,
            decision_json {text} NOT NULL
        )
    """
    decision_runs = """
        CREATE TABLE decision_runs (
            decision_id {text} NOT NULL REFERENCES decisions(decision_id) ON DELETE CASCADE,
            run_id {text} NOT NULL,
            PRIMARY KEY (decision_id, run_id)
        )
    """
    return [
        d.ddl(decisions),
        d.ddl(decision_runs),
        "CREATE INDEX decisions_subject ON decisions (kind, subject, created_at)",
        "CREATE INDEX decision_runs_run ON decision_runs (run_id)",
    ]


@migration
def m013_label_order(d: Dialect) -> list[str]:
    """Each label's position in the journal: a source's newest label is the one the ledger
    accepted last, whatever time its file gives (a label dated 2099 is superseded by a later
    one all the same)."""
    return [d.ddl("ALTER TABLE labels ADD COLUMN accepted_seq {bigint}")]


@migration
def m014_outcomes(d: Dialect) -> list[str]:
    """Measured outcomes of lab runs, one row each, with the four measurements in columns: a
    run's newest outcome (what reports, the viewer and the `outcome:` predicate read) is one
    lookup of outcomes_run, where reading it meant listing and reading every file under
    outcomes/ (one request per outcome on S3)."""
    outcomes = """
        CREATE TABLE outcomes (
            outcome_id {text} PRIMARY KEY,
            run_id {text} NOT NULL,
            scenario {text} NOT NULL,
            created_at {text} NOT NULL,
            fixed INTEGER,
            durable INTEGER,
            collateral INTEGER,
            verified INTEGER,
            outcome_json {text} NOT NULL
        )
    """
    return [
        d.ddl(outcomes),
        "CREATE INDEX outcomes_run ON outcomes (run_id, created_at, outcome_id)",
    ]


@migration
def m015_record_order(d: Dialect) -> list[str]:
    """Each score's, decision's and outcome's position in the journal, as labels have had
    since m013: the newest record of a kind is the one the ledger accepted last, whatever time
    its file gives (a score dated 2099 is superseded by a later real one all the same). Rows
    indexed before have none and rank first, by time, until a reindex fills it in."""
    columns = [
        d.ddl(f"ALTER TABLE {table} ADD COLUMN accepted_seq {{bigint}}")
        for table in ("scores", "decisions", "outcomes")
    ]
    outcomes = [
        "DROP INDEX outcomes_run",
        "CREATE INDEX outcomes_run ON outcomes (run_id, accepted_seq, created_at, outcome_id)",
    ]
    if not d.plan_hints:
        return [*columns, *outcomes]
    return [
        *columns,
        *outcomes,
        "DROP INDEX scores_chosen",
        "CREATE INDEX scores_chosen ON scores (run_id, judge_id, verdict, diagnosis, "
        "accepted_seq, created_at, kind, criteria_packed)",
    ]
