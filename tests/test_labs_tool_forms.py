"""The owners' tools say which of their subcommands read (lab.yaml `read_only`, `changes`,
`other`): in that lab's runs, in the owner's host, the gate runs the reading ones in
investigate mode and refuses the others; nowhere else does it know them (issue 33)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.errors import InputError, RecordError
from agentledger.labs import load_lab, resolve_labs
from agentledger.runner.lab_shell import LabEntry, LabTarget
from agentledger.runner.shell_gate import Gate, load_policy
from labs_support import SMALL_LAB, lab_privilege

DECLARED = (
    SMALL_LAB.replace(
        "      - name: jailctl\n",
        "      - name: jailctl\n        read_only: [status]\n        changes: [ban, unban]\n"
        "        other: read-only\n",
    )
    .replace(
        '          case "$1" in\n',
        '          case "$1" in\n            status) cat "$LAB_DIR/jail/banned" ;;\n',
    )
    .replace(
        "          esac\n",
        "            *) echo 'usage: jailctl status | ban IP | unban IP' >&2; exit 2 ;;\n"
        "          esac\n",
    )
    .replace("FAULT", "jailctl ban 10.0.0.2")
)
OUTCOME_LAB = Path(__file__).parent / "data" / "outcome_lab"


def _target(spec_dir: Path, default: str = "web") -> LabTarget:
    spec = load_lab(spec_dir).spec
    hosts = {host: ["false"] for host in spec.host_names()}  # decided only, never run
    return LabTarget("t", hosts, default, spec.tool_knowledge())


def _decisions(target: LabTarget | None, commands: list[str]) -> dict[str, str]:
    gate = Gate(load_policy(None), None, ci=True, lab=target)
    return {command: gate.decide(command).decision for command in commands}


def _error(tmp_path: Path, text: str) -> RecordError:
    (tmp_path / "lab.yaml").write_text(text)
    with pytest.raises(RecordError) as caught:
        load_lab(tmp_path)
    return caught.value


def test_declared_subcommands_decide_in_the_owners_host_only(tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text(DECLARED)
    target = _target(tmp_path)
    assert _decisions(
        target,
        [
            "jailctl status",
            "web: jailctl status",
            "jailctl status | grep 10.0.0.2",
            "jailctl",
            "jailctl help",  # the usage line: the script's `*)` branch
            "jailctl unban 10.0.0.2",
            "web: jailctl ban 10.0.0.9",
            "jailctl status; jailctl unban x",
            "client: jailctl status",
            "jailctl $CMD",
        ],
    ) == {
        "jailctl status": "allowed",
        "web: jailctl status": "allowed",
        "jailctl status | grep 10.0.0.2": "allowed",
        "jailctl": "allowed",
        "jailctl help": "allowed",
        "jailctl unban 10.0.0.2": "denied",
        "web: jailctl ban 10.0.0.9": "denied",
        "jailctl status; jailctl unban x": "denied",
        "client: jailctl status": "denied",  # no such tool there: unknown
        "jailctl $CMD": "denied",  # a subcommand known only at run time
    }
    elsewhere = Gate(load_policy(None), None, ci=True, lab=target).decide("client: jailctl status")
    assert "jailctl is an owner's tool of host web, not of client" in elsewhere.reason
    # Outside the lab's runs nobody knows jailctl: never global knowledge.
    assert _decisions(None, ["jailctl status"]) == {"jailctl status": "denied"}


def test_a_tool_without_other_leaves_other_words_unknown(tmp_path: Path) -> None:
    text = DECLARED.replace("        other: read-only\n", "")
    (tmp_path / "lab.yaml").write_text(text)
    decided = _decisions(_target(tmp_path), ["jailctl status", "jailctl help", "jailctl"])
    assert decided == {"jailctl status": "allowed", "jailctl help": "denied", "jailctl": "denied"}


def test_a_policy_entry_for_the_tool_wins_over_the_lab(tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text(DECLARED)
    policy = tmp_path / "policy.yaml"
    policy.write_text("schema_version: 1\nmode: investigate\ncommands:\n  jailctl: unknown\n")
    gate = Gate(load_policy(policy), None, ci=True, lab=_target(tmp_path))
    assert gate.decide("jailctl status").decision == "denied"


@pytest.mark.parametrize(
    ("declared", "field", "problem"),
    [
        ("read_only: [Status all]", "owners.0.tools.0.read_only.0", "should match pattern"),
        ("read_only: [status, ban]", "owners.0.tools.0.changes.0", "'ban' is already in read_only"),
        ("read_only: [stats]", "owners.0.tools.0.read_only.0", "'stats' is not in the script"),
        ("read_only: [status]\n        other: yes", "owners.0.tools.0.other", "'unknown'"),
    ],
)
def test_a_bad_declaration_names_the_file_and_field(
    tmp_path: Path, declared: str, field: str, problem: str
) -> None:
    text = DECLARED.replace("        other: read-only\n", "")
    error = _error(tmp_path, text.replace("read_only: [status]", declared))
    assert error.source.endswith("lab.yaml") and error.field == field, error
    assert problem in error.problem, error.problem
    result = CliRunner().invoke(main, ["lab", "check", str(tmp_path)])
    assert result.exit_code == 2 and "lab.yaml" in result.output and field in result.output


def test_other_read_only_needs_every_subcommand_named_and_a_usage_branch(tmp_path: Path) -> None:
    missing = DECLARED.replace("changes: [ban, unban]", "changes: [ban]")
    error = _error(tmp_path, missing)
    assert error.field == "owners.0.tools.0.other"
    assert "'unban' is in neither read_only nor changes" in error.problem
    no_usage = DECLARED.replace(
        "            *) echo 'usage: jailctl status | ban IP | unban IP' >&2; exit 2 ;;\n", ""
    )
    assert "needs a `*)` branch" in _error(tmp_path, no_usage).problem


def test_two_tools_of_one_name_in_a_host_are_refused(tmp_path: Path) -> None:
    text = DECLARED.replace(
        "    cycle: |\n", "      - {name: jailctl, run: 'true'}\n    cycle: |\n", 1
    )
    error = _error(tmp_path, text)
    assert error.field == "owners.0.tools.1.name" and "already has a tool" in error.problem


def test_every_packaged_tool_declares_each_subcommand_of_its_usage_line() -> None:
    for loaded in resolve_labs("labs"):
        for owner in loaded.spec.owners:
            for tool in owner.tools:
                usage = re.search(r"usage: \S+ (.*?)[\"'\n]", tool.run)
                assert usage is not None, (loaded.name, tool.name)
                verbs = {alt.split()[0] for alt in usage.group(1).split(" | ")}
                assert verbs == {*tool.read_only, *tool.changes}, (loaded.name, tool.name)
                assert tool.read_only and tool.other == "read-only"
                target = LabTarget("t", {owner.host: ["false"]}, owner.host,
                                   loaded.spec.tool_knowledge())  # fmt: skip
                decided = _decisions(target, [f"{tool.name} {verb}" for verb in sorted(verbs)])
                assert decided == {
                    f"{tool.name} {verb}": "allowed" if verb in tool.read_only else "denied"
                    for verb in verbs
                }, loaded.name


def test_the_target_file_carries_the_tools_and_refuses_bad_ones(tmp_path: Path) -> None:
    from jail_helpers import namespaced_process

    decided = _target(OUTCOME_LAB)
    with namespaced_process() as pid:
        entry = LabEntry(pid)
        target = LabTarget.entering("t", entry, list(decided.hosts), "web", decided.tools)
        path = target.write(tmp_path / "lab.json")
        again = LabTarget.read(path)
    assert again.prefix("web") == entry.host_argv("web") and again.entry == entry
    assert again.tools == target.tools and "jailctl" in again.tools["web"]
    assert _decisions(again, ["jailctl status"]) == {"jailctl status": "allowed"}
    data = json.loads(path.read_text())
    data["tools"] = {"nohost": {"x": "read-only"}}
    path.write_text(json.dumps(data))
    with (
        namespaced_process() as pid,
        pytest.raises(InputError, match="tools of 'nohost', which is no host"),
    ):
        data["enter"]["pid"] = pid
        path.write_text(json.dumps(data))
        LabTarget.read(path)
    data["tools"] = {"web": {"jailctl": {"subcommands": {"harmless": ["status"]}}}}
    with namespaced_process() as pid, pytest.raises(RecordError) as caught:
        data["enter"]["pid"] = pid
        path.write_text(json.dumps(data))
        Gate(load_policy(None), None, ci=True, lab=LabTarget.read(path)).decide("jailctl status")
    assert caught.value.field == "tools.jailctl.subcommands.harmless"


@pytest.mark.slow
def test_a_read_only_subcommand_runs_in_the_lab_and_a_change_does_not(tmp_path: Path) -> None:
    from agentledger.labs import start_lab

    lab_privilege()
    from jail_helpers import need_bwrap

    need_bwrap()
    with start_lab(load_lab(OUTCOME_LAB), name="tool-forms") as lab:
        hosts = {h: lab.host_argv(h) for h in lab.spec.host_names()}
        target = LabTarget(lab.name, hosts, "web", lab.spec.tool_knowledge())
        gate = Gate(load_policy(None), tmp_path / "audit.jsonl", lab=target, ci=True)
        status = gate.run("jailctl status")
        assert status.exit_code == 0, status.stderr
        assert b"10.0.0.2" in status.stdout
        assert gate.run("jailctl unban 10.0.0.2").denied
        assert gate.run("client: jailctl status").denied
        banned = lab.run("web", "cat jail/banned").stdout
        assert "10.0.0.2" in (banned if isinstance(banned, str) else banned.decode())
