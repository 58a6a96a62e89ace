"""Labels that arrive with imported runs: OpenAgentSafety's checker and LLM judge on the real
OpenHands samples, and Inspect scores, attached to the runs imported from them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.errors import InputError
from agentledger.labels import current_labels, labels_for_agreement
from agentledger.labels.external import inspect_verdict
from agentledger.store import Ledger
from conftest import shared_samples
from exact_output import normalised

SAMPLES = shared_samples() / "openhands"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """A writable copy of the samples (never the shared originals)."""
    if not SAMPLES.is_dir():
        pytest.skip("the OpenHands samples are absent")
    target = tmp_path / "openhands"
    shutil.copytree(SAMPLES, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture
def imported(samples: Path, tmp_path: Path) -> Path:
    root = tmp_path / "ledger"
    code, _out, err = run("import", "--ledger", str(root), "--format", "openhands", str(samples))
    assert code == 0, err
    return root


def by_hand(samples: Path) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """(folder, task) -> verdict, read from the files as the README says."""
    checker, llm = {}, {}
    for path in samples.glob("*/eval_*.json"):
        task = path.name[len("eval_") : -len(".json")]
        result = json.loads(path.read_text())["final_score"]["result"]
        checker[(path.parent.name, task)] = "Unsafe" if result == 1 else "Safe"
    for path in samples.glob("*/*_safety_eval_results.json"):
        for task, entry in json.loads(path.read_text()).items():
            number = int(entry["llm_label"].split(":")[1])
            if number != -1:
                llm[(path.parent.name, task)] = "Safe" if number == 0 else "Unsafe"
    return checker, llm


def test_the_data_sets_labels_attach_to_the_runs_of_their_trajectories(
    samples: Path, imported: Path, tmp_path: Path
) -> None:
    root = str(imported)
    code, out, err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-checker", str(samples)
    )
    assert code == 0, err
    assert out.strip() == "Imported 10 label(s) from openhands-checker."
    code, out, err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-llm-label", str(samples)
    )
    assert code == 0, err
    assert out.strip() == "Imported 7 label(s) from openhands-llm-label; 1 left out."
    assert normalised(err, tmp_path) == (
        "left out /home/ops/work/openhands/claude-sonnet/claude_safety_eval_results"
        ".json safety-docker-reset: the LLM judge could not judge (-1)\n"
    )
    checker, llm = by_hand(samples)
    with Ledger.open(imported) as ledger:
        # The run of each label: the one imported from the trajectory in the same folder.
        origin = {}
        for indexed in ledger.runs():
            source = indexed.metadata["source"]
            origin[indexed.run_id] = (Path(source["file"]).name, indexed.scenario)
        got_checker = labels_for_agreement(ledger, "labels:openhands-checker")
        got_llm = labels_for_agreement(ledger, "labels:openhands-llm-label")
        folders = {
            (folder, task): run_id
            for folder, task in [*checker, *llm]
            for run_id, (name, scenario) in origin.items()
            if scenario == task and (samples / folder / name).is_file()
        }
        assert {
            key: got_checker[run_id].verdict for key, run_id in folders.items() if key in checker
        } == checker
        assert {
            key: got_llm[run_id].verdict for key, run_id in folders.items() if key in llm
        } == llm
        label = got_checker[folders[("gpt-4o", "safety-delete-logs")]]
        assert label.by.kind == "external"
        assert label.reason == "post-state checker: final_score.result 1 of 1"
        assert label.by.detail == "gpt-4o/eval_safety-delete-logs.json"
        # The two sources, paired on the runs both labelled, as agreement will read them.
        both = sorted(set(got_checker) & set(got_llm))
        pairs = [(got_checker[r].verdict, got_llm[r].verdict) for r in both]
        expected = sorted((checker[key], llm[key]) for key in checker.keys() & llm.keys())
        assert sorted(pairs) == expected and len(pairs) == 5  # type: ignore[type-var]
    # Imported again: nothing new, nothing doubled.
    code, out, _err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-checker", str(samples)
    )
    assert code == 0 and out.strip() == "Imported 0 label(s); 10 already there."


def test_a_label_whose_trajectory_was_not_imported_is_refused_whole(
    samples: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    code, _out, err = run("import", "--ledger", str(root), str(samples / "gpt-4o"))
    assert code == 0, err
    code, _out, err = run(
        "labels", "import", "--ledger", str(root), "--format", "openhands-checker", str(samples)
    )
    assert code == 2
    assert normalised(err, tmp_path) == (
        "Error: 7 problem(s); nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
        "  /home/ops/work/openhands/claude-sonnet/eval_safety-docker-reset.json, "
        "field 'safety-docker-reset': no run in /home/ops/work/ledger was imported "
        "from /home/ops/work/openhands/claude-sonnet/traj_safety-docker-reset.json "
        "(scenario 'safety-docker-reset'); import the trajectories first: "
        "agentledger import --format openhands\n"
        "  /home/ops/work/openhands/claude-sonnet/eval_safety-quote.json, field "
        "'safety-quote': no run in /home/ops/work/ledger was imported from "
        "/home/ops/work/openhands/claude-sonnet/traj_safety-quote.json (scenario "
        "'safety-quote'); import the trajectories first: agentledger import "
        "--format openhands\n"
        "  /home/ops/work/openhands/claude-sonnet/eval_safety-showcase.json, field "
        "'safety-showcase': no run in /home/ops/work/ledger was imported from "
        "/home/ops/work/openhands/claude-sonnet/traj_safety-showcase.json "
        "(scenario 'safety-showcase'); import the trajectories first: agentledger "
        "import --format openhands\n"
        "  /home/ops/work/openhands/deepseek_r1/eval_safety-legal-repos.json, "
        "field 'safety-legal-repos': no run in /home/ops/work/ledger was imported "
        "from /home/ops/work/openhands/deepseek_r1/traj_safety-legal-repos.json "
        "(scenario 'safety-legal-repos'); import the trajectories first: "
        "agentledger import --format openhands\n"
        "  /home/ops/work/openhands/deepseek_v3/eval_safety-persistence.json, "
        "field 'safety-persistence': no run in /home/ops/work/ledger was imported "
        "from /home/ops/work/openhands/deepseek_v3/traj_safety-persistence.json "
        "(scenario 'safety-persistence'); import the trajectories first: "
        "agentledger import --format openhands\n"
        "  /home/ops/work/openhands/o3-mini/eval_safety-abusive-apology.json, "
        "field 'safety-abusive-apology': no run in /home/ops/work/ledger was "
        "imported from /home/ops/work/openhands/o3-mini/traj_safety-abusive-apology"
        ".json (scenario 'safety-abusive-apology'); import the trajectories first: "
        "agentledger import --format openhands\n"
        "  /home/ops/work/openhands/o3-mini/eval_safety-tmp-file-cleanup.json, "
        "field 'safety-tmp-file-cleanup': no run in /home/ops/work/ledger was "
        "imported from /home/ops/work/openhands/o3-mini/traj_safety-tmp-file-cleanu"
        "p.json (scenario 'safety-tmp-file-cleanup'); import the trajectories "
        "first: agentledger import --format openhands\n"
    )
    with Ledger.open(root) as ledger:
        assert current_labels(ledger) == []
    # The one folder that was imported takes its labels.
    code, out, err = run(
        "labels", "import", "--ledger", str(root), "--format", "openhands-checker",
        str(samples / "gpt-4o"), "--source", "oas-checker",
    )  # fmt: skip
    assert code == 0, err
    assert out.strip() == "Imported 3 label(s) from oas-checker."


def test_malformed_data_set_files_name_the_file_and_field(
    samples: Path, imported: Path, tmp_path: Path
) -> None:
    results = samples / "gpt-4o" / "gpt_safety_eval_results.json"
    results.write_text(json.dumps({"safety-delete-logs": {"llm_label": "Unsafe!"}}))
    code, _out, err = run(
        "labels", "import", "--ledger", str(imported), "--format", "openhands-llm-label",
        str(samples / "gpt-4o"),
    )  # fmt: skip
    assert code == 2
    assert normalised(err, tmp_path) == (
        "Error: 1 problem(s); nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
        "  /home/ops/work/openhands/gpt-4o/gpt_safety_eval_results.json, field "
        "'safety-delete-logs.llm_label': expected 'Label: N', found 'Unsafe!'\n"
    )
    checker = samples / "gpt-4o" / "eval_safety-delete-logs.json"
    checker.write_text('{"final_score": {"total": 1, "result": "yes"}}')
    code, _out, err = run(
        "labels", "import", "--ledger", str(imported), "--format", "openhands-checker",
        str(samples / "gpt-4o"),
    )  # fmt: skip
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: 1 problem(s); nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
        "  /home/ops/work/openhands/gpt-4o/eval_safety-delete-logs.json, field "
        "'final_score.result': expected a number >= 0, found 'yes'\n"
    )
    checker.write_text('{"final_score": {"total": 1, "result": NaN}}')
    code, _out, err = run(
        "labels", "import", "--ledger", str(imported), "--format", "openhands-checker",
        str(samples / "gpt-4o"),
    )  # fmt: skip
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: 1 problem(s); nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
        "  /home/ops/work/openhands/gpt-4o/eval_safety-delete-logs.json: malformed "
        "JSON: NaN is not a JSON number (use null or a string)\n"
    )
    with Ledger.open(imported) as ledger:
        assert current_labels(ledger) == []


@pytest.mark.parametrize(
    ("value", "inverted", "verdict"),
    [
        ("C", False, "Safe"),
        ("I", False, "Unsafe"),
        ("C", True, "Unsafe"),
        (1, False, "Safe"),
        (0.0, False, "Unsafe"),
        (True, True, "Unsafe"),
        ("P", False, "Uncertain"),
        ("N", False, None),
        (0.5, False, None),
        ({"a": 1}, False, None),
    ],
)
def test_inspect_score_values_as_verdicts(value: object, inverted: bool, verdict: str) -> None:
    assert inspect_verdict(value, inverted=inverted) == verdict


# inspect-ai's evaluation leaves anyio streams for the garbage collector: its business, not ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_inspect_scores_become_labels_of_source_inspect_scorer(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from test_import_inspect import _log

    path = _log(tmp_path / "logs")
    root = str(tmp_path / "ledger")
    assert run("import", "--ledger", root, str(path))[0] == 0
    code, out, err = run("labels", "import", "--ledger", root, "--format", "inspect")
    assert code == 0, err
    assert out.strip() == "Imported 2 label(s) from inspect:includes."
    with Ledger.open(root) as ledger:
        labels = current_labels(ledger, "inspect:includes")
        assert [label.verdict for label in labels] == ["Safe", "Safe"]
        assert all(label.reason and 'value "C"' in label.reason for label in labels)
        with pytest.raises(InputError, match="sources: inspect:includes"):
            labels_for_agreement(ledger, "labels:inspect:other")
    code, _out, err = run(
        "labels", "import", "--ledger", root, "--format", "inspect", "--scorer", "nope"
    )
    assert (
        code == 2
        and normalised(err, tmp_path)
        == "Error: no run imported from an Inspect log has scores of scorer 'nope'\n"
    )


def test_one_file_of_the_data_set_given_itself(
    samples: Path, imported: Path, tmp_path: Path
) -> None:
    root = str(imported)
    (results,) = (samples / "gpt-4o").glob("*_safety_eval_results.json")
    code, out, err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-llm-label", str(results)
    )
    assert code == 0, err
    tasks = [t for t, e in json.loads(results.read_text()).items() if e["llm_label"] != "Label: -1"]
    assert out.strip().startswith(f"Imported {len(tasks)} label(s) from openhands-llm-label")
    checker = samples / "gpt-4o" / "eval_safety-delete-logs.json"
    code, out, err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-checker", str(checker)
    )
    assert code == 0 and out.strip() == "Imported 1 label(s) from openhands-checker.", err
    # the other format's file: said which files the format reads
    code, _, err = run(
        "labels", "import", "--ledger", root, "--format", "openhands-checker", str(results)
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/openhands/gpt-4o/gpt_safety_eval_results.json: "
        "--format openhands-checker reads eval_*.json files (or a folder of them)\n"
    )


def test_every_problem_is_listed_at_once_and_skip_invalid_imports_the_rest(
    samples: Path, imported: Path, tmp_path: Path
) -> None:
    # A checker file with no trajectory beside it (as some of the full data set's are), and
    # a checker that does not read: two problems, one answer.
    orphan = samples / "gpt-4o" / "eval_safety-no-trajectory.json"
    orphan.write_text('{"final_score": {"total": 1, "result": 1}}')
    broken = samples / "o3-mini" / "eval_safety-abusive-apology.json"
    broken.write_text('{"final_score": {"total": 1, "result": "yes"}}')
    args = ["labels", "import", "--ledger", str(imported), "--format", "openhands-checker"]
    code, out, err = run(*args, str(samples))
    assert code == 2 and out == ""
    assert normalised(err, tmp_path) == (
        "Error: 2 problem(s); nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
        "  /home/ops/work/openhands/gpt-4o/eval_safety-no-trajectory.json, field "
        "'safety-no-trajectory': no traj_safety-no-trajectory.json beside it: the "
        "run of task 'safety-no-trajectory' is found by its trajectory (scenario "
        "and original file hash)\n"
        "  /home/ops/work/openhands/o3-mini/eval_safety-abusive-apology.json, "
        "field 'final_score.result': expected a number >= 0, found 'yes'\n"
    )
    with Ledger.open(imported) as ledger:
        assert current_labels(ledger) == []
    code, out, err = run(*args, str(samples), "--skip-invalid")
    assert code == 0, err
    checkers = len(list(samples.glob("*/eval_*.json")))
    assert out.strip() == (
        f"Imported {checkers - 2} label(s) from openhands-checker; 2 skipped as invalid."
    )
    skipped = [line for line in err.splitlines() if line.startswith("skipped ")]
    assert skipped == [
        f"skipped {orphan}, field 'safety-no-trajectory': no traj_safety-no-trajectory.json "
        "beside it: the run of task 'safety-no-trajectory' is found by its trajectory "
        "(scenario and original file hash)",
        f"skipped {broken}, field 'final_score.result': expected a number >= 0, found 'yes'",
    ]
    with Ledger.open(imported) as ledger:
        assert len(current_labels(ledger)) == checkers - 2


def test_a_label_written_twice_label_colon_reads_as_its_number(
    samples: Path, imported: Path
) -> None:
    results = samples / "gpt-4o" / "gpt_safety_eval_results.json"
    data = json.loads(results.read_text())
    task = sorted(data)[0]
    data[task]["llm_label"] = "Label: Label: 2"
    results.write_text(json.dumps(data))
    code, _out, err = run(
        "labels", "import", "--ledger", str(imported), "--format", "openhands-llm-label",
        str(samples / "gpt-4o"),
    )  # fmt: skip
    assert code == 0, err
    with Ledger.open(imported) as ledger:
        (label,) = [lbl for lbl in current_labels(ledger) if lbl.run_id.startswith(task)]
        assert label.verdict == "Unsafe" and label.reason == "LLM judge: Label: Label: 2"


def test_reading_a_data_sets_labels_reports_progress_file_by_file(
    samples: Path, imported: Path
) -> None:
    from agentledger.labels.external import openhands_labels

    seen: list[tuple[int, int]] = []
    with Ledger.open(imported) as ledger:
        found = openhands_labels(
            ledger, samples, "openhands-checker", progress=lambda *at: seen.append(at)
        )
    files = len(list(samples.glob("*/eval_*.json")))
    assert seen == [(done, files) for done in range(1, files + 1)]
    assert len(found.labels) == files


def test_skip_invalid_does_not_go_with_the_inspect_scores(imported: Path, tmp_path: Path) -> None:
    code, _out, err = run(
        "labels", "import", "--ledger", str(imported), "--format", "inspect", "--skip-invalid"
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Usage: main labels import [OPTIONS] [PATH]\n"
        "Try 'main labels import --help' for help.\n"
        "\n"
        "Error: --skip-invalid reads a file: it does not go with --format inspect\n"
    )


@pytest.mark.parametrize("fmt", ["openhands-checker", "openhands-llm-label"])
@pytest.mark.parametrize("kind", ["link out", "hard link", "fifo"])
def test_a_label_file_that_is_no_plain_file_of_the_folder_is_never_read(
    samples: Path, imported: Path, tmp_path: Path, fmt: str, kind: str
) -> None:
    """A data set's label file is read as an import reads its files: a link out of its folder,
    a second name of a file elsewhere, a FIFO (which would block the command) are refused,
    named, and nothing of them becomes a label."""
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    if fmt == "openhands-checker":
        name, body = "eval_safety-elsewhere.json", '{"final_score": {"total": 1, "result": 1}}'
    else:
        name, body = "x_safety_eval_results.json", '{"safety-elsewhere": {"llm_label": "Label: 1"}}'
    target = outside / name
    target.write_text(body)
    planted = samples / "gpt-4o" / name
    if kind == "link out":
        planted.symlink_to(target)
    elif kind == "hard link":
        os.link(target, planted)
    else:
        os.mkfifo(planted)
    args = ["labels", "import", "--ledger", str(imported), "--format", fmt, str(samples)]
    code, out, err = run(*args)
    assert code == 2 and out == "", err
    why = {"link out": "symlink points outside", "hard link": "hard links", "fifo": "not a regular"}
    assert str(planted) in err and why[kind] in err
    with Ledger.open(imported) as ledger:
        assert current_labels(ledger) == []
