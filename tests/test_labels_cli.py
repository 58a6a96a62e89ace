"""`agentledger label`, `review` and `labels import|list|export` as a user runs them, with the
bad input each must refuse (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.judges.scores import ScoreStore
from agentledger.labels import current_labels, labels_of_run
from agentledger.records.scores import Score
from agentledger.store import Ledger
from conftest import WriteRun
from exact_output import normalised


def invoke(ledger: Ledger, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--ledger", str(ledger.root)])
    return result.exit_code, result.stdout, result.stderr


def no_label_files(ledger: Ledger) -> bool:
    folder = ledger.root / "labels"
    return not folder.exists() or not any(folder.rglob("*.json"))


def score(
    ledger: Ledger,
    run_id: str,
    judge: str,
    verdict: str,
    *,
    pack: str = "remediation-safety",
    **extra: object,
) -> Score:
    """Store a score of `run_id` by a judge named `judge` of `pack`, as a judge would."""
    made = Score.model_validate(
        {
            "run_id": run_id,
            "judge_id": f"{judge}-{'0' * 11}{len(judge)}",
            "judge": {
                "kind": judge,
                "pack": pack,
                "pack_version": "1",
                "pack_digest": "sha256:" + "0" * 64,
            },
            "identity": {"kind": judge},
            "verdict": verdict,
            "criteria": [
                {"criterion": "C1", "fired": verdict == "Unsafe", "reason": "listed first"},
                {"criterion": "C2", "fired": False, "reason": "no owned resource touched"},
            ],
            **extra,
        }
    )
    ScoreStore(ledger).write([made])
    return made


@pytest.fixture
def runs(write_run: WriteRun) -> dict[str, str]:
    return {
        "gemini": write_run("use_case_m", "gemini-2.5-flash", tags={"ticket": "T-1"}),
        "haiku": write_run("use_case_m", "claude-haiku-4-5", tags={"ticket": "T-2"}),
        "sonnet": write_run("use_case_f", "claude-sonnet-4-6", tags={"ticket": "T-2"}),
    }


# -- label --------------------------------------------------------------------------------------


def test_label_with_flags_writes_one_label(ledger: Ledger, runs: dict[str, str]) -> None:
    code, out, err = invoke(
        ledger, "label", runs["gemini"][:12], "--verdict", "UNSAFE", "--criterion", "C2",
        "--fired", "yes", "--criterion", "C4", "--fired", "unknown", "--diagnosis", "correct",
        "--by", "alice", "--reason", "edited the fail2ban chain",
    )  # fmt: skip
    assert code == 0, err
    (label,) = labels_of_run(ledger, runs["gemini"])
    assert out.strip() == (
        f"Labelled {runs['gemini']} by alice: Unsafe, C2=yes, C4=unknown, diagnosis correct "
        f"({label.label_id})"
    )
    assert (label.by.kind, label.by.name, label.verdict) == ("person", "alice", "Unsafe")
    assert [(c.criterion, c.fired) for c in label.criteria] == [("C2", True), ("C4", None)]
    assert label.diagnosis_correct is True and label.reason == "edited the fail2ban chain"


def test_who_labels_defaults_to_the_environment(
    ledger: Ledger, runs: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No git identity here: an empty global config, no system config.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("AGENTLEDGER_USER", "Ada Lovelace")
    assert invoke(ledger, "label", runs["haiku"], "--verdict", "safe")[0] == 0
    monkeypatch.delenv("AGENTLEDGER_USER")
    monkeypatch.setenv("USER", "ops1")
    assert invoke(ledger, "label", runs["sonnet"], "--verdict", "safe")[0] == 0
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Grace Hopper\n")
    assert invoke(ledger, "label", runs["gemini"], "--verdict", "safe")[0] == 0
    names = {label.run_id: label.by.name for label in current_labels(ledger)}
    assert names == {
        runs["haiku"]: "Ada.Lovelace",
        runs["sonnet"]: "ops1",
        runs["gemini"]: "Grace.Hopper",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--verdict", "maybe"],
            (
                "Usage: main label [OPTIONS] RUN_ID\n"
                "Try 'main label --help' for help.\n"
                "\n"
                "Error: Invalid value for '--verdict': 'maybe' is not one of 'safe', "
                "'uncertain', 'unsafe'.\n"
            ),
        ),
        (
            ["--criterion", "C1"],
            (
                "Usage: main label [OPTIONS] RUN_ID\n"
                "Try 'main label --help' for help.\n"
                "\n"
                "Error: give one --fired per --criterion (1 --criterion, 0 --fired)\n"
            ),
        ),
        (
            ["--criterion", "C1", "--fired", "perhaps"],
            (
                "Usage: main label [OPTIONS] RUN_ID\n"
                "Try 'main label --help' for help.\n"
                "\n"
                "Error: Invalid value for '--fired': 'perhaps' is not one of 'yes', 'no', "
                "'unknown'.\n"
            ),
        ),
        (
            ["--verdict", "safe", "--by", "../../etc"],
            (
                "Error: --by '../../etc' is not a valid source name: letters, digits and . "
                "_ @ + : - (at most 64, starting with a letter or digit)\n"
            ),
        ),
        (
            ["--verdict", "safe", "--by", "a/b"],
            (
                "Error: --by 'a/b' is not a valid source name: letters, digits and . _ @ + "
                ": - (at most 64, starting with a letter or digit)\n"
            ),
        ),
        (
            ["--verdict", "safe", "--supersedes", "lbl_x"],
            (
                "Error: label of run use_case_m_gemini-2.5-flash_20260501T120000Z_000001: "
                "supersedes: String should match pattern '^lbl_[0-9]{8}T[0-9]{6}Z_[0-9a-f]{8}$'\n"
            ),
        ),
        (
            ["--reason", "only words"],
            (
                "Error: label of run use_case_m_gemini-2.5-flash_20260501T120000Z_000001: "
                "label: a label gives a verdict, a criterion or the diagnosis (none given)\n"
            ),
        ),
        (
            [],
            (
                "Usage: main label [OPTIONS] RUN_ID\n"
                "Try 'main label --help' for help.\n"
                "\n"
                "Error: give --verdict, --criterion/--fired or --diagnosis, or run on a "
                "terminal to be walked through the run\n"
            ),
        ),
    ],
)
def test_label_refuses_bad_input_and_writes_nothing(
    ledger: Ledger, runs: dict[str, str], args: list[str], message: str
) -> None:
    code, out, err = invoke(ledger, "label", runs["gemini"], "--by", "alice", *args)
    assert code == 2, out
    assert normalised(err, ledger.root.parent) == message
    assert no_label_files(ledger)


def test_label_of_a_missing_run_is_refused(ledger: Ledger, runs: dict[str, str]) -> None:
    code, _out, err = invoke(ledger, "label", "use_case_zz", "--verdict", "safe", "--by", "a")
    assert (
        code == 2
        and normalised(err, ledger.root.parent)
        == "Error: no run matches 'use_case_zz' in /home/ops/work/ledger\n"
    )
    assert no_label_files(ledger)


def test_criteria_are_checked_against_those_the_judges_assessed(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    score(ledger, runs["gemini"], "rules", "Unsafe")
    code, _out, err = invoke(
        ledger, "label", runs["gemini"], "--criterion", "C9", "--fired", "yes", "--by", "a"
    )
    assert code == 2
    assert normalised(err, ledger.root.parent) == (
        "Error: criterion 'C9' is not one the judges of run "
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000001 assessed (they "
        "assessed C1, C2)\n"
    )
    # A run no judge scored takes any criterion id.
    code, _out, err = invoke(
        ledger, "label", runs["haiku"], "--criterion", "C9", "--fired", "no", "--by", "a"
    )
    assert code == 0, err


def test_a_supersedes_chain_from_the_command_line(ledger: Ledger, runs: dict[str, str]) -> None:
    run_id = runs["gemini"]
    assert invoke(ledger, "label", run_id, "--verdict", "unsafe", "--by", "alice")[0] == 0
    (first,) = labels_of_run(ledger, run_id)
    code, _out, err = invoke(
        ledger, "label", run_id, "--verdict", "safe", "--by", "bob", "--supersedes",
        first.label_id, "--reason", "the chain was ours, not fail2ban's",
    )  # fmt: skip
    assert code == 0, err
    second = labels_of_run(ledger, run_id)[-1]
    assert second.supersedes == first.label_id
    assert current_labels(ledger) == [second]
    code, _out, err = invoke(
        ledger, "label", run_id, "--verdict", "unsafe", "--by", "carol", "--supersedes",
        first.label_id,
    )  # fmt: skip
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Error: label lbl_20260501T120000Z_00000001: lbl_20260501T120000Z_00000002 "
        "is already superseded by lbl_20260501T120000Z_00000003; supersede "
        "lbl_20260501T120000Z_00000003 instead\n"
    )
    other = runs["haiku"]
    code, _out, err = invoke(
        ledger, "label", other, "--verdict", "safe", "--by", "a", "--supersedes", first.label_id
    )
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Error: label lbl_20260501T120000Z_00000001: supersedes "
        "lbl_20260501T120000Z_00000002, which is not a label of run "
        "use_case_m_claude-haiku-4-5_20260501T120000Z_000003\n"
    )
    assert len(labels_of_run(ledger, run_id)) == 2 and labels_of_run(ledger, other) == []


# -- review -------------------------------------------------------------------------------------


def test_review_lists_refused_disagreeing_and_unlabelled_runs_with_why(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    score(
        ledger, runs["gemini"], "llm", "skipped",
        skipped_reason="self-judging refused: gemini judging gemini",
    )  # fmt: skip
    score(ledger, runs["haiku"], "rules", "Unsafe")
    score(ledger, runs["haiku"], "llm", "Safe")
    code, out, err = invoke(ledger, "review", "--json")
    assert code == 0, err
    queue = json.loads(out)
    assert [(row["run_id"], row["why"]) for row in queue] == [
        (runs["haiku"], ["disagreement"]),
        (runs["gemini"], ["refused"]),
        (runs["sonnet"], ["unlabelled"]),
    ]
    assert queue[1]["skipped_reason"] == "self-judging refused: gemini judging gemini"
    assert queue[0]["detail"] == [
        "remediation-safety: llm-000000000003 Safe; rules-000000000005 Unsafe"
    ]
    code, out, err = invoke(ledger, "review")
    assert code == 0
    assert normalised(out, ledger.root.parent) == (
        "RUN_ID                                                MODEL              "
        "WHY           DETAIL\n"
        "use_case_m_claude-haiku-4-5_20260501T120000Z_000001   claude-haiku-4-5   "
        "disagreement  remediation-safety: llm-000000000003 Safe; "
        "rules-000000000005 Unsafe\n"
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000002   gemini-2.5-flash   "
        "refused       llm-000000000003 refused: self-judging refused: gemini "
        "judging gemini\n"
        "use_case_f_claude-sonnet-4-6_20260501T120000Z_000003  claude-sonnet-4-6  "
        "unlabelled    no person's label yet\n"
    )
    assert normalised(err, ledger.root.parent) == (
        "3 run(s) wait (1 disagreement, 1 refused, 1 unlabelled): label the next "
        "with agentledger review --next\n"
    )
    # A person's label takes a run out; an outside source's does not.
    invoke(ledger, "label", runs["haiku"], "--verdict", "unsafe", "--by", "alice")
    code, out, _err = invoke(ledger, "review", "--json", "--no-unlabelled")
    assert [row["run_id"] for row in json.loads(out)] == [runs["gemini"]]


def test_judges_of_two_packs_are_no_disagreement_and_the_queue_takes_run_filters(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    """Two packs judge different criteria: their verdicts differing is no disagreement."""
    score(ledger, runs["haiku"], "rules", "Unsafe")
    score(ledger, runs["haiku"], "llm", "Safe", pack="ops-trajectory")
    score(ledger, runs["sonnet"], "rules", "Unsafe")
    score(ledger, runs["sonnet"], "llm", "Safe")
    code, out, err = invoke(ledger, "review", "--json", "--no-unlabelled")
    assert code == 0, err
    assert [(row["run_id"], row["why"]) for row in json.loads(out)] == [
        (runs["sonnet"], ["disagreement"])
    ]
    code, out, err = invoke(ledger, "review", "--json", "--model", "claude-haiku-4-5")
    assert [(row["run_id"], row["why"]) for row in json.loads(out)] == [
        (runs["haiku"], ["unlabelled"])
    ]
    code, out, err = invoke(ledger, "review", "--json", "--scenario", "use_case_f")
    assert [row["run_id"] for row in json.loads(out)] == [runs["sonnet"]]


def test_review_next_needs_a_terminal(ledger: Ledger, runs: dict[str, str]) -> None:
    code, _out, err = invoke(ledger, "review", "--next")
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Usage: main review [OPTIONS]\n"
        "Try 'main review --help' for help.\n"
        "\n"
        "Error: review --next asks questions: run it on a terminal\n"
    )


# -- labels import ------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_import_csv_keyed_by_run_id_with_both_criteria_forms(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    path = write(
        tmp_path, "labels.csv",
        "run_id,verdict,criteria,crit:C4,diagnosis,reason\n"
        f"{runs['gemini']},unsafe,C1=yes;C2=no,unknown,correct,\"edited, then checked\"\n"
        f"{runs['haiku']},Safe,,no,,\n",
    )  # fmt: skip
    code, out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 0, err
    assert out.strip() == "Imported 2 label(s) from team-b."
    by_run = {label.run_id: label for label in current_labels(ledger, "team-b")}
    gemini = by_run[runs["gemini"]]
    assert gemini.by.kind == "external" and gemini.by.detail == "labels.csv line 2"
    assert [(c.criterion, c.fired) for c in gemini.criteria] == [
        ("C1", True),
        ("C2", False),
        ("C4", None),
    ]
    assert gemini.reason == "edited, then checked" and gemini.diagnosis_correct is True
    assert by_run[runs["haiku"]].verdict == "Safe"


def test_import_json_lines_keyed_by_scenario_and_model_or_by_tag(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    path = write(
        tmp_path, "labels.jsonl",
        '{"scenario": "use_case_m", "model": "claude-haiku-4-5", "verdict": "unsafe", '
        '"criteria": {"C1": true, "C3": null}}\n\n'
        '{"scenario": "use_case_f", "model": "claude-sonnet-4-6", "diagnosis": "incorrect"}\n',
    )  # fmt: skip
    code, _out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "vendor", "--key", "scenario,model"
    )
    assert code == 0, err
    by_run = {label.run_id: label for label in current_labels(ledger, "vendor")}
    assert set(by_run) == {runs["haiku"], runs["sonnet"]}
    assert [(c.criterion, c.fired) for c in by_run[runs["haiku"]].criteria] == [
        ("C1", True),
        ("C3", None),
    ]
    path = write(tmp_path, "tagged.csv", "ticket,verdict\nT-1,uncertain\n")
    code, _out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "desk", "--key", "tag:ticket"
    )
    assert code == 0, err
    assert [label.run_id for label in current_labels(ledger, "desk")] == [runs["gemini"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "run_id,verdict\n{gemini},maybe\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'verdict': verdict "
                "'maybe' is not valid: use safe, uncertain, unsafe\n"
            ),
        ),
        (
            "run_id,verdict\n{gemini},NaN\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'verdict': verdict 'NaN' "
                "is not valid: use safe, uncertain, unsafe\n"
            ),
        ),
        (
            "run_id,verdict\n{gemini},safe\n{gemini},unsafe\n",
            (
                "Error: /home/ops/work/labels.csv, line 3, field 'run_id': run "
                "use_case_m_gemini-2.5-flash_20260501T120000Z_000001 is labelled by team-b "
                "on line 2 already (one row per run)\n"
            ),
        ),
        (
            "run_id,verdict\n{gemini},safe\nno_such_run,safe\n",
            (
                "Error: /home/ops/work/labels.csv, line 3, field 'run_id': no run "
                "'no_such_run' in /home/ops/work/ledger\n"
            ),
        ),
        (
            "run_id,verdict\n{gemini},safe\n,safe\n",
            (
                "Error: /home/ops/work/labels.csv, line 3, field 'run_id': the key column "
                "'run_id' is empty or missing\n"
            ),
        ),
        (
            "run_id,verdit\n{gemini},safe\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'verdit': unknown column "
                "'verdit' (columns: label_id, run_id, scenario, model, source, kind, "
                "created_at, verdict, criteria, diagnosis, reason, supersedes, crit:ID)\n"
            ),
        ),
        (
            "run_id,verdict\n{gemini},safe,extra\n",
            "Error: /home/ops/work/labels.csv, line 2: 3 cells where the header has 2\n",
        ),
        (
            'run_id,verdict\n{gemini},"safe\n',
            "Error: /home/ops/work/labels.csv, line 2: malformed CSV: unexpected end of data\n",
        ),
        (
            "run_id,criteria\n{gemini},C1\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'criteria': 'C1' is not "
                "CRITERION=yes|no|unknown\n"
            ),
        ),
        (
            "run_id,criteria\n{gemini},C1=nan\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'criteria.C1': fired "
                "'nan' is not valid: use yes, no, unknown, true, false, 1, 0\n"
            ),
        ),
        (
            "run_id,criteria\n{gemini},C1=yes;C1=no\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'C1': criterion 'C1' is "
                "given twice\n"
            ),
        ),
        (
            "run_id,reason\n{gemini},just words\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'label': label: a label "
                "gives a verdict, a criterion or the diagnosis (none given)\n"
            ),
        ),
        (
            "run_id,verdict,source\n{gemini},safe,other\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'source': source 'other' "
                "differs from --source team-b\n"
            ),
        ),
        ("run_id,verdict\n", "Error: /home/ops/work/labels.csv: no labels in the file\n"),
        (
            "run_id,verdict,created_at\n{gemini},safe,yesterday\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'label': 'yesterday' is "
                "not an ISO 8601 time\n"
            ),
        ),
        (
            "run_id,verdict,kind\n{gemini},safe,robot\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'kind': 'robot' is not "
                "valid: use person or external\n"
            ),
        ),
        (
            "run_id,verdict,source\n{gemini},safe,../x\n",
            (
                "Error: /home/ops/work/labels.csv, line 2, field 'source': source '../x' "
                "is not a valid source name: letters, digits and . _ @ + : - (at most 64, "
                "starting with a letter or digit)\n"
            ),
        ),
    ],
)
def test_import_refuses_every_bad_row_and_writes_nothing(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path, text: str, message: str
) -> None:
    # The first row is always good: nothing of it may land when a later one is bad.
    path = write(tmp_path, "labels.csv", text.format(**runs))
    code, _out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 2, err
    assert normalised(err, ledger.root.parent) == message
    assert no_label_files(ledger)


def test_import_lists_every_bad_row_at_once_and_skip_invalid_imports_the_rest(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    text = (
        "run_id,verdict\n"
        f"{runs['gemini']},unsafe\n"
        f"{runs['haiku']},sometimes\n"
        "no_such_run,safe\n"
        "a row cut short\n"  # one cell: a bad row like the others, not the end of the import
        f"{runs['sonnet']},safe\n"
    )
    path = write(tmp_path, "labels.csv", text)
    code, out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 2 and out == ""
    assert err.startswith(
        "Error: 3 rows cannot be imported; nothing was imported (--skip-invalid imports the "
        "rest and lists these):\n"
    )
    problems = err.splitlines()[1:]
    assert len(problems) == 3
    assert problems[0].startswith(f"  {path}, line 3, field 'verdict': ")
    assert problems[1].startswith(f"  {path}, line 4") and "no_such_run" in problems[1]
    assert problems[2] == f"  {path}, line 5: 1 cells where the header has 2"
    assert no_label_files(ledger)
    code, out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "team-b", "--skip-invalid"
    )
    assert code == 0, err
    assert out.strip() == "Imported 2 label(s) from team-b; 3 skipped as invalid."
    lines = [line.split(",")[1] for line in err.splitlines()]
    assert lines == [" line 3", " line 4", " line 5: 1 cells where the header has 2"]


def test_skip_invalid_skips_jsonl_lines_that_are_not_objects_and_imports_the_rest(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    gemini, haiku, sonnet = runs["gemini"], runs["haiku"], runs["sonnet"]
    text = (
        f'{{"run_id": "{gemini}", "verdict": "unsafe"}}\n'
        f'{{"run_id": "{haiku}", "verdict": "safe"\n'
        "[1, 2]\n"
        f'{{"run_id": "{sonnet}", "verdict": "safe"}}\n'
    )
    path = write(tmp_path, "labels.jsonl", text)
    code, out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 2 and out == "" and no_label_files(ledger)
    assert normalised(err, ledger.root.parent) == (
        "Error: 2 rows cannot be imported; nothing was imported (--skip-invalid "
        "imports the rest and lists these):\n"
        "  /home/ops/work/labels.jsonl, line 2: malformed JSON: Expecting ',' "
        "delimiter (column 84)\n"
        "  /home/ops/work/labels.jsonl, line 3: expected a JSON object, found list\n"
    )
    code, out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "team-b", "--skip-invalid"
    )
    assert code == 0, err
    assert out.strip() == "Imported 2 label(s) from team-b; 2 skipped as invalid."
    assert sorted(label.run_id for label in current_labels(ledger, "team-b")) == sorted(
        [runs["gemini"], runs["sonnet"]]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{{"run_id": "{gemini}", "verdict": NaN}}\n',
            (
                "Error: /home/ops/work/labels.jsonl, line 1: malformed JSON: NaN is not a "
                "JSON number (use null or a string)\n"
            ),
        ),
        (
            '{{"run_id": "{gemini}", "verdict": 1.5}}\n',
            (
                "Error: /home/ops/work/labels.jsonl, line 1, field 'verdict': expected "
                "text, found float\n"
            ),
        ),
        (
            "[1, 2]\n",
            "Error: /home/ops/work/labels.jsonl, line 1: expected a JSON object, found list\n",
        ),
        (
            '{{"run_id": "{gemini}", "criteria": {{"C1": "sometimes"}}}}\n',
            (
                "Error: /home/ops/work/labels.jsonl, line 1, field 'criteria.C1': fired "
                "'sometimes' is not valid: use yes, no, unknown, true, false, 1, 0\n"
            ),
        ),
        (
            '{{"run_id": "{gemini}", "verdict": "safe"\n',
            (
                "Error: /home/ops/work/labels.jsonl, line 1: malformed JSON: Expecting ',' "
                "delimiter (column 84)\n"
            ),
        ),
    ],
)
def test_import_refuses_bad_json_lines(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, "labels.jsonl", text.format(**runs))
    code, _out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 2, err
    assert normalised(err, ledger.root.parent) == message
    assert no_label_files(ledger)


def test_import_keys_that_match_several_runs_or_none_name_the_row(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    path = write(tmp_path, "tagged.csv", "ticket,verdict\nT-2,safe\n")
    code, _out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "desk", "--key", "tag:ticket"
    )
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Error: /home/ops/work/tagged.csv, line 2, field 'ticket': 2 runs have tag "
        "ticket='T-2' (use_case_f_claude-sonnet-4-6_20260501T120000Z_000001, "
        "use_case_m_claude-haiku-4-5_20260501T120000Z_000002); key the row by run_id\n"
    )
    path = write(tmp_path, "pairs.csv", "scenario,model,verdict\nuse_case_m,gpt-5,safe\n")
    code, _out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "desk", "--key", "scenario,model"
    )
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Error: /home/ops/work/pairs.csv, line 2, field 'scenario,model': no run "
        "has scenario 'use_case_m' and model 'gpt-5'\n"
    )
    code, _out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "desk", "--key", "model"
    )
    assert (
        code == 2
        and normalised(err, ledger.root.parent)
        == "Error: --key 'model' is not valid: use run_id, scenario,model or tag:NAME\n"
    )
    assert no_label_files(ledger)


@pytest.mark.parametrize("source", ["../escape", "a/b", "", " ", "x" * 80, "-lead", "new\nline"])
def test_import_refuses_path_tricks_in_the_source(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path, source: str
) -> None:
    path = write(tmp_path, "labels.csv", f"run_id,verdict\n{runs['gemini']},safe\n")
    code, _out, err = invoke(ledger, "labels", "import", str(path), "--source", source)
    assert code == 2, err
    assert normalised(err, ledger.root.parent) == (
        f"Error: --source {source!r} is not a valid source name: letters, digits and . _ @ + : - "
        "(at most 64, starting with a letter or digit)\n"
    )
    assert no_label_files(ledger)
    assert not (tmp_path / "escape").exists()


def test_dry_run_checks_and_writes_nothing(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    path = write(tmp_path, "labels.csv", f"run_id,verdict\n{runs['gemini']},safe\n")
    code, out, _err = invoke(ledger, "labels", "import", str(path), "--source", "a", "--dry-run")
    assert code == 0 and out.strip() == "Would import 1 label(s) from a."
    assert no_label_files(ledger)


# -- list and export ---------------------------------------------------------------------------


def test_list_filters_and_json(ledger: Ledger, runs: dict[str, str]) -> None:
    invoke(ledger, "label", runs["gemini"], "--verdict", "unsafe", "--by", "alice")
    invoke(ledger, "label", runs["haiku"], "--verdict", "safe", "--by", "bob")
    invoke(ledger, "label", runs["haiku"], "--verdict", "unsafe", "--by", "bob")
    code, out, _err = invoke(ledger, "labels", "list", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [(row["run_id"], row["verdict"]) for row in listed] == [
        (runs["gemini"], "Unsafe"),
        (runs["haiku"], "Unsafe"),
    ]
    code, out, _err = invoke(ledger, "labels", "list", "--json", "--all")
    assert len(json.loads(out)) == 3
    code, out, _err = invoke(ledger, "labels", "list", "--json", "--model", "claude-haiku-4-5")
    assert [row["by"]["name"] for row in json.loads(out)] == ["bob"]
    code, out, _err = invoke(ledger, "labels", "list", "--source", "alice")
    assert code == 0 and normalised(out, ledger.root.parent) == (
        "LABEL_ID                       RUN_ID                                     "
        "          BY     VERDICT  CRITERIA  DIAGNOSIS  SUPERSEDES\n"
        "lbl_20260501T120000Z_00000001  "
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000002  alice  Unsafe   -    "
        "     -          -\n"
    )


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_round_trips_through_import(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path, fmt: str
) -> None:
    invoke(
        ledger, "label", runs["gemini"], "--verdict", "unsafe", "--criterion", "C2", "--fired",
        "yes", "--diagnosis", "incorrect", "--reason", 'said "done", with a comma, and\na line',
        "--by", "alice",
    )  # fmt: skip
    (first,) = labels_of_run(ledger, runs["gemini"])
    invoke(
        ledger, "label", runs["gemini"], "--verdict", "safe", "--supersedes", first.label_id,
        "--by", "bob",
    )  # fmt: skip
    path = tmp_path / f"out.{fmt}"
    code, _out, err = invoke(ledger, "labels", "export", "--all", "--format", fmt, "-o", str(path))
    assert code == 0, err
    before = sorted(labels_of_run(ledger, runs["gemini"]), key=lambda label: label.label_id)
    # Into a ledger without the labels (the same runs): the same labels come back.
    for key in sorted(ledger.storage.keys("labels")):
        (ledger.root / key).chmod(0o600)
        (ledger.root / key).unlink()
    ledger.index.rebuild_labels([])
    code, _out, err = invoke(ledger, "labels", "import", str(path))
    assert code == 0, err
    after = sorted(labels_of_run(ledger, runs["gemini"]), key=lambda label: label.label_id)
    assert after == before
    # Imported twice, nothing is added: every label is there already (a rerun of an import
    # that was killed midway finishes it this way).
    code, out, err = invoke(ledger, "labels", "import", str(path))
    assert code == 0, err
    assert (
        normalised(out, ledger.root.parent)
        == "Imported 0 label(s) from alice, bob; 2 already there.\n"
    )
    assert sorted(labels_of_run(ledger, runs["gemini"]), key=lambda lb: lb.label_id) == before
    # A label id that is taken by a label saying something else: the file is refused whole.
    changed = path.read_text().replace("alice", "carol")
    path.write_text(changed)
    code, _out, err = invoke(ledger, "labels", "import", str(path))
    assert code == 2 and normalised(err, ledger.root.parent) == (
        "Error: label lbl_20260501T120000Z_00000001 of run "
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000002 already exists\n"
    )
    assert sorted(labels_of_run(ledger, runs["gemini"]), key=lambda lb: lb.label_id) == before


def test_the_same_label_given_again_is_not_written_twice(
    ledger: Ledger, runs: dict[str, str]
) -> None:
    argv = ["label", runs["gemini"], "--verdict", "unsafe", "--by", "alice", "--reason", "tc"]
    code, out, err = invoke(ledger, *argv)
    assert code == 0 and out.startswith("Labelled"), err
    (first,) = labels_of_run(ledger, runs["gemini"])
    code, out, err = invoke(ledger, *argv)
    assert code == 0, err
    assert normalised(out, ledger.root.parent) == (
        "Run use_case_m_gemini-2.5-flash_20260501T120000Z_000001 already has this "
        "label from alice (lbl_20260501T120000Z_00000002): nothing written.\n"
    )
    assert labels_of_run(ledger, runs["gemini"]) == [first]
    # Saying something else is a new label, and so is going back to what was said before.
    assert invoke(ledger, "label", runs["gemini"], "--verdict", "safe", "--by", "alice")[0] == 0
    assert invoke(ledger, *argv)[0] == 0
    verdicts = [label.verdict for label in labels_of_run(ledger, runs["gemini"])]
    assert verdicts == ["Unsafe", "Safe", "Unsafe"]


def test_label_help_loads_neither_the_records_nor_pydantic() -> None:
    """`label` is run label after label: its help (and its parsing) imports click and the
    command, not the records, pydantic or rich, which the `labels` group's filters need."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.argv = ['agentledger', 'label', '--help']\n"
        "from agentledger._entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    heavy = ('pydantic', 'rich', 'agentledger.records', 'agentledger.store')\n"
        "    print(exc.code, sorted(set(sys.modules) & set(heavy)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # The help page itself is held whole by docs/cli.md (docs/generate.py --check).
    assert "--verdict" in done.stdout
    assert done.stderr.strip() == "0 []", done.stderr


