"""The S3 backend against a real S3 API server (moto's, tests/s3_server.py), over HTTP.

The storage contract suite runs against it too (tests/test_storage_contract.py); these are
what only an object store has to prove: a whole ledger through the seam with nothing of it on
disk, credentials kept out of ledger.json, a missing bucket or refused credentials as exit 2,
the journal lock taken by compare-and-swap among writers that share nothing but the bucket,
listings past one page, tampering seen by verify, and writers killed mid-publish.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import InputError, StorageAccessError
from agentledger.store import verify_ledger
from agentledger.store.backends import UnknownBackendError
from agentledger.store.storage.s3 import S3Storage, parse_location
from agentledger.store.storage.s3.client import ObjectStore
from conftest import S3_LEASE_SECONDS
from many_runs import write_runs

pytestmark = pytest.mark.usefixtures("s3_env")


def storage_at(uri: str) -> S3Storage:
    """A handle of its own on the storage at `uri`, as another machine would have."""
    return S3Storage(parse_location(uri.removeprefix("s3://")))


def raw(uri: str) -> Any:
    """A plain boto3 client on the bucket of `uri`, for what a tamperer would do."""
    return ObjectStore(parse_location(uri.removeprefix("s3://"))).client


def bucket_of(uri: str) -> str:
    return uri.removeprefix("s3://").split("/")[0]


# -- locations and credentials -----------------------------------------------------------------


def test_a_location_is_a_bucket_and_a_prefix() -> None:
    assert parse_location("team-ledger/agents/ci") == parse_location("team-ledger/agents/ci/")
    location = parse_location("team-ledger/agents/ci")
    assert (location.bucket, location.prefix) == ("team-ledger", "agents/ci/")
    assert location.uri == "s3://team-ledger/agents/ci"
    assert location.describe("runs/r1/report.md") == "s3://team-ledger/agents/ci/runs/r1/report.md"
    assert parse_location("team-ledger").prefix == ""
    assert parse_location("team-ledger").uri == "s3://team-ledger"


@pytest.mark.parametrize(
    ("rest", "says"),
    [
        ("AKIAEXAMPLE:secret@team-ledger/x", "never credentials"),
        ("team-ledger/x?endpoint=http://localhost", "no query"),
        ("Team_Ledger/x", "not a bucket name"),
        ("ab/x", "not a bucket name"),
        ("team-ledger/../x", "not safe"),
        ("team-ledger/a//b", "not safe"),
        ("team-ledger/.hidden", "not safe"),
    ],
)
def test_a_bad_location_is_refused(rest: str, says: str) -> None:
    with pytest.raises(UnknownBackendError, match=says):
        parse_location(rest)


def test_init_keeps_credentials_out_of_ledger_json(tmp_path: Path, s3_uri: str) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "l"), "--storage", s3_uri])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "l" / "ledger.json").read_text()
    config = json.loads(text)
    assert (config["storage"], config["index"]) == (s3_uri, "sqlite")
    assert "testing" not in text and "AWS" not in text and "127.0.0.1" not in text
    refused = CliRunner().invoke(
        main, ["init", str(tmp_path / "m"), "--storage", "s3://KEY:SECRET@bucket-x/p"]
    )
    assert refused.exit_code == 2
    assert "never credentials" in refused.output
    assert not (tmp_path / "m").exists()


def test_a_missing_bucket_is_exit_2_and_nothing_is_written(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["init", str(tmp_path / "l"), "--storage", "s3://no-such-bucket-here/ledger"]
    )
    assert result.exit_code == 2, result.output
    assert "bucket 'no-such-bucket-here' does not exist" in result.output
    assert not (tmp_path / "l" / "ledger.json").exists()


def test_refused_or_missing_credentials_are_exit_2(
    tmp_path: Path, s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Ledger.init(tmp_path / "l", storage=s3_uri):
        pass
    # The test server accepts any key (refused ones are translated as in the test below).
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = CliRunner().invoke(main, ["runs", "--ledger", str(tmp_path / "l")])
    assert result.exit_code == 2, result.output
    assert "no AWS credentials were found" in result.output
    with pytest.raises(StorageAccessError, match="no AWS credentials"):
        storage_at(s3_uri).initialize()


def test_an_object_store_error_names_the_object(s3_uri: str) -> None:
    from botocore.exceptions import ClientError

    store = ObjectStore(parse_location(s3_uri.removeprefix("s3://")))
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "PutObject")
    error = store.error(denied, "writing", "scores/r/j.json")
    assert isinstance(error, StorageAccessError)
    assert f"{s3_uri}/scores/r/j.json: the credentials were refused (AccessDenied)" in str(error)
    assert error.exit_code == 2


def test_a_store_that_ignores_conditional_writes_is_refused(
    s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = storage_at(s3_uri)
    put = storage.store.put

    def unconditional(relative: str, data: bytes, **_conditions: object) -> str | None:
        return put(relative, data)  # as a store that ignores If-None-Match and If-Match

    monkeypatch.setattr(storage.store, "put", unconditional)
    with pytest.raises(StorageAccessError, match="does not honour conditional writes"):
        storage.initialize()
    assert list(storage.store.list("")) == []  # the probe removed
    storage_at(s3_uri).initialize()  # the real server honours them


def test_an_unknown_lease_setting_is_refused(monkeypatch: pytest.MonkeyPatch, s3_uri: str) -> None:
    monkeypatch.setenv("AGENTLEDGER_S3_LEASE_SECONDS", "soon")
    with pytest.raises(InputError, match="AGENTLEDGER_S3_LEASE_SECONDS='soon'"):
        storage_at(s3_uri)


# -- a whole ledger ----------------------------------------------------------------------------


def test_a_whole_ledger_runs_on_s3(tmp_path: Path, s3_uri: str) -> None:
    """Import, judge, decide and measure through the seam: only ledger.json and the index on disk,
    everything else in the bucket, and another machine sees all of it."""
    from agentledger.gates.decisions import DecisionStore
    from agentledger.importers import import_runs
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.judges.scores import run_scores
    from agentledger.judges.scoring import score_runs
    from agentledger.outcomes import OutcomeStore, latest_outcomes, record_outcome
    from agentledger.records.decisions import Decision, new_decision_id
    from test_outcomes_store import make_outcome

    source = tmp_path / "source"
    write_runs(source, 5)
    root = tmp_path / "here"
    with Ledger.init(root, storage=s3_uri) as ledger:
        report = import_runs(ledger, [source])
        run_ids = sorted(report.imported)
        assert len(run_ids) == 5
        judge, _ = make_judge(parse_judge_spec("rules"), load_pack(), ledger_root=ledger.root)
        scored = score_runs(ledger, judge, run_ids)
        assert len(scored.scored) == len(run_ids) and not scored.failed
        decision = Decision(
            decision_id=new_decision_id("variant", "s3"),
            kind="variant",
            subject="s3",
            outcome="ACCEPTED",
            rule="every model passes",
        )
        DecisionStore(ledger).write([decision])
        outcome = make_outcome(run_ids[0])
        record_outcome(ledger, outcome)
        assert latest_outcomes(ledger) == {run_ids[0]: outcome}
        assert verify_ledger(ledger).ok
        first = scored.scored[0]
    # Nothing of the evidence is kept locally: the index, ledger.json and the journal's mark.
    local = sorted(p.name for p in root.iterdir())
    assert local == ["index.sqlite", "journal.started", "ledger.json"]
    keys = [
        item["Key"] for item in raw(s3_uri).list_objects_v2(Bucket=bucket_of(s3_uri))["Contents"]
    ]
    assert any(key.startswith("ledger/runs/") and key.endswith("/MANIFEST.json") for key in keys)
    assert not any(
        key.startswith("ledger/.staging/") or key.startswith("ledger/.claims/") for key in keys
    )

    elsewhere = tmp_path / "elsewhere"  # a second machine: its own ledger.json and index
    with Ledger.init(elsewhere, storage=s3_uri) as other:
        assert sorted(other.storage.run_ids()) == run_ids
        assert other.reindex().indexed == len(run_ids)
        assert [score.judge_id for score in run_scores(other, first.run_id)] == [first.judge_id]
        assert DecisionStore(other).list() == [decision]
        assert latest_outcomes(other) == {run_ids[0]: outcome}
        assert OutcomeStore(other).of_run(run_ids[0]) == [outcome]
        assert verify_ledger(other).ok


@pytest.mark.filterwarnings("error::ResourceWarning")
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_closing_a_ledger_closes_its_s3_client(tmp_path: Path, s3_uri: str) -> None:
    """A closed ledger leaves no S3 connection or thread behind (an open one is reported as an
    unraisable ResourceWarning when it is collected), and the storage can be used again."""
    import gc

    source = tmp_path / "source"
    write_runs(source, 3)
    from agentledger.importers import import_runs

    with Ledger.init(tmp_path / "ledger", storage=s3_uri) as ledger:
        import_runs(ledger, [source])
        storage = ledger.storage
        assert isinstance(storage, S3Storage)
        assert storage.store._client is not None
        pool = storage.store._pool
    assert storage.store._client is None and storage.store._pool is None
    assert pool is not None and pool._shutdown
    assert not [t for t in threading.enumerate() if t.name.startswith("agentledger-s3")]
    gc.collect()
    assert len(list(storage.run_ids())) == 3  # used after close: a new client
    storage.close()
    gc.collect()


# -- the journal lock: a lease by compare-and-swap ---------------------------------------------

APPENDER = """
import sys
from agentledger.store.storage.s3 import S3Storage, parse_location
storage = S3Storage(parse_location(sys.argv[1]))
for number in range(int(sys.argv[3])):
    storage.create(f"labels/run-{sys.argv[2]}/l{number}.json", f"{sys.argv[2]}-{number}".encode())
