"""Shared fixtures: an isolated working directory, a fresh ledger, and a way to write runs."""

from __future__ import annotations

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

BASE_PROMPT = b"You are Ghost, a network forensics agent. Investigate, then report.\n"
T0 = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own directory with no ledger from the user's environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTLEDGER_DIR", raising=False)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / ".user-cache"))
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
