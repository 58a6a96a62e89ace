"""`agentledger import`: backfilling runs kept as directories, and refusing bad ones."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.cli import main
from agentledger.errors import InputError, RecordError
from agentledger.importers import (
    ARTIFACT_KEYS,
    ImportOptions,
    find_run_dirs,
    import_runs,
    plan_import,
    sample_runs_dir,
    shell_log,
    write_plan,
)
from agentledger.importers import workers as import_workers
from agentledger.importers.identity_fields import day
from agentledger.importers.shell_log import ShellCounts, check_shell_log
from agentledger.records import RunMetadata, RunSummary, ShellEvent, parse_shell_audit
from agentledger.store import Ledger, verify_ledger
from agentledger.store.sizes import parse_size
from exact_output import normalised

SYSTEM_PROMPT = b"You are Ghost, a network forensics agent. Investigate, then report.\n"
FULL_HASH = "sha256:" + hashlib.sha256(SYSTEM_PROMPT).hexdigest()
SHORT_HASH = FULL_HASH[7:15]
SHELL_AUDIT = [
    {"timestamp": "2026-03-12T10:15:02Z", "command": "ping -c 5 10.0.3.5", "decision": "allowed"},
    {"timestamp": "2026-03-12T10:15:41Z", "command": "iptables -L -n -v", "exit_code": 0},
    {"timestamp": "2026-03-12T10:16:14Z", "command": "tc qdisc show dev eth0", "exit_code": 0},
    {"timestamp": "2026-03-12T10:16:49Z", "command": "tc qdisc del dev eth0 root",
     "decision": "denied", "reason": "mutating"},
]  # fmt: skip

SeedRun = Callable[..., Path]


def agentledger(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def seed_metadata(run_id: str, **changes: Any) -> dict[str, Any]:
    """metadata.json exactly as the seed's eval runner wrote it."""
    data = {
        "run_id": run_id,
        "system_prompt_hash": SHORT_HASH,
        "ghost_agent_commit": "7f555a1",
        "model": "claude-haiku-4-5",
        "silent_update_detectable": False,
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


@pytest.fixture
def seed_run(tmp_path: Path) -> SeedRun:
    """Write one run directory in the seed's layout; keyword arguments change its files."""

    def write(
        name: str = "use_case_m_haiku_20260312",
        *,
        parent: Path | None = None,
        metadata: dict[str, Any] | bool | None = True,
        summary: dict[str, Any] | None = None,
        files: dict[str, bytes | str] | None = None,
    ) -> Path:
        day = "20260312"
        directory = (parent or tmp_path / "runs") / name
        directory.mkdir(parents=True)
        content: dict[str, bytes | str] = {
            "PROMPT.txt": "Requests from vm-api-01 to 10.0.3.5:5432 see 200 ms extra latency.\n",
            f"ghost_report_{day}.md": "# Report\n\n## Root cause\nnetem qdisc on eth0.\n",
            f"ghost_audit_{day}.md": "# Trace\nChecked iptables (empty), then tc.\n",
            f"shell_audit_{day}.jsonl": "".join(json.dumps(e) + "\n" for e in SHELL_AUDIT),
        }
        if metadata is True:
            content["metadata.json"] = json.dumps(seed_metadata(name), indent=2) + "\n"
        elif isinstance(metadata, dict):
            content["metadata.json"] = json.dumps(metadata, indent=2) + "\n"
        if summary is not None:
            content["run_summary.json"] = json.dumps(summary, indent=2) + "\n"
        content.update(files or {})
        for relative, data in content.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.encode() if isinstance(data, str) else data)
        return directory

    return write


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger"


def stored_runs(ledger_path: Path) -> list[str]:
    runs = ledger_path / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def stored_metadata(ledger_path: Path, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ledger_path / "runs" / run_id / "metadata.json").read_text())
    return data


# -- the seed's layout ---------------------------------------------------------------------


def test_import_one_run_in_the_seeds_layout(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run(summary={"commands_executed": 3, "duration_seconds": 118.6})

    result = agentledger("import", run, "--ledger", ledger_path)

    assert result.exit_code == 0, result.output
    assert result.stdout == f"Imported 1 run into {ledger_path}.\n"
    assert result.stderr == f"Created a new ledger at {ledger_path}\n"
    stored = ledger_path / "runs" / "use_case_m_haiku_20260312"
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file()) == [
        "MANIFEST.json",
        "PROMPT.txt",
        "audit.md",
        "metadata.json",
        "report.md",
        "run_summary.json",
        "shell_audit.jsonl",
    ]
    # the foreign records are kept, as JSON, in the provenance of the ledger's own metadata
    kept = stored_metadata(ledger_path, "use_case_m_haiku_20260312")["source"]
    for name, key in (
        ("metadata.json", "original_metadata"),
        ("run_summary.json", "original_summary"),
    ):
        assert kept[key] == json.loads((run / name).read_text())
        assert kept["files"][name] == f"metadata.json source.{key}"
    assert (stored / "report.md").read_bytes() == (run / "ghost_report_20260312.md").read_bytes()

    metadata = stored_metadata(ledger_path, "use_case_m_haiku_20260312")
    assert metadata["scenario"] == "use_case_m"  # from the directory name
    assert metadata["model"] == "claude-haiku-4-5"  # from metadata.json, not "haiku"
    assert metadata["system_prompt_hash"] == "sha256:" + SHORT_HASH
    assert metadata["agent"] == {"name": None, "commit": "7f555a1", "dirty": None}
    assert metadata["started_at"] == "2026-03-12T00:00:00Z"
    assert metadata["backfilled"] is True
    assert metadata["source"]["importer"] == "directory"
    assert metadata["source"]["files"]["ghost_report_20260312.md"] == "report.md"
    assert metadata["source"]["fields"]["scenario"] == "directory name"
    assert metadata["source"]["fields"]["model"] == "metadata.json"

    summary = json.loads((stored / "run_summary.json").read_text())
    assert summary["commands_run"] == 3  # commands_executed in the runner's summary
    assert summary["commands_denied"] == 1  # not in it: counted from the shell audit
    assert summary["duration_s"] == 118.6
    assert summary["derived"] is False


