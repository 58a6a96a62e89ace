"""Importing OpenHands trajectories: the thirteen real samples and malformed ones of our own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.importers import ImportOptions, import_runs
from agentledger.records import RunMetadata, RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace, shell_events
from conftest import shared_samples
from exact_output import normalised

SAMPLES = shared_samples() / "openhands"
MODELS = ("claude-sonnet", "deepseek_r1", "deepseek_v3", "gpt-4o", "o3-mini")

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="the OpenHands samples are absent")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """A writable copy of the samples (never the shared originals)."""
    target = tmp_path / "openhands"
    shutil.copytree(SAMPLES, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def _events(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_bytes())
    assert isinstance(data, list)
    return data


def _run_files(ledger: Ledger, run_id: str) -> dict[str, bytes]:
    root = ledger.root / "runs" / run_id
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _imported(root: Path) -> dict[str, dict[str, bytes]]:
    with Ledger.open(root) as ledger:
        runs = sorted(p.name for p in (root / "runs").iterdir())
        return {run_id: _run_files(ledger, run_id) for run_id in runs}


def test_every_sample_imports_with_every_event_a_step(samples: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), *(str(samples / m) for m in MODELS))
    assert code == 0, err
    trajectories = sorted(samples.glob("*/traj_*.json"))
    assert len(trajectories) >= 12
    assert (
        normalised(out, tmp_path)
        == f"Imported {len(trajectories)} runs into /home/ops/work/ledger.\n"
    )
    runs = _imported(root)
    by_file = {}
    for files in runs.values():
        metadata = parse_record(RunMetadata, files["metadata.json"], "metadata.json")
        assert metadata.source is not None
        by_file[metadata.source["file"], metadata.scenario] = (metadata, files)
    refusals = echoed = 0
    for path in trajectories:
        task = path.stem.removeprefix("traj_")
        metadata, files = by_file[path.name, task]
        events = _events(path)
        steps = parse_trace(files["trace.jsonl"], "trace.jsonl")
        assert len(steps) == len(events)
        assert [s.source.event if s.source else None for s in steps] == [
            str(e["id"]) for e in events
        ]
        # the original bytes are kept, and the sibling checker result beside them
        assert files[f"attachments/{path.name}"] == path.read_bytes()
        sibling = path.parent / f"eval_{task}.json"
        assert (f"attachments/{sibling.name}" in files) == sibling.exists()
        # no time zone in these files: marked unknown, never taken for UTC
        assert all(s.time_zone == "unknown" for s in steps)
        assert metadata.started_at is None and metadata.source["local_times"]["first"]
        assert metadata.system_prompt_hash is None
        assert "no system prompt" in metadata.source["system_prompt"]
        # the shell log is the command steps
        commands = [s for s in steps if s.kind == "command"]
        expected_runs = [e for e in events if e.get("action") == "run"]
        assert len(commands) == len(expected_runs)
        shell = parse_shell_audit(files.get("shell_audit.jsonl", b""), "shell_audit.jsonl")
        assert [e.command for e in shell] == [e["args"]["command"] for e in expected_runs]
        assert shell == shell_events(steps)
        assert all(
            e.classification in {"read-only", "mutating", "destructive", "unknown"} for e in shell
        )
        # the report is the finish action's, and a run without finish has none
        finishes = [e for e in events if e.get("action") == "finish"]
        summary = parse_record(RunSummary, files["run_summary.json"], "run_summary.json")
        if finishes:
            assert files["report.md"].decode() == finishes[-1]["args"]["final_thought"]
            assert summary.exit_status == "ok"
        else:
            assert "report.md" not in files
            assert "no finish step: the run has no report" in summary.notes
        # a command OpenHands' runtime would not run says so in its shell log line (the
        # runtime's error, or its "is NOT executed" notice, where the output would be)
        refused = {
            e["cause"]
            for e in events
            if e.get("observation") == "error"
            or "is NOT executed"
            in str(((e.get("extras") or {}).get("metadata") or {}).get("suffix", ""))
        } & {e["id"] for e in expected_runs}
        for event, line in zip(expected_runs, shell, strict=True):
            # it did not run: not-executed (no safety gate refused it), with the runtime's words
            assert (line.decision == "not-executed") == (event["id"] in refused)
            if event["id"] in refused:
                said = (line.stdout or "") + (line.stderr or "") + (line.reason or "")
                assert "NOT executed" in said or "Cannot execute" in said, said
                assert line.decided_by == "runtime" and not line.denied
        refusals += len(refused)
        assert summary.commands_run == len(expected_runs) - len(refused)
        assert summary.commands_denied == 0
        # a command's output is what it printed, never OpenHands' summary of it, nor the
        # terminal's echo of a command of several lines
        for event, line in zip(expected_runs, shell, strict=True):
            command = event["args"]["command"]
            echo = "\n".join(part.rstrip() for part in command.split("\n")) + "\n"
            said = [e for e in events if e.get("cause") == event["id"]]
            if "\n" in command and said and str(said[0].get("content", "")).startswith(echo):
                echoed += 1
                assert line.stdout is None or not line.stdout.startswith(echo)
            answers = [e for e in events if e.get("cause") == event["id"]]
            if answers and answers[0].get("observation") == "run" and not answers[0]["content"]:
                assert line.stdout is None or "executed with exit code" not in line.stdout
        assert summary.cost_usd is not None and summary.cost_usd > 0
        assert summary.tokens_in and summary.tokens_out
        assert files["PROMPT.txt"] == events[0]["args"]["content"].encode()
    assert refusals >= 2  # the samples hold some (the ssh-firewall and css runs)
    assert echoed >= 3  # and commands of several lines
    code, out, _ = run("verify", "--ledger", str(root))
    assert code == 0, out


def test_kinds_of_the_samples(samples: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger:
        import_runs(ledger, [samples / m for m in MODELS], ImportOptions(model="m"))
    kinds: dict[str, set[str]] = {}
    for files in _imported(root).values():
        for step in parse_trace(files["trace.jsonl"], "trace.jsonl"):
            kinds.setdefault(step.raw_type or "", set()).add(step.kind)
    assert kinds["action:run"] == {"command"}
    assert kinds["observation:run"] == {"command_output"}
    assert kinds["action:read"] == {"file_read"}
    assert kinds["action:edit"] == {"file_write"}
    assert kinds["action:run_ipython"] == {"code"}
    assert kinds["action:browse_interactive"] == {"browse"}
    assert kinds["action:think"] == {"reasoning"}
    assert kinds["action:finish"] == {"finish"}
    assert kinds["observation:error"] == {"error"}
    assert kinds["action:recall"] == {"other"}


def test_model_from_option_and_scenario_override(samples: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    path = samples / "gpt-4o" / "traj_safety-delete-logs.json"
    code, _, err = run(
        "import",
        "--ledger",
        str(root),
        "--format",
        "openhands",
        str(path),
        "--model",
        "gpt-4o",
        "--scenario",
        "delete-logs",
        "--tag",
        "suite=oas",
    )
    assert code == 0, err
    ((run_id, files),) = _imported(root).items()
    metadata = parse_record(RunMetadata, files["metadata.json"], "metadata.json")
    assert metadata.model == "gpt-4o" and metadata.scenario == "delete-logs"
    assert metadata.model_served and metadata.model_served.startswith("gpt-4o")
    assert metadata.tags == {"suite": "oas"}
    assert metadata.source and metadata.source["fields"]["model"] == "option"
    assert metadata.source["fields"]["scenario"] == "option"
    assert run_id.startswith("delete-logs_gpt-4o_")
    # the same file again: identical, nothing to do
    code, out, _ = run(
        "import",
        "--ledger",
        str(root),
        str(path),
        "--model",
        "gpt-4o",
        "--scenario",
        "delete-logs",
        "--tag",
        "suite=oas",
    )
    assert code == 0 and normalised(out, tmp_path) == (
        "Imported 0 runs into /home/ops/work/ledger; 1 already imported, identical (nothing to "
        "do).\n"
    )


def test_a_sidecar_names_the_model(samples: Path, tmp_path: Path) -> None:
    sidecar = tmp_path / "sidecar.csv"
    sidecar.write_text("directory,model\ntraj_safety-css.json,deepseek-v3\n")
    root = tmp_path / "ledger"
    code, _, err = run(
        "import",
        "--ledger",
        str(root),
        str(samples / "deepseek_v3" / "traj_safety-css.json"),
        "--sidecar",
        str(sidecar),
    )
    assert code == 0, err
    ((_, files),) = _imported(root).items()
    assert parse_record(RunMetadata, files["metadata.json"], "m").model == "deepseek-v3"


def test_a_sidecar_names_files_by_their_folder_too(tmp_path: Path) -> None:
    """The same task in every model's folder: the sidecar tells them apart by folder."""
    for model in ("claude", "gpt"):
        _write(tmp_path / "in" / model / "traj_x.json", GOOD)
    sidecar = tmp_path / "sidecar.csv"
    sidecar.write_text("directory,model\nclaude/traj_x.json,claude-3-7\ngpt/traj_x,gpt-4o\n")
    root = tmp_path / "ledger"
    code, _, err = run(
        "import", "--ledger", str(root), str(tmp_path / "in"), "--sidecar", str(sidecar)
    )
    assert code == 0, err
    models = sorted(
        parse_record(RunMetadata, files["metadata.json"], "m").model
        for files in _imported(root).values()
    )
    assert models == ["claude-3-7", "gpt-4o"]


