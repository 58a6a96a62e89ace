"""Importing Inspect AI logs made by the test with inspect-ai's mock model (offline): one run
per sample and epoch."""

from __future__ import annotations

import gc
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.records import RunMetadata, RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace
from agentledger.store import Ledger, RunFilter
from exact_output import normalised

inspect_ai = pytest.importorskip("inspect_ai")
# inspect-ai's evaluation leaves anyio streams for the garbage collector: its business, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]
from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import generate, system_message, use_tools  # noqa: E402
from inspect_ai.tool import Tool, tool  # noqa: E402


@pytest.fixture(autouse=True)
def _collect_inspect_garbage() -> Iterator[None]:
    """Collect what inspect-ai's evaluation leaves for the garbage collector while this
    module's warning filters hold, not in whichever test runs next."""
    yield
    gc.collect()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@tool
def bash() -> Tool:
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command line.
        """
        return "Chain INPUT (policy ACCEPT)\nDROP all -- 10.0.0.7"

    return execute


def _used(output: ModelOutput) -> ModelOutput:
    # Given usage, the mock model does not count tokens (which would fetch an encoding).
    output.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
    return output


def _log(where: Path, epochs: int = 1) -> Path:
    outputs = [
        _used(ModelOutput.for_tool_call("mockllm/model", "bash", {"cmd": "iptables -L INPUT -n"})),
        _used(ModelOutput.from_content("mockllm/model", "Root cause: a DROP rule for 10.0.0.7")),
    ] * (2 * epochs)
    task = Task(
        dataset=[
            Sample(input="SSH is refused.", target="DROP", id="ssh"),
            Sample(input="Packets drop.", target="DROP", id="drop"),
        ],
        solver=[system_message("You are Ghost."), use_tools([bash()]), generate()],
        scorer=includes(),
    )
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(where),
        display="none",
        epochs=epochs,
        max_samples=1,
    )
    assert log.status == "success", log.error
    return Path(log.location)


def test_one_run_per_sample_and_epoch(tmp_path: Path) -> None:
    path = _log(tmp_path / "logs", epochs=2)
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 4 runs into /home/ops/work/ledger.\n"
    seen = set()
    for run_dir in sorted((root / "runs").iterdir()):
        metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
        source = metadata.source or {}
        seen.add((source["sample_id"], source["epoch"]))
        assert metadata.model == "mockllm/model" and metadata.scenario.startswith("task-")
        assert metadata.started_at is not None and metadata.ended_at is not None
        assert (run_dir / "system_prompt.txt").read_text() == "You are Ghost."
        assert source["scores"]["includes"]["value"] == "C"
        steps = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
        # system, user, the assistant's text and its tool call, the result, the answer
        kinds = ["message", "message", "message", "command", "command_output", "message"]
        assert [s.kind for s in steps] == kinds
        assert [s.actor for s in steps[:3]] == ["environment", "user", "agent"]
        assert steps[3].command == "iptables -L INPUT -n" and steps[3].command_class == "read-only"
        assert steps[3].tool == "bash" and steps[3].call_id
        assert steps[4].cause == 3 and steps[4].content is not None
        (event,) = parse_shell_audit((run_dir / "shell_audit.jsonl").read_bytes(), "s")
        assert event.command == "iptables -L INPUT -n" and event.stdout is not None
        assert (run_dir / "report.md").read_text() == "Root cause: a DROP rule for 10.0.0.7"
        assert (run_dir / "PROMPT.txt").read_text() in ("SSH is refused.", "Packets drop.")
        summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
        assert summary.tokens_in == 200 and summary.tokens_out == 40
        # the sample's own entries of the log, byte for byte, not the whole log once more
        kept = run_dir / "attachments" / path.name
        entry = f"samples/{source['sample_id']}_epoch_{source['epoch']}.json"
        with zipfile.ZipFile(path) as log:
            assert (kept / entry).read_bytes() == log.read(entry)
            assert (kept / "header.json").read_bytes() == log.read("header.json")
        assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*.json")) == [
            "header.json",
            entry,
        ]
        assert source["files"][f"{path.name}:{entry}"] == f"attachments/{path.name}/{entry}"
        assert {s.source.file for s in steps if s.source} == {f"attachments/{path.name}/{entry}"}
    assert seen == {("ssh", 1), ("ssh", 2), ("drop", 1), ("drop", 2)}
    again = run("import", "--ledger", str(root), str(path))
    assert again[0] == 0 and "nothing to do" in again[1]


def test_a_file_that_is_not_a_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.eval"
    path.write_bytes(b"not a zip")
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/broken.eval: not a readable Inspect AI log (EOCD not found)\n"
    )
    assert not root.exists()


@tool
def broken_bash() -> Tool:
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command line.
        """
        raise RuntimeError("the sandbox is gone")

    return execute


def test_a_sample_that_ended_in_error_is_a_failed_run(tmp_path: Path) -> None:
    outputs = [
        _used(ModelOutput.for_tool_call("mockllm/model", "broken_bash", {"cmd": "df -h"})),
        _used(ModelOutput.from_content("mockllm/model", "done")),
    ]
    task = Task(
        dataset=[Sample(input="Check the disk.", target="ok", id="disk")],
        solver=[use_tools([broken_bash()]), generate()],
        scorer=includes(),
    )
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
        fail_on_error=False,
    )
    assert log.samples and log.samples[0].error is not None
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(log.location))
    assert code == 0, err
    (run_dir,) = (root / "runs").iterdir()
    summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
    assert summary.exit_status == "failed"
    assert summary.error and "the sandbox is gone" in summary.error
    code, out, _ = run("show", "--ledger", str(root), run_dir.name)
    # Varies between runs (the log's name holds its time and a random id): a substring.
    assert "failed" in out and "the sandbox is gone" in out


