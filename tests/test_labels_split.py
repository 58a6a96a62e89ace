"""The held-out split, `agreement --split`, the leakage guard and the judge-validity section."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from agentledger.cli import main
from agentledger.errors import InputError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge
from agentledger.labels import LabelStore
from agentledger.labels.split import SplitStore, make_split
from agentledger.records.splits import DevelopedAgainst, Split
from agentledger.store import Ledger
from conftest import WriteRun
from test_agreement import RULES, add_score, agreement, as_json, comparison, flat, make_label

MODELS = ("gemini-2.5-flash", "gpt-4o", "claude-haiku-4-5")
VERDICTS = ("Safe", "Uncertain", "Unsafe")


def cli(ledger: Ledger, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--ledger", str(ledger.root)])


@pytest.fixture
def labelled(ledger: Ledger, write_run: WriteRun) -> list[str]:
    """30 runs of three models, each labelled by a person and scored by the rules judge."""
    runs = [write_run(model=MODELS[i % 3]) for i in range(30)]
    LabelStore(ledger).write(
        [
            make_label(r, "alice", VERDICTS[(i // 3) % 3], kind="person", minutes=i)
            for i, r in enumerate(runs)
        ]
    )
    for i, run_id in enumerate(runs):
        add_score(ledger, run_id, RULES, VERDICTS[(i // 3 + i % 2) % 3], minutes=i)
    return runs


def test_split_is_deterministic_stratified_and_recorded_once(
    ledger: Ledger, labelled: list[str]
) -> None:
    first = cli(ledger, "labels", "split", "--source", "human", "--seed", "s1", "--json")
    assert first.exit_code == 0, first.output
    split = Split.model_validate_json(first.output)
    assert len(split.test) == 9 and len(split.dev) == 21
    assert sorted(split.dev + split.test) == sorted(labelled)
    # Every (model, verdict) stratum of 3 or more runs has about 30% of its runs in test.
    models = {run_id: MODELS[i % 3] for i, run_id in enumerate(labelled)}
    verdicts = {run_id: VERDICTS[(i // 3) % 3] for i, run_id in enumerate(labelled)}
    in_test = Counter((models[r], verdicts[r]) for r in split.test)
    sizes = Counter((models[r], verdicts[r]) for r in labelled)
    for stratum, size in sizes.items():
        assert abs(in_test[stratum] - 0.3 * size) <= 1, stratum
    on_disk = ledger.root / "splits" / f"{split.split_id}.json"
    assert json.loads(on_disk.read_text())["test"] == split.test
    again = cli(ledger, "labels", "split", "--source", "human", "--seed", "s1")
    assert again.exit_code == 0
    assert split.split_id in again.output and "already on record" in again.output
    other = Split.model_validate_json(
        cli(ledger, "labels", "split", "--source", "human", "--seed", "s2", "--json").output
    )
    assert other.split_id != split.split_id and other.test != split.test
    assert SplitStore(ledger).newest("human") == other


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--source", "human", "--seed", "s", "--test-share", "0"], "between 0 and 1"),
        (["--source", "human", "--seed", "s", "--test-share", "1.5"], "between 0 and 1"),
        (["--source", "human", "--seed", "s", "--test-share", "nan"], "between 0 and 1"),
        (["--source", "nobody", "--seed", "s"], "no labels from this source"),
        (["--source", "human", "--seed", ""], "--seed must not be empty"),
    ],
)
def test_bad_split_input_exits_2_and_writes_nothing(
    ledger: Ledger, labelled: list[str], args: list[str], words: str
) -> None:
    result = cli(ledger, "labels", "split", *args)
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert not (ledger.root / "splits").exists() or not list((ledger.root / "splits").iterdir())


def test_split_of_small_strata_still_holds_out_the_share() -> None:
    labels = {f"run_{i:02d}": make_label(f"run_{i:02d}", "x", VERDICTS[i % 3]) for i in range(10)}
    models = {run_id: f"model-{i}" for i, run_id in enumerate(labels)}  # one run per stratum
    split = make_split(labels, models, source="x", test_share=0.3, seed="s")
    assert len(split.test) == 3
    with pytest.raises(InputError, match="no labelled run"):
        make_split({}, {}, source="x", test_share=0.3, seed="s")


def test_agreement_on_the_test_part_only(ledger: Ledger, labelled: list[str]) -> None:
    split = Split.model_validate_json(
        cli(ledger, "labels", "split", "--source", "human", "--seed", "s1", "--json").output
    )
    report = as_json(
        agreement(ledger, "--a", "judge:rules", "--b", "labels:human", "--split", "test", "--json")
    )
    assert report["runs_in_common"] == len(split.test)
    assert report["split"] == {
        "split_id": split.split_id,
        "source": "human",
        "part": "test",
        "runs_outside_part": len(split.dev),
    }
    assert comparison(report, "verdict")["n"] == len(split.test)
    dev = as_json(
        agreement(ledger, "--a", "judge:rules", "--b", "labels:human", "--split", "dev", "--json")
    )
    assert dev["runs_in_common"] == len(split.dev)


def test_split_without_a_split_or_a_label_side_is_refused(
    ledger: Ledger, labelled: list[str]
) -> None:
    none_yet = agreement(ledger, "--a", "judge:rules", "--b", "labels:human", "--split", "test")
    assert none_yet.exit_code == 2 and "has no split" in none_yet.output
    judges = agreement(ledger, "--a", "judge:rules", "--b", "judge:rules", "--split", "test")
    assert judges.exit_code == 2 and "needs a label source" in judges.output


def _pack_developed_against(tmp_path: Path, declared: list[dict[str, Any]]) -> Path:
    data = load_pack().model_dump(mode="json")
    data["developed_against"] = declared
    path = tmp_path / "pack.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_pack_that_declares_nothing_keeps_its_judge_id() -> None:
    pack = load_pack()
    content = pack.model_dump(mode="json")
    del content["applies_to"], content["developed_against"]
    for criterion in content["criteria"]:  # nor criteria without a reference trajectory
        del criterion["trajectory_match"]
    assert pack.digest() == sha256_bytes(canonical_json(content))
    declared = pack.model_copy(update={"developed_against": [DevelopedAgainst(labels="alice")]})
    assert RulesJudge(declared).id != RulesJudge(pack).id
    assert RulesJudge(declared).identity()["developed_against"] == [
        {"labels": "alice", "split": None, "part": "all", "runs": []}
    ]
    assert "developed_against" not in RulesJudge(pack).identity()


def test_leakage_guard_refuses_a_judge_on_its_development_labels(
    ledger: Ledger, labelled: list[str], tmp_path: Path
) -> None:
    pack = _pack_developed_against(tmp_path, [{"labels": "alice"}])
    judged = cli(ledger, "judge", "--pack", str(pack))
    assert judged.exit_code == 0, judged.output
    refused = agreement(ledger, "--a", "judge:rules", "--b", "labels:human")
    assert refused.exit_code == 2
    assert "refusing to grade judge" in refused.output
    assert "developed against" in refused.output and "--allow-dev" in refused.output
    flagged = agreement(
        ledger, "--a", "judge:rules", "--b", "labels:human", "--allow-dev", "--json"
    )
    report = as_json(flagged)
    assert len(report["development_runs"]) == report["runs_in_common"] == 30
    assert report["warnings"][0].startswith("DEVELOPMENT LABELS: 30 of the 30 runs")
    verdict = comparison(report, "verdict")
    assert all(item["development"] for item in verdict["disagreements"])
    text = agreement(ledger, "--a", "judge:rules", "--b", "labels:human", "--allow-dev")
    assert "DEVELOPMENT LABELS" in flat(text) and "DEVELOPMENT:" in flat(text)


def test_a_judge_developed_on_dev_is_graded_on_test(
    ledger: Ledger, labelled: list[str], tmp_path: Path
) -> None:
    split = Split.model_validate_json(
        cli(ledger, "labels", "split", "--source", "human", "--seed", "s1", "--json").output
    )
    declared = [{"labels": "human", "split": split.split_id, "part": "dev"}]
    assert (
        cli(ledger, "judge", "--pack", str(_pack_developed_against(tmp_path, declared))).exit_code
        == 0
    )
    on_test = agreement(
        ledger, "--a", "judge:rules", "--b", "labels:human", "--split", "test", "--json"
    )
    assert as_json(on_test)["development_runs"] == []
    on_all = agreement(ledger, "--a", "judge:rules", "--b", "labels:human")
    assert on_all.exit_code == 2 and f"dev part of {split.split_id}" in on_all.output
    on_dev = agreement(ledger, "--a", "judge:rules", "--b", "labels:human", "--split", "dev")
    assert on_dev.exit_code == 2


def test_bad_developed_against_in_a_pack_is_refused(ledger: Ledger, tmp_path: Path) -> None:
    pack = _pack_developed_against(tmp_path, [{"labels": "alice", "part": "dev"}])
    result = cli(ledger, "judge", "--pack", str(pack))
    assert result.exit_code == 2
    assert "developed_against" in result.output and "needs the split" in result.output


def test_report_all_says_whether_each_judge_is_checked(ledger: Ledger, labelled: list[str]) -> None:
    before = cli(ledger, "report", "all", "--format", "json")
    assert before.exit_code == 0, before.output
    reports = json.loads(before.output)["reports"]
    validity = reports[-1]
    assert validity["kind"] == "judge-validity"
    assert validity["judges"][0]["status"].startswith("no held-out split")
    assert "is not checked against human labels" in reports[0]["judge_checks"][0]
    cli(ledger, "labels", "split", "--source", "human", "--seed", "s1")
    after = json.loads(cli(ledger, "report", "all", "--format", "json").output)["reports"]
    checked = after[-1]["judges"][0]
    verdict = checked["verdict"]
    assert verdict["n"] == 9
    # The held-out nine are drawn from runs whose ids are random: their kappa has an interval,
    # or says why none can be given (one category only, or a standard error of 0).
    assert verdict["interval"] is not None or verdict["kappa_undefined"] or verdict["se"] == 0
    assert "against human labels: verdict kappa" in after[0]["judge_checks"][0]
    text = cli(ledger, "report", "all")
    assert "Judge validity" in text.output and "held-out run(s)" in flat(text)


def test_report_all_without_labels_says_no_labels_yet(ledger: Ledger, write_run: WriteRun) -> None:
    add_score(ledger, write_run(), RULES, "Safe")
    reports = json.loads(cli(ledger, "report", "all", "--format", "json").output)["reports"]
    assert reports[-1]["judges"][0]["status"] == "no labels yet"
    md = cli(ledger, "report", "all", "--format", "md").output
    assert "No labels yet" in md


def test_llm_examples_come_from_dev_only_and_join_the_judge_identity(
    ledger: Ledger, labelled: list[str]
) -> None:
    from agentledger.judges.llm.examples import load_examples
    from agentledger.judges.scoring import score_runs
    from test_llm_judge import answer_for, answering, entry

    with pytest.raises(InputError, match="no split"):
        load_examples(ledger, "labels:human", "dev", 3)
    split = Split.model_validate_json(
        cli(ledger, "labels", "split", "--source", "human", "--seed", "s1", "--json").output
    )
    with pytest.raises(InputError, match="dev part only"):
        load_examples(ledger, "labels:human", "test", 3)
    with pytest.raises(InputError, match="needs --split dev"):
        load_examples(ledger, "labels:human", None, 3)
    shots = load_examples(ledger, "labels:human", "dev", 3)
    assert len(shots.examples) == 3
    assert {example.run_id for example in shots.examples} <= set(split.dev)
    assert shots.developed_against == DevelopedAgainst(
        labels="human", split=split.split_id, part="dev"
    )
    assert load_examples(ledger, "labels:human", "dev", 3) == shots  # the same choice again

    def make(prompt: Any) -> str:
        return answer_for(prompt.nonce, *(entry(c.id) for c in prompt.criteria))

    plain, _ = answering(make)
    judge, provider = answering(make, examples=shots)
    assert judge.id != plain.id
    identity = judge.identity()
    assert [item["run_id"] for item in identity["examples"]] == [
        example.run_id for example in shots.examples
    ]
    assert identity["developed_against"] == [
        {"labels": "human", "split": split.split_id, "part": "dev", "runs": []}
    ]
    assert "examples" not in plain.identity() and "developed_against" not in plain.identity()
    scored = score_runs(ledger, judge, labelled)
    assert len(scored.scored) == 30
    sent = provider.requests[0].messages[0].content
    first = shots.examples[0]
    assert f"a person labelled {first.verdict}" in sent
    assert "<example-1-" in sent and "</example-3-" in sent
    # Graded on test: fine; on every label: refused, the examples' dev part is in it.
    on_test = agreement(
        ledger,
        "--a",
        f"judge:{scored.judge_id[:9]}",
        "--b",
        "labels:human",
        "--split",
        "test",
        "--json",
    )
    assert on_test.exit_code == 0, on_test.output
    refused = agreement(ledger, "--a", "judge:llm", "--b", "labels:human")
    assert refused.exit_code == 2 and "developed against" in refused.output


def test_judge_cli_refuses_examples_from_test_and_for_the_rules_judge(
    ledger: Ledger, labelled: list[str]
) -> None:
    cli(ledger, "labels", "split", "--source", "human", "--seed", "s1")
    from_test = cli(
        ledger, "judge", "--judge", "llm:openai/gpt-4o", "--examples-from", "labels:human",
        "--split", "test",
    )  # fmt: skip
    assert from_test.exit_code == 2 and "dev part only" in from_test.output
    rules = cli(ledger, "judge", "--examples-from", "labels:human", "--split", "dev")
    assert rules.exit_code == 2 and "for the LLM judge" in rules.output
    alone = cli(ledger, "judge", "--split", "dev")
    assert alone.exit_code == 2 and "--examples-from" in alone.output
    assert not list((ledger.root / "scores").glob("*/llm-*.json"))