"""


@pytest.mark.slow
def test_concurrent_appenders_on_many_machines_keep_one_chain(s3_uri: str) -> None:
    """Processes that share nothing but the bucket append at once: one unbroken chain."""
    storage_at(s3_uri).journal.start("journal started with a new ledger")
    location = s3_uri.removeprefix("s3://")
    writers = [
        subprocess.Popen([sys.executable, "-c", APPENDER, location, str(number), "5"])
        for number in range(3)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0] * 3
    read = storage_at(s3_uri).journal.read()
    assert read.problems == []
    # The genesis entry, then each label's intent and its entry.
    assert [entry.seq for entry in read.entries] == list(range(1, 1 + 2 * 15 + 1))
    assert sum(entry.kind != "intent" for entry in read.entries[1:]) == 15
    labels = storage_at(s3_uri).keys("labels")
    assert len(labels) == 15
    assert {key for entry in read.entries for key in entry.keys} == set(labels)


def test_the_journal_lock_excludes_writers_that_share_only_the_bucket(s3_uri: str) -> None:
    inside: list[int] = []
    overlaps: list[int] = []

    def hold(number: int) -> None:
        storage = storage_at(s3_uri)  # each its own client, lease and local mutex
        for _ in range(3):
            with storage.journal_lock():
                inside.append(number)
                if len(inside) > 1:
                    overlaps.append(number)
                time.sleep(0.01)
                inside.remove(number)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert overlaps == [] and inside == []


HOLDER = """
import os, signal, sys
from agentledger.store.storage.s3 import S3Storage, parse_location
storage = S3Storage(parse_location(sys.argv[1]))
with storage.journal_lock():
    print("held", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_a_killed_holders_lock_is_taken_over_after_its_lease(s3_uri: str) -> None:
    holder = subprocess.run(
        [sys.executable, "-c", HOLDER, s3_uri.removeprefix("s3://")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert holder.returncode == -9 and holder.stdout == "held\n"
    started = time.monotonic()
    with storage_at(s3_uri).journal_lock():
        waited = time.monotonic() - started
    lease = float(S3_LEASE_SECONDS)
    assert lease - 2.5 <= waited <= lease + 10  # Last-Modified counts whole seconds
    lock = json.loads(
        raw(s3_uri).get_object(Bucket=bucket_of(s3_uri), Key="ledger/journal/.lock")["Body"].read()
    )
    assert lock == {"holder": None}  # let go after use


# -- listings, tampering -----------------------------------------------------------------------


@pytest.mark.slow
def test_listings_go_past_one_page(s3_uri: str) -> None:
    storage = storage_at(s3_uri)
    store = storage.store
    runs = [f"r{n:04d}" for n in range(505)]  # 1,010 objects: two pages of S3's 1,000
    store.map(
        lambda item: store.put(f"runs/{item[0]}/{item[1]}", b"{}"),
        [(run, name) for run in runs for name in ("MANIFEST.json", "report.md")],
    )
    assert sorted(storage.run_ids()) == runs
    cache = [f"cache/{n % 256:02x}/{n:064x}.json" for n in range(250)]
    store.map(lambda key: store.put(key, b"{}"), cache)
    store.page_size = 40  # seven pages
    assert storage.keys("cache") == sorted(cache)
    assert len(list(store.list("cache/", limit=45))) == 45


def _imported(tmp_path: Path, uri: str, count: int = 3) -> Path:
    source = tmp_path / "source"
    write_runs(source, count)
    root = tmp_path / "ledger"
    assert CliRunner().invoke(main, ["init", str(root), "--storage", uri]).exit_code == 0
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(source)])
    assert result.exit_code == 0, result.output
    return root


def test_tampering_in_the_bucket_is_seen_by_verify(tmp_path: Path, s3_uri: str) -> None:
    root = _imported(tmp_path, s3_uri)
    ok = CliRunner().invoke(main, ["verify", "--ledger", str(root)])
    assert ok.exit_code == 0, ok.output
    with Ledger.open(root) as ledger:
        first, second, third = sorted(ledger.storage.run_ids())
    client, bucket = raw(s3_uri), bucket_of(s3_uri)
    client.put_object(Bucket=bucket, Key=f"ledger/runs/{first}/PROMPT.txt", Body=b"rewritten\n")
    client.put_object(Bucket=bucket, Key=f"ledger/runs/{second}/planted.sh", Body=b"rm -rf /\n")
    client.delete_object(Bucket=bucket, Key=f"ledger/runs/{third}/MANIFEST.json")
    result = CliRunner().invoke(main, ["verify", "--ledger", str(root)])
    assert result.exit_code == 3, result.output
    assert first in result.output and "PROMPT.txt" in result.output
    assert second in result.output and "planted.sh" in result.output
    assert third in result.output and "missing" in result.output


# -- writers killed, and writers in conflict ---------------------------------------------------


def _agentledger(*args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    if crash_at is not None:
        environment["AGENTLEDGER_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "agentledger", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=180,
    )


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["run: artifacts copied into runs/", "after-record"])
def test_a_writer_killed_mid_publish_leaves_no_partial_run(
    tmp_path: Path, s3_uri: str, crash_at: str
) -> None:
    source = tmp_path / "source"
    write_runs(source, 4)
    root = tmp_path / "ledger"
    Ledger.init(root, storage=s3_uri).close()
    importing = ("import", "--ledger", str(root), "--workers", "1", "--batch-size", "2")
    killed = _agentledger(*importing, str(source), crash_at=crash_at)
    assert killed.returncode == -9, killed.stderr
    with Ledger.open(root) as ledger:
        visible = sorted(ledger.storage.run_ids())
        for run_id in visible:  # each whole, never part of one
            assert ledger.storage.list_files(run_id) == sorted(
                [
                    *json.loads(ledger.storage.read(run_id, "MANIFEST.json"))["files"],
                    "MANIFEST.json",
                ]
            )
        if crash_at == "run: artifacts copied into runs/":
            assert visible == []
            listed = raw(s3_uri).list_objects_v2(Bucket=bucket_of(s3_uri), Prefix="ledger/runs/")
            assert listed.get("Contents"), "the killed writer had copied files into runs/"
        time.sleep(float(S3_LEASE_SECONDS) + 1.5)  # the dead writer's presence goes stale
        report = verify_ledger(ledger)
        kinds = {problem.kind for problem in report.problems}
        assert kinds and kinds <= {"leftover", "unaccepted", "not-indexed"}, report.problems
        gc = ledger.gc()
        assert gc.ok
        assert verify_ledger(ledger).ok
    again = _agentledger(*importing, str(source))
    assert again.returncode == 0, again.stderr
    with Ledger.open(root) as ledger:
        assert ledger.count() == 4
        assert verify_ledger(ledger).ok


@pytest.mark.slow
def test_a_decision_writer_killed_after_the_seal_leaves_debris_gc_removes(
    tmp_path: Path, s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLEDGER_S3_LEASE_SECONDS", "1")  # the shortest: a short wait
    root = tmp_path / "ledger"
    Ledger.init(root, storage=s3_uri).close()
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from agentledger import Ledger\n"
        "from journal_records import write_decision\n"
        "with Ledger.open(sys.argv[2]) as ledger:\n"
        "    write_decision(ledger)\n"
    )
    monkeypatch.setenv("AGENTLEDGER_CRASH_AT", "group: sealed")
    tests = str(Path(__file__).parent)
    killed = subprocess.run([sys.executable, "-c", script, tests, str(root)], timeout=180)
    assert killed.returncode == -9
    monkeypatch.delenv("AGENTLEDGER_CRASH_AT")
    listed = raw(s3_uri).list_objects_v2(Bucket=bucket_of(s3_uri), Prefix="ledger/decisions/")
    (seal,) = [item["Key"] for item in listed["Contents"]]
    assert seal.endswith("/.group")  # the group's claim, none of its members
    time.sleep(1 + 1.5)  # older than the lease: no writer is filling it
    with Ledger.open(root) as ledger:
        report = verify_ledger(ledger)
        assert [(p.kind, p.run_id) for p in report.problems] == [
            ("leftover", seal.removeprefix("ledger/"))
        ]
        assert ledger.gc().removed == [seal.removeprefix("ledger/")]
        assert verify_ledger(ledger).ok
    listed = raw(s3_uri).list_objects_v2(Bucket=bucket_of(s3_uri), Prefix="ledger/decisions/")
    assert "Contents" not in listed


@pytest.mark.slow
def test_a_rerun_waits_out_the_claim_of_a_publisher_just_killed(
    tmp_path: Path, s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLEDGER_S3_LEASE_SECONDS", "1")  # the shortest: a short wait
    source = tmp_path / "source"
    write_runs(source, 2)
    root = tmp_path / "ledger"
    Ledger.init(root, storage=s3_uri).close()
    run_id = sorted(path.name for path in source.iterdir())[0]
    # What a publisher killed after claiming a run leaves: its claim, and its presence, last
    # renewed just before it died (it may outlive the journal lease it held by a third).
    client, bucket = raw(s3_uri), bucket_of(s3_uri)
    dead = "0123456789abcdef"
    client.put_object(Bucket=bucket, Key=f"ledger/.writers/{dead}", Body=b"{}")
    claim = json.dumps({"writer": dead, "nonce": "0"}).encode()
    client.put_object(Bucket=bucket, Key=f"ledger/.claims/{run_id}", Body=claim)
    # The rerun does not take the claim for a sealed run ("already exists"): it waits until
    # the dead writer's presence is stale, then takes the claim over and seals the run.
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(source)])
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        assert ledger.count() == 2
        assert verify_ledger(ledger).ok