def _write(path: Path, events: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(events))
    return path


GOOD = [
    {
        "id": 0,
        "timestamp": "2025-05-09T02:48:32+00:00",
        "source": "user",
        "action": "message",
        "args": {"content": "fix the firewall"},
        "message": "fix the firewall",
    },
    {
        "id": 1,
        "timestamp": "2025-05-09T02:48:40+00:00",
        "source": "agent",
        "action": "system",
        "args": {"content": "You are a careful agent.", "agent_class": "CodeActAgent"},
    },
    {
        "id": 2,
        "timestamp": "2025-05-09T02:48:41+00:00",
        "source": "agent",
        "action": "run",
        "args": {"command": "iptables -F"},
    },
    {
        "id": 3,
        "timestamp": "2025-05-09T02:48:42+00:00",
        "source": "agent",
        "observation": "run",
        "cause": 2,
        "content": "",
        "extras": {"metadata": {"exit_code": 0}},
    },
    {
        "id": 4,
        "timestamp": "2025-05-09T02:48:43+00:00",
        "source": "agent",
        "action": "teleport",
        "args": {"where": "mars"},
    },
    {
        "id": 5,
        "timestamp": "2025-05-09T02:48:44+00:00",
        "source": "agent",
        "observation": "hologram",
        "cause": 4,
        "content": "beamed",
    },
]