def test_summary_is_derived_when_the_run_has_none(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run()

    assert agentledger("import", run, "--ledger", ledger_path).exit_code == 0

    summary = json.loads((ledger_path / "runs" / run.name / "run_summary.json").read_text())
    assert summary["commands_run"] == 3
    assert summary["commands_denied"] == 1
    assert summary["duration_s"] is None  # a day from a name is no start time
    assert summary["derived"] is True


def test_a_directory_of_runs(seed_run: SeedRun, tmp_path: Path, ledger_path: Path) -> None:
    names = ["use_case_b_gemini_20260308", "use_case_f_haiku_20260309", "use_case_m_haiku_20260312"]
    for name in names:
        seed_run(name, metadata=seed_metadata(name, model=None))
    (tmp_path / "runs" / "run_index.json").write_text("{}\n")  # the seed's index: not a run

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path)

    assert result.exit_code == 0, result.output
    assert normalised(result.stdout, tmp_path) == "Imported 3 runs into /home/ops/work/ledger.\n"
    assert stored_runs(ledger_path) == names
    assert stored_metadata(ledger_path, names[0])["model"] == "gemini"  # from the name only


def test_the_bundled_sample_runs(ledger_path: Path) -> None:
    result = agentledger(
        "import", sample_runs_dir(), "--ledger", ledger_path, "--tag", "sample=true",
        "--agent-name", "ghost",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert result.stdout == f"Imported 33 runs into {ledger_path}.\n"
    with Ledger.open(ledger_path) as ledger:
        runs = ledger.runs()
        assert len(runs) == 33
        assert {"use_case_b", "use_case_f", "use_case_m"} <= {run.scenario for run in runs}
        assert {run.model for run in runs} == {
            "gemini-2.5-flash",
            "claude-haiku-4-5",
            "claude-sonnet-4-6",
        }
        # the runs carry system_prompt.txt, so the short hash became the full one
        # base prompt and the variant-a addon: two experiments, each with its full hash
        assert len({run.system_prompt_hash for run in runs}) == 2
        assert all(len(run.system_prompt_hash or "") == len("sha256:") + 64 for run in runs)
        assert {run.run_id for run in runs if run.variant == "variant-a"} == {
            "use_case_m_gemini_20260320",
            "use_case_m_haiku_20260320",
            "use_case_m_sonnet_20260320",
        }
        assert all(run.metadata["tags"] == {"sample": "true"} for run in runs)
        assert ledger.read_bytes("use_case_f_haiku_20260309", "snapshot.json").count(
            b"Microsoft.Sql"
        )
        assert verify_ledger(ledger).ok


def test_sample_runs_are_packaged_data() -> None:
    directory = sample_runs_dir()
    runs = [p for p in directory.iterdir() if p.is_dir()]
    assert len(runs) == 33
    for run in runs:
        metadata = json.loads((run / "metadata.json").read_text())
        seed_fields = {
            "run_id", "system_prompt_hash", "ghost_agent_commit", "model",
            "silent_update_detectable",
        }  # fmt: skip
        variant_fields = {"variant", "prompt_addon", "base_prompt_hash"}
        assert seed_fields <= set(metadata) <= seed_fields | variant_fields
        prompt = (run / "system_prompt.txt").read_bytes()
        assert hashlib.sha256(prompt).hexdigest().startswith(metadata["system_prompt_hash"])
        assert sum(f.stat().st_size for f in run.iterdir()) < 20_000


# -- re-importing ----------------------------------------------------------------------------


def test_reimporting_the_same_content_is_a_no_op(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run()
    assert agentledger("import", run, "--ledger", ledger_path).exit_code == 0
    manifest = (ledger_path / "runs" / run.name / "MANIFEST.json").read_bytes()

    result = agentledger("import", run, "--ledger", ledger_path, "-v")

    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "use_case_m_haiku_20260312: already imported, identical\n"
        f"Imported 0 runs into {ledger_path}; 1 already imported, identical (nothing to do).\n"
    )
    assert (ledger_path / "runs" / run.name / "MANIFEST.json").read_bytes() == manifest


def test_the_same_run_found_under_another_name_is_identical(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    run = seed_run()
    assert agentledger("import", run, "--ledger", ledger_path).exit_code == 0
    moved = run.rename(tmp_path / "use_case_m_haiku_20260312_copy")

    result = agentledger("import", moved, "--ledger", ledger_path)

    assert result.exit_code == 0, result.output
    assert normalised(result.stdout, tmp_path) == (
        "Imported 0 runs into /home/ops/work/ledger; 1 already imported, identical "
        "(nothing to do).\n"
    )
    source = stored_metadata(ledger_path, run.name)["source"]
    assert source["directory"] == "use_case_m_haiku_20260312"  # the first import's record stays


def test_same_run_id_with_different_content_is_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    run = seed_run()
    assert agentledger("import", run, "--ledger", ledger_path).exit_code == 0
    (run / "ghost_report_20260312.md").write_text("# Report\nA different report.\n")
    (run / "notes.txt").write_text("added later\n")

    result = agentledger("import", run, "--ledger", ledger_path)

    assert result.exit_code == 2
    assert normalised(result.stderr, tmp_path) == (
        "Error: run use_case_m_haiku_20260312 (from "
        "/home/ops/work/runs/use_case_m_haiku_20260312) is already in the ledger "
        "with different content: attachments/notes.txt (not in the stored run), "
        "report.md differ. Sealed runs are never replaced; import this one under "
        "another run id (a --sidecar column 'run_id')\n"
    )
    assert normalised(result.stderr, tmp_path) == (
        "Error: run use_case_m_haiku_20260312 (from "
        "/home/ops/work/runs/use_case_m_haiku_20260312) is already in the ledger "
        "with different content: attachments/notes.txt (not in the stored run), "
        "report.md differ. Sealed runs are never replaced; import this one under "
        "another run id (a --sidecar column 'run_id')\n"
    )  # only its provenance differs


def test_a_changed_original_record_is_a_difference(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run(summary={"commands_executed": 6})
    assert agentledger("import", run, "--ledger", ledger_path).exit_code == 0
    stored = stored_metadata(ledger_path, run.name)["source"]
    assert stored["original_summary"] == {"commands_executed": 6}
    assert stored["original_sha256"]["run_summary.json"] == (
        "sha256:" + hashlib.sha256((run / "run_summary.json").read_bytes()).hexdigest()
    )
    (run / "run_summary.json").write_text('{"commands_executed": 6, "cost": 0.12}\n')

    result = agentledger("import", run, "--ledger", ledger_path)

    assert result.exit_code == 2
    assert "source.original_summary" in result.stderr and "different content" in result.stderr


def test_non_standard_json_numbers_are_refused(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run()
    (run / "run_summary.json").write_text('{"commands_executed": NaN}\n')

    result = agentledger("import", run, "--ledger", ledger_path)

    refused(result, ledger_path, "run_summary.json", "NaN is not a JSON number")


def test_imports_are_deterministic(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run(summary={"commands_executed": 3})
    for ledger in ("one", "two"):
        assert agentledger("import", run, "--ledger", tmp_path / ledger).exit_code == 0

    for name in ("metadata.json", "run_summary.json"):
        first = (tmp_path / "one/runs" / run.name / name).read_bytes()
        assert first == (tmp_path / "two/runs" / run.name / name).read_bytes()
    metadata = (tmp_path / "one/runs" / run.name / "metadata.json").read_bytes()
    assert str(tmp_path).encode() not in metadata  # no absolute paths, no import times


def test_integrity_holds_after_import(seed_run: SeedRun, tmp_path: Path) -> None:
    for name in ("use_case_b_haiku_20260308", "use_case_m_haiku_20260312"):
        seed_run(name)
    with Ledger.init(tmp_path / "ledger") as ledger:
        report = import_runs(ledger, [tmp_path / "runs"])
        assert report.imported == ["use_case_b_haiku_20260308", "use_case_m_haiku_20260312"]
        assert verify_ledger(ledger).ok
        assert ledger.count() == 2


# -- other layouts ---------------------------------------------------------------------------


def other_layout_run(root: Path, name: str) -> Path:
    directory = root / name
    (directory / "logs").mkdir(parents=True)
    (directory / "task.txt").write_text("Storage returns 403 from snet-app.\n")
    (directory / "final_answer.md").write_text("# Answer\nAdd Microsoft.Storage.\n")
    (directory / "thinking.md").write_text("Checked the network rules.\n")
    (directory / "logs" / "commands.jsonl").write_text(
        json.dumps({"cmd": "az storage account show -n st1", "status": "ok"}) + "\n"
    )
    (directory / "screenshot.png").write_bytes(b"\x89PNG\r\n")
    return directory


LAYOUT = (
    "--map", "prompt=task.txt", "--map", "report=final_answer.md",
    "--map", "audit=thinking.md", "--map", "shell_audit=logs/*.jsonl",
)  # fmt: skip


def test_another_layout_with_a_csv_sidecar(tmp_path: Path, ledger_path: Path) -> None:
    for name in ("run-a", "run-b"):
        other_layout_run(tmp_path / "exported", name)
    sidecar = tmp_path / "identity.csv"
    sidecar.write_text(
        "directory,scenario,model,started_at,run_id,tag:team\n"
        "run-a,use_case_f,gpt-4o,2026-02-01T09:30:00Z,use_case_f_gpt-4o_a,netops\n"
        "run-b,use_case_f,gpt-4o,2026-02-02T09:30:00Z,,netops\n"
    )

    result = agentledger(
        "import", tmp_path / "exported", "--ledger", ledger_path, *LAYOUT, "--sidecar", sidecar,
        "--provider", "openai",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert stored_runs(ledger_path) == ["run-b", "use_case_f_gpt-4o_a"]
    metadata = stored_metadata(ledger_path, "use_case_f_gpt-4o_a")
    assert metadata["model"] == "gpt-4o"
    assert metadata["provider"] == "openai"
    assert metadata["started_at"] == "2026-02-01T09:30:00Z"
    assert metadata["tags"] == {"team": "netops"}
    assert metadata["system_prompt_hash"] is None
    assert metadata["source"]["files"] == {
        "final_answer.md": "report.md",
        "logs/commands.jsonl": "shell_audit.jsonl",
        "screenshot.png": "attachments/screenshot.png",
        "task.txt": "PROMPT.txt",
        "thinking.md": "audit.md",
    }
    assert metadata["source"]["fields"]["model"] == "sidecar"


@pytest.mark.parametrize("shape", ["object", "list"])
def test_a_json_sidecar(shape: str, tmp_path: Path, ledger_path: Path) -> None:
    other_layout_run(tmp_path / "exported", "run-a")
    fields = {"scenario": "use_case_f", "model": "gpt-4o", "tags": {"team": "netops"}}
    data: Any = {"run-a": fields} if shape == "object" else [{"directory": "run-a", **fields}]
    sidecar = tmp_path / "identity.json"
    sidecar.write_text(json.dumps(data))

    result = agentledger(
        "import", tmp_path / "exported", "--ledger", ledger_path, *LAYOUT, "--sidecar", sidecar
    )

    assert result.exit_code == 0, result.output
    assert stored_metadata(ledger_path, "run-a")["tags"] == {"team": "netops"}


def test_fields_from_options_and_a_name_pattern(tmp_path: Path, ledger_path: Path) -> None:
    other_layout_run(tmp_path / "exported", "2026-02-01--use_case_f--r1")

    result = agentledger(
        "import", tmp_path / "exported", "--ledger", ledger_path, *LAYOUT, "--model", "gpt-4o",
        "--name-pattern", r"(?P<date>[\d-]+)--(?P<scenario>\w+)--r\d+", "--agent-name", "ghost",
        "--agent-commit", "7f555a1", "--variant", "variant-a",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    metadata = stored_metadata(ledger_path, "2026-02-01--use_case_f--r1")
    assert (metadata["scenario"], metadata["model"]) == ("use_case_f", "gpt-4o")
    assert metadata["started_at"] == "2026-02-01T00:00:00Z"
    assert metadata["agent"] == {"name": "ghost", "commit": "7f555a1", "dirty": None}
    assert metadata["variant"] == "variant-a"


def test_system_prompt_file_gives_the_full_hash(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run()
    prompt = tmp_path / "base_prompt.txt"
    prompt.write_bytes(SYSTEM_PROMPT)

    result = agentledger(
        "import", run, "--ledger", tmp_path / "ledger", "--system-prompt-file", prompt
    )

    assert result.exit_code == 0, result.output
    metadata = stored_metadata(tmp_path / "ledger", run.name)
    assert metadata["system_prompt_hash"] == FULL_HASH
    assert metadata["source"]["system_prompt"] == "--system-prompt-file"
    stored = tmp_path / "ledger/runs" / run.name / "system_prompt.txt"
    assert stored.read_bytes() == SYSTEM_PROMPT


def test_a_symlink_inside_the_run_is_followed(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run(files={"shared/notes.txt": "notes\n"})
    (run / "notes-link.txt").symlink_to(run / "shared" / "notes.txt")

    result = agentledger("import", run, "--ledger", tmp_path / "ledger")

    assert result.exit_code == 0, result.output
    stored = tmp_path / "ledger/runs" / run.name / "attachments"
    assert (stored / "notes-link.txt").read_text() == "notes\n"
    assert not (stored / "notes-link.txt").is_symlink()


def test_dry_run_writes_nothing(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run()

    result = agentledger("import", run, "--ledger", ledger_path, "--dry-run")

    assert result.exit_code == 0, result.output
    assert "would import 1 run" in result.stdout
    assert not ledger_path.exists()


def test_the_library_reports_progress(seed_run: SeedRun, tmp_path: Path) -> None:
    seed_run("use_case_b_haiku_20260308")
    seed_run("use_case_m_haiku_20260312")
    calls: list[tuple[int, int | None]] = []
    with Ledger.init(tmp_path / "ledger") as ledger:
        plan = plan_import([tmp_path / "runs"], ImportOptions(batch_size=1), ledger=ledger)
        assert [run.run_id for run in plan.new_runs] == [
            "use_case_b_haiku_20260308", "use_case_m_haiku_20260312",
        ]  # fmt: skip

        def progress(done: int, total: int | None) -> None:
            calls.append((done, total))

        import_runs(ledger, [tmp_path / "runs"], ImportOptions(batch_size=1), progress=progress)
    assert calls == [(1, 2), (2, 2), (1, 2), (2, 2)]


def test_find_run_dirs(seed_run: SeedRun, tmp_path: Path) -> None:
    one = seed_run("use_case_b_haiku_20260308")
    seed_run("use_case_m_haiku_20260312")
    found = find_run_dirs([tmp_path / "runs", one])
    assert [p.name for p in found] == ["use_case_b_haiku_20260308", "use_case_m_haiku_20260312"]


@pytest.mark.parametrize(
    ("text", "size"),
    [("100MB", 100 * 2**20), ("1.5GB", int(1.5 * 2**30)), ("2048", 2048), ("512 KiB", 2**19)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_hidden_and_excluded_files_are_left_out(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run(files={".DS_Store": "x", "core.12345": "x" * 100, "notes.txt": "kept\n"})

    result = agentledger("import", run, "--ledger", ledger_path, "--exclude", "core.*")

    assert result.exit_code == 0, result.output
    stored = ledger_path / "runs" / run.name
    assert (stored / "attachments/notes.txt").read_text() == "kept\n"
    assert not (stored / "attachments/core.12345").exists()
    source = stored_metadata(ledger_path, run.name)["source"]
    assert source["skipped"] == [".DS_Store", "core.12345"]


def test_dates_in_file_names_when_the_directory_name_has_none(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run("haiku-m-rerun", metadata=seed_metadata("haiku-m-rerun"))

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path, "--scenario", "m")

    assert result.exit_code == 0, result.output
    metadata = stored_metadata(ledger_path, "haiku-m-rerun")
    assert metadata["started_at"] == "2026-03-12T00:00:00Z"
    assert metadata["source"]["fields"]["started_at"] == "file names"


def test_a_system_prompt_per_run_from_a_json_sidecar(tmp_path: Path, ledger_path: Path) -> None:
    other_layout_run(tmp_path / "exported", "run-a")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "v2.txt").write_bytes(SYSTEM_PROMPT)
    sidecar = tmp_path / "identity.json"
    sidecar.write_text(
        json.dumps(
            [
                {
                    "directory": "run-a",
                    "scenario": "use_case_f",
                    "model": "gpt-4o",
                    "system_prompt_hash": SHORT_HASH,
                    "system_prompt_file": "prompts/v2.txt",
                }
            ]
        )
    )

    result = agentledger(
        "import", tmp_path / "exported", "--ledger", ledger_path, *LAYOUT, "--sidecar", sidecar
    )

    assert result.exit_code == 0, result.output
    assert stored_metadata(ledger_path, "run-a")["system_prompt_hash"] == FULL_HASH
    stored = ledger_path / "runs/run-a/system_prompt.txt"
    assert stored.read_bytes() == SYSTEM_PROMPT


# -- bad input: exit 2, the file and field named, nothing written -------------------------


def refused(result: Result, ledger_path: Path, *expected: str) -> None:
    assert result.exit_code == 2, result.output
    for text in expected:
        assert text in result.stderr, result.stderr
    assert stored_runs(ledger_path) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"metadata.json": '{"run_id": "x",'}, ["metadata.json", "malformed JSON"]),
        ({"metadata.json": b'{"model": "caf\xe9"}'}, ["metadata.json", "not valid UTF-8"]),
        ({"metadata.json": "[1, 2]"}, ["metadata.json", "expected a JSON object"]),
        (
            {"metadata.json": json.dumps({"schema_version": 9, "model": "m"})},
            ["metadata.json", "field 'schema_version'", "newer agentledger"],
        ),
        (
            {"metadata.json": json.dumps({"model": 42})},
            ["metadata.json", "field 'model'", "expected a non-empty string"],
        ),
        (
            {"metadata.json": json.dumps({"model": "m", "system_prompt_hash": "xyz"})},
            ["metadata.json", "field 'system_prompt_hash'"],
        ),
        (
            {"metadata.json": json.dumps({"model": "m", "started_at": "yesterday"})},
            ["metadata.json", "field 'started_at'", "ISO 8601"],
        ),
        (
            {"metadata.json": json.dumps({"model": "m\x1b[2J"})},
            ["metadata.json", "field 'model'", "control characters"],
        ),
        (
            {"shell_audit_20260312.jsonl": '{"command": "ls"}\n{"command": \n'},
            ["shell_audit_20260312.jsonl, line 2", "malformed JSON"],
        ),
        (
            {"shell_audit_20260312.jsonl": b'{"command": "ls \xff"}\n'},
            ["shell_audit_20260312.jsonl, line 1", "not valid UTF-8"],
        ),
        (
            {"shell_audit_20260312.jsonl": '{"exit_code": 0}\n'},
            ["shell_audit_20260312.jsonl, line 1, field 'command'"],
        ),
        (
            {"shell_audit_20260312.jsonl": '{"command": "ls", "schema_version": 5}\n'},
            ["shell_audit_20260312.jsonl, line 1", "newer agentledger"],
        ),
        (
            {"run_summary.json": '{"duration_seconds": -3}'},
            ["run_summary.json", "field 'duration_seconds'"],
        ),
        (
            {"run_summary.json": '{"schema_version": 2}'},
            ["run_summary.json", "field 'schema_version'"],
        ),
        ({"run_summary.json": "{oops"}, ["run_summary.json", "malformed JSON"]),
    ],
    ids=[
        "malformed-metadata", "non-utf8-metadata", "metadata-not-object", "metadata-version",
        "metadata-type", "bad-prompt-hash", "bad-time", "control-chars", "malformed-jsonl",
        "non-utf8-jsonl", "jsonl-missing-command", "jsonl-version", "summary-negative",
        "summary-version", "malformed-summary",
    ],
)  # fmt: skip
def test_bad_files_are_refused_and_nothing_is_written(
    files: dict[str, str | bytes],
    expected: list[str],
    seed_run: SeedRun,
    tmp_path: Path,
    ledger_path: Path,
) -> None:
    seed_run("use_case_b_haiku_20260308")  # a good run in the same batch is not written either
    seed_run(files=files)

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path)

    refused(result, ledger_path, "use_case_m_haiku_20260312", *expected)


def test_a_missing_model_says_how_to_give_it(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run("run-42", metadata=False)

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path)

    refused(result, ledger_path, "run-42", "field 'scenario'", "--scenario", "--sidecar")


def test_an_option_contradicting_the_runs_metadata_is_refused(
    seed_run: SeedRun, ledger_path: Path
) -> None:
    run = seed_run()

    result = agentledger("import", run, "--ledger", ledger_path, "--model", "gpt-4o")

    refused(
        result, ledger_path, "metadata.json", "field 'model'", "'claude-haiku-4-5'", "'gpt-4o'",
        "never overwritten",
    )  # fmt: skip


def test_a_sidecar_contradicting_the_runs_metadata_is_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    run = seed_run()
    sidecar = tmp_path / "sidecar.csv"
    sidecar.write_text(f"directory,agent_commit\n{run.name},0000000\n")

    result = agentledger("import", run, "--ledger", ledger_path, "--sidecar", sidecar)

    refused(result, ledger_path, "field 'ghost_agent_commit'", "'7f555a1'", "'0000000'")


def test_a_system_prompt_that_does_not_match_the_short_hash(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    run = seed_run(files={"system_prompt.txt": "You are a different agent.\n"})

    result = agentledger("import", run, "--ledger", ledger_path)

    refused(result, ledger_path, "metadata.json", "field 'system_prompt_hash'", SHORT_HASH)


def test_a_bad_sidecar_is_refused(seed_run: SeedRun, tmp_path: Path, ledger_path: Path) -> None:
    run = seed_run()
    sidecar = tmp_path / "sidecar.csv"
    sidecar.write_text(f"directory,modle\n{run.name},gpt-4o\n")

    result = agentledger("import", run, "--ledger", ledger_path, "--sidecar", sidecar)

    refused(result, ledger_path, "sidecar.csv", "field 'modle'", "unknown field")


@pytest.mark.parametrize(
    ("name", "metadata", "expected"),
    [
        ("use_case_m_haiku_20260312", {"run_id": "../../etc", "model": "m"}, "'../../etc'"),
        ("use case m haiku 20260312", False, "'use case m haiku 20260312'"),
    ],
)
def test_unsafe_run_ids_are_refused(
    name: str,
    metadata: Any,
    expected: str,
    seed_run: SeedRun,
    tmp_path: Path,
    ledger_path: Path,
) -> None:
    seed_run(name, metadata=metadata)

    result = agentledger(
        "import", tmp_path / "runs", "--ledger", ledger_path, "--scenario", "s", "--model", "m"
    )

    refused(result, ledger_path, expected, "not a safe run id", "--sidecar column 'run_id'")


def test_an_unsafe_run_id_can_be_replaced_through_a_sidecar(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    run = seed_run(metadata=seed_metadata("use_case_m haiku"))
    sidecar = tmp_path / "ids.json"
    sidecar.write_text(json.dumps({run.name: {"run_id": "use_case_m_haiku_1"}}))

    result = agentledger("import", run, "--ledger", ledger_path, "--sidecar", sidecar)

    assert result.exit_code == 0, result.output
    source = stored_metadata(ledger_path, "use_case_m_haiku_1")["source"]
    assert source["original_run_id"] == "use_case_m haiku"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "bad\x1bname.txt",
            # The escape shown as \x1b, never sent to the terminal.
            "Error: '/home/ops/work/runs/use_case_m_haiku_20260312/bad\\x1bname.txt': cannot be "
            "stored: artifact name 'attachments/bad\\x1bname.txt' is not safe: each path part "
            "may hold letters, digits, '.', '_', '+' and '-', must not start with '.' or '-', "
            "and '..' is refused\n",
        ),
        (
            "two words.txt",
            "Error: /home/ops/work/runs/use_case_m_haiku_20260312/two words.txt: cannot be "
            "stored: artifact name 'attachments/two words.txt' is not safe: each path part may "
            "hold letters, digits, '.', '_', '+' and '-', must not start with '.' or '-', and "
            "'..' is refused\n",
        ),
    ],
)
def test_unsafe_file_names_are_refused(
    name: str, message: str, seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run(files={name: "x"})

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path)

    refused(result, ledger_path)
    assert normalised(result.stderr, tmp_path) == message


def test_a_symlink_pointing_outside_the_run_is_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of the run\n")
    run = seed_run()
    (run / "evidence.txt").symlink_to(secret)

    result = agentledger("import", run, "--ledger", ledger_path)

    refused(result, ledger_path, "evidence.txt", "symlink points outside the run directory")


def test_a_symlinked_run_outside_a_directory_of_runs_is_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    elsewhere = seed_run(parent=tmp_path / "elsewhere")
    (tmp_path / "batch").mkdir()
    (tmp_path / "batch" / "linked").symlink_to(elsewhere)

    result = agentledger("import", tmp_path / "batch", "--ledger", ledger_path)

    refused(result, ledger_path, "linked", "symlink points outside")


def test_artifacts_over_the_size_limit_are_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run(files={"snapshot.tar.gz": os.urandom(3000)})

    result = agentledger(
        "import", tmp_path / "runs", "--ledger", ledger_path, "--max-artifact-size", "2KB"
    )

    refused(
        result, ledger_path, "snapshot.tar.gz", "2.9 KB is over the 2 KB", "--max-artifact-size"
    )


def test_the_size_limit_can_be_raised_for_one_import(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run(files={"snapshot.json": "[" + "0," * 3000 + "0]"})
    Ledger.init(tmp_path / "ledger", max_artifact_bytes=4096).close()

    assert agentledger("import", run, "--ledger", tmp_path / "ledger").exit_code == 2
    result = agentledger(
        "import", run, "--ledger", tmp_path / "ledger", "--max-artifact-size", "1MB"
    )

    assert result.exit_code == 0, result.output
    stored = tmp_path / "ledger/runs" / run.name / "snapshot.json"
    assert stored.read_bytes() == (run / "snapshot.json").read_bytes()
    with Ledger.open(tmp_path / "ledger") as ledger:
        assert ledger.config.max_artifact_bytes == 4096  # the ledger's own limit is unchanged


def test_a_bad_size_is_a_usage_error(seed_run: SeedRun, ledger_path: Path) -> None:
    result = agentledger(
        "import", seed_run(), "--ledger", ledger_path, "--max-artifact-size", "lots"
    )
    refused(result, ledger_path, "'lots' is not a size")


def test_a_ledger_path_that_is_a_file_is_refused(seed_run: SeedRun, tmp_path: Path) -> None:
    (tmp_path / "ledger").write_text("not a ledger\n")

    result = agentledger("import", seed_run(), "--ledger", tmp_path / "ledger")

    assert result.exit_code == 2
    assert (
        normalised(result.stderr, tmp_path)
        == "Error: /home/ops/work/ledger is a file, not a ledger directory\n"
    )
    assert (tmp_path / "ledger").read_text() == "not a ledger\n"


def test_two_runs_with_one_id_are_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run("use_case_m_haiku_20260312")
    seed_run("use_case_m_haiku_20260312_rerun", metadata=seed_metadata("use_case_m_haiku_20260312"))

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path)

    refused(result, ledger_path, "gives run id 'use_case_m_haiku_20260312', as ")


def test_ambiguous_files_ask_for_a_mapping(seed_run: SeedRun, ledger_path: Path) -> None:
    run = seed_run(files={"ghost_report_20260313.md": "# A second report\n"})

    result = agentledger("import", run, "--ledger", ledger_path)

    refused(result, ledger_path, "several files match report", "--map report=GLOB")


def test_other_files_in_subdirectories_become_attachments(
    seed_run: SeedRun, ledger_path: Path
) -> None:
    run = seed_run(files={"original/metadata.json": "{}", "captures/eth0.pcap": "\x00\x01"})

    result = agentledger("import", run, "--ledger", ledger_path)

    assert result.exit_code == 0, result.output
    stored = ledger_path / "runs" / "use_case_m_haiku_20260312" / "attachments"
    assert (stored / "original" / "metadata.json").read_text() == "{}"
    assert (stored / "captures" / "eth0.pcap").read_bytes() == b"\x00\x01"


def test_a_directory_that_is_not_a_run(tmp_path: Path, ledger_path: Path) -> None:
    (tmp_path / "batch" / "notes").mkdir(parents=True)
    (tmp_path / "batch" / "notes" / "todo.txt").write_text("x\n")

    result = agentledger("import", tmp_path / "batch", "--ledger", ledger_path)

    refused(result, ledger_path, "notes", "not a run directory", "--map")


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("kind", ["notes", "nested batch"])
def test_a_directory_that_is_not_a_run_among_many_checked_in_parallel(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path, where: str, kind: str
) -> None:
    """Large imports check each directory while planning it, in the share of the process that
    plans it: a directory that is not a run is refused the same way, and nothing is written."""
    batch = tmp_path / "runs"
    for index in range(6):
        seed_run(f"use_case_m_haiku_2026031{index}", parent=batch)
    odd = batch / ("a-odd" if where == "first" else "z-odd")
    if kind == "notes":
        odd.mkdir()
        (odd / "todo.txt").write_text("x\n")
    else:  # a directory of runs inside the directory of runs
        seed_run("use_case_m_haiku_20260319", parent=odd)

    with Ledger.init(ledger_path) as ledger, pytest.raises(InputError) as caught:
        import_runs(ledger, [batch], ImportOptions(workers=2))

    assert f"{odd}: not a run directory" in str(caught.value)
    assert stored_runs(ledger_path) == []


def test_an_unknown_map_key(seed_run: SeedRun, ledger_path: Path) -> None:
    result = agentledger("import", seed_run(), "--ledger", ledger_path, "--map", "reprot=*.md")
    refused(result, ledger_path, "unknown key 'reprot'")


def test_records_stay_valid(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run(summary={"commands_executed": 3, "tokens": {"in": 1}})
    with Ledger.init(tmp_path / "ledger") as ledger:
        import_runs(ledger, [run])
        stored = ledger.load(run.name)
    assert isinstance(stored.metadata, RunMetadata)
    assert isinstance(stored.summary, RunSummary)
    assert stored.metadata.backfilled


# -- several worker processes ------------------------------------------------------------------


def test_workers_import_what_one_process_imports(tmp_path: Path) -> None:
    # Forked workers (where this process runs one thread) and new interpreters alike.
    for ledger, workers, fork in (("one", "1", True), ("three", "3", True), ("new", "3", False)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(import_workers, "_FORK", fork)
            result = agentledger(
                "import", sample_runs_dir(), "--ledger", tmp_path / ledger, "--workers", workers
            )
        assert result.exit_code == 0, result.output
        assert result.stdout == f"Imported 33 runs into {tmp_path / ledger}.\n"

    for run in stored_runs(tmp_path / "one"):
        for name in ("metadata.json", "run_summary.json", "report.md"):
            one = (tmp_path / "one/runs" / run / name).read_bytes()
            assert one == (tmp_path / "three/runs" / run / name).read_bytes()
            assert one == (tmp_path / "new/runs" / run / name).read_bytes()
    with Ledger.open(tmp_path / "three") as ledger:
        assert verify_ledger(ledger).ok
    again = agentledger(
        "import", sample_runs_dir(), "--ledger", tmp_path / "three", "--workers", "3"
    )
    assert "33 already imported, identical (nothing to do)" in again.stdout


def test_a_bad_run_in_any_worker_writes_nothing(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    for name in ("use_case_a_haiku_20260301", "use_case_b_haiku_20260302"):
        seed_run(name)
    seed_run("use_case_c_haiku_20260303", files={"metadata.json": "{"})
    seed_run("use_case_d_haiku_20260304")

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path, "--workers", "2")

    refused(result, ledger_path, "use_case_c_haiku_20260303/metadata.json", "malformed JSON")
    assert not ledger_path.exists()


def test_one_run_id_in_two_workers_is_refused(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    seed_run("use_case_m_haiku_20260312")
    seed_run("zz_rerun", metadata=seed_metadata("use_case_m_haiku_20260312"))

    result = agentledger(
        "import", tmp_path / "runs", "--ledger", ledger_path, "--workers", "2", "--scenario",
        "use_case_m",
    )  # fmt: skip

    refused(result, ledger_path, "gives run id 'use_case_m_haiku_20260312', as ")


def test_the_import_help_names_every_artifact_key() -> None:
    # Written out in the help: the command loads the library only once it runs.
    result = agentledger("import", "--help")
    help_text = " ".join(result.output.split())
    assert f"Keys: {', '.join(ARTIFACT_KEYS)}." in help_text


def test_workers_started_before_a_refused_import_are_stopped(
    tmp_path: Path, ledger_path: Path
) -> None:
    """Where workers are new interpreters, the command starts them first; when it stops
    before the import (a bad --map key here), none is left behind."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for index in range(1000):
        (runs / f"r{index}").mkdir()
    started: list[import_workers.Worker] = []
    real_start = import_workers.start_early

    def start_early(paths: Any, requested: int | None, **options: Any) -> int:
        count = real_start(paths, requested, **options)
        started.extend(import_workers._early)
        return count

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(import_workers, "start_early", start_early)
        patch.setattr(import_workers, "_FORK", False)
        result = agentledger("import", runs, "--ledger", ledger_path, "--map", "nope=*.md")
    assert result.exit_code == 2
    assert normalised(result.output, tmp_path) == (
        "Usage: main import [OPTIONS] PATHS...\n"
        "Try 'main import --help' for help.\n"
        "\n"
        "Error: Invalid value for --map: unknown key 'nope'; use one of prompt, "
        "system_prompt, report, audit, shell_audit, snapshot, metadata, summary\n"
    )
    assert len(started) >= 1
    assert all(worker.process.poll() is not None for worker in started)
    assert import_workers._early == []
    assert not ledger_path.exists()


_FORKED_CHECK = """
import sys
from pathlib import Path
from agentledger.importers import workers
assert workers.forks()
assert workers.start_early([Path(sys.argv[1])], None) == 0
worker = workers.Worker()
assert isinstance(worker.process, workers._Forked)
worker.close()
assert worker.process.returncode == 0, worker.process.returncode
"""


def test_workers_are_forked_only_while_one_thread_runs(tmp_path: Path) -> None:
    """A fork copies only the thread that makes it: with another thread running (a lock it
    holds would stay held in the copy), workers are new interpreters, started before the
    library is loaded; in a command (one thread) the loaded process is forked, none early,
    and what it imports is what one process imports."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for index in range(1000):
        (runs / f"r{index}").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _FORKED_CHECK, str(runs)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not import_workers.forks()
        assert import_workers.start_early([runs], None) >= 1
        assert all(isinstance(w.process, subprocess.Popen) for w in import_workers._early)
    finally:
        stop.set()
        other.join()
        import_workers.close_early()
    assert import_workers._early == []
    for ledger, workers in (("one", "1"), ("forked", "3")):
        command = [sys.executable, "-m", "agentledger", "import", str(sample_runs_dir())]
        command += ["--ledger", str(tmp_path / ledger), "--workers", workers]
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    for run in stored_runs(tmp_path / "one"):
        for name in ("metadata.json", "run_summary.json", "report.md"):
            one = (tmp_path / "one/runs" / run / name).read_bytes()
            assert one == (tmp_path / "forked/runs" / run / name).read_bytes()


def test_the_import_command_ends_with_its_output_and_exit_code(tmp_path: Path) -> None:
    """The console script ends an import without the interpreter's teardown: what it printed
    is all there, and the exit code is the command's (0, then 2 for a refused import)."""
    ledger = tmp_path / "ledger"
    command = [sys.executable, "-m", "agentledger", "import", "--ledger", str(ledger)]
    done = subprocess.run([*command, str(sample_runs_dir())], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Imported 33 runs into {ledger}.\n"
    assert done.stderr == f"Created a new ledger at {ledger}\n"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.jsonl").write_text("{\n")
    refused_import = subprocess.run(
        [*command, "--format", "jsonl", str(bad)], capture_output=True, text=True
    )
    assert refused_import.returncode == 2, refused_import.stderr
    assert refused_import.stdout == ""
    assert "broken.jsonl" in refused_import.stderr
    assert len(stored_runs(ledger)) == 33


def test_workers_import_into_a_ledger_given_as_a_relative_path(tmp_path: Path) -> None:
    # The tests run in tmp_path, so "rel" is relative to the working directory.
    result = agentledger("import", sample_runs_dir(), "--ledger", "rel", "--workers", "2")
    assert result.exit_code == 0, result.output
    assert len(stored_runs(tmp_path / "rel")) == len(find_run_dirs([sample_runs_dir()]))
    assert list((tmp_path / "rel/.staging").iterdir()) == []
    with Ledger.open("rel") as ledger:
        assert verify_ledger(ledger).ok


# -- checking shell logs fast, with the same results ---------------------------------------------

SHELL_LOGS = [
    b"",
    b"\n\n",
    "".join(json.dumps(e) + "\n" for e in SHELL_AUDIT).encode(),
    b'{"ts": "2026-03-12T10:15:02Z", "command": "ls", "exit_code": 0, "decision": "allowed"}\n'
    b'{"ts": "2026-03-12T10:15:03+02:00", "cmd": "rm -rf /", "decision": " DENIED "}\r\n',
    b'{"time": 1773310502, "command": "x", "allowed": false, "note": {"a": [1, 2]}}\n',
    b'{"command": "x", "status": "blocked"}\n{"command": "y", "blocked": true}\n',
    b'{"command": "x", "schema_version": 1}\n',
    b'{"command": "x", "schema_version": 99}\n',
    b'{"command": "x", "schema_version": "1"}\n',
    b'{"command": "x", "schema\\u005fversion": 99}\n',
    b'{"command": "x\\u00e9", "schema\\u005fversion": 1}\n',
    b'{"command": "x", "exit_code": "3", "duration_ms": 2}\n',
    b'{"command": "x", "duration_ms": -1}\n',
    b'{"command": 5}\n',
    b'{"ts": "yesterday", "command": "x"}\n',
    b'{"decision": "denied"}\n',
    b"[1, 2]\n",
    b'{"command": "x"}\n{not json\n',
    b'{"command": "x", "stdout": "\xff"}\n',
    b'{"command": "x", "cost": NaN}\n',
    # Where validating dicts and making ShellEvents could part ways.
    b'{"command": "x", "duration_ms": NaN}\n',
    b'{"command": "x", "duration_ms": Infinity}\n',
    b'{"command": "x", "duration_ms": 1e400}\n',
    b'{"command": "x", "stdout_bytes": -1}\n',
    b'{"command": "x", "stdout_bytes": 1.5}\n',
    b'{"command": "x", "stdout_bytes": 2.0}\n',
    b'{"command": "x", "exit_code": true}\n',
    b'{"command": "x", "timed_out": "yes"}\n',
    b'{"command": "x", "timed_out": "true"}\n',
    b'{"command": "x", "parts": [1]}\n',
    b'{"command": "x", "parts": {"a": 1}}\n',
    b'{"command": null}\n',
    b'{"cmd": "x", "command": 5}\n',
    b'{"command": "x", "cmd": 5}\n',
    b'{"ts": "2026-03-12T10:15:02Z", "timestamp": "nope", "command": "x"}\n',
    b'{"timestamp": "2026-03-12", "time": 5, "command": "x"}\n',
    b'{"command": "x", "decision": 5}\n',
    b'{"command": "x", "decision": null, "allowed": false}\n',
    b'{"command": "x", "decision": "allowed", "blocked": true}\n',
    b'{"command": "x", "status": " Refused "}\n',
    b'{"command": "x", "status": 1}\n',
    b'{"command": "x", "command": "y", "decision": "denied"}\n',
    b'{"command": "x", "decision": "denied", "decision": "allowed"}\n',
    b'{"command": "x", "schema_version": 0}\n',
    b'{"command": "x", "schema_version": null}\n',
    b'{"command": "x"} {"command": "y"}\n',
    b'{"command": "x"}\n\n   \n{"command": "y", "decision": "deny"}',
    b'"just a string"\n',
    b"null\n",
    b'{"command": "\\ud800"}\n',
]


@pytest.mark.parametrize("raw", SHELL_LOGS, ids=range(len(SHELL_LOGS)))
def test_shell_logs_are_checked_as_parse_shell_audit_does(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome(parse: Callable[[bytes, str], object]) -> object:
        try:
            return parse(raw, "run/shell_audit.jsonl")
        except RecordError as exc:
            return ("error", str(exc))

    assert shell_log._adapter() is not None, "the fast check should be available"
    monkeypatch.setattr(shell_log, "_ADAPTER", shell_log._ADAPTER)
    expected = outcome(lambda raw, source: ShellCounts.of(parse_shell_audit(raw, source)))
    # The first log a process checks is checked both ways; later ones only the fast way.
    for verified in (False, True):
        monkeypatch.setattr(shell_log, "_verified", verified)
        assert outcome(check_shell_log) == expected
        assert shell_log._ADAPTER is not None


_KEYS = [
    *ShellEvent.model_fields,
    "cmd", "timestamp", "time", "allowed", "blocked", "status", "note", "Command", "",
]  # fmt: skip
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["denied", " Deny ", "allowed", "blocked", "2026-03-12T10:15:02Z", "-1", "1"])
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


# A value each key takes (anything else of ShellEvent's is a string or null).
_FITS: dict[str, Any] = {
    "ts": "2026-03-12T10:15:02Z", "time": 1773310502, "exit_code": 3, "duration_ms": 2.5,
    "stdout_bytes": 10, "stderr_bytes": 0, "timed_out": False, "truncated": True,
    "parts": [{"command": "ls"}], "schema_version": 1, "allowed": False, "blocked": True,
}  # fmt: skip
_LINES = (
    st.fixed_dictionaries(  # lines that mostly hold
        {"command": st.text(max_size=5)},
        optional={
            key: st.none() | st.just(_FITS.get(key, "denied")) for key in _KEYS if key != "command"
        },
    )
    | st.fixed_dictionaries(  # lines with a command and anything else
        {"command": st.text(max_size=5)},
        optional={key: st.text(max_size=4) | _VALUES for key in _KEYS if key != "command"},
    )
    | st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6)  # anything
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_LINES, max_size=4))
def test_any_shell_log_is_checked_as_parse_shell_audit_does(lines: list[dict[str, Any]]) -> None:
    """Validating lines as dicts accepts exactly what making ShellEvents accepts, and counts
    the same refusals (whichever keys, aliases and JSON types a line holds)."""
    raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
    try:
        expected: object = ShellCounts.of(parse_shell_audit(raw, "s.jsonl"))
    except RecordError as exc:
        expected = str(exc)
    saved = shell_log._verified
    try:
        for verified in (False, True):
            shell_log._verified = verified
            try:
                found: object = check_shell_log(raw, "s.jsonl")
            except RecordError as exc:
                found = str(exc)
            assert found == expected
    finally:
        shell_log._verified = saved
    assert shell_log._ADAPTER is not None


@pytest.mark.parametrize(
    "text", ["20260312", "20261301", "20260230", "20240229", "00010101", "2026312", "2026031\uff12"]
)
def test_days_in_names_are_read_as_strptime_reads_them(text: str) -> None:
    try:
        expected: object = datetime.strptime(text, "%Y%m%d").replace(tzinfo=UTC)
    except ValueError:
        expected = ValueError
    try:
        found: object = day(text)
    except ValueError:
        found = ValueError
    assert found == expected


def test_the_shell_log_is_read_once_and_stored_as_it_is(seed_run: SeedRun, tmp_path: Path) -> None:
    run = seed_run()
    plan = plan_import([run])
    (shell,) = [a for a in plan.runs[0].artifacts if a.name == "shell_audit.jsonl"]
    assert shell.data == (run / "shell_audit_20260312.jsonl").read_bytes()
    with Ledger.init(tmp_path / "ledger") as ledger:
        write_plan(ledger, plan)
        stored = tmp_path / "ledger/runs" / run.name / "shell_audit.jsonl"
        assert stored.read_bytes() == shell.data
        assert verify_ledger(ledger).ok


def test_every_shares_error_is_reported(
    seed_run: SeedRun, tmp_path: Path, ledger_path: Path
) -> None:
    # Two processes: this one checks the first two runs, a worker the last two.
    seed_run("use_case_a_haiku_20260301", files={"metadata.json": "{"})
    seed_run("use_case_b_haiku_20260302")
    seed_run("use_case_c_haiku_20260303", files={"shell_audit_20260312.jsonl": "{not json\n"})
    seed_run("use_case_d_haiku_20260304")

    result = agentledger("import", tmp_path / "runs", "--ledger", ledger_path, "--workers", "2")

    refused(result, ledger_path, "2 runs cannot be imported")
    lines = result.stderr.splitlines()
    assert "use_case_a_haiku_20260301/metadata.json" in lines[1]
    assert "use_case_c_haiku_20260303/shell_audit_20260312.jsonl" in lines[2]
    assert not ledger_path.exists()


def test_collection_thresholds_come_back_after_an_import(seed_run: SeedRun, tmp_path: Path) -> None:
    before = gc.get_threshold()
    good = seed_run("use_case_a_haiku_20260301")
    with Ledger.init(tmp_path / "ledger") as ledger:
        import_runs(ledger, [good])
        assert gc.get_threshold() == before
        bad = seed_run("use_case_b_haiku_20260302", files={"metadata.json": "{"})
        with pytest.raises(RecordError):
            import_runs(ledger, [bad])
    assert gc.get_threshold() == before
