"""Writing and sealing runs, and querying them back."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentledger import Ledger, RunFilter, effective_prompt
from agentledger.errors import (
    ArtifactTooLargeError,
    InputError,
    LedgerNotFoundError,
    RunExistsError,
    UnsafeNameError,
)
from agentledger.identity import normalize_hash_prefix, sha256_bytes
from agentledger.records import RunSummary
from agentledger.store import RunContent, verify_ledger
from agentledger.store.index import format_time
from agentledger.store.writer import record_bytes
from conftest import BASE_PROMPT, T0, WriteRun, make_metadata, staging_entries


def test_init_creates_a_ledger_that_opens(tmp_path: Path) -> None:
    with Ledger.init(tmp_path / "l") as created:
        assert created.config.max_artifact_bytes == 100 * 1024 * 1024
    with Ledger.open(tmp_path / "l") as opened:
        assert opened.count() == 0
    with pytest.raises(InputError, match="already holds a ledger"):
        Ledger.init(tmp_path / "l")


def test_opening_no_ledger_or_a_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerNotFoundError, match="no ledger at"):
        Ledger.open(tmp_path / "nothing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(LedgerNotFoundError, match="is a file"):
        Ledger.open(tmp_path / "file")
    with pytest.raises(LedgerNotFoundError, match="is a file"):
        Ledger.init(tmp_path / "file")


def test_sealed_run_is_read_only_with_a_manifest_of_every_file(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    run_dir = ledger.root / "runs" / run_id
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    names = sorted(p.name for p in run_dir.iterdir())
    assert names == sorted([*manifest["files"], "MANIFEST.json"])
    assert set(manifest["files"]) >= {
        "metadata.json",
        "run_summary.json",
        "PROMPT.txt",
        "system_prompt.txt",
        "report.md",
        "audit.md",
        "shell_audit.jsonl",
    }
    for name, entry in manifest["files"].items():
        data = (run_dir / name).read_bytes()
        assert entry == {"sha256": sha256_bytes(data), "size": len(data)}
    for path in [run_dir, *run_dir.iterdir()]:
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert not list((ledger.root / ".staging").iterdir())


def test_system_prompt_hash_can_be_rechecked_from_the_run(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run(addon=b"MANDATORY: check tc before netfilter.")
    stored = ledger.load(run_id)
    assert sha256_bytes(ledger.read_bytes(run_id, "system_prompt.txt")) == (
        stored.metadata.system_prompt_hash
    )
    assert stored.metadata.base_prompt_hash == sha256_bytes(BASE_PROMPT)


def test_summary_is_derived_from_the_shell_log(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    summary = ledger.load(run_id).summary
    assert summary is not None
    assert (summary.commands_run, summary.commands_denied, summary.derived) == (1, 1, True)
    assert summary.duration_s == 90


def test_existing_run_id_is_refused(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    before = ledger.read_bytes(run_id, "report.md")
    with pytest.raises(RunExistsError, match="never replaced"):
        write_run(run_id=run_id, report="# a different report\n")
    assert ledger.read_bytes(run_id, "report.md") == before
    assert ledger.count() == 1


def test_exception_while_writing_leaves_nothing(ledger: Ledger) -> None:
    meta = make_metadata("r1")
    with pytest.raises(RuntimeError), ledger.new_run(meta) as run:
        run.add_text("report.md", "half a report")
        raise RuntimeError("agent crashed")
    assert list((ledger.root / "runs").iterdir()) == []
    assert list((ledger.root / ".staging").iterdir()) == []
    assert ledger.count() == 0


@pytest.mark.parametrize("name", ["../escape.md", "/etc/passwd", "a/../../b", ".hidden", "x\ny"])
def test_unsafe_artifact_names_are_refused(ledger: Ledger, name: str) -> None:
    meta = make_metadata("r1")
    with pytest.raises(UnsafeNameError), ledger.new_run(meta) as run:
        run.add_text(name, "x")
    assert ledger.count() == 0
    assert not (ledger.root / "escape.md").exists()


def test_reserved_names_and_duplicates_are_refused(ledger: Ledger) -> None:
    meta = make_metadata("r1")
    with ledger.new_run(meta) as run:
        for reserved in ("metadata.json", "run_summary.json", "MANIFEST.json"):
            with pytest.raises(InputError):
                run.add_text(reserved, "{}")
        run.add_text("report.md", "one")
        with pytest.raises(InputError, match="already written"):
            run.add_text("report.md", "two")
    assert ledger.read_bytes("r1", "report.md") == b"one"


def test_artifact_over_the_limit_is_refused(tmp_path: Path) -> None:
    small = Ledger.init(tmp_path / "small", max_artifact_bytes=1024)
    meta = make_metadata("r1")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(4096))
    with (
        pytest.raises(ArtifactTooLargeError, match=r"4 KB, over the 1 KB limit"),
        small.new_run(meta) as run,
    ):
        run.add_file("attachments/big.bin", big)
    assert small.count() == 0 and list((small.root / ".staging").iterdir()) == []


def test_binary_attachments_are_kept_byte_for_byte(ledger: Ledger, tmp_path: Path) -> None:
    blob = bytes(range(256)) * 64
    (tmp_path / "pcap.bin").write_bytes(blob)
    meta = make_metadata("r1")
    with ledger.new_run(meta) as run:
        run.add_file("attachments/capture/pcap.bin", tmp_path / "pcap.bin")
    assert ledger.read_bytes("r1", "attachments/capture/pcap.bin") == blob


@pytest.mark.parametrize("kernel", ["copies", "cannot copy"])
@pytest.mark.parametrize(
    "size",
    [3 * 1024 * 1024 + 17, 5000, 0],  # more than one buffer's worth; small (through memory)
)
def test_attachments_copied_by_the_kernel_or_through_a_buffer_are_hashed_as_stored(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str, size: int
) -> None:
    blob = os.urandom(size)
    (tmp_path / "trace.json").write_bytes(blob)
    if kernel == "cannot copy":

        def refuse(*_args: object) -> int:
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse)
    with ledger.new_run(make_metadata("r1")) as run:
        run.add_file("attachments/trace.json", tmp_path / "trace.json")
    assert ledger.read_bytes("r1", "attachments/trace.json") == blob
    entry = ledger.load("r1").manifest.files["attachments/trace.json"]
    assert (entry.sha256, entry.size) == (sha256_bytes(blob), len(blob))
    assert verify_ledger(ledger).ok


def _ids(ledger: Ledger, **kwargs: object) -> set[str]:
    return {run.run_id for run in ledger.runs(RunFilter(**kwargs))}  # type: ignore[arg-type]


def test_queries_by_every_identity_field(ledger: Ledger, write_run: WriteRun) -> None:
    haiku = write_run("use_case_f", "claude-haiku-4-5", tags={"suite": "netops"})
    gemini = write_run("use_case_f", "gemini-2.5-flash", model_served="gemini-2.5-flash-001")
    variant = write_run(
        "use_case_m",
        "gemini-2.5-flash",
        addon=b"MANDATORY",
        variant="variant-a",
        started_at=T0 + timedelta(days=30),
    )
    old = write_run(
        "use_case_m", "claude-haiku-4-5", started_at=T0 - timedelta(days=30), backfilled=True
    )
    base_hash = ledger.load(haiku).metadata.system_prompt_hash
    variant_hash = ledger.load(variant).metadata.system_prompt_hash
    assert base_hash and variant_hash and base_hash != variant_hash

    assert _ids(ledger, models=("claude-haiku-4-5",)) == {haiku, old}
    assert _ids(ledger, scenarios=("use_case_f",)) == {haiku, gemini}
    assert _ids(ledger, prompt_hash=normalize_hash_prefix(variant_hash[7:15])) == {variant}
    assert _ids(ledger, models=("gemini-2.5-flash",), prompt_hash=base_hash) == {gemini}
    assert _ids(ledger, variant="variant-a") == {variant}
    assert _ids(ledger, model_served="gemini-2.5-flash-001") == {gemini}
    assert _ids(ledger, since=T0 + timedelta(days=1)) == {variant}
    assert _ids(ledger, until=T0) == {old}
    assert _ids(ledger, tags=(("suite", "netops"),)) == {haiku}
    assert _ids(ledger, tags=(("suite", "other"),)) == set()
    assert _ids(ledger, backfilled=True) == {old}
    assert _ids(ledger, backfilled=False) == {haiku, gemini, variant}
    newest_first = [run.run_id for run in ledger.runs(RunFilter(limit=2))]
    assert newest_first == [variant, gemini]


def test_resolve_accepts_unambiguous_prefixes(ledger: Ledger, write_run: WriteRun) -> None:
    first = write_run("use_case_f", "claude-haiku-4-5")
    write_run("use_case_m", "claude-haiku-4-5")
    assert ledger.resolve("use_case_f") == first
    with pytest.raises(InputError, match="matches several runs"):
        ledger.resolve("use_case")
    with pytest.raises(InputError, match="no run matches"):
        ledger.resolve("nope")


def test_reindex_gives_the_same_answers(ledger: Ledger, write_run: WriteRun) -> None:
    for model in ("claude-haiku-4-5", "gemini-2.5-flash"):
        for scenario in ("use_case_b", "use_case_f", "use_case_m"):
            write_run(scenario, model, tags={"model_family": model.split("-")[0]})
    queries = [
        RunFilter(),
        RunFilter(models=("gemini-2.5-flash",)),
        RunFilter(scenarios=("use_case_f",), tags=(("model_family", "claude"),)),
        RunFilter(
            prompt_hash=normalize_hash_prefix(effective_prompt(BASE_PROMPT).system_prompt_hash[:15])
        ),
    ]
    before = [ledger.runs(q) for q in queries]
    (ledger.root / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (ledger.root / f"index.sqlite{suffix}").unlink(missing_ok=True)
    ledger.close()
    report = Ledger.reindex_from_scratch(ledger.root)
    assert report.indexed == 6 and not report.skipped
    with Ledger.open(ledger.root) as reopened:
        assert [reopened.runs(q) for q in queries] == before


def test_default_ledger_location_and_env_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentledger.store import default_ledger_path

    assert default_ledger_path() == Path(".agentledger")
    monkeypatch.setenv("AGENTLEDGER_DIR", str(tmp_path / "elsewhere"))
    assert default_ledger_path() == tmp_path / "elsewhere"


def test_times_are_stored_in_utc(ledger: Ledger, write_run: WriteRun) -> None:
    from zoneinfo import ZoneInfo

    local = datetime(2026, 3, 12, 12, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    run_id = write_run(started_at=local)
    stored = ledger.load(run_id).metadata.started_at
    assert stored == local and stored is not None and stored.tzinfo == UTC
    assert _ids(ledger, since=datetime(2026, 3, 12, 11, 0, tzinfo=UTC)) == {run_id}


# -- sealing runs known up front (Ledger.seal_runs, what an import uses) -----------------------


def _content(run_id: str, tmp_path: Path, **changes: object) -> RunContent:
    source = tmp_path / f"{run_id}-report.md"
    source.write_text(f"# Report of {run_id}\n")
    return RunContent(
        make_metadata(run_id, **changes),
        RunSummary(commands_run=2, commands_denied=1, derived=True),
        [
            ("PROMPT.txt", b"the symptom\n"),
            ("report.md", str(source)),
            ("attachments/deep/capture.bin", os.urandom(3000)),
        ],
    )


def _modes_are_sealed(run_dir: Path) -> None:
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o555
    for path in run_dir.rglob("*"):
        expected = 0o555 if path.is_dir() else 0o444
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_seal_runs_seals_in_batches_like_seal(ledger: Ledger, tmp_path: Path) -> None:
    contents = [_content(f"bulk-{n}", tmp_path) for n in range(7)]
    done: list[int] = []

    sealed = ledger.seal_runs(iter(contents), batch_size=3, progress=done.append)

    assert [run.run_id for run in sealed] == [f"bulk-{n}" for n in range(7)]
    assert done == [3, 6, 7]
    assert sorted(p.name for p in (ledger.root / "runs").iterdir()) == sorted(
        run.run_id for run in sealed
    )
    assert staging_entries(ledger.root) == []
    assert ledger.count() == 7
    for run in sealed:
        run_dir = ledger.root / "runs" / run.run_id
        _modes_are_sealed(run_dir)
        raw = (run_dir / "MANIFEST.json").read_bytes()
        assert sha256_bytes(raw) == run.manifest_sha256
        assert raw == record_bytes(run.manifest)
        stored = ledger.load(run.run_id)
        assert stored.manifest == run.manifest
        assert set(stored.manifest.files) == {
            "PROMPT.txt",
            "report.md",
            "attachments/deep/capture.bin",
            "metadata.json",
            "run_summary.json",
        }
        assert (run_dir / "report.md").read_text() == f"# Report of {run.run_id}\n"
        assert stored.summary is not None and stored.summary.commands_denied == 1
    assert verify_ledger(ledger).ok


def test_seal_runs_refuses_what_the_ledger_writes_itself(ledger: Ledger, tmp_path: Path) -> None:
    good = _content("good", tmp_path)
    bad = RunContent(good.metadata.model_copy(update={"run_id": "bad"}), good.summary, [
        ("metadata.json", b"{}"),
    ])  # fmt: skip
    with pytest.raises(InputError, match="written by the ledger"):
        ledger.seal_runs([good, bad], batch_size=10)
    assert not (ledger.root / "runs" / "good").exists()
    assert staging_entries(ledger.root) == []
    assert ledger.count() == 0


def test_seal_runs_keeps_batches_that_landed_before_a_failure(tmp_path: Path) -> None:
    with Ledger.init(tmp_path / "small", max_artifact_bytes=4096) as ledger:
        contents = [_content(f"ok-{n}", tmp_path) for n in range(4)]
        too_big = _content("too-big", tmp_path)
        too_big = RunContent(too_big.metadata, too_big.summary, [("big.bin", b"x" * 5000)])
        with pytest.raises(ArtifactTooLargeError, match=r"big\.bin"):
            ledger.seal_runs([*contents, too_big], batch_size=2)
        assert sorted(p.name for p in (tmp_path / "small/runs").iterdir()) == [
            f"ok-{n}" for n in range(4)
        ]
        assert staging_entries(ledger.root) == []
        assert ledger.count() == 4
        assert verify_ledger(ledger).ok


def test_seal_runs_never_replaces_a_sealed_run(ledger: Ledger, tmp_path: Path) -> None:
    with ledger.new_run(make_metadata("taken")) as run:
        run.add_text("report.md", "first\n")
    with pytest.raises(RunExistsError, match="taken"):
        ledger.seal_runs([_content("taken", tmp_path), _content("free", tmp_path)])
    assert (ledger.root / "runs/taken/report.md").read_text() == "first\n"
    assert (ledger.root / "runs/free").is_dir()
    assert staging_entries(ledger.root) == []
    assert ledger.count() == 2
    assert verify_ledger(ledger).ok


def test_a_ledger_given_as_a_relative_path(tmp_path: Path) -> None:
    # The tests run in tmp_path: "rel" is relative to the working directory.
    with Ledger.init("rel") as ledger:
        with ledger.new_run(make_metadata("one")) as run:
            run.add_text("report.md", "one\n")
        ledger.seal_runs([_content("two", tmp_path)])
        assert sorted(p.name for p in (tmp_path / "rel/runs").iterdir()) == ["one", "two"]
        assert staging_entries(ledger.root) == []
        assert verify_ledger(ledger).ok


def test_files_are_read_only_whatever_the_umask(ledger: Ledger, tmp_path: Path) -> None:
    old = os.umask(0o077)  # would leave files 0400 if their mode were only set at creation
    try:
        with ledger.new_run(make_metadata("writer")) as run:
            run.add_text("report.md", "x\n")
        ledger.seal_runs([_content("bulk", tmp_path)])
    finally:
        os.umask(old)
    _modes_are_sealed(ledger.root / "runs" / "writer")
    _modes_are_sealed(ledger.root / "runs" / "bulk")


def test_a_dead_importers_batch_is_debris_for_gc(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    code = (
        "import sys, os\n"
        "from agentledger.store import Ledger\n"
        "ledger = Ledger.open(sys.argv[1])\n"
        "staged = ledger.storage.stage_batch(['a', 'b'], 1000)\n"
        "staged[0].write_all([('report.md', b'half')])\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, timeout=60)
    with Ledger.open(root) as ledger:
        debris = staging_entries(root)
        assert len(debris) == 1 and debris[0].startswith("_batch.")
        report = verify_ledger(ledger)
        assert [(p.kind, p.run_id) for p in report.problems] == [("leftover", debris[0])]
        assert ledger.gc().removed == debris
        assert staging_entries(root) == []
        assert verify_ledger(ledger).ok


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 3, 12, 10, 15, tzinfo=UTC),
        datetime(2026, 3, 12, 10, 15, 1, 999, tzinfo=UTC),
        datetime(2026, 3, 12, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-5))),
        datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC),
    ],
)
def test_index_times_are_fixed_width_utc(moment: datetime) -> None:
    assert format_time(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
