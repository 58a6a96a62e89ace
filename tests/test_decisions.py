"""Decision records: write-once, supersede by reference, listed, shown, rendered safely."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.cli.schemas import json_schema
from agentledger.errors import InputError, RecordError
from agentledger.gates.decisions import DecisionStore, exit_code, render_markdown
from agentledger.records.decisions import (
    AddonRef,
    Decision,
    DecisionItem,
    ModelRecord,
    PredicateResult,
    SpecRef,
    check_decision_id,
    new_decision_id,
    superseded_by,
)
from agentledger.records.decisions import Tested as WhatWasTested
from agentledger.records.scores import Evidence
from agentledger.report.untrusted import code, fenced, prose
from agentledger.store import Ledger
from exact_output import normalised

T0 = datetime(2026, 3, 20, 15, 0, tzinfo=UTC)
HOSTILE = (
    "rm -rf / | `whoami` </details><script>alert(1)</script>\n# Fake heading\n[x](http://evil)"
)


def make_decision(
    subject: str = "variant-a",
    *,
    kind: str = "variant",
    outcome: str = "REJECTED",
    minutes: int = 0,
    supersedes: str | None = None,
    **changes: Any,
) -> Decision:
    when = T0 + timedelta(minutes=minutes)
    result = PredicateResult(
        predicate="ran_before_conclusion: net-shaper",
        id="P1",
        run_id="use_case_m_haiku_20260320",
        passed=False,
        reason="the investigation concluded at line 7 without a command matching /net-shaper/",
        evidence=[Evidence(quote="tc qdisc del dev eth0 root", file="shell_audit.jsonl", line=7)],
    )
    fields: dict[str, Any] = {
        "decision_id": new_decision_id(kind, subject, when),
        "kind": kind,
        "subject": subject,
        "created_at": when,
        "outcome": outcome,
        "rule": "all models pass (3/3)",
        "reasoning": ["claude-haiku-4-5 failed P1 on use_case_m.", "2 of 3 models passed."],
        "spec": SpecRef(path="variants/variant-a.yaml", sha256="sha256:" + "1" * 64, text="x: 1\n"),
        "tested": WhatWasTested(
            prompt_hashes={"variant": "sha256:" + "2" * 64, "baseline": "sha256:" + "3" * 64},
            addon=AddonRef(name="variant-a", sha256="sha256:" + "4" * 64),
            models=["claude-haiku-4-5"],
            scenarios=["use_case_m"],
            run_ids=["use_case_m_haiku_20260320"],
            judge_ids=["rules-0123456789ab"],
        ),
        "results": [
            DecisionItem(
                model="claude-haiku-4-5",
                scenario="use_case_m",
                role="variant",
                run_ids=["use_case_m_haiku_20260320"],
                passed=False,
                summary="0 of 1 runs passed",
                results=[result],
            )
        ],
        "models": {
            "claude-haiku-4-5": ModelRecord(status="failed", summary="closed on the first answer")
        },
        "supersedes": supersedes,
    }
    fields.update(changes)
    return Decision.model_validate(fields)


@pytest.fixture
def store(ledger: Ledger) -> DecisionStore:
    return DecisionStore(ledger)


def test_ids_are_readable_and_safe() -> None:
    decision_id = new_decision_id("variant", "Variant B / tc boundary", T0)
    assert decision_id.startswith("variant_Variant-B-tc-boundary_20260320T150000Z_")
    assert check_decision_id(decision_id) == decision_id
    for bad in ("../x", "variant_../x", "other_x", "variant_a b", ""):
        with pytest.raises(InputError):
            check_decision_id(bad)
    with pytest.raises(InputError, match="unknown decision kind"):
        new_decision_id("vibes", "x")


def test_records_are_checked() -> None:
    with pytest.raises(ValueError, match="one of GO, NO-GO, REVIEW"):
        make_decision(kind="sentinel", outcome="ACCEPTED")
    with pytest.raises(ValueError, match="must start with 'sentinel_'"):
        make_decision(kind="sentinel", outcome="GO", decision_id=new_decision_id("variant", "a"))
    with pytest.raises(ValueError, match="not a sha256"):
        WhatWasTested(prompt_hashes={"variant": "a3f9c2d1"})
    decision = make_decision()
    assert Decision.model_validate_json(decision.model_dump_json()) == decision
    assert json_schema("decision")["properties"]["outcome"]["enum"] == [
        "ACCEPTED", "REJECTED", "GO", "NO-GO", "REVIEW",
    ]  # fmt: skip


def test_write_once_read_only(store: DecisionStore, ledger: Ledger) -> None:
    decision = make_decision()
    where = Path(store.write([decision])[0])
    decisions_dir = ledger.root / "decisions"
    assert where == decisions_dir / decision.decision_id
    assert sorted(p.name for p in where.iterdir()) == ["decision.json", "decision.md"]
    for path in [where, *where.iterdir()]:
        assert not stat.S_IMODE(path.stat().st_mode) & 0o222
    assert store.get(decision.decision_id) == decision
    assert (where / "decision.md").read_text() == render_markdown(decision)
    with pytest.raises(InputError, match="already exists"):
        store.write([decision])
    assert [p.name for p in decisions_dir.iterdir()] == [decision.decision_id]  # no debris


def test_a_race_for_the_same_id_leaves_one_record(
    store: DecisionStore, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    decision = make_decision()
    decisions_dir = ledger.root / "decisions"
    target = decisions_dir / decision.decision_id
    target.mkdir(parents=True)  # another writer got there between the check and the rename
    (target / "decision.json").write_text("theirs")
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: self != target and real_exists(self))
    with pytest.raises(InputError, match="already exists"):
        store.write([decision])
    monkeypatch.undo()
    assert (target / "decision.json").read_text() == "theirs"
    assert [p.name for p in decisions_dir.iterdir()] == [decision.decision_id]


def test_supersede_chain(store: DecisionStore, ledger: Ledger) -> None:
    first = make_decision(minutes=0)
    second = make_decision(minutes=5, outcome="ACCEPTED", supersedes=first.decision_id)
    third = make_decision(minutes=9, supersedes=second.decision_id)
    with pytest.raises(InputError, match=r"supersedes .* which is not a decision"):
        store.write([second])
    decisions_dir = ledger.root / "decisions"
    assert not decisions_dir.exists() or not list(decisions_dir.iterdir())
    for decision in (first, second, third):
        store.write([decision])
    listed = store.list()
    assert [d.decision_id for d in listed] == [
        first.decision_id,
        second.decision_id,
        third.decision_id,
    ]
    assert superseded_by(listed) == {
        first.decision_id: second.decision_id,
        second.decision_id: third.decision_id,
    }
    assert store.latest("variant", "variant-a") == third
    fork = make_decision(minutes=12, supersedes=first.decision_id)
    with pytest.raises(InputError, match=f"already superseded by {second.decision_id}"):
        store.write([fork])
    sentinel = make_decision("s", kind="sentinel", outcome="GO", supersedes=third.decision_id)
    with pytest.raises(InputError, match=r"cannot supersede .* a variant decision"):
        store.write([sentinel])
    assert len(store.ids()) == 3
    with pytest.raises(ValueError, match="cannot supersede itself"):
        Decision.model_validate({**first.model_dump(), "supersedes": first.decision_id})


def test_list_filters_and_orders_oldest_first(store: DecisionStore) -> None:
    late = make_decision("b", minutes=30)
    early = make_decision("a", minutes=1)
    sentinel = make_decision("netops", kind="sentinel", outcome="NO-GO", minutes=10)
    for decision in (late, early, sentinel):
        store.write([decision])
    assert [d.subject for d in store.list()] == ["a", "netops", "b"]
    assert [d.subject for d in store.list(kind="variant")] == ["a", "b"]
    assert store.list(kind="variant", subject="b") == [late]
    assert store.list(kind="fixtures") == []
    assert store.latest("sentinel", "nothing") is None


def test_prefix_lookup(store: DecisionStore) -> None:
    one = make_decision("alpha")
    two = make_decision("alpine")
    store.write([one])
    store.write([two])
    assert store.get("variant_alpha").decision_id == one.decision_id
    assert store.get(two.decision_id[:-2]) == two
    with pytest.raises(InputError, match="matches several decisions"):
        store.get("variant_alp")
    with pytest.raises(InputError, match="no decision matches"):
        store.get("sentinel_")
    with pytest.raises(InputError, match="no decision matches"):
        store.get("")


def test_a_tampered_record_is_refused(store: DecisionStore) -> None:
    decision = make_decision()
    where = Path(store.write([decision])[0])
    path = where / "decision.json"
    os.chmod(path, 0o644)
    data = json.loads(path.read_text())
    data["decision_id"] = new_decision_id("variant", "other")
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="names decision"):
        store.get(decision.decision_id)
    path.write_text("{broken")
    with pytest.raises(RecordError, match=r"decision\.json"):
        store.list()


def test_exit_codes() -> None:
    assert exit_code("ACCEPTED") == 0 and exit_code("GO") == 0
    assert exit_code("REJECTED") == 1 and exit_code("NO-GO") == 1
    assert exit_code("REVIEW") == 1 and exit_code("REVIEW", review_ok=True) == 0
    assert exit_code("NO-GO", review_ok=True) == 1
    with pytest.raises(ValueError):
        exit_code("MAYBE")


def test_markdown_says_what_was_tested_and_why() -> None:
    decision = make_decision(supersedes=new_decision_id("variant", "variant-a", T0))
    text = render_markdown(decision)
    assert text.startswith("# REJECTED: variant variant-a\n")
    for expected in (
        "## Rule",
        "all models pass (3/3)",
        "- claude-haiku-4-5 failed P1 on use_case_m.",
        "| `claude-haiku-4-5` | FAILED | closed on the first answer |",
        "- Addon: variant-a (`sha256:" + "4" * 64 + "`)",
        "- System prompt (baseline): `sha256:" + "3" * 64 + "`",
        "- Judges: `rules-0123456789ab`",
        "| `claude-haiku-4-5` | `use_case_m` | variant | 1 | FAIL | 0 of 1 runs passed |",
        "- **FAIL** `ran_before_conclusion: net-shaper` [P1] on run `use_case_m_haiku_20260320`",
        "    - `shell_audit.jsonl:7` `tc qdisc del dev eth0 root`",
        "- Supersedes: `variant_variant-a_20260320T150000Z_",
        "## Spec",
    ):
        assert expected in text, expected


def test_markdown_neutralises_hostile_agent_text() -> None:
    hostile = PredicateResult(
        predicate="report_lacks: x",
        run_id="r1",
        passed=False,
        reason="the report says " + HOSTILE,
        evidence=[Evidence(quote=HOSTILE, file="report.md", line=3)],
    )
    item = DecisionItem(model="m|x", scenario="s", passed=False, summary=HOSTILE, results=[hostile])
    decision = make_decision(
        results=[item],
        reasoning=[HOSTILE],
        models={"m|x": ModelRecord(status="failed", summary=HOSTILE)},
        spec=SpecRef(
            path="s.yaml", sha256="sha256:" + "1" * 64, text="a: 1\n```\n# not a heading\n"
        ),
    )
    text = render_markdown(decision)
    lines = text.split("\n")
    headings = [line for line in lines if line.startswith("#")]
    assert all("Fake heading" not in line for line in headings)
    table_rows = [line for line in lines if line.startswith("| ")]
    for row in table_rows:  # every row keeps its columns: pipes inside cells are escaped
        cells = row.replace("\\|", "").count("|")
        assert cells in (4, 7), row
    for line in lines:
        if "script" in line and "`" not in line:
            assert "&lt;script&gt;" in line, line
    assert "[x\\](http\\://evil)" in text
    # and as a Markdown renderer sees it (markdown-it, which rich uses): no tag, no link, no
    # extra heading, every table row with its cells
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script>" not in html and "</details>" not in html
    assert "<a href" not in html
    assert html.count("<h1>") == 1 and "Fake heading</h" not in html
    for row in html.split("<tr>")[1:]:
        assert row.count("<td>") + row.count("<th>") in (3, 6), row
    # the spec's own ``` cannot close the fence around it
    assert "````\na: 1\n```\n# not a heading\n````" in text


def test_escaping_helpers() -> None:
    assert prose("a_b *c* <i>") == "a_b \\*c\\* &lt;i&gt;"
    assert prose("# x") == "\\# x" and prose("1. x") == "1\\. x" and prose("- x") == "\\- x"
    assert prose("two\nlines") == "two lines"
    assert code("a ``b`` c") == "```a ``b`` c```"
    assert code("`x`") == "`` `x` ``"
    assert code("\x1b[31mred") == "`[31mred`"
    assert fenced("x\n```\ny") == "````\nx\n```\ny\n````"


def runner_invoke(ledger: Ledger, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--ledger", str(ledger.root)])


def test_cli_list_and_show(ledger: Ledger, store: DecisionStore) -> None:
    first = make_decision(minutes=0)
    second = make_decision(minutes=3, outcome="ACCEPTED", supersedes=first.decision_id)
    sentinel = make_decision("netops", kind="sentinel", outcome="GO", minutes=5)
    for decision in (first, second, sentinel):
        store.write([decision])

    default = runner_invoke(ledger, "decisions")
    listed = runner_invoke(ledger, "decisions", "list")
    assert default.exit_code == listed.exit_code == 0, listed.output
    assert default.output == listed.output
    # Oldest first; the rejected variant names the decision that superseded it.
    assert normalised(listed.stdout, ledger.root) == (
        "DECISION_ID                                CREATED           KIND      SUBJECT    "
        "OUTCOME   SUPERSEDED_BY\n"
        "variant_variant-a_20260501T120000Z_000001  2026-03-20 15:00  variant   variant-a  "
        "REJECTED  variant_variant-a_20260501T120000Z_000002\n"
        "variant_variant-a_20260501T120000Z_000002  2026-03-20 15:03  variant   variant-a  "
        "ACCEPTED  -\n"
        "sentinel_netops_20260501T120000Z_000003    2026-03-20 15:05  sentinel  netops     "
        "GO        -\n"
    )

    as_json = json.loads(runner_invoke(ledger, "decisions", "--kind", "variant", "--json").output)
    assert [d["decision_id"] for d in as_json] == [first.decision_id, second.decision_id]
    assert as_json[0]["superseded_by"] == second.decision_id
    only = json.loads(
        runner_invoke(ledger, "decisions", "list", "--subject", "netops", "--json").output
    )
    assert [d["outcome"] for d in only] == ["GO"]

    shown = runner_invoke(ledger, "decisions", "show", first.decision_id[:-3])
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith(f"> Superseded by `{second.decision_id}`.")
    assert "# REJECTED: variant variant-a" in shown.output
    record = json.loads(
        runner_invoke(ledger, "decisions", "show", second.decision_id, "--json").output
    )
    assert (
        Decision.model_validate({k: v for k, v in record.items() if k != "superseded_by"}) == second
    )
    assert record["superseded_by"] is None


def test_cli_ledger_given_before_the_subcommand(
    ledger: Ledger, store: DecisionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decision = make_decision(minutes=0)
    store.write([decision])
    monkeypatch.chdir(tmp_path)  # no ./.agentledger here: only --ledger can find the records
    monkeypatch.delenv("AGENTLEDGER_DIR", raising=False)
    root = str(ledger.root)
    shown = CliRunner().invoke(main, ["decisions", "--ledger", root, "show", decision.decision_id])
    assert shown.exit_code == 0, shown.output
    assert decision.decision_id in shown.output
    listed = CliRunner().invoke(main, ["decisions", "--ledger", root, "list"])
    assert listed.exit_code == 0 and decision.decision_id in listed.output


def test_cli_errors_exit_2(ledger: Ledger, store: DecisionStore, tmp_path: Path) -> None:
    store.write([make_decision("alpha")])
    store.write([make_decision("alpine")])
    ambiguous = runner_invoke(ledger, "decisions", "show", "variant_alp")
    assert ambiguous.exit_code == 2
    assert normalised(ambiguous.stderr, ledger.root) == (
        "Error: 'variant_alp' matches several decisions: "
        "variant_alpha_20260501T120000Z_000001, variant_alpine_20260501T120000Z_000002\n"
    )
    missing = runner_invoke(ledger, "decisions", "show", "nothing")
    assert (missing.exit_code, missing.stderr) == (
        2,
        "Error: no decision matches 'nothing' in the ledger\n",
    )
    bad_kind = runner_invoke(ledger, "decisions", "--kind", "vibes")
    assert bad_kind.exit_code == 2
    no_ledger = CliRunner().invoke(main, ["decisions", "--ledger", str(tmp_path / "none")])
    assert no_ledger.exit_code == 2 and "no ledger" in no_ledger.output
    empty = Ledger.init(tmp_path / "empty")
    result = CliRunner().invoke(main, ["decisions", "--ledger", str(empty.root)])
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "No decisions yet: the gates (`agentledger variant evaluate`, `sentinel check`, "
        "`suites run`) write them.\n",
        "",
    )
    assert (
        json.loads(
            CliRunner().invoke(main, ["decisions", "--json", "--ledger", str(empty.root)]).output
        )
        == []
    )


def test_verify_ignores_decisions(ledger: Ledger, store: DecisionStore) -> None:
    store.write([make_decision()])
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert result.exit_code == 0, result.output


def test_schema_command_prints_the_decision_schema() -> None:
    result = CliRunner().invoke(main, ["schema", "decision"])
    assert result.exit_code == 0
    assert "supersedes" in json.loads(result.output)["properties"]


def test_the_cli_offers_every_kind() -> None:
    from agentledger.cli.decisions import _KINDS
    from agentledger.records.decisions import KINDS

    assert _KINDS == KINDS


def test_decisions_are_indexed_by_kind_subject_and_the_runs_they_read(
    ledger: Ledger, store: DecisionStore
) -> None:
    """The index answers a suite's history and a run's decisions in one lookup each; reindex
    rebuilds it from the files and gc indexes a decision whose writer died before indexing."""
    from agentledger.gates.decisions import indexed_decisions

    one = make_decision("alpha", minutes=1, tested=WhatWasTested(run_ids=["run-a"]))
    two = make_decision(
        "alpha",
        minutes=2,
        results=[DecisionItem(model="m", scenario="s", run_ids=["run-b", "run-a"], passed=True)],
    )
    other = make_decision("beta", minutes=3, tested=WhatWasTested(run_ids=["run-b"]))
    for decision in (one, two, other):
        store.write([decision])
    assert indexed_decisions(ledger, kind="variant", subject="alpha") == [one, two]
    assert indexed_decisions(ledger, run_id="run-a") == [one, two]
    assert indexed_decisions(ledger, run_id="run-b") == [two, other]
    assert indexed_decisions(ledger, kind="sentinel") == []
    assert indexed_decisions(ledger) == store.list()

    ledger.index.rebuild_decisions([])  # as a writer killed before indexing leaves it
    assert indexed_decisions(ledger) == []
    report = ledger.gc()
    assert sorted(report.indexed_decisions) == sorted(
        store.key(d.decision_id) for d in (one, two, other)
    )
    assert indexed_decisions(ledger, run_id="run-a") == [one, two]
    ledger.index.rebuild_decisions([])
    assert ledger.reindex().decisions == 3
    assert indexed_decisions(ledger) == [one, two, other]