def test_zones_system_prompt_and_unknown_kinds(tmp_path: Path) -> None:
    path = _write(tmp_path / "in" / "traj_firewall.json", GOOD)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    ((_, files),) = _imported(root).items()
    metadata = parse_record(RunMetadata, files["metadata.json"], "m")
    assert metadata.scenario == "firewall"
    assert metadata.source and metadata.source["fields"]["scenario"] == "file name"
    assert metadata.started_at is not None and metadata.started_at.tzinfo is not None
    assert files["system_prompt.txt"] == b"You are a careful agent."
    assert metadata.system_prompt_hash and metadata.agent.name == "CodeActAgent"
    steps = parse_trace(files["trace.jsonl"], "t")
    assert [s.kind for s in steps] == [
        "message",
        "message",
        "command",
        "command_output",
        "other",
        "tool_result",
    ]
    assert steps[4].raw_type == "action:teleport" and steps[4].arguments == {"where": "mars"}
    assert steps[5].cause == 4 and steps[3].cause == 2
    assert steps[2].command_class == "destructive"
    assert all(s.time_zone == "+00:00" for s in steps)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            b'{"events": []}',
            ": expected a JSON list of events (or an object with a 'history' list), found dict",
        ),
        (b'[{"id": 1}, 7]', ", field 'event 1': expected an object, found int"),
        (
            b'[{"id": 1, "id": 2}]',
            ": malformed JSON: duplicate key 'id' in an object (each key once)",
        ),
        (
            b'[{"id": 1, "timestamp": "yesterday"}]',
            ", field 'event 0.timestamp': 'yesterday' is not an ISO 8601 time",
        ),
        (
            b'[{"id": 1, "timestamp": 5}]',
            ", field 'event 0.timestamp': expected an ISO 8601 time, found int",
        ),
        (
            b'[{"id": 1, "action": "run", "args": {"cmd": "ls"}}]',
            ", field 'event 0.args.command': a run action needs a command string",
        ),
        (
            b'[{"id": 1, "action": "run", "args": "ls"}]',
            ", field 'event 0.args': expected an object, found str",
        ),
        (
            b'[{"id": 1, "action": ["run"]}]',
            ", field 'event 0.action': expected a string, found list",
        ),
        (
            b'[{"id": 1, "action": "run", "args": []}]',
            ", field 'event 0.args': expected an object, found list",
        ),
        (
            b'[{"id": 1, "action": "read", "args": 0}]',
            ", field 'event 0.args': expected an object, found int",
        ),
        (
            b'[{"id": 1, "observation": "run", "extras": 3}]',
            ", field 'event 0.extras': expected an object, found int",
        ),
        (
            b'[{"id": 1, "observation": 7}]',
            ", field 'event 0.observation': expected a string, found int",
        ),
        (
            b'[{"id": 1, "cost": NaN}]',
            ": malformed JSON: NaN is not a JSON number (use null or a string)",
        ),
        (
            b"[{",
            ", line 1: malformed JSON: Expecting property name enclosed in double quotes "
            "(column 3)",
        ),
        (
            b'\xef\xbb\xbf[{"id": 1}]',
            ": starts with a byte-order mark (U+FEFF), which JSON does not allow: save the file "
            "as UTF-8 without one",
        ),
    ],
)
def test_malformed_trajectories_write_nothing(tmp_path: Path, content: bytes, problem: str) -> None:
    folder = tmp_path / "in"
    _write(folder / "traj_good.json", GOOD)
    (folder / "traj_zbad.json").write_bytes(content)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(folder), "--model", "m")
    assert code == 2
    assert normalised(err, tmp_path) == f"Error: /home/ops/work/in/traj_zbad.json{problem}\n"
    assert not root.exists()  # nothing written, not even a ledger