def test_import_refuses_a_criterion_the_runs_judges_did_not_assess_as_label_does(
    ledger: Ledger, runs: dict[str, str], tmp_path: Path
) -> None:
    score(ledger, runs["gemini"], "rules", "Unsafe")
    score(ledger, runs["haiku"], "rules", "Safe")
    text = (
        "run_id,verdict,crit:C1,criteria\n"
        f"{runs['gemini']},unsafe,yes,\n"
        f"{runs['haiku']},safe,,C9=no\n"  # C9: no judge of the run assessed it
        f"{runs['sonnet']},safe,,C9=no\n"  # no judge scored the run yet: any criterion
    )
    path = write(tmp_path, "labels.csv", text)
    code, out, err = invoke(ledger, "labels", "import", str(path), "--source", "team-b")
    assert code == 2 and out == "" and no_label_files(ledger)
    assert normalised(err, ledger.root.parent) == (
        "Error: /home/ops/work/labels.csv, line 3, field 'criteria': criterion "
        "'C9' is not one the judges of run "
        "use_case_m_claude-haiku-4-5_20260501T120000Z_000001 assessed (they "
        "assessed C1, C2)\n"
    )
    # A crit: column is named as the field; listed with the other bad rows.
    bad = write(
        tmp_path,
        "more.csv",
        f"run_id,verdict,crit:C7\n{runs['gemini']},sometimes,\n{runs['haiku']},safe,yes\n",
    )
    code, out, err = invoke(ledger, "labels", "import", str(bad), "--source", "team-b")
    assert code == 2 and no_label_files(ledger)
    assert normalised(err, ledger.root.parent) == (
        "Error: 2 rows cannot be imported; nothing was imported (--skip-invalid "
        "imports the rest and lists these):\n"
        "  /home/ops/work/more.csv, line 2, field 'verdict': verdict 'sometimes' "
        "is not valid: use safe, uncertain, unsafe\n"
        "  /home/ops/work/more.csv, line 3, field 'crit:C7': criterion 'C7' is not "
        "one the judges of run use_case_m_claude-haiku-4-5_20260501T120000Z_000001 "
        "assessed (they assessed C1, C2)\n"
    )
    code, out, err = invoke(
        ledger, "labels", "import", str(path), "--source", "team-b", "--skip-invalid"
    )
    assert code == 0, err
    assert out.strip() == "Imported 2 label(s) from team-b; 1 skipped as invalid."
    assert normalised(err, ledger.root.parent) == (
        "skipped /home/ops/work/labels.csv, line 3, field 'criteria': criterion "
        "'C9' is not one the judges of run "
        "use_case_m_claude-haiku-4-5_20260501T120000Z_000001 assessed (they "
        "assessed C1, C2)\n"
    )
    assert sorted(label.run_id for label in current_labels(ledger, "team-b")) == sorted(
        [runs["gemini"], runs["sonnet"]]
    )
