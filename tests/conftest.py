"""Shared fixtures: an isolated working directory, a fresh ledger, and a way to write runs."""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentledger import Ledger, RunMetadata, effective_prompt, make_run_id
from agentledger.identity import sha256_bytes
from agentledger.records import ShellEvent

# A real PostgreSQL server (started on first use) and a new database per test.
pytest_plugins = ["pg_server"]

RELEASED_MIGRATIONS: dict[str, list[tuple[str, list[str]]]] = {
    engine: [(name, statements) for name, statements in steps]
    for engine, steps in json.loads(
        (Path(__file__).parent / "golden" / "index_migrations_main.json").read_text()
    ).items()
}
"""Every statement of the index's released migrations, per engine ("sqlite", "postgresql"),
as the release that made them ran them: an index an older agentledger left is built from
these, never from the code under test."""

BASE_PROMPT = b"You are Ghost, a network forensics agent. Investigate, then report.\n"
T0 = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own directory with no ledger from the user's environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTLEDGER_DIR", raising=False)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / ".user-cache"))
    monkeypatch.setenv("AGENTLEDGER_STATE_DIR", str(tmp_path / ".user-state"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".user-state-xdg"))
    return tmp_path


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.init(tmp_path / "ledger") as opened:
        yield opened


def make_metadata(run_id: str, **changes: object) -> RunMetadata:
    """Identity of a minimal recorded run; keyword arguments override fields."""
    fields: dict[str, object] = {
        "run_id": run_id,
        "scenario": "use_case_m",
        "model": "claude-haiku-4-5",
        "system_prompt_hash": sha256_bytes(b"system prompt"),
        "started_at": datetime.now(UTC),
    }
    fields.update(changes)
    return RunMetadata.model_validate(fields)


def staging_entries(root: Path) -> list[str]:
    """What is in a ledger's staging area: debris, or runs being written."""
    return sorted(p.name for p in (root / ".staging").iterdir())


WriteRun = Callable[..., str]


@pytest.fixture
def write_run(ledger: Ledger) -> WriteRun:
    """Seal a small but complete run; keyword arguments override identity fields."""
    counter = iter(range(10_000))

    def write(
        scenario: str = "use_case_m",
        model: str = "gemini-2.5-flash",
        *,
        addon: bytes | None = None,
        report: str = "# Report\nRoot cause: tc qdisc on eth0 drops 30% of packets.\n",
        events: list[dict[str, Any]] | None = None,
        **fields: Any,
    ) -> str:
        prompt = effective_prompt(BASE_PROMPT, addon)
        started = fields.pop("started_at", T0 + timedelta(minutes=next(counter)))
        metadata = RunMetadata(
            run_id=fields.pop("run_id", None) or make_run_id(scenario, model, started),
            scenario=scenario,
            model=model,
            system_prompt_hash=prompt.system_prompt_hash,
            base_prompt_hash=prompt.base_prompt_hash,
            started_at=started,
            ended_at=started + timedelta(seconds=90),
            **fields,
        )
        shell = (
            events
            if events is not None
            else [
                {"command": "tc qdisc show dev eth0", "exit_code": 0, "decision": "allowed"},
                {
                    "command": "tc qdisc del dev eth0 root",
                    "decision": "denied",
                    "reason": "mutating",
                },
            ]
        )
        with ledger.new_run(metadata) as run:
            run.add_text("PROMPT.txt", "Packets to 10.0.2.4 are dropped intermittently.\n")
            run.add_bytes("system_prompt.txt", prompt.text)
            run.add_text("report.md", report)
            run.add_text("audit.md", "Checked iptables first, then tc.\n")
            run.add_shell_events(ShellEvent.model_validate(event) for event in shell)
        return metadata.run_id

    return write


def shared_samples() -> Path:
    """The samples written by others (`shared/samples` beside the repository, as on CI and in a
    development checkout); the tests that read them skip when it is absent."""
    beside = Path(__file__).resolve().parents[2] / "shared" / "samples"
    return beside if beside.is_dir() else Path("/work/shared/samples")


# -- a real S3 API server ----------------------------------------------------------------------

S3_LEASE_SECONDS = "3"
"""The S3 backend's lease time in tests: a killed writer's lock and staging go stale quickly."""
_buckets = itertools.count(1)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of moto's standalone S3 server (tests/s3_server.py), one for the session."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("s3_server.py"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        server.kill()
        pytest.fail(f"the S3 test server did not start: {line!r}")
    try:
        yield f"http://127.0.0.1:{int(line.split()[-1])}"
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()


def s3_environment(endpoint: str) -> dict[str, str]:
    """The environment a client of the test server needs (given to child processes too)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AGENTLEDGER_S3_LEASE_SECONDS": S3_LEASE_SECONDS,
    }


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test talks to the S3 test server with test credentials, and nothing else."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    environment = s3_environment(s3_endpoint)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    return environment


def make_bucket(name_hint: str) -> str:
    """A new, empty bucket on the S3 test server (with the environment of `s3_env`)."""
    from agentledger.store.storage.s3 import parse_location
    from agentledger.store.storage.s3.client import ObjectStore

    digest = hashlib.sha256(name_hint.encode()).hexdigest()[:16]
    bucket = f"test-{digest}-{next(_buckets)}"
    ObjectStore(parse_location(bucket)).client.create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture
def s3_uri(s3_env: dict[str, str], request: pytest.FixtureRequest) -> str:
    """``s3://<a new bucket>/ledger`` on the S3 test server."""
    return f"s3://{make_bucket(request.node.nodeid)}/ledger"
