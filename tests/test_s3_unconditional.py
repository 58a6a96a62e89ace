"""An S3 store that stops honouring conditional writes after `init`: every writer stops, says
why and writes nothing, so the journal never forks.

The store is a real S3 API server of the test's own (tests/s3_server.py) that drops If-None-Match
and If-Match from every request while a flag file exists, as a proxy in front of the store
would; three writers are real processes started together.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger import Ledger
from agentledger.importers import import_runs
from agentledger.store import verify_ledger
from conftest import s3_environment
from many_runs import write_runs

WRITERS = 3


@pytest.fixture
def flaky_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """(the endpoint of a store that ignores conditions while FLAG exists, FLAG)."""
    pytest.importorskip("moto.server")
    flag = tmp_path / "ignore-conditions"
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("s3_server.py")), str(flag)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    line = server.stdout.readline()
    assert line.startswith("listening on "), line
    endpoint = f"http://127.0.0.1:{int(line.split()[-1])}"
    for name, value in s3_environment(endpoint).items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    try:
        yield endpoint, flag
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()


@pytest.mark.slow
def test_writers_stop_when_the_store_stops_honouring_conditional_writes(
    tmp_path: Path, flaky_store: tuple[str, Path]
) -> None:
    from agentledger.store.storage.s3 import parse_location
    from agentledger.store.storage.s3.client import ObjectStore

    _endpoint, flag = flaky_store
    ObjectStore(parse_location("flaky")).client.create_bucket(Bucket="flaky")
    root = tmp_path / "ledger"
    write_runs(tmp_path / "first", 2)
    with Ledger.init(root, storage="s3://flaky/ledger") as ledger:
        assert len(import_runs(ledger, [tmp_path / "first"]).imported) == 2
        head = ledger.storage.journal.head()
    flag.touch()  # from now on the store ignores If-None-Match and If-Match

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = []
    for number in range(WRITERS):
        source = tmp_path / f"writer{number}"
        write_runs(source, 3 + number)  # overlapping run ids: they would race for one key
        argv = [sys.executable, "-m", "agentledger", "import", str(source), "--ledger", str(root)]
        procs.append(
            subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, (out + err).decode(errors="replace")
        assert b"no longer honours conditional writes" in err
        assert b"Traceback" not in err

    flag.unlink()
    with Ledger.open(root) as ledger:
        assert ledger.storage.journal.head() == head  # nothing appended, nothing forked
        report = verify_ledger(ledger)
        assert {problem.kind for problem in report.problems} <= {"leftover"}, report.problems
        ledger.gc()
        assert verify_ledger(ledger).ok
        assert len(list(ledger.storage.run_ids())) == 2


@pytest.mark.slow
def test_judges_and_labellers_stop_too_when_the_store_stops_honouring_them(
    tmp_path: Path, flaky_store: tuple[str, Path]
) -> None:
    """Not only imports: a judge and two label imports, started together on a store that
    stopped honouring conditional writes, each stop saying why; nothing is appended."""
    from agentledger.store.storage.s3 import parse_location
    from agentledger.store.storage.s3.client import ObjectStore

    _endpoint, flag = flaky_store
    ObjectStore(parse_location("flaky")).client.create_bucket(Bucket="flaky")
    root = tmp_path / "ledger"
    write_runs(tmp_path / "first", 3)
    with Ledger.init(root, storage="s3://flaky/ledger") as ledger:
        run_ids = import_runs(ledger, [tmp_path / "first"]).imported
        head = ledger.storage.journal.head()
    labels = tmp_path / "labels.csv"
    labels.write_text("run_id,verdict\n" + "".join(f"{run_id},safe\n" for run_id in run_ids))
    flag.touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    commands = [
        ["judge"],
        ["labels", "import", str(labels), "--source", "grader"],
        ["labels", "import", str(labels), "--source", "grader"],
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "agentledger", *command, "--ledger", str(root)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for command in commands
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode != 0, (out + err).decode(errors="replace")
        assert b"no longer honours conditional writes" in err + out
        assert b"Traceback" not in err
    flag.unlink()
    with Ledger.open(root) as ledger:
        assert ledger.storage.journal.head() == head
        report = verify_ledger(ledger)
        assert {problem.kind for problem in report.problems} <= {"leftover"}, report.problems
