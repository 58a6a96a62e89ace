"""psql is a network reader in investigate mode (issue 33): a query the classifier reads as
read-only reaches a remote PostgreSQL over TCP from inside the sandbox, in one transaction made
read-only first, so that a write hidden where the classifier cannot see (a view calling a
function) fails on the server. Shown with real processes: bubblewrap, psql, and the test
server of tests/pg_server.py reached over 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.netreaders import network_grant
from agentledger.runner.shell_gate.reader_checks import PSQL_READ_ONLY
from jail_helpers import need_bwrap
from pg_server import SUPERUSER, PostgresServer

GRANTED = [
    "psql -h db.example.com -U app -d shop -At -c 'select count(*) from orders'",
    "psql -h 10.0.0.5 -p 5432 -c 'SELECT pid, state FROM pg_stat_activity'",
    "psql -h db -c 'select 1' | grep 1",
    "psql -h db -c \"select '10:00'::time\"",
    "psql -h db -X -A -t --csv -d shop -c 'SELECT count(*) FROM invoices WHERE paid'",
    "psql -h db -c '\\dt'",
    "psql -h db -c '\\d+ users'",
]
REFUSED = {
    "psql -h db -c 'COMMIT; SELECT 1'": "queries alone",
    "psql -h db -c 'BEGIN READ WRITE; SELECT 1'": "queries alone",
    "psql -h db -c 'SET search_path TO x; SELECT 1'": "queries alone",
    "psql -h db -c 'select :v'": "variable",
    "psql -h db -c \"select :'v'\"": "variable",
    "psql -h db -c '\\! ls'": "backslash",
    "psql -h db -c '\\dt' -c '\\o /tmp/x'": "backslash",
    "psql -h db -c 'select 1 \\gexec'": "backslash",
    "psql 'host=db options=-csearch_path=evil' -c 'select 1'": "connection strings",
    "psql -h db -d 'dbname=x sslkey=/tmp/k' -c 'select 1'": "-d",
    "psql postgresql://db/x -c 'select 1'": "connection strings",
    "psql -h db -f q.sql": "-f",
    "psql -h db": "-c TEXT",
    "psql -h db -c 'select 1' -o /tmp/x": "-o",
    "psql -h db -v x=1 -c 'select 1'": "-v",
    "psql -h db -P pager=on -c 'select 1'": "-P",
    "psql -h db --comm='select 1'": "--comm",
    "psql -h /var/run/postgresql -c 'select 1'": "-h",
    "psql -h db -c 'select u.evil from users u'": "queries alone",
    "psql -h db -c 'select lo_import(1)'": "queries alone",
}


@pytest.mark.parametrize("line", GRANTED)
def test_read_only_queries_get_the_network_in_one_read_only_transaction(line: str) -> None:
    grant = network_grant(line, 0)
    assert not isinstance(grant, str) and grant is not None, grant
    assert grant.argv[:6] == ["psql", "-X", "-q", "-1", "-c", PSQL_READ_ONLY]
    assert grant.host_network and grant.capabilities == ()


@pytest.mark.parametrize(("line", "named"), REFUSED.items())
def test_anything_else_psql_is_given_is_refused_with_the_reason(line: str, named: str) -> None:
    grant = network_grant(line, 0)
    assert isinstance(grant, str) and named in grant, grant
    assert Gate(None, None).decide(line).decision == "denied"


@pytest.fixture
def shop(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[str]:
    """A database with a table, and a view that deletes its rows when read."""
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    name = postgres_server.create_database()
    # The password file, where the sandboxed psql (no capability: not CAP_DAC_OVERRIDE) can
    # read it: the server's own directory belongs to its user.
    passfile = tmp_path / "pgpass"
    shutil.copyfile(postgres_server.passfile, passfile)
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    import psycopg

    with psycopg.connect(postgres_server.url(name), autocommit=True) as db:
        db.execute("CREATE TABLE items (id int)")
        db.execute("INSERT INTO items VALUES (1), (2), (3)")
        db.execute(
            "CREATE FUNCTION wipe() RETURNS int LANGUAGE sql AS 'DELETE FROM items RETURNING 0'"
        )
        db.execute("CREATE VIEW innocent AS SELECT wipe() AS n")
    yield f"psql -h 127.0.0.1 -p {postgres_server.port} -U {SUPERUSER} -d {name} -w -At"
    postgres_server.drop_database(name)


def test_psql_reaches_a_remote_server_from_the_sandbox_and_cannot_write(shop: str) -> None:
    need_bwrap()
    gate = Gate(None, None)  # investigate mode, as an agent's shell has it
    read = gate.run(f"{shop} -c 'SELECT count(*) FROM items'")
    assert (read.exit_code, read.output.strip()) == (0, "3"), (read.reason, read.stderr)
    assert read.event.get("network") == "psql"
    # The classifier sees a read of a view; the server runs the view's DELETE, and the
    # read-only transaction refuses it.
    hidden = gate.run(f"{shop} -c 'SELECT n FROM innocent'")
    said = hidden.stderr.decode("utf-8", "replace")
    assert hidden.exit_code != 0 and "read-only transaction" in said, (hidden.reason, said)
    assert gate.run(f"{shop} -c 'SELECT count(*) FROM items'").output.strip() == "3"
    refused = gate.run(f"{shop} -c 'DELETE FROM items'")
    assert refused.denied and not refused.ran


def test_other_commands_in_the_sandbox_still_reach_no_server(shop: str) -> None:
    need_bwrap()
    port = shop.split(" -p ", 1)[1].split()[0]
    result = Gate(None, None).run(f"cat < /dev/tcp/127.0.0.1/{port}")
    assert result.exit_code != 0


def test_copy_to_standard_output_reads_its_query_or_table() -> None:
    for line in (
        "psql -c '\\copy orders to stdout csv'",
        "psql -h db -c '\\copy (select id from t) to stdout with (format csv)'",
    ):
        assert not isinstance(network_grant(line, 0), str), line
    for line in (
        "psql -h db -c '\\copy (select wipe()) to stdout'",
        "psql -h db -c '\\copy t to /tmp/x'",
        "psql -h db -c '\\copy (select 1) to stdout; drop table x'",
    ):
        assert isinstance(network_grant(line, 0), str), line
