"""Trajectory match: a run's actions against a reference, in the four modes, with precision and
recall in order and in any order; references read from YAML with file and field errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentledger.errors import RecordError
from agentledger.judges.trajectory_match import (
    Action,
    ReferenceStep,
    TrajectoryReference,
    actions_from_events,
    actions_from_output,
    actions_from_trace,
    load_references,
    match_trajectory,
    program_of,
)
from agentledger.records import ShellEvent
from agentledger.records.trace import GateDecision, StepSource, TraceStep


def cmd(command: str, klass: str = "read-only", *, denied: bool = False) -> Action:
    return Action(kind="command", tool="shell", command=command, command_class=klass, denied=denied)


def ref(mode: str, *steps: object, **more: object) -> TrajectoryReference:
    return TrajectoryReference.model_validate({"mode": mode, "steps": list(steps), **more})


INVESTIGATION = [
    cmd("ip -br addr"),
    cmd("sudo iptables -S INPUT"),
    cmd("tc qdisc show dev eth0"),
]
REFERENCE = ("ip", "iptables", "tc")


@pytest.mark.parametrize(
    ("mode", "actions", "holds"),
    [
        ("strict", INVESTIGATION, True),
        ("strict", [INVESTIGATION[1], INVESTIGATION[0], INVESTIGATION[2]], False),
        ("strict", [*INVESTIGATION, cmd("ss -tan")], False),
        ("unordered", [INVESTIGATION[2], INVESTIGATION[0], INVESTIGATION[1]], True),
        ("unordered", INVESTIGATION[:2], False),
        ("subset", INVESTIGATION[:2], True),
        ("subset", [*INVESTIGATION, cmd("ss -tan")], False),
        ("superset", [cmd("ss -tan"), *INVESTIGATION], True),
        ("superset", INVESTIGATION[:2], False),
    ],
)
def test_the_four_modes(mode: str, actions: list[Action], holds: bool) -> None:
    result = match_trajectory(ref(mode, *REFERENCE), actions)
    assert result.mode_holds is holds
    assert result.passed is holds
    assert result.reason.startswith(f"{mode} match {'holds' if holds else 'fails'}")


def test_in_order_and_any_order_precision_and_recall_differ_when_the_order_does() -> None:
    actions = [cmd("tc qdisc show dev eth0"), cmd("ip -br addr"), cmd("ss -tan")]
    result = match_trajectory(ref("superset", "ip", "iptables", "tc"), actions)
    # any order: ip and tc are paired; in order only one of them can be (tc comes first)
    assert (result.any_order.matched, result.in_order.matched) == (2, 1)
    assert result.any_order.precision == pytest.approx(2 / 3)
    assert result.any_order.recall == pytest.approx(2 / 3)
    assert result.in_order.recall == pytest.approx(1 / 3)
    assert result.missing == (1,)
    assert [action.command for action in result.extra] == ["ss -tan"]
    assert "missing reference step(s) 1 (name 'iptables')" in result.reason


def test_one_action_pairs_with_one_reference_step() -> None:
    """Two reference steps need two actions, even when one action fits both."""
    result = match_trajectory(ref("superset", "tc", {"class": "read-only"}), [cmd("tc -s qdisc")])
    assert not result.mode_holds
    assert result.any_order.matched == 1


def test_floors_on_precision_and_recall_fail_a_match_the_mode_allows() -> None:
    reference = ref("superset", "ip", "tc", order="any-order", min_precision=0.75, min_recall=1.0)
    noisy = [cmd("ip a"), cmd("ls"), cmd("ps aux"), cmd("tc qdisc")]
    result = match_trajectory(reference, noisy)
    assert result.mode_holds and not result.passed
    assert "any-order precision 0.50 is below 0.75" in result.reason
    assert match_trajectory(reference, [cmd("ip a"), cmd("tc qdisc")]).passed


def test_fields_of_a_reference_step_must_all_hold() -> None:
    step = ReferenceStep.model_validate({"program": "iptables", "class": "mutating"})
    assert step.matches(cmd("sudo iptables -D INPUT 3", "mutating"))
    assert not step.matches(cmd("iptables -S", "read-only"))
    glob = ReferenceStep.model_validate({"command": "kubectl get * -n prod"})
    assert glob.matches(cmd("kubectl get pods -n prod"))
    assert not glob.matches(cmd("kubectl get pods -n staging"))
    tool = ReferenceStep.model_validate({"tool": "str_replace_editor", "kind": "file_write"})
    assert tool.matches(Action(kind="file_write", tool="str_replace_editor"))
    assert not tool.matches(Action(kind="file_read", tool="str_replace_editor"))


def test_denied_attempts_are_not_actions_unless_asked() -> None:
    actions = [cmd("ip a"), cmd("iptables -F", "destructive", denied=True), cmd("tc qdisc")]
    assert match_trajectory(ref("strict", "ip", "tc"), actions).passed
    counted = ref("strict", "ip", "tc", include_denied=True)
    assert not match_trajectory(counted, actions).passed


def test_the_program_skips_settings_and_wrappers() -> None:
    assert program_of("sudo -n iptables -L") == "iptables"
    assert program_of("LANG=C /usr/sbin/ss -tan") == "ss"
    assert program_of("timeout 5s curl -s http://x") == "curl"
    assert program_of("  ") is None
    assert program_of("echo 'unclosed") == "echo"


def test_actions_from_a_trace_are_the_agents_actions_in_order() -> None:
    steps = [
        TraceStep(index=0, actor="user", kind="message"),
        TraceStep(index=1, actor="agent", kind="reasoning"),
        TraceStep(
            index=2,
            actor="agent",
            kind="command",
            tool="shell",
            command="ip a",
            command_class="read-only",
            source=StepSource(file="shell_audit.jsonl", line=1),
        ),
        TraceStep(index=3, actor="tool", kind="command_output", cause=2),
        TraceStep(
            index=4,
            actor="agent",
            kind="command",
            command="iptables -F",
            command_class="destructive",
            gate=GateDecision(decision="denied"),
        ),
        TraceStep(index=5, actor="agent", kind="file_write", tool="str_replace_editor"),
    ]
    actions = actions_from_trace(steps)
    assert [(a.step, a.kind, a.line) for a in actions] == [
        (2, "command", 1),
        (5, "file_write", None),
    ]
    assert [a.step for a in actions_from_trace(steps, include_denied=True)] == [2, 4, 5]


def test_actions_from_a_shell_log_carry_their_line() -> None:
    events = [
        ShellEvent(command="ip a", classification="read-only", decision="allowed"),
        ShellEvent(command="iptables -F", decision="denied"),
    ]
    assert [(a.line, a.denied) for a in actions_from_events(events, include_denied=True)] == [
        (1, False),
        (2, True),
    ]
    assert len(actions_from_events(events)) == 1


def test_actions_from_an_output_list_and_what_is_not_one() -> None:
    actions = actions_from_output(["get_pods", {"tool": "shell", "command": "ip a"}])
    assert not isinstance(actions, str)
    assert [(a.kind, a.tool, a.command) for a in actions] == [
        ("tool_call", "get_pods", None),
        ("command", "shell", "ip a"),
    ]
    assert actions_from_output("get_pods") == "expected a list of tool calls, found text"
    assert actions_from_output([3]) == "item 0 is a int, expected a tool name or an object"
    assert actions_from_output([{}]) == "item 0 names no tool and no command"
    assert actions_from_output([{"tool": 1}]) == (
        "item 0: tool, name, command and class must be text"
    )


def test_no_actions_against_a_reference() -> None:
    result = match_trajectory(ref("superset", "ip"), [])
    assert not result.passed
    assert result.any_order.precision == 1.0 and result.any_order.recall == 0.0
    assert match_trajectory(ref("subset", "ip"), []).passed


def test_a_references_file_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.yaml"
    path.write_text(
        "schema_version: 1\n"
        "references:\n"
        "  use_case_m:\n"
        "    mode: superset\n"
        "    steps: [ip, {program: tc, class: read-only}]\n"
    )
    references = load_references(path)
    assert references.references["use_case_m"].steps[1].command_class == "read-only"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ("    mode: sideways\n    steps: [ip]\n", "references.m.mode", "Input should be"),
        ("    steps: []\n", "references.m.steps", "at least 1 item"),
        ("    steps: [{}]\n", "references.m.steps.0", "needs at least one of"),
        ("    steps: [{kind: message}]\n", "references.m.steps.0", "is not an action"),
        ("    steps: [{class: harmless}]\n", "references.m.steps.0.class", "Input should be"),
        ("    steps: [ip]\n    min_recall: 1.5\n", "references.m.min_recall", "less than"),
        ("    steps: [ip]\n    modes: strict\n", "references.m.modes", "unknown field"),
    ],
)
def test_a_bad_references_file_names_the_file_and_the_field(
    tmp_path: Path, body: str, field: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("schema_version: 1\nreferences:\n  m:\n" + body)
    with pytest.raises(RecordError) as caught:
        load_references(path)
    text = str(caught.value)
    assert "bad.yaml" in text and field in text and message in text


def test_a_missing_references_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="does not exist"):
        load_references(tmp_path / "none.yaml")