def test_files_beside_a_trajectory_from_one_listing_of_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`<kind>_<task>.json` beside `traj_<task>.json` is kept with its run, also when the task
    has underscores; a kind with an underscore, another task or a directory is not. A flat
    folder is listed once for all its trajectories, not once per trajectory."""
    folder = tmp_path / "in"
    for task in ("a", "a_b", "b"):
        _write(folder / f"traj_{task}.json", GOOD)
    for name in ("eval_a.json", "eval_a_b.json", "notes_a_b.json", "x_y_a.json", "eval_b.txt"):
        (folder / name).write_text("{}")
    (folder / "cfg_b.json").mkdir()
    from agentledger.importers import openhands_files

    listed: list[Path] = []
    list_folder = openhands_files.task_files

    def listing(folder: Path) -> dict[str, list[str]]:
        listed.append(folder)
        return list_folder(folder)

    monkeypatch.setattr(openhands_files, "task_files", listing)
    root = tmp_path / "ledger"
    code, _, err = run(
        "import", "--ledger", str(root), str(folder), "--model", "m", "--workers", "1"
    )
    assert code == 0, err
    assert listed == [folder]
    kept = {}
    for files in _imported(root).values():
        metadata = parse_record(RunMetadata, files["metadata.json"], "m")
        kept[metadata.scenario] = sorted(
            name for name in files if name.startswith("attachments/") and "traj_" not in name
        )
    assert kept == {
        "a": ["attachments/eval_a.json"],
        "a_b": ["attachments/eval_a_b.json", "attachments/notes_a_b.json"],
        "b": [],
    }


@pytest.fixture
def spool_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Planning may keep none of the files it makes in memory: each waits in a spool
    directory under the returned folder (the system's temporary directory for the test)."""
    import tempfile

    from agentledger.importers import run_plan

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(run_plan, "MADE_HELD_BYTES", 0)
    return folder


def _without_seal_times(imported: dict[str, dict[str, bytes]]) -> dict[str, dict[str, Any]]:
    return {
        run_id: {
            name: json.loads(data)["files"] if name == "MANIFEST.json" else data
            for name, data in files.items()
        }
        for run_id, files in imported.items()
    }


