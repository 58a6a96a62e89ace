"""A ledger on S3 read with credentials that may only read, and rolled back in its bucket.

Against the real S3 test server (tests/s3_server.py), whose READ_ONLY_KEY may only GET and
HEAD: `verify`, `runs` and `report verdicts` work with it and leave the bucket as it was, and
a writer with it stops with a clear error, nothing written. An older journal object put back
(the bucket restored from an earlier copy, or its last segment deleted) is noticed by the next
command: `verify` exits 3 naming both heads, and writers refuse until the rollback is accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.store.storage.s3 import parse_location
from agentledger.store.storage.s3.client import ObjectStore
from many_runs import write_runs
from s3_server import READ_ONLY_KEY

pytestmark = [pytest.mark.usefixtures("s3_env"), pytest.mark.slow]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def client(uri: str) -> Any:
    return ObjectStore(parse_location(uri.removeprefix("s3://"))).client


def objects(uri: str) -> dict[str, str]:
    """Every object of the bucket, with its ETag."""
    bucket = uri.removeprefix("s3://").split("/")[0]
    pages = client(uri).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {item["Key"]: item["ETag"] for page in pages for item in page.get("Contents", [])}


def judged(tmp_path: Path, uri: str) -> Path:
    write_runs(tmp_path / "source", 3)
    root = tmp_path / "ledger"
    assert cli("init", str(root), "--storage", uri)[0] == 0
    code, _out, err = cli("import", "--ledger", str(root), str(tmp_path / "source"))
    assert code == 0, err
    assert cli("judge", "--ledger", str(root))[0] == 0
    return root


def test_read_only_credentials_verify_and_report_and_write_nothing(
    tmp_path: Path, s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = judged(tmp_path, s3_uri)
    before = objects(s3_uri)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", READ_ONLY_KEY)
    with pytest.raises(Exception, match="AccessDenied"):  # the server holds the key to reading
        client(s3_uri).put_object(Bucket=s3_uri.split("/")[2], Key="x", Body=b"x")
    code, out, err = cli("verify", "--ledger", str(root))
    assert code == 0, (out, err)
    assert out.rstrip().endswith(": OK") and "3 runs" in out, (out, err)
    code, out, err = cli("runs", "--ledger", str(root))
    assert code == 0 and out.count("_haiku_") == 3, (out, err)
    code, out, err = cli("report", "verdicts", "--ledger", str(root))
    assert code == 0 and "3 judged run(s)" in out, (out, err)
    # A writer with these credentials stops, saying why; nothing lands.
    run_id = out and sorted(k.split("/")[2] for k in before if k.endswith("MANIFEST.json"))[0]
    argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
    code, out, err = cli(*argv)
    assert code in (2, 3) and "Traceback" not in err, (code, out, err)
    assert "denied" in err.lower() or "refused" in err.lower(), err
    assert objects(s3_uri) == before


def test_an_older_journal_object_restored_in_the_bucket_is_noticed(
    tmp_path: Path, s3_uri: str
) -> None:
    root = judged(tmp_path, s3_uri)
    bucket = s3_uri.removeprefix("s3://").split("/")[0]
    s3 = client(s3_uri)
    old = objects(s3_uri)
    code, old_head, _err = cli("checkpoint", "--ledger", str(root))
    assert code == 0
    run_id = sorted(k.split("/")[2] for k in old if k.endswith("MANIFEST.json"))[0]
    argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
    assert cli(*argv)[0] == 0
    code, new_head, _err = cli("checkpoint", "--ledger", str(root))
    assert new_head != old_head
    # The bucket put back as it was: every object the label added removed (journal included).
    added = sorted(set(objects(s3_uri)) - set(old))
    assert any(key.startswith("ledger/journal/") for key in added), added
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key} for key in added]})
    code, out, err = cli("verify", "--ledger", str(root))
    assert code == 3 and "rollback" in out, (out, err)
    assert old_head.strip() in out and new_head.strip() in out
    code, _out, err = cli("runs", "--ledger", str(root))
    assert code == 0 and "rolled back" in err
    code, _out, err = cli(*argv)
    assert code == 3 and "refused to write, nothing was written" in err, err
    assert set(objects(s3_uri)) == set(old)
    assert cli("checkpoint", "--accept-current", "--ledger", str(root))[0] == 0
    assert cli("reindex", "--ledger", str(root))[0] == 0  # the index forgets the lost label
    assert cli(*argv)[0] == 0
    code, out, err = cli("verify", "--ledger", str(root))
    assert code == 0, (out, err)
