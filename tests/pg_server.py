"""A real PostgreSQL server for the tests and benchmarks, started once per session.

`initdb` and `pg_ctl` (Debian's postgresql package: /usr/lib/postgresql/<version>/bin) set a
cluster up in a temporary directory, listening on a free port of 127.0.0.1 and on a socket in
that directory. initdb refuses to run as root, so under root the server runs as the
`postgres` user (or `nobody`). Connections over TCP authenticate by password (scram), which
the tests give through a password file (PGPASSFILE), as a user would: never in a URL.

A pytest plugin (tests/conftest.py lists it): the `postgres_server` fixture (session) and
`pg_url` (a new, empty database per test). Without the binaries the tests that need them skip,
saying so; .ci/run installs them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "find_bin_dir", "start_server"]

PASSWORD = "agentledger-test-password"
SUPERUSER = "postgres"


def find_bin_dir() -> Path | None:
    """Where initdb and pg_ctl are: the newest /usr/lib/postgresql/<v>/bin, else PATH."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for candidate in reversed(versions):
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return Path(initdb).parent
    return None


def _run_as() -> list[str]:
    """The command prefix that runs the server as an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
    raise RuntimeError("running as root, and no 'postgres' or 'nobody' user to run initdb as")


def _owner() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(user)
            return entry.pw_uid, entry.pw_gid
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running cluster: where it listens and how to reach it."""

    base: Path
    bin_dir: Path
    port: int
    passfile: Path
    _databases: itertools.count[int]

    @property
    def socket_dir(self) -> Path:
        return self.base

    def url(self, database: str = "postgres") -> str:
        """A URL without a password (the password file supplies it)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def admin(self) -> object:
        import psycopg

        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user=SUPERUSER,
            dbname="postgres",
            autocommit=True,
        )

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database; returns its name."""
        name = name or f"t{os.getpid()}_{next(self._databases)}"
        with self.admin() as db:  # type: ignore[attr-defined]
            db.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as db:  # type: ignore[attr-defined]
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def environ(self) -> dict[str, str]:
        """The variables a client (a test, a writer process) needs: the password file."""
        return {"PGPASSFILE": str(self.passfile)}

    def stop(self) -> None:
        subprocess.run(
            [
                *_run_as(),
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.base / "data"),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.base, ignore_errors=True)


def start_server(*, durable: bool = False) -> PostgresServer:
    """Set a cluster up in a new temporary directory and start it; `durable=False` (tests)
    turns off fsync, which a throw-away cluster does not need."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL's initdb and pg_ctl")
    base = Path(tempfile.mkdtemp(prefix="agentledger-pg-"))
    owner = _owner()
    if owner:
        os.chown(base, *owner)
    pwfile = base / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if owner:
        os.chown(pwfile, *owner)
    subprocess.run(
        [
            *_run_as(),
            str(bin_dir / "initdb"),
            "-D",
            str(base / "data"),
            "-U",
            SUPERUSER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ],
        capture_output=True,
        check=True,
    )
    options = [f"-k {base}", "-c listen_addresses=127.0.0.1", "-c max_connections=200"]
    if not durable:
        options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
    for _attempt in range(5):
        port = _free_port()
        started = subprocess.run(
            [
                *_run_as(),
                str(bin_dir / "pg_ctl"),
                "-D",
                str(base / "data"),
                "-w",
                "-t",
                "60",
                "-l",
                str(base / "server.log"),
                "-o",
                " ".join([f"-p {port}", *options]),
                "start",
            ],
            capture_output=True,
            check=False,
        )
        if started.returncode == 0:
            break
    else:
        log = (base / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"PostgreSQL did not start: {started.stderr!r}\n{log}")
    passfile = base / "pgpass"
    passfile.write_text(f"127.0.0.1:{port}:*:{SUPERUSER}:{PASSWORD}\n")
    passfile.chmod(0o600)
    return PostgresServer(base, bin_dir, port, passfile, itertools.count(1))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (skips when its binaries are absent)."""
    if find_bin_dir() is None:
        pytest.skip(
            "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: "
            "apt-get install postgresql (.ci/run does)"
        )
    server = start_server()
    previous = os.environ.get("PGPASSFILE")
    os.environ["PGPASSFILE"] = str(server.passfile)
    try:
        yield server
    finally:
        if previous is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = previous
        server.stop()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL (no password in it) of a new, empty database, dropped after the test."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