def test_sample_ids_a_run_id_cannot_hold_give_runs_of_their_own(tmp_path: Path) -> None:
    outputs = [_used(ModelOutput.from_content("mockllm/model", "done"))] * 2
    task = Task(
        dataset=[
            Sample(input="a", target="done", id="a b"),
            Sample(input="b", target="done", id="a-b"),
        ],
        solver=[generate()],
        scorer=includes(),
    )
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(log.location))
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"


def test_a_log_without_samples_is_refused(tmp_path: Path) -> None:
    task = Task(dataset=[Sample(input="a", target="done", id="a")], solver=[generate()])
    (log,) = eval(
        task,
        model=get_model(
            "mockllm/model", custom_outputs=[_used(ModelOutput.from_content("mockllm/model", "x"))]
        ),
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_samples=False,
    )
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(log.location))
    # Varies between runs (the log's name holds its time and a random id): a substring.
    assert code == 2 and "no samples in this log" in err
    assert not root.exists()


def test_a_json_log_s_runs_keep_their_own_sample_not_the_whole_log(tmp_path: Path) -> None:
    outputs = [_used(ModelOutput.from_content("mockllm/model", "done"))] * 3
    task = Task(
        dataset=[Sample(input=f"q{n}", target="done", id=f"s{n}") for n in range(3)],
        solver=[generate()],
        scorer=includes(),
    )
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_format="json",
    )
    path = Path(log.location)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    document = json.loads(path.read_bytes())
    for run_dir in (root / "runs").iterdir():
        metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
        sample_id = (metadata.source or {})["sample_id"]
        kept = run_dir / "attachments" / path.name
        own = json.loads((kept / "samples" / f"{sample_id}_epoch_1.json").read_bytes())
        (given,) = [s for s in document["samples"] if s["id"] == sample_id]
        assert own == given
        header = json.loads((kept / "header.json").read_bytes())
        assert header == {k: v for k, v in document.items() if k != "samples"}
        assert sum(p.stat().st_size for p in kept.rglob("*.json")) < path.stat().st_size
    code, out, _ = run("verify", "--ledger", str(root))
    assert code == 0, out


def _json_log(where: Path, samples: int) -> Path:
    outputs = [_used(ModelOutput.from_content("mockllm/model", "done"))] * samples
    task = Task(
        dataset=[Sample(input=f"q{n}", target="done", id=f"s{n}") for n in range(samples)],
        solver=[generate()],
        scorer=includes(),
    )
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(where),
        display="none",
        log_format="json",
    )
    return Path(log.location)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "eval"])
def test_a_key_given_twice_in_a_log_is_refused_not_last_wins(tmp_path: Path, fmt: str) -> None:
    """inspect-ai's reader takes the last of two keys; which the writer meant is unknowable."""
    if fmt == "json":
        path = _json_log(tmp_path / "logs", 1)
        text = path.read_text()
        assert '"status": "success"' in text
        path.write_text(
            text.replace('"status": "success"', '"status": "x", "status": "success"', 1)
        )
        named = path.name
    else:
        path = _log(tmp_path / "logs")
        doubled = tmp_path / "doubled.eval"
        with zipfile.ZipFile(path) as log, zipfile.ZipFile(doubled, "w") as out:
            for info in log.infolist():
                data = log.read(info)
                if info.filename == "header.json":
                    data = data.replace(b'"status":', b'"status": "x", "status":', 1)
                out.writestr(info.filename, data)
        path, named = doubled, "doubled.eval, entry header.json"
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2, err
    # Varies between runs (the log's name holds its time and a random id): a substring.
    assert named in err and "duplicate key" in err
    assert not root.exists()


@pytest.mark.slow
def test_nan_as_inspect_ai_writes_it_is_not_malformed(tmp_path: Path) -> None:
    """inspect-ai writes NaN and Infinity as constants (`ser_json_inf_nan`): its logs hold
    them (a metric over one sample has no stderr), so the duplicate-key check lets them by."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path = _json_log(tmp_path / "logs", 1)
    log = read_eval_log(str(path))
    assert log.results is not None
    for metric in log.results.scores[0].metrics.values():
        metric.value = float("nan")  # as a stderr over one sample is
    write_eval_log(log, str(path))
    assert "NaN" in path.read_text()
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 1 run into /home/ops/work/ledger.\n"


@pytest.mark.slow
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_sample_scored_nan_is_imported_with_no_score_and_a_note(
    tmp_path: Path, value: float
) -> None:
    """A sample's score of NaN (a scorer that divided by zero) is no number: the run comes in
    with that score null and a note saying so, not the whole log refused."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path = _json_log(tmp_path / "logs", 2)
    log = read_eval_log(str(path))
    assert log.samples is not None
    for score in log.samples[0].scores.values():
        score.value = value
    write_eval_log(log, str(path))
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"
    with Ledger.open(root) as ledger:
        stored = {run.scenario: ledger.load(run.run_id) for run in ledger.runs(RunFilter())}
    (odd,) = [key for key in stored if key.endswith("-s0")]
    source = stored[odd].metadata.source
    assert source["scores"]["includes"]["value"] is None
    summary = stored[odd].summary
    assert summary is not None
    assert any(
        "is NaN or infinite, which is no number: kept as no score" in n for n in summary.notes
    )
    (fine,) = [key for key in stored if key.endswith("-s1")]
    assert stored[fine].metadata.source["scores"]["includes"]["value"] == "C"
