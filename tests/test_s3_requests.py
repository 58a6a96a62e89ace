"""The S3 requests of an import, a score and a verify, pinned, and the checks they were cut to.

Counted on the storage's own boto3 client (`ObjectStore.calls`: botocore's ``before-call``
event, each operation once, botocore's retries aside), against moto's server over HTTP as
everywhere in the S3 tests. A change that adds a round trip per run, per batch or per score
fails here; one that removes one updates the figures and says why the guarantee it served
still holds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from agentledger import Ledger
from agentledger.errors import RecordExistsError, UnsafeNameError
from agentledger.importers.directory import plan_import, write_plan
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge
from agentledger.judges.scoring import score_runs
from agentledger.store import verify_ledger
from agentledger.store.storage.s3 import S3Storage, parse_location
from agentledger.store.storage.s3 import storage as s3_storage
from many_runs import write_runs

pytestmark = pytest.mark.usefixtures("s3_env")


def storage_at(uri: str) -> S3Storage:
    """A handle of its own on the storage at `uri`, as another machine would have."""
    return S3Storage(parse_location(uri.removeprefix("s3://")))


def sent(storage: S3Storage, step: Callable[[], object]) -> Counter[str]:
    """The requests `storage` asked for while `step` ran, by operation (botocore's retries of a
    request a loaded test server was slow to answer are not the code's and not counted)."""
    before = Counter(storage.store.calls)
    step()
    return Counter(storage.store.calls) - before


@pytest.fixture
def long_lease(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease that is never renewed within a test: no renewal lands inside a counted step.
    (After `s3_env`, which sets the tests' 3 s lease: a loaded machine renewed it mid-step.)"""
    monkeypatch.setenv("AGENTLEDGER_S3_LEASE_SECONDS", "3600")


@pytest.mark.usefixtures("long_lease")
def test_an_import_and_its_scores_take_the_requests_pinned_here(
    tmp_path: Path, s3_uri: str
) -> None:
    runs = 8  # enough that whether each is scored already is listed, not looked up
    source = tmp_path / "source"
    write_runs(source, runs)
    with Ledger.init(tmp_path / "ledger", storage=s3_uri) as ledger:
        storage = ledger.storage
        assert isinstance(storage, S3Storage)
        plan = plan_import([source], ledger=ledger)
        imported = sent(storage, lambda: write_plan(ledger, plan))
        run_ids = sorted(storage.run_ids())
        manifests = [json.loads(storage.read(run_id, "MANIFEST.json")) for run_id in run_ids]
        files = {len(manifest["files"]) for manifest in manifests}
        assert len(run_ids) == runs and len(files) == 1
        (per_run,) = files  # the run's artifacts, metadata.json and run_summary.json

        # Each run: its claim, its files written straight into runs/ (small: held in memory
        # until published), MANIFEST.json last (If-None-Match), and a HEAD that it was not
        # sealed by another writer since the claim. The batch (one, here): the writer's
        # presence; the journal lock taken (GET, PUT If-Match), the store's conditional writes
        # checked (a PUT If-None-Match on the lock, refused) and the lock let go; two journal
        # segments, the intent naming every manifest and then the entries (If-None-Match,
        # after the head this handle read: GET of segment 1, a listing after it, GET of
        # segment 2: none); the staging area and the claims deleted, the presence deleted.
        assert imported == {
            "PutObject": runs * (1 + per_run + 1) + 1 + 3 + 2,
            "HeadObject": runs,
            "GetObject": 1 + 2,
            "ListObjectsV2": 1,
            "DeleteObjects": 2,
        }

        judge = RulesJudge(load_pack())
        scored = sent(storage, lambda: score_runs(ledger, judge, run_ids))
        # First, one listing of the scores: which runs this judge has scored already. Then
        # each score: a HEAD whether it was scored meanwhile (by another invocation), just
        # before judging; the run's files and MANIFEST.json read; the journal lock taken (one
        # PUT If-Match on the ETag it was let go with), the conditional writes checked (one
        # PUT, refused) and the lock let go; one listing for a key the score cannot sit beside;
        # the intent's segment, the score and its entry's segment (If-None-Match, at the head
        # this handle wrote last: no read of the journal first). Before a run is read, its
        # MANIFEST.json is held to the journal's accepted entry, which this handle already
        # holds (read at open, its own appends kept): no segment is read again.
        assert scored == {
            "HeadObject": runs,
            "GetObject": (per_run + 1) * runs,
            "ListObjectsV2": 1 + runs,
            "PutObject": 6 * runs,
        }
        assert verify_ledger(ledger).ok


@pytest.mark.usefixtures("long_lease")
@pytest.mark.parametrize("runs", [4, 12])
def test_verify_lists_the_runs_once_whatever_their_number(
    tmp_path: Path, s3_uri: str, runs: int
) -> None:
    source = tmp_path / "source"
    write_runs(source, runs)
    with Ledger.init(tmp_path / "ledger", storage=s3_uri) as ledger:
        storage = ledger.storage
        assert isinstance(storage, S3Storage)
        write_plan(ledger, plan_import([source], ledger=ledger))
        (run_id, *_others) = sorted(storage.run_ids())
        per_run = len(json.loads(storage.read(run_id, "MANIFEST.json"))["files"])
        reports = []
        verified = sent(storage, lambda: reports.append(verify_ledger(ledger)))
        assert reports[0].ok and reports[0].runs_checked == runs
        # Under the journal lock (taken, the conditional writes checked and let go: three
        # PUTs), one listing of runs/ (a page of 1,000 keys a request) gives every sealed run
        # with its files, so no run is listed again (it was one listing each); the journal's
        # keys, and its three segments read (genesis, the import's intent, its entries: a
        # listing after the first, to read the rest at once); the keys of scores, labels,
        # decisions, outcomes and label splits, and of the quarantine; the staging areas, the
        # claims and the groups' seals (leftovers). Then each file of each run read,
        # MANIFEST.json with them.
        assert verified == {
            "PutObject": 3,
            "ListObjectsV2": 1 + 2 + 6 + 3,
            "GetObject": 3 + runs * (per_run + 1),
        }


@pytest.mark.usefixtures("long_lease")
def test_an_append_after_a_stale_head_is_retried_after_the_new_one(s3_uri: str) -> None:
    """A handle appends after the head it saw last without reading the journal first; when
    another handle appended meanwhile, its segment's create fails, and it reads and retries."""
    one, two = storage_at(s3_uri), storage_at(s3_uri)
    one.journal.start("journal started with a new ledger")
    one.create("labels/run-1/a.json", b"1")  # one's head: entry 2
    two.create("labels/run-1/b.json", b"2")  # two reads up to entry 2, appends entry 3
    third = sent(one, lambda: one.create("labels/run-1/c.json", b"3"))
    # The lock (free again: one PUT If-Match takes it) and the store's conditional writes
    # checked (a PUT If-None-Match, refused); a HEAD that the label is not stored yet (a
    # refused create announces nothing); the intent tried as segment 4 (taken by two's
    # intent: 412), two's segments 4 and 5 read (a GET, a listing after it, a GET), no
    # segment 6 (a GET: none); the intent written as segment 6, the clash listing, the label,
    # its entry as segment 7; the lock let go.
    assert third == {
        "PutObject": 1 + 1 + 1 + 1 + 1 + 1 + 1,
        "GetObject": 2 + 1,
        "ListObjectsV2": 1 + 1,
        "HeadObject": 1,
    }
    read = storage_at(s3_uri).journal.read()
    assert read.problems == []
    assert [entry.seq for entry in read.entries] == [1, 2, 3, 4, 5, 6, 7]
    accepted = [entry.id for entry in read.entries[1:] if entry.kind != "intent"]
    assert accepted == ["run-1/a", "run-1/b", "run-1/c"]
    assert one.journal.head() == two.journal.head() == read.head


@pytest.mark.parametrize("listing", [64, 2], ids=["one-listing", "looked-up-past-a-page"])
def test_what_a_key_cannot_sit_beside_is_found(
    s3_uri: str, listing: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clash check lists under a key's first parent: siblings that extend the parent's
    name (sorting before its '/' or after it) are passed over, a value at a parent, a sealed
    group or a key under the new one are found, in one listing or by looking each up."""
    monkeypatch.setattr(s3_storage, "_CLASH_LISTING", listing)
    storage = storage_at(s3_uri)
    for sibling in ("labels/run-1-b/l.json", "labels/run-1.b/l.json", "labels/run-10/l.json"):
        storage.create(sibling, b"a sibling")
    storage.create("labels/run-1-a", b"a sibling value")
    storage.create("labels/run-1/a/l.json", b"deeper")
    storage.create("labels/run-1/b.json", b"beside")  # siblings are no clash
    with pytest.raises(RecordExistsError, match=r"labels/run-1/a/l\.json"):
        storage.create("labels/run-1/a", b"over a value")
    with pytest.raises(RecordExistsError, match=r"labels/run-1/b\.json"):
        storage.create("labels/run-1/b.json/x", b"under a value")
    storage.create("labels/run-2", b"a value")
    with pytest.raises(RecordExistsError, match="labels/run-2 is stored"):
        storage.create("labels/run-2/x/y.json", b"under a value two levels up")
    storage.create_group("decisions/d1", {"decision.json": b"{}"})
    with pytest.raises(RecordExistsError, match=r"decisions/d1/\.group"):
        storage.create("decisions/d1/late.md", b"into a sealed group")
    assert storage.keys("labels") == [
        "labels/run-1-a",
        "labels/run-1-b/l.json",
        "labels/run-1.b/l.json",
        "labels/run-1/a/l.json",
        "labels/run-1/b.json",
        "labels/run-10/l.json",
        "labels/run-2",
    ]


def test_which_scores_exist_is_listed_within_a_budget_then_looked_up(s3_uri: str) -> None:
    """`existing` lists at most a page per 8 keys asked about, in key order, and looks up
    (HEAD) the keys its listing did not reach: the same answer either way."""
    storage = storage_at(s3_uri)
    stored = [f"scores/run-{n:02d}/rules-0123456789ab.json" for n in range(0, 40, 2)]
    storage.store.map(lambda key: storage.store.put(key, b"{}"), stored)
    asked = [f"scores/run-{n:02d}/rules-0123456789ab.json" for n in range(16)]
    listed = sent(storage, lambda: storage.existing(asked))
    assert storage.existing(asked) == set(stored) & set(asked)
    assert listed == {"ListObjectsV2": 1}  # 20 keys: one page of 1,000
    storage.store.page_size = 4  # the budget: 2 pages of 4 keys, then a HEAD each past them
    looked = sent(storage, lambda: storage.existing(asked))
    assert storage.existing(asked) == set(stored) & set(asked)
    past = [key for key in asked if key > stored[7]]  # the 8th key listed
    assert past and looked == {"ListObjectsV2": 2, "HeadObject": len(past)}


def test_nothing_is_created_under_a_journal_key(s3_uri: str) -> None:
    """What lets a segment skip the clash check: a journal key has no parent to clash with,
    and no key is ever created under one."""
    storage = storage_at(s3_uri)
    storage.journal.start("journal started with a new ledger")
    with pytest.raises(UnsafeNameError, match="segments"):
        storage.create("journal/000000000002.jsonl/x", b"under a segment to be")
    with pytest.raises(UnsafeNameError, match="segments"):
        storage.create_group("journal/000000000002.jsonl", {"x": b"a group"})
    storage.create("labels/run-1/a.json", b"1")  # its intent, then its entry
    assert storage.keys("journal") == [f"journal/00000000000{n}.jsonl" for n in (1, 2, 3)]