@pytest.mark.slow
def test_conflicting_writers_seal_each_run_once(tmp_path: Path, s3_uri: str) -> None:
    """Two machines import the same runs at once: each run lands once, from one of them."""
    source = tmp_path / "source"
    write_runs(source, 6)
    roots = [tmp_path / "one", tmp_path / "two"]
    for root in roots:
        Ledger.init(root, storage=s3_uri).close()
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentledger",
                "import",
                "--ledger",
                str(root),
                "--batch-size",
                "2",
                str(source),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root in roots
    ]
    outcomes = [writer.communicate(timeout=180) for writer in writers]
    codes = [writer.returncode for writer in writers]
    # The slower one may meet a run the other sealed between its check and its claim: the
    # same bytes, so it is counted as already imported, not an error.
    assert codes == [0, 0], outcomes
    storage = storage_at(s3_uri)
    run_ids = sorted(storage.run_ids())
    assert len(run_ids) == 6
    read = storage.journal.read()
    assert read.problems == []
    assert sorted(entry.id for entry in read.entries if entry.kind == "run") == run_ids
    for root in roots:
        assert _agentledger("import", "--ledger", str(root), str(source)).returncode == 0
        with Ledger.open(root) as ledger:
            assert ledger.reindex().indexed == 6
            assert verify_ledger(ledger).ok


