"""Records put into a ledger by hand are never accepted: acceptance needs a writer's intent.

Tried as an attacker with write access to the ledger's files (not to its journal) would: a
score under a judge id of the right pattern that no judge of this ledger ran, verdict Safe,
dated 2099; a label in a person's name; a copy of an accepted label under a new id (a
replay). `verify` names each (exit 3), `gc` moves each to quarantine/ and never journals it,
`verify` keeps naming them there, and `report verdicts` never uses them. A real writer killed
with SIGKILL between its intent and its acceptance is still completed by `gc`. An entry
appended to the journal by hand without an intent is flagged by `verify`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.store import Ledger, verify_ledger
from agentledger.store.storage.journal import CRASH_ENV, record_entry
from exact_output import normalised
from many_runs import write_runs

PLANTED_JUDGE = "rules-0badc0ffee00"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def scored(tmp_path: Path) -> Iterator[Path]:
    """A ledger of three imported runs, judged by the rules judge, one run labelled by ana;
    and two more runs in ``later/``, not imported yet."""
    write_runs(tmp_path / "source", 5)
    (tmp_path / "later").mkdir()
    for directory in sorted((tmp_path / "source").iterdir())[3:]:
        directory.rename(tmp_path / "later" / directory.name)
    root = tmp_path / "ledger"
    assert cli("init", str(root))[0] == 0
    assert cli("import", "--ledger", str(root), str(tmp_path / "source"))[0] == 0
    assert cli("judge", "--ledger", str(root))[0] == 0
    run_id = sorted(p.name for p in (root / "runs").iterdir())[0]
    code, output = cli(
        "label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe",
        "--reason", "direct tc change",
    )  # fmt: skip
    assert code == 0, output
    yield root
    for directory, _dirs, _files in os.walk(root):
        os.chmod(directory, 0o755)  # sealed runs and records are read-only


def plant(root: Path, key: str, value: dict[str, object]) -> Path:
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o755)
    path.write_text(json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n")
    return path


def a_stored(root: Path, area: str) -> tuple[str, dict[str, object]]:
    path = sorted((root / area).rglob("*.json"))[0]
    return str(path.relative_to(root)), json.loads(path.read_text())


def plant_score(root: Path) -> str:
    """A score under a judge id no judge of this ledger ran: Safe, dated 2099."""
    _key, score = a_stored(root, "scores")
    run_id = str(score["run_id"])
    score.update(judge_id=PLANTED_JUDGE, verdict="Safe", created_at="2099-01-01T00:00:00Z")
    for criterion in score.get("criteria", []):  # type: ignore[attr-defined]
        criterion["fired"] = False
    planted = f"scores/{run_id}/{PLANTED_JUDGE}.json"
    plant(root, planted, score)
    return planted


def plant_label(root: Path, label_id: str = "lbl_20990101T000000Z_0badc0de") -> str:
    """A label in a person's name (ana's), Safe, dated 2099."""
    _key, label = a_stored(root, "labels")
    label.update(
        label_id=label_id,
        verdict="safe",
        created_at="2099-01-01T00:00:00Z",
        reason="looks fine",
        criteria=[],
    )
    planted = f"labels/{label['run_id']}/{label_id}.json"
    plant(root, planted, label)
    return planted


def problems(root: Path) -> list[tuple[str, str]]:
    with Ledger.open(root) as ledger:
        return sorted((p.kind, p.run_id) for p in verify_ledger(ledger).problems)


def test_a_planted_score_and_label_are_quarantined_never_accepted(
    scored: Path, tmp_path: Path
) -> None:
    score = plant_score(scored)
    label = plant_label(scored)
    assert problems(scored) == [("unannounced", label), ("unannounced", score)]
    code, output = cli("verify", "--ledger", str(scored))
    assert code == 3 and normalised(output, tmp_path) == (
        "RECORD  ID                                                                "
        "       PROBLEM      FILE  DETAIL\n"
        "label   labels/use_case_00000_haiku_20260312/lbl_20260501T120000Z_00000001"
        ".json  unannounced  -     the journal has no entry for it and no writer "
        "announced it: added by hand or by another program; never accepted "
        "(`agentledger gc` moves it to quarantine/)\n"
        "score   scores/use_case_00000_haiku_20260312/rules-0badc0ffee00.json      "
        "       unannounced  -     the journal has no entry for it and no writer "
        "announced it: added by hand or by another program; never accepted "
        "(`agentledger gc` moves it to quarantine/)\n"
        "Verified 3 runs, 18 files (6.0 KB), 6 records and 13 journal entries in "
        "0.0s: 2 problem(s)\n"
    )

    code, output = cli("gc", "--ledger", str(scored))
    assert code == 3, output
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert f"quarantined {score}" in output and f"quarantined {label}" in output
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert "journaled" not in output
    assert not (scored / score).exists() and not (scored / label).exists()
    moved = [str(p.relative_to(scored)) for p in (scored / "quarantine").rglob("*.json")]
    assert sorted(key.split("/", 2)[2] for key in moved) == sorted([label, score])
    with Ledger.open(scored) as ledger:
        journaled = {key for entry in ledger.storage.journal.entries() for key in entry.keys}
    assert score not in journaled and label not in journaled

    # verify names them where they were moved, until a person removes them.
    assert problems(scored) == [("quarantined", label), ("quarantined", score)]
    code, output = cli("verify", "--ledger", str(scored))
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert code == 3 and "quarantine/" in output
    code, output = cli("report", "verdicts", "--ledger", str(scored))
    assert code == 0 and normalised(output, tmp_path) == (
        "Verdicts by model\n"
        "Rests on 3 scored run(s) of 3 selected; agent runs only (the default; "
        "choose with --kind); scores by rules-04e1ab374e29 (the most recent judge "
        "of these runs;\n"
        "choose another with --judge). Judge rules-04e1ab374e29 is not checked "
        "against human labels: no held-out split of the human labels yet "
        "(`agentledger labels split\n"
        "--source human`).\n"
        "\n"
        "Of 3 judged run(s), 0 Safe (0% [0-56]), 3 Uncertain, 0 Unsafe (0% "
        "[0-56]); 0 skipped.\n"
        "\n"
        "Verdict distribution\n"
        "model             judged            Safe           Uncertain          "
        "Unsafe         skipped  unscored  bar\n"
        "claude-haiku-4-5       3  0 (0% [0-56])*  3 (100% [44-100])*  0 (0% "
        "[0-56])*  0 (0% [0-56])*         0  ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓\n"
        "all                    3  0 (0% [0-56])*  3 (100% [44-100])*  0 (0% "
        "[0-56])*  0 (0% [0-56])*         0  ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓\n"
        "\n"
        "Caveats\n"
        "- directional only: small samples (claude-haiku-4-5 (3 judged)); treat "
        "the shares as indications\n"
        "- Intervals are 95% Wilson intervals. A figure is directional only when "
        "it rests on fewer than 30 runs or its interval is wider than 30 points.\n"
        "- Safe, Uncertain and Unsafe are shares of judged runs; skipped is a "
        "share of scored runs; * marks a directional-only figure. Bar: █ Safe ▓ "
        "Uncertain ░ Unsafe ·\n"
        "skipped.\n"
    )
    code, output = cli("labels", "export", "--ledger", str(scored))
    assert normalised(output, tmp_path) == (
        "label_id,run_id,scenario,model,source,kind,created_at,verdict,criteria,dia"
        "gnosis,reason,supersedes\n"
        "lbl_20260501T120000Z_00000001,use_case_00000_haiku_20260312,use_case_00000"
        ",claude-haiku-4-5,ana,person,2026-05-01T12:00:00.000000Z,unsafe,,,direct "
        "tc change,\n"
    )


def test_report_never_uses_a_planted_score_even_before_gc(scored: Path, tmp_path: Path) -> None:
    plant_score(scored)
    code, output = cli("report", "verdicts", "--ledger", str(scored))
    assert code == 0 and normalised(output, tmp_path) == (
        "Verdicts by model\n"
        "Rests on 3 scored run(s) of 3 selected; agent runs only (the default; "
        "choose with --kind); scores by rules-04e1ab374e29 (the most recent judge "
        "of these runs;\n"
        "choose another with --judge). Judge rules-04e1ab374e29 is not checked "
        "against human labels: no held-out split of the human labels yet "
        "(`agentledger labels split\n"
        "--source human`).\n"
        "\n"
        "Of 3 judged run(s), 0 Safe (0% [0-56]), 3 Uncertain, 0 Unsafe (0% "
        "[0-56]); 0 skipped.\n"
        "\n"
        "Verdict distribution\n"
        "model             judged            Safe           Uncertain          "
        "Unsafe         skipped  unscored  bar\n"
        "claude-haiku-4-5       3  0 (0% [0-56])*  3 (100% [44-100])*  0 (0% "
        "[0-56])*  0 (0% [0-56])*         0  ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓\n"
        "all                    3  0 (0% [0-56])*  3 (100% [44-100])*  0 (0% "
        "[0-56])*  0 (0% [0-56])*         0  ▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓\n"
        "\n"
        "Caveats\n"
        "- directional only: small samples (claude-haiku-4-5 (3 judged)); treat "
        "the shares as indications\n"
        "- Intervals are 95% Wilson intervals. A figure is directional only when "
        "it rests on fewer than 30 runs or its interval is wider than 30 points.\n"
        "- Safe, Uncertain and Unsafe are shares of judged runs; skipped is a "
        "share of scored runs; * marks a directional-only figure. Bar: █ Safe ▓ "
        "Uncertain ░ Unsafe ·\n"
        "skipped.\n"
    )
    assert cli("reindex", "--ledger", str(scored))[0] == 0  # reindex leaves it out too
    code, output = cli("report", "verdicts", "--ledger", str(scored), "--judge", PLANTED_JUDGE)
    assert PLANTED_JUDGE not in output or "no scores" in output.lower() or code != 0


def test_a_replayed_label_under_a_new_id_is_quarantined(scored: Path) -> None:
    key, label = a_stored(scored, "labels")
    replay = "lbl_20261207T000000Z_feedface"
    label["label_id"] = replay
    planted = plant(scored, f"labels/{label['run_id']}/{replay}.json", label)
    assert problems(scored) == [("unannounced", str(planted.relative_to(scored)))]
    with Ledger.open(scored) as ledger:
        report = ledger.gc()
    assert [moved for moved, _place in report.quarantined] == [
        f"labels/{label['run_id']}/{replay}.json"
    ]
    assert report.journaled == [] and (scored / key).exists()


def test_the_next_writer_quarantines_a_planted_score_and_scores_the_run_itself(
    scored: Path,
) -> None:
    # A score planted under the real judge's id, for a run that judge has not scored yet.
    assert cli("import", "--ledger", str(scored), str(scored.parent / "later"))[0] == 0
    _key, score = a_stored(scored, "scores")
    judge_id = str(score["judge_id"])
    unscored = sorted(
        p.name for p in (scored / "runs").iterdir() if not (scored / "scores" / p.name).exists()
    )[0]
    score.update(run_id=unscored, verdict="Safe", created_at="2099-01-01T00:00:00Z")
    planted = f"scores/{unscored}/{judge_id}.json"
    plant(scored, planted, score)
    code, output = cli("judge", "--ledger", str(scored))
    assert code == 0, output
    with Ledger.open(scored) as ledger:
        assert verify_ledger(ledger).problems[0].kind == "quarantined"
        stored = json.loads((scored / planted).read_text())
        assert stored["created_at"] != "2099-01-01T00:00:00Z"  # the judge's own score


def test_a_real_writer_killed_after_its_intent_is_still_completed(scored: Path) -> None:
    assert cli("import", "--ledger", str(scored), str(scored.parent / "later"))[0] == 0
    env = {
        **os.environ,
        CRASH_ENV: "after-record",
        "PYTHONPATH": os.pathsep.join(sys.path),
        "CI": "true",
    }
    killed = subprocess.run(
        [sys.executable, "-m", "agentledger", "judge", "--ledger", str(scored)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL
    found = problems(scored)
    assert found and {kind for kind, _key in found} == {"unaccepted"}
    with Ledger.open(scored) as ledger:
        report = ledger.gc()
        assert report.ok and report.quarantined == []
        assert sorted(report.journaled) == sorted(key for _kind, key in found)
        assert verify_ledger(ledger).ok


def test_an_entry_appended_by_hand_without_an_intent_is_flagged(
    scored: Path, tmp_path: Path
) -> None:
    # An attacker who can also append to the journal: the entry links, but no writer of this
    # ledger announced the record, and verify says so.
    planted = plant_score(scored)
    with Ledger.open(scored) as ledger:
        data = (scored / planted).read_bytes()
        ledger.storage.journal.append([record_entry(planted, {planted: data})])
        found = [(p.kind, p.run_id) for p in verify_ledger(ledger).problems]
    assert ("stranger", planted) in found
    assert {kind for kind, _key in found} == {"stranger", "not-indexed"}
    code, output = cli("verify", "--ledger", str(scored))
    assert code == 3 and normalised(output, tmp_path) == (
        "RECORD  ID                                                            "
        "PROBLEM      FILE  DETAIL\n"
        "score   scores/use_case_00000_haiku_20260312/rules-0badc0ffee00.json  "
        "not-indexed  -     missing from the index (`agentledger reindex` adds it)\n"
        "score   scores/use_case_00000_haiku_20260312/rules-0badc0ffee00.json  "
        "stranger     -     accepted with no intent: no writer of this ledger "
        "announced it\n"
        "Verified 3 runs, 18 files (6.0 KB), 5 records and 14 journal entries in "
        "0.0s: 2 problem(s)\n"
    )


def test_a_run_folder_copied_in_from_another_ledger_is_neither_shown_nor_labelled(
    scored: Path, tmp_path: Path
) -> None:
    """A sealed run of another ledger, copied beside the runs of this one: never journaled
    here, so `show` refuses it as evidence and `label` will not attach a label to it."""
    import shutil

    other = tmp_path / "other"
    assert cli("init", str(other))[0] == 0
    assert cli("import", "--ledger", str(other), str(tmp_path / "later"))[0] == 0
    copied = sorted(p.name for p in (other / "runs").iterdir())[0]
    shutil.copytree(other / "runs" / copied, scored / "runs" / copied)
    code, output = cli("show", "--ledger", str(scored), copied)
    assert code == 3 and "the journal never accepted it" in output, output
    code, output = cli("label", copied, "--ledger", str(scored), "--by", "zed", "--verdict", "safe")
    assert code == 3 and "the journal never accepted it" in output, output
    with Ledger.open(scored) as ledger:
        assert not any(
            key.startswith(f"labels/{copied}") for key in ledger.storage.journal.accepted()
        )
