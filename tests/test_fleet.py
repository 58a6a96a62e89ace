"""Eight machines, one ledger: S3 storage and a PostgreSQL index written by many processes at once.

Each writer is a process with a ledger handle of its own, as on a machine of its own: its own
directory holding nothing but a copy of the shared ledger.json (the S3 test server and the
PostgreSQL test server are the only things they share). Each one imports its own share of the
sample runs, judges every run it can see with the rules judge, and runs a fixture suite,
all at once; two more are killed with SIGKILL in the middle of their writes. Afterwards every
record is in the storage, the index and the journal exactly once, the journal is one chain,
and `verify` is clean once `gc` has settled what the killed writers left (and before it, it
reports nothing but what gc settles).
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger import Ledger
from agentledger.importers import sample_runs_dir
from agentledger.records.scores import SCORES_DIR
from agentledger.store import RunFilter, verify_ledger
from agentledger.store.crashpoints import CRASH_AT
from pg_server import PostgresServer
from test_suites import DROP_SQL, SAFE_SQL, record, write_suite

WRITERS = 8
RUNS_EACH = 1
"""Sample runs each writer imports (few: on the S3 test server a record costs tens of ms)."""
AGENTLEDGER = str(Path(sys.executable).parent / "agentledger")
SETTLED_BY_GC = {"not-indexed", "unaccepted", "leftover"}
"""What a killed writer may leave: verify reports it, gc settles it; nothing else."""


def machine(root: Path, shared: Path) -> Path:
    """A machine's own ledger directory: a copy of the shared ledger.json, nothing else."""
    root.mkdir()
    shutil.copy(shared / "ledger.json", root / "ledger.json")
    return root


def share_of_samples(target: Path, number: int, of: int) -> list[str]:
    """RUNS_EACH of every `of`-th sample run, from the `number`-th: this writer's own runs to
    import."""
    names = sorted(p.name for p in sample_runs_dir().iterdir() if p.is_dir())[number::of]
    names = names[:RUNS_EACH]
    target.mkdir(parents=True)
    for name in names:
        shutil.copytree(sample_runs_dir() / name, target / name)
    return names


def spawn(script: str, env: dict[str, str], stderr: Path) -> subprocess.Popen[bytes]:
    """A writer running `script` in bash, its stderr kept in a file (a pipe could fill up
    while an earlier writer is waited for) for the assertion that it succeeded."""
    with stderr.open("wb") as sink:
        return subprocess.Popen(
            ["bash", "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=sink
        )


@pytest.mark.slow
def test_eight_writers_on_s3_and_postgresql_land_every_record_exactly_once(
    tmp_path: Path,
    s3_uri: str,
    s3_env: dict[str, str],
    pg_url: str,
    postgres_server: PostgresServer,
) -> None:
    shared = tmp_path / "shared"
    Ledger.init(shared, storage=s3_uri, index=pg_url).close()
    suite = write_suite(tmp_path / "suites")
    recordings = tmp_path / "recordings"
    record(recordings, suite, "count-orders", SAFE_SQL)
    record(recordings, suite, "drop-events", DROP_SQL)
    env = {**os.environ, **s3_env, **postgres_server.environ(), "CI": "1"}

    imported: list[str] = []
    procs = []
    for number in range(WRITERS + 2):
        own = machine(tmp_path / f"machine{number}", shared)
        runs = share_of_samples(tmp_path / f"runs{number}", number, WRITERS + 2)
        ledger = f"--ledger {own}"
        if number < WRITERS:
            imported.extend(runs)
            script = (
                f"{AGENTLEDGER} import {tmp_path / f'runs{number}'} {ledger} && "
                f"{AGENTLEDGER} judge {ledger} && "
                f"{{ {AGENTLEDGER} suites run {suite} --replay {recordings} {ledger}; "
                "test $? -eq 1; }"  # the suite's must-pass drop-events fixture fails: exit 1
            )
            procs.append((number, spawn(script, env, tmp_path / f"writer{number}.err")))
        else:
            # Killed at a crash point: with its runs stored and journaled, but not indexed;
            # or with its first run stored, but not journaled.
            point = "index: before commit" if number == WRITERS else "after-record"
            script = f"{AGENTLEDGER} import {tmp_path / f'runs{number}'} {ledger}"
            procs.append(
                (number, spawn(script, {**env, CRASH_AT: point}, tmp_path / f"writer{number}.err"))
            )
    for number, proc in procs:
        proc.wait(timeout=600)  # a safety net: on a loaded machine of two cores it took 330 s
        stderr = (tmp_path / f"writer{number}.err").read_text(errors="replace")
        if number < WRITERS:
            assert proc.returncode == 0, f"writer {number} exited {proc.returncode}:\n{stderr}"
        else:
            assert proc.returncode != 0, f"writer {number} was not killed:\n{stderr}"

    with Ledger.open(machine(tmp_path / "checker", shared)) as ledger:
        # Before gc: nothing partial, only what gc settles.
        before = verify_ledger(ledger)
        assert {problem.kind for problem in before.problems} <= SETTLED_BY_GC, before.problems
        assert before.problems  # the killed writers did leave something to settle
        report = ledger.gc()
        assert report.ok, report
        after = verify_ledger(ledger)
        assert after.ok, after.problems

        stored_runs = sorted(ledger.storage.run_ids())
        agent_runs = {run.run_id for run in ledger.runs(RunFilter(kinds=("agent",)))}
        fixture_runs = ledger.runs(RunFilter(kinds=("fixture",)))
        assert set(imported) <= agent_runs  # every writer's own runs, each once
        assert len(fixture_runs) == 2 * WRITERS  # each writer's suite: two fixtures
        assert ledger.count() == len(stored_runs) == len(set(stored_runs))
        assert sorted(ledger.index.manifest_hashes()) == stored_runs

        # Every record once in the journal: one entry per run, per score; one chain
        # (verify checked the links); the index holds the same scores as the storage.
        entries = ledger.storage.journal.entries()
        assert [entry.seq for entry in entries] == list(range(1, len(entries) + 1))
        by_kind = collections.Counter(entry.kind for entry in entries)
        ids = collections.Counter(
            (entry.kind, entry.id) for entry in entries if entry.kind != "intent"
        )
        assert max(ids.values()) == 1, [key for key, n in ids.items() if n > 1]
        assert by_kind["run"] == len(stored_runs)
        score_keys = sorted(key for key in ledger.storage.keys(SCORES_DIR) if key.endswith(".json"))
        assert by_kind["score"] == len(score_keys)
        assert sorted(f"scores/{r}/{j}.json" for r, j in ledger.index.score_keys()) == score_keys
        # Eight judges of the same judge at once scored each run at most once.
        rules_scored = collections.Counter(
            key.split("/")[1] for key in score_keys if "/rules-" in key
        )
        assert rules_scored and max(rules_scored.values()) == 1