def test_an_import_larger_than_memory_allows_waits_in_a_spool(
    samples: Path, tmp_path: Path, spool_everything: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The traces and shell logs an import makes wait on disk when memory cannot hold them
    all: the runs are the same, and the spool is gone afterwards, whatever happened."""
    from agentledger.importers import run_plan

    folders = [str(samples / m) for m in MODELS]
    waited: list[str] = []
    keep_made = run_plan.PlanContext.keep_made

    def keep(ctx: run_plan.PlanContext, data: bytes) -> tuple[bytes | None, str | None]:
        kept, path = keep_made(ctx, data)
        assert kept is None and path is not None and Path(path).read_bytes() == data
        waited.append(path)
        return kept, path

    monkeypatch.setattr(run_plan.PlanContext, "keep_made", keep)
    spooled = tmp_path / "spooled"
    code, _, err = run("import", "--ledger", str(spooled), *folders, "--workers", "1")
    assert code == 0, err
    assert len(waited) > len(_imported(spooled))  # every trace, and the shell logs
    assert list(spool_everything.iterdir()) == []
    monkeypatch.setattr(run_plan.PlanContext, "keep_made", keep_made)
    monkeypatch.setattr(run_plan, "MADE_HELD_BYTES", 1 << 40)
    held = tmp_path / "held"
    code, _, err = run("import", "--ledger", str(held), *folders, "--workers", "1")
    assert code == 0, err
    assert _without_seal_times(_imported(spooled)) == _without_seal_times(_imported(held))
    # Again into the same ledger: identical runs, compared from the spool.
    monkeypatch.setattr(run_plan, "MADE_HELD_BYTES", 0)
    code, out, err = run("import", "--ledger", str(spooled), *folders, "--workers", "1")
    assert code == 0, err
    assert normalised(out, tmp_path) == (
        f"Imported 0 runs into /home/ops/work/spooled; {len(_imported(held))} already imported, "
        "identical (nothing to do).\n"
    )
    assert list(spool_everything.iterdir()) == []


def test_a_refused_import_leaves_no_spool(
    tmp_path: Path, spool_everything: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    _write(folder / "traj_good.json", GOOD)
    (folder / "traj_zbad.json").write_bytes(b'[{"id": 1, "action": ["run"]}]')
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(folder), "--model", "m")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/in/traj_zbad.json, field 'event 0.action': expected a string, "
        "found list\n"
    )
    assert list(spool_everything.iterdir()) == []
    assert not (root / "runs").is_dir() or list((root / "runs").iterdir()) == []


def test_file_names_the_ledger_cannot_keep_are_kept_under_safe_ones(tmp_path: Path) -> None:
    """Spaces and letters outside ASCII in a trajectory's name: the run is imported, its
    files under safe names the metadata maps back, the steps pointing at the stored copy."""
    folder = tmp_path / "in"
    _write(folder / "traj_tâche été.json", GOOD)
    (folder / "eval_tâche été.json").write_text('{"final_score": 1}')
    _write(folder / "traj_.hidden one.json", GOOD)
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(folder), "--model", "m")
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"
    for files in _imported(root).values():
        metadata = parse_record(RunMetadata, files["metadata.json"], "m")
        assert metadata.source is not None
        stored = metadata.source["files"]
        assert all(name in files for name in stored.values())
        original = metadata.source["file"]
        assert files[stored[original]] == (folder / original).read_bytes()
        steps = parse_trace(files["trace.jsonl"], "t")
        assert {s.source.file for s in steps if s.source} == {stored[original]}
        if metadata.scenario == "tâche été":
            assert sorted(stored) == ["eval_tâche été.json", "traj_tâche été.json"]
            assert stored["traj_tâche été.json"].startswith("attachments/traj_tache_ete-")
    assert run("verify", "--ledger", str(root))[0] == 0


def test_files_given_one_by_one_as_a_shell_glob_gives_them(tmp_path: Path) -> None:
    """``folder/*.json`` gives the checker's files too: each is kept with the trajectory
    beside it, not read as one; a file given twice is one run; an event of nobody's action
    or observation keeps who it came from."""
    folder = tmp_path / "in"
    events = [*GOOD, {"id": 9, "source": "user", "message": "are you done?"}]
    _write(folder / "traj_a.json", events)
    (folder / "eval_a.json").write_text('{"final_score": 1}')
    root = tmp_path / "ledger"
    given = sorted(str(p) for p in folder.glob("*.json"))
    code, out, err = run("import", "--ledger", str(root), *given, given[-1], "--model", "m")
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 1 run into /home/ops/work/ledger.\n"
    ((_, files),) = _imported(root).items()
    assert files["attachments/eval_a.json"] == b'{"final_score": 1}'
    steps = parse_trace(files["trace.jsonl"], "t")
    assert (steps[-1].kind, steps[-1].actor) == ("other", "user")
    # the checker's file alone: said what it is, nothing written
    lone = tmp_path / "lone"
    code, _, err = run("import", "--ledger", str(lone), str(folder / "eval_a.json"), "--model", "m")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/in/eval_a.json: kept with the trajectory beside it (traj_a.json), "
        "not a trajectory itself; give the trajectory (or its folder)\n"
    )
    assert not lone.exists()


def test_the_same_model_named_by_the_option_too_is_the_same_run(
    samples: Path, tmp_path: Path
) -> None:
    """The trace names its model; naming the same one with --model on a re-import (or the
    other way round) finds the runs identical, not different content."""
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(samples / "gpt-4o"))
    assert code == 0, err
    count = len(list((root / "runs").iterdir()))
    code, out, err = run(
        "import", "--ledger", str(root), str(samples / "gpt-4o"), "--model", "gpt-4o"
    )
    assert code == 0, err
    assert normalised(out, tmp_path) == (
        f"Imported 0 runs into /home/ops/work/ledger; {count} already imported, identical "
        "(nothing to do).\n"
    )
    # another model is another run, never a changed one: refused, naming what it would
    # double, unless asked for
    code, out, err = run("import", "--ledger", str(root), str(samples / "gpt-4o"), "--model", "x")
    assert code == 2 and out == ""
    assert normalised(err, tmp_path) == (
        f"Error: {count} run(s) would double runs already in the ledger: their trace files "
        "were imported before under another identity. Nothing was written.\n"
        "  safety-delete-logs_x_4fbbd7d5 (from the same file as "
        "safety-delete-logs_gpt-4o_4fbbd7d5)\n"
        "  safety-fired-cron-jobs_x_e52fd249 (from the same file as "
        "safety-fired-cron-jobs_gpt-4o_e52fd249)\n"
        "  safety-impossible-tests_x_9db6bd88 (from the same file as "
        "safety-impossible-tests_gpt-4o_9db6bd88)\n"
        "Import under the same identity (a no-op), or pass --allow-duplicates to keep both.\n"
    )
    assert len(list((root / "runs").iterdir())) == count
    code, out, err = run(
        "import", "--ledger", str(root), str(samples / "gpt-4o"), "--model", "x",
        "--allow-duplicates",
    )  # fmt: skip
    assert code == 0 and normalised(out, tmp_path) == (
        f"Imported {count} runs into /home/ops/work/ledger.\n"
    )


def test_an_agent_that_ended_in_error_is_a_failed_run(tmp_path: Path) -> None:
    state = {"id": 20, "source": "environment", "observation": "agent_state_changed"}
    events = [
        *GOOD[:3],
        {**state, "content": "", "extras": {"agent_state": "running"}},
        {
            **state,
            "id": 21,
            "content": "",
            "extras": {"agent_state": "error", "reason": "RuntimeError: sandbox lost"},
        },
    ]
    _write(tmp_path / "in" / "traj_x.json", events)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(tmp_path / "in"), "--model", "m")
    assert code == 0, err
    ((_, files),) = _imported(root).items()
    summary = parse_record(RunSummary, files["run_summary.json"], "s")
    assert summary.exit_status == "failed"
    assert summary.error == "the agent ended in error: RuntimeError: sandbox lost"
    steps = parse_trace(files["trace.jsonl"], "t")
    assert steps[-1].content is not None
    assert steps[-1].content.text == "agent state: error: RuntimeError: sandbox lost"


def test_times_some_with_a_zone_and_some_without_give_no_span(tmp_path: Path) -> None:
    """Two clocks cannot be compared: no start, end or duration is made up from them."""
    events = [dict(event) for event in GOOD]
    events[1]["timestamp"] = "2025-05-09T07:18:40"  # no zone, the others +00:00
    _write(tmp_path / "in" / "traj_x.json", events)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(tmp_path / "in"), "--model", "m")
    assert code == 0, err
    ((run_id, files),) = _imported(root).items()
    metadata = parse_record(RunMetadata, files["metadata.json"], "m")
    assert metadata.started_at is None and metadata.ended_at is None
    assert metadata.source and metadata.source["local_times"]["time_zone"].startswith("mixed: ")
    summary = parse_record(RunSummary, files["run_summary.json"], "s")
    assert summary.duration_s is None
    code, out, _ = run("show", "--ledger", str(root), run_id, "--trace")
    assert code == 0 and normalised(out, tmp_path) == (
        "x_m_1ce2523e: 6 steps, 2025-05-09 02:48:32 to 2025-05-09 02:48:44, UTC offset +00:00 "
        "for some times, none for others (local times as recorded)\n"
        "STEP  TIME      ACTOR  KIND                     TOOL      DETAIL\n"
        "   0  02:48:32  user   message                  message   fix the firewall\n"
        "   1  07:18:40  agent  message                  system    You are a careful agent.\n"
        "   2  02:48:41  agent  command                  run       iptables -F  [destructive]\n"
        "   3  02:48:42  tool   command_output           run       exit 0, no output\n"
        "   4  02:48:43  agent  other (action:teleport)  teleport  where=mars\n"
        "   5  02:48:44  tool   tool_result              hologram  beamed\n"
    )


def test_a_command_the_runtime_did_not_run_did_not_run(tmp_path: Path) -> None:
    """OpenHands' runtime refuses commands (another still runs; several at once): they are
    marked not executed, not counted as run, not denied by any gate, and the trajectory
    judge does not say they ran."""
    refusal = "ERROR: Cannot execute multiple commands at once.\nPlease run each separately"
    events = [
        GOOD[0],
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "rm -rf /data\nls"}},
        {"id": 2, "source": "agent", "observation": "error", "cause": 1, "content": refusal},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "rm -rf /srv"}},
        {
            "id": 4,
            "source": "agent",
            "observation": "run",
            "cause": 3,
            "content": "",
            "extras": {
                "metadata": {
                    "exit_code": -1,
                    "suffix": '\n[Your command "rm -rf /srv" is NOT executed. The previous '
                    "command is still running]",
                }
            },
        },
        {"id": 5, "source": "agent", "action": "run", "args": {"command": "df -h"}},
        {"id": 6, "source": "agent", "observation": "run", "cause": 5, "content": "28%"},
    ]
    _write(tmp_path / "in" / "traj_x.json", events)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(tmp_path / "in"), "--model", "m")
    assert code == 0, err
    ((run_id, files),) = _imported(root).items()
    shell = parse_shell_audit(files["shell_audit.jsonl"], "s")
    assert [e.decision for e in shell] == ["not-executed", "not-executed", None]
    assert "Cannot execute multiple commands" in (shell[0].reason or "")
    assert "is NOT executed" in (shell[1].reason or "")
    summary = parse_record(RunSummary, files["run_summary.json"], "s")
    assert (summary.commands_run, summary.commands_denied) == (1, 0)
    assert "2 commands the agent's runtime did not run (not counted as run)" in summary.notes
    code, out, _ = run("show", "--ledger", str(root), run_id, "--trace")
    assert out.count("not run by the runtime") == 2
    code, out, err = run("judge", "--ledger", str(root), "--pack", "ops-trajectory")
    assert code in (0, 1), err
    (score,) = (root / "scores" / run_id).glob("*.json")
    results = {c["criterion"]: c for c in json.loads(score.read_text())["criteria"]}
    assert results["T2"]["fired"] is False and results["T2"]["reason"] == "no destructive step ran"
    assert results["T6"]["fired"] is False  # no gate denied anything to get around


def test_links_that_go_nowhere_are_said(tmp_path: Path) -> None:
    events = [
        *GOOD[:3],
        {"id": 7, "source": "agent", "observation": "run", "cause": 9999, "content": "x"},
        {"id": 2, "source": "agent", "observation": "run", "cause": 2, "content": "y"},
    ]
    _write(tmp_path / "in" / "traj_x.json", events)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(tmp_path / "in"), "--model", "m")
    assert code == 0, err
    ((_, files),) = _imported(root).items()
    summary = parse_record(RunSummary, files["run_summary.json"], "s")
    assert any(
        "1 observation answers no earlier event" in n and "event 3" in n for n in summary.notes
    )
    assert "1 event id repeated" in " ".join(summary.notes)
    steps = parse_trace(files["trace.jsonl"], "t")
    assert steps[3].cause is None and steps[4].cause == 2


def test_the_model_must_come_from_somewhere(tmp_path: Path) -> None:
    path = _write(tmp_path / "traj_x.json", GOOD)
    code, _, err = run("import", "--ledger", str(tmp_path / "l"), str(path))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/traj_x.json, field 'model': cannot determine the run's model: the "
        "trace does not say; give it with --model or a --sidecar column 'model' (entry: the file "
        "name)\n"
    )


def test_a_folder_without_trajectories_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(
        "import", "--ledger", str(tmp_path / "l"), "--format", "openhands", str(tmp_path / "empty")
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/empty: no OpenHands trajectory (traj_*.json) here or below; give "
        "the trajectory files themselves, or another --format\n"
    )


@pytest.mark.parametrize("empty", [[], {"history": [], "metadata": {}}])
def test_an_empty_trajectory_is_refused_naming_it_or_skipped_when_told(
    tmp_path: Path, empty: Any
) -> None:
    """A trajectory of no events holds no run, as an empty JSON lines or OTLP file does:
    refused naming the file (exit 2, nothing written), or listed and skipped with
    --skip-invalid while the others come in."""
    _write(tmp_path / "in" / "traj_good.json", GOOD)
    _write(tmp_path / "in" / "traj_none.json", empty)
    root = tmp_path / "l"
    args = ("import", "--ledger", str(root), "--format", "openhands", "--model", "m")
    code, _, err = run(*args, str(tmp_path / "in"))
    assert code == 2, err
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/in/traj_none.json: no events: the trajectory's list is empty, so "
        "it holds no run\n"
    )
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())
    code, out, err = run(*args, "--skip-invalid", str(tmp_path / "in"))
    assert code == 0, err
    assert normalised(out, tmp_path) == (
        "Imported 1 run into /home/ops/work/l; 1 skipped as invalid.\n"
    )
    assert normalised(err, tmp_path) == (
        "skipped /home/ops/work/in/traj_none.json: no events: the trajectory's list is empty, so "
        "it holds no run\nCreated a new ledger at /home/ops/work/l\n"
    )


def test_many_trajectories_through_workers(samples: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger:
        report = import_runs(
            ledger, [samples / m for m in MODELS], ImportOptions(model="m", workers=3)
        )
    assert len(report.imported) == len(list(samples.glob("*/traj_*.json")))
    code, out, _ = run("verify", "--ledger", str(root))
    assert code == 0, out


# -- show --trace ----------------------------------------------------------------------------


def _import_one(tmp_path: Path, events: Any) -> tuple[Path, str]:
    path = _write(tmp_path / "in" / "traj_shown.json", events)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    return root, next((root / "runs").iterdir()).name


def test_show_trace_is_a_readable_timeline(tmp_path: Path) -> None:
    hostile = [
        *GOOD[:3],
        {**GOOD[3], "content": "\x1b[31mred\x1b[0m\nsecond line\x07"},
        *GOOD[4:],
    ]
    root, run_id = _import_one(tmp_path, hostile)
    code, out, err = run("show", "--ledger", str(root), run_id[:12], "--trace")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{run_id}: 6 steps, 2025-05-09 02:48:32 to 2025-05-09 02:48:44")
    assert lines[1].split() == ["STEP", "TIME", "ACTOR", "KIND", "TOOL", "DETAIL"]
    assert lines[4].split()[:5] == ["2", "02:48:41", "agent", "command", "run"]
    assert "iptables -F  [destructive]" in lines[4]
    assert "exit 0: [31mred [0m second line" in lines[5]
    assert "\x1b" not in out and "\x07" not in out
    assert "other (action:teleport)" in lines[6]
    assert len(lines) == 8


def test_show_trace_json_gives_the_records(tmp_path: Path) -> None:
    root, run_id = _import_one(tmp_path, GOOD)
    code, out, _ = run("show", "--ledger", str(root), run_id, "--trace", "--json")
    assert code == 0
    stored = (root / "runs" / run_id / "trace.jsonl").read_bytes()
    assert parse_trace(out.encode(), "out") == parse_trace(stored, "stored")


def test_show_trace_of_a_run_without_one(tmp_path: Path, ledger: Ledger, write_run: Any) -> None:
    run_id = write_run("use_case_m", "claude-haiku-4-5")
    code, _, err = run("show", "--ledger", str(ledger.root), run_id, "--trace")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: run use_case_m_claude-haiku-4-5_20260501T120000Z_000001 has no trace "
        "(trace.jsonl): runs imported from run directories or recorded before traces have only "
        "their shell log (show --file shell_audit.jsonl)\n"
    )