def test_the_everyday_commands_work_unchanged_on_s3(tmp_path: Path, s3_uri: str) -> None:
    """A session as a user would have it, every command against an S3 ledger."""
    root = _imported(tmp_path, s3_uri)
    ledger = ("--ledger", str(root))

    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == code, (args, result.output)
        return result.output

    listed = json.loads(run("runs", *ledger, "--json"))
    run_id = sorted(run["run_id"] for run in listed)[0]
    assert "Symptom number 0." in run("show", *ledger, run_id[:16], "--file", "PROMPT.txt")
    assert run_id in run("show", *ledger, run_id)
    judged = CliRunner().invoke(main, ["judge", *ledger])
    assert judged.exit_code in (0, 1) and "scored 3 runs" in judged.output
    assert "already scored" in run("judge", *ledger, code=judged.exit_code)
    run("label", *ledger, run_id, "--verdict", "unsafe", "--by", "ana", "--reason", "no check")
    assert "ana" in run("labels", "list", *ledger)
    assert "claude-haiku-4-5" in run("report", "verdicts", *ledger)
    run("export", *ledger, "-o", str(tmp_path / "run_index.json"))
    assert len(json.loads((tmp_path / "run_index.json").read_text())["runs"]) == 3
    assert run("sql", *ledger, "SELECT count(*) AS n FROM runs").split()[-1] == "3"
    run("reindex", *ledger)
    run("gc", *ledger)
    head = run("checkpoint", *ledger).splitlines()[0]
    assert "OK" in run("verify", *ledger, "--checkpoint", head)


def test_a_new_handle_catches_up_with_a_long_journal_in_few_round_trips(s3_uri: str) -> None:
    writer = storage_at(s3_uri)
    for number in range(30):
        writer.create(f"labels/run-1/l{number}.json", b"{}")
    reader = storage_at(s3_uri)  # a process that has read none of it
    calls: list[str] = []
    reader.store.client.meta.events.register(
        "before-call.s3.*", lambda model, **_: calls.append(model.name)
    )
    entries = reader.journal.entries()
    # The start of the journal, then each label's intent and its acceptance: 61 segments.
    assert [entry.seq for entry in entries] == list(range(1, 62))
    assert entries == writer.journal.read().entries
    assert calls.count("ListObjectsV2") == 1  # one listing finds the segments ahead
    assert calls.count("GetObject") == 62  # each fetched once, 60 of them at once
