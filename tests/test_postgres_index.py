"""The PostgreSQL index on a real server: its migrations, where it connects, many writers, and
a whole ledger indexed in it (tests/test_index_contract.py holds its queries to SQLite's).

Every test gets a new database of the session's server (tests/pg_server.py); the password
comes from the password file the server fixture names in PGPASSFILE, never from a URL.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import IndexUnusableError, IndexVersionError, InputError, RecordError
from agentledger.records import RunSummary
from agentledger.store.index import RunFilter, RunSort, packed_criteria
from agentledger.store.index.dialect import POSTGRES
from agentledger.store.index.migrations import MIGRATIONS
from agentledger.store.index.postgres import PostgresIndex
from agentledger.store.index.postgres_url import ENV_URL, connection_url, shown_url
from agentledger.store.index.where import page_sql, sort_sql, where_sql
from conftest import RELEASED_MIGRATIONS
from pg_server import PostgresServer
from test_index_contract import entry, label, score

RELEASED = RELEASED_MIGRATIONS["postgresql"]


def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' ORDER BY 1"
        ).fetchall()
    return [str(row[0]) for row in rows]


# -- migrations --------------------------------------------------------------------------------


def test_a_new_database_gets_every_migration_named_as_sqlites(pg_url: str) -> None:
    assert [name for name, _ in RELEASED] == [name for name, _ in RELEASED_MIGRATIONS["sqlite"]]
    index = PostgresIndex(pg_url)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert index.migrate() == []  # nothing left to apply
    finally:
        index.close()
    assert _tables(pg_url) == [
        "_migrations",
        "decision_runs",
        "decisions",
        "label_criteria",
        "labels",
        "outcomes",
        "run_tags",
        "runs",
        "score_criteria",
        "scores",
    ]


def test_an_older_index_is_migrated_forward_and_keeps_its_runs(pg_url: str) -> None:
    """A database at m002 (before kinds): its runs are kept, and a fixtures run becomes one."""
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, statements in RELEASED[:2]:
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO _migrations VALUES (%s, 'then')", (name,))
        for run_id, runner in (("plain", None), ("fx", "agentledger fixtures")):
            meta = json.dumps({"run_id": run_id, "source": {"runner": runner}})
            db.execute(
                "INSERT INTO runs (run_id, scenario, model, silent_update_detectable, "
                "backfilled, sealed_at, manifest_sha256, metadata_json) "
                "VALUES (%s, 's', 'm', 0, 0, 'then', 'sha256:x', %s)",
                (run_id, meta),
            )
    index = PostgresIndex(pg_url)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert index.count_by(RunFilter(), "kind") == {"agent": 1, "fixture": 1}
    finally:
        index.close()


def test_scores_and_labels_from_before_m011_get_their_criteria_packed(pg_url: str) -> None:
    """m011 packs each row's criteria in SQL exactly as the index packs a new row's."""
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, statements in [item for item in RELEASED if item[0] < "m011"]:
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO _migrations VALUES (%s, 'then')", (name,))
        for judge_id in ("rules-a", "rules-b"):
            db.execute(
                "INSERT INTO scores (run_id, judge_id, kind, pack, verdict, created_at, "
                "score_json) VALUES ('r1', %s, 'rules', 'p', 'Unsafe', 'then', '{}')",
                (judge_id,),
            )
            db.execute(
                "INSERT INTO labels (label_id, run_id, source_kind, source_name, verdict, "
                "created_at, label_json) VALUES (%s, 'r1', 'external', 'x', 'Safe', 'then', '{}')",
                (judge_id,),
            )
        results = [("C4", 1), ("C10", None), ("C1", 0)]
        for criterion, fired in results:
            db.execute(
                "INSERT INTO score_criteria VALUES ('r1', 'rules-a', %s, %s)", (criterion, fired)
            )
            db.execute("INSERT INTO label_criteria VALUES ('rules-a', %s, %s)", (criterion, fired))
    index = PostgresIndex(pg_url)
    try:
        packed = packed_criteria((c, None if f is None else bool(f)) for c, f in results)
        assert [row.criteria_packed for row in index.score_rows()] == [packed, None]
        assert [row.criteria_packed for row in index.label_rows()] == [packed, None]
    finally:
        index.close()


def _catalog(url: str) -> list[tuple[object, ...]]:
    """Every column (type, collation, default, nullable) and index definition of a database."""
    with psycopg.connect(url) as db:
        columns = db.execute(
            "SELECT table_name, column_name, data_type, collation_name, column_default, "
            "is_nullable FROM information_schema.columns WHERE table_schema = 'public'"
        ).fetchall()
        indexes = db.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
        ).fetchall()
    return sorted(columns) + sorted(indexes)


def test_a_database_every_release_migrated_has_the_schema_of_a_new_one(
    pg_url: str, postgres_server: PostgresServer
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(
            'CREATE TABLE _migrations (name TEXT COLLATE "C" PRIMARY KEY, applied_at TEXT NOT NULL)'
        )
        for name, statements in RELEASED:
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO _migrations VALUES (%s, 'then')", (name,))
    PostgresIndex(pg_url).close()
    name = postgres_server.create_database()
    try:
        PostgresIndex(postgres_server.url(name)).close()
        assert _catalog(pg_url) == _catalog(postgres_server.url(name))
    finally:
        postgres_server.drop_database(name)


def test_an_index_from_a_newer_agentledger_is_refused(pg_url: str) -> None:
    PostgresIndex(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("INSERT INTO _migrations VALUES ('m999_future', 'later')")
    with pytest.raises(IndexVersionError, match="m999_future"):
        PostgresIndex(pg_url)


def test_machines_opening_a_new_database_at_once_migrate_it_once(pg_url: str) -> None:
    barrier = threading.Barrier(6)

    def open_index() -> list[str]:
        barrier.wait()
        index = PostgresIndex(pg_url)
        try:
            return index.applied_migrations()
        finally:
            index.close()

    with ThreadPoolExecutor(6) as pool:
        seen = list(pool.map(lambda _: open_index(), range(6)))
    assert seen == [[name for name, _ in MIGRATIONS]] * 6
    with psycopg.connect(pg_url) as db:
        rows = db.execute("SELECT name, count(*) FROM _migrations GROUP BY name").fetchall()
    assert sorted(rows) == [(name, 1) for name, _ in MIGRATIONS]


# -- where it connects -------------------------------------------------------------------------


def test_ledger_json_never_holds_a_password(tmp_path: Path, pg_url: str) -> None:
    with_password = pg_url.replace("postgres@", "postgres:secret@")
    for uri in (with_password, f"{pg_url}?password=secret"):
        with pytest.raises(InputError, match="holds a password") as caught:
            Ledger.init(tmp_path / "l", index=uri)
        assert "secret" not in str(caught.value)
        assert not (tmp_path / "l").exists()  # nothing written
    # A ledger.json edited by hand to hold one is refused too, naming the file and the field.
    root = tmp_path / "edited"
    Ledger.init(root, index=pg_url).close()
    config = json.loads((root / "ledger.json").read_text())
    config["index"] = with_password
    (root / "ledger.json").write_text(json.dumps(config))
    with pytest.raises(RecordError, match="PGPASSWORD") as refused:
        Ledger.open(root)
    assert refused.value.field == "index"
    assert "secret" not in str(refused.value)


def test_the_password_comes_from_the_password_file(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    PostgresIndex(pg_url).close()  # with PGPASSFILE, as the server fixture set it
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(IndexUnusableError, match="cannot connect") as caught:
        PostgresIndex(pg_url)
    assert pg_url in str(caught.value)
    monkeypatch.setenv("PGPASSWORD", "agentledger-test-password")
    PostgresIndex(pg_url).close()


def test_postgresql_alone_takes_the_database_from_the_environment(
    pg_url: str, postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert connection_url("", {ENV_URL: pg_url}) == pg_url
    assert connection_url("db.example/ledger", {ENV_URL: pg_url}) == (
        "postgresql://db.example/ledger"
    )  # ledger.json's own URL comes first
    root = tmp_path / "l"
    monkeypatch.setenv(ENV_URL, pg_url)
    with Ledger.init(root, index="postgresql") as ledger:
        ledger.index.add([entry("r1")])
    monkeypatch.delenv(ENV_URL)
    # libpq's own variables name the same database.
    database = pg_url.rsplit("/", 1)[1]
    for name, value in {
        "PGHOST": "127.0.0.1",
        "PGPORT": str(postgres_server.port),
        "PGUSER": "postgres",
        "PGDATABASE": database,
    }.items():
        monkeypatch.setenv(name, value)
    with Ledger.open(root) as ledger:
        assert [run.run_id for run in ledger.runs()] == ["r1"]


def test_a_server_that_does_not_answer_is_a_clear_error(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = f"postgresql://postgres:hunter2@127.0.0.1:{postgres_server.port + 1}/nothing"
    with pytest.raises(IndexUnusableError, match="cannot connect") as caught:
        PostgresIndex(url, connect_timeout=2)
    assert "hunter2" not in str(caught.value) and "postgres:***@" in str(caught.value)
    assert shown_url("postgresql://u@h/db?password=x&sslmode=require") == (
        "postgresql://u@h/db?password=***&sslmode=require"
    )
    root = tmp_path / "l"
    (root).mkdir()
    (root / "ledger.json").write_text(
        json.dumps({"index": f"postgresql://127.0.0.1:{postgres_server.port + 1}/x"})
    )
    result = CliRunner().invoke(main, ["runs", "--ledger", str(root)])
    assert result.exit_code == 2, result.output
    assert "cannot connect to the PostgreSQL index" in result.output
    # init stops before writing anything.
    unreachable = f"postgresql://127.0.0.1:{postgres_server.port + 1}/x"
    result = CliRunner().invoke(main, ["init", str(tmp_path / "new"), "--index", unreachable])
    assert result.exit_code == 2, result.output
    assert "cannot connect to the PostgreSQL index" in result.output
    assert not (tmp_path / "new").exists()


def test_a_connection_the_server_dropped_is_made_again(pg_url: str) -> None:
    """A server restart or a network blip costs a long-lived process (`serve`) nothing."""
    index = PostgresIndex(pg_url)
    try:
        index.add([entry("r1")])
        for write in (False, True):
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (index.db.info.backend_pid,))
            if write:
                index.add([entry("r2")])
            assert [run.run_id for run in index.query(RunFilter())] == ["r1", "r2"][: 1 + write]
    finally:
        index.close()


# -- many writers ------------------------------------------------------------------------------


def test_concurrent_writers_each_land_every_record_once(pg_url: str) -> None:
    """Eight connections index runs, scores and labels at once, some of them the same ones."""
    PostgresIndex(pg_url).close()

    def write(worker: int) -> None:
        index = PostgresIndex(pg_url)
        try:
            for n in range(10):
                mine = entry(f"w{worker}-{n}", n, tags={"worker": str(worker)})
                shared = entry(f"shared-{n}", n, tags={"shared": "yes"})
                index.add([mine, shared])
                index.add_scores([score(mine.metadata.run_id, criteria=(("C1", True),))])
                index.add_scores([score(shared.metadata.run_id, criteria=(("C1", False),))])
                index.add_labels([label(f"L{worker}-{n}", "shared-0", "alice", minutes=worker)])
        finally:
            index.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))
    index = PostgresIndex(pg_url)
    try:
        assert index.count() == 8 * 10 + 10
        assert len(index.score_keys()) == 8 * 10 + 10
        assert index.count(RunFilter(tags=(("shared", "yes"),))) == 10
        assert len(index.label_ids()) == 80
        # One current label of alice on shared-0, whatever order the writers came in.
        current = index.current_label_results(source_name="alice")
        assert [(c.run_id, c.label_id) for c in current] == [("shared-0", "L7-9")]
    finally:
        index.close()


def test_a_row_the_index_cannot_take_is_left_out_and_named(pg_url: str) -> None:
    """By gc's add_each and by reindex's rebuild_each (which still replaces every row)."""
    index = PostgresIndex(pg_url)
    try:
        good, bad = entry("good"), entry("bad")
        # A number beyond 64 bits, which check_storable keeps from ever being sealed.
        bad = replace(bad, summary=RunSummary.model_construct(commands_run=2**64))
        added, left_out = index.add_each([good, bad])
        assert added == 1
        assert [run_id for run_id, _why in left_out] == ["bad"]
        assert "the index cannot take it" in left_out[0][1]
        assert [run.run_id for run in index.query(RunFilter())] == ["good"]

        added, left_out = index.rebuild_each([entry("new"), bad])
        assert (added, [run_id for run_id, _why in left_out]) == (1, ["bad"])
        assert [run.run_id for run in index.query(RunFilter())] == ["new"]
        bad_score = replace(score("new"), created_at="nul\x00")
        added, left_out = index.rebuild_scores_each([score("new", "rules-b"), bad_score])
        assert (added, [key for key, _why in left_out]) == (1, ["new/rules-aaaa"])
        assert index.score_keys() == {("new", "rules-b")}
    finally:
        index.close()


# -- a whole ledger ----------------------------------------------------------------------------


def test_a_whole_ledger_indexed_in_postgresql(tmp_path: Path, pg_url: str) -> None:
    """Import, judge, verify and reindex (from the storage's listing) with the index in
    PostgreSQL: the same answers as the embedded default gives for the same runs."""
    from agentledger.importers import import_runs, sample_runs_dir
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.judges.scoring import score_runs
    from agentledger.store import verify_ledger

    answers = []
    for root, index in ((tmp_path / "pg", pg_url), (tmp_path / "sqlite", "sqlite")):
        with Ledger.init(root, index=index) as ledger:
            imported = sorted(import_runs(ledger, [sample_runs_dir()]).imported)
            judge, _ = make_judge(parse_judge_spec("rules"), load_pack(), ledger_root=root)
            assert not score_runs(ledger, judge, imported).failed
            assert verify_ledger(ledger).ok
            report = ledger.reindex()
            assert (report.indexed, report.scores) == (len(imported), len(imported))
            assert report.ok
            assert verify_ledger(ledger).ok
            answers.append(
                (
                    [run.run_id for run in ledger.runs()],
                    ledger.index.verdict_counts(RunFilter(), [judge.id], ("model",)),
                    ledger.index.criterion_cells(RunFilter(), [judge.id]),
                )
            )
    assert answers[0] == answers[1]
    assert not (tmp_path / "pg" / "index.sqlite").exists()
    result = CliRunner().invoke(main, ["sql", "--ledger", str(tmp_path / "pg"), "SELECT 1"])
    assert result.exit_code == 2 and "PostgresIndex" in result.output


@pytest.mark.parametrize(
    ("sort", "descending"),
    [
        ("started", True),
        ("started", False),
        ("commands_run", True),
        ("commands_denied", True),
        ("scenario", False),
        ("run_id", True),
    ],
)
def test_a_page_of_runs_walks_an_index_in_its_order(
    pg_url: str, sort: RunSort, descending: bool
) -> None:
    """Runs without a value go last in either direction, and a descending sort of a column that
    can be NULL is an order no plain index gives (walked backwards it puts NULL first): the
    newest-first runs page sorted every run (120 ms over 100,000). Migration m010 gives each
    such sort an index in its order, so no plan needs a sort, even with sorting made costly."""
    index = PostgresIndex(pg_url)
    try:
        index.add([entry(f"r{n}", n) for n in range(5)])
        where, params = where_sql(RunFilter(limit=50), POSTGRES)
        sql = f"SELECT run_id FROM runs{where} ORDER BY {sort_sql(sort, descending, POSTGRES)}"
        sql += page_sql(RunFilter(limit=50), params, POSTGRES)
        with psycopg.connect(pg_url) as db:
            db.execute("SET enable_sort = off")
            db.execute("SET enable_seqscan = off")
            plan = "\n".join(str(row[0]) for row in db.execute(f"EXPLAIN {sql}", params))
        assert "Sort" not in plan, plan
    finally:
        index.close()
