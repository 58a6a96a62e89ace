"""Findings of the red-team helper (issue 33; /work/helpers/redteam_findings.md F1-F9): a
descriptor the gate's caller left open reaches no command, and the classifier does not take
`>&3`, `curl -H @FILE`, `jobs -x`, a dry run its tool overrides, or a write option of
range-diff, helm template, terraform plan, atop and mysql's `\\T` for reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.jail_helpers import need_bwrap

from agentledger.shell.classifier import classify
from agentledger.shell.reader_options import header


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("echo hi >&3", "unknown"),
        ("echo hi 1>&9 9>&3", "unknown"),
        ("ls 2>&1", "read-only"),
        ("ls >&2", "read-only"),
        ("ls 2>&-", "read-only"),
        ("jobs -x touch pwn", "unknown"),
        ("ssh h 'jobs -x rm -rf /srv/data'", "unknown"),
        ("jobs -l", "read-only"),
        ("kubectl delete pod x --dry-run=client --dry-run=none", "destructive"),
        ("kubectl create namespace x --dry-run=client --dry-run=none", "mutating"),
        ("kubectl delete pod x --dry-run=client", "read-only"),
        ("git range-diff --output=pwn A B C", "mutating"),
        ("git diff-tree -p --output=pwn HEAD", "mutating"),
        ("git range-diff A B C", "read-only"),
        ("helm template x . --output-dir pwn", "mutating"),
        ("helm template x .", "read-only"),
        ("terraform plan -generate-config-out=pwn", "mutating"),
        ("atop -w pwn 1 1", "mutating"),
        ("mysql -e '\\T pwn'", "unknown"),
        ("mysql -e 'select 1; \\! touch x'", "unknown"),
        ("mysql -e 'select 1'", "read-only"),
        ("redis-cli SLOWLOG RESET", "mutating"),
        ("redis-cli LATENCY RESET", "mutating"),
        ("redis-cli MEMORY PURGE", "mutating"),
        ("redis-cli SLOWLOG GET 10", "read-only"),
        ("redis-cli memory usage k", "read-only"),
        ("lastlog -C -u root", "mutating"),
        ("lastlog -u root", "read-only"),
        ("dmesg --console-off", "mutating"),
        ("nstat -az", "mutating"),
        ("nstat -asz", "read-only"),
        ("arping -c 1 -s 10.0.0.9 -I eth0 10.0.0.1", "mutating"),
        ("kubectl port-forward svc/x 8080", "unknown"),
        ("kubectl proxy", "unknown"),
        (
            "gcloud compute ssh vm --ssh-flag='-o ProxyCommand=touch /tmp/p' --command=uptime",
            "unknown",
        ),
        ("gcloud compute ssh vm --command=uptime", "read-only"),
        ("aws iot-data get-thing-shadow --thing-name x pwn", "mutating"),
        (
            "aws apigateway get-export --rest-api-id x --stage-name y --export-type oas30 pwn",
            "mutating",
        ),
        ("aws apigateway get-rest-apis", "read-only"),
    ],
)
def test_red_team_lines_are_classified_by_what_they_do(line: str, kind: str) -> None:
    assert classify(line).kind == kind


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("@/tmp/headers", False),
        ("@headers", False),
        ("Transfer-Encoding: chunked", False),
        ("X-HTTP-Method-Override: DELETE", False),
        ("Accept: application/json", True),
    ],
)
def test_a_network_reader_sends_no_header_from_a_file_or_that_reframes(
    value: str, allowed: bool
) -> None:
    assert header(value) is allowed


def test_a_descriptor_the_caller_left_open_does_not_reach_the_command(tmp_path: Path) -> None:
    need_bwrap()
    canary = tmp_path / "canary"
    canary.write_text("orig\n")
    run = tmp_path / "run"
    run.mkdir()
    exe = Path(sys.executable).parent / "agentledger"
    with canary.open("a") as handle:
        fd = 57
        os.dup2(handle.fileno(), fd)  # inheritable, like a harness's log file
        try:
            done = subprocess.run(
                [str(exe), "exec", "--run-dir", str(run), "--", "ls /proc/self/fd"],
                pass_fds=(fd,),
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    assert str(fd) not in done.stdout.split(), done.stdout
    assert canary.read_text() == "orig\n"


def test_a_line_of_many_tools_and_urls_is_still_redacted() -> None:
    # F9: the rules anchored at a tool (curl, docker, mysql ...) searched from each tool word
    # to the line's end: 60 KB of `https://u:p@` took 220 s. Each search now stops at the next
    # tool word (bench: 90 KB in about a second).
    from agentledger.runner.shell_gate.redact import Redactor

    out = Redactor().redact("https://u:p@" * 3000 + " curl -u admin:Zq8vR2kL9m https://x")
    assert "Zq8vR2kL9m" not in out and ":p@" not in out


@pytest.mark.parametrize(
    "line",
    [
        "DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=/usr/bin/touch,argv1=/tmp/p systemctl restart nginx",
        "HOME=/tmp/evil systemctl restart nginx",
        "KUBECONFIG=/tmp/k systemctl restart nginx",
        "export AWS_CONFIG_FILE=/tmp/c; systemctl restart nginx",
        "env OPENSSL_MODULES=/tmp/m systemctl restart nginx",
    ],
)
def test_an_environment_that_makes_a_vouched_tool_run_a_program_is_asked_about(line: str) -> None:
    # F7: remediate's allow pattern vouched for `systemctl restart nginx` whatever the line
    # set in its environment (sd-bus runs the program a `unixexec:` address names).
    from agentledger.runner.shell_gate import Gate, load_policy
    from agentledger.runner.shell_gate.rules import DEFAULT_POLICY

    remediate = load_policy(str(Path(DEFAULT_POLICY).with_name("remediate.yaml")))
    decision = Gate(remediate, None, ci=False).decide(line)
    assert decision.decision != "allowed", decision.reason
    assert decision.decision in ("prompt", "denied")


def test_a_long_command_cannot_scroll_the_question_off_the_screen() -> None:
    # F8: 2,400 blanks and six lines padded to 80 columns in a file name pushed the real
    # question off an 80x24 terminal and drew a fake one asking about `systemctl status`.
    from agentledger.runner.shell_gate import Gate, load_policy
    from agentledger.runner.shell_gate.ask import question
    from agentledger.runner.shell_gate.rules import DEFAULT_POLICY

    fake = "".join(
        line.ljust(80)
        for line in ("agentledger: the agent wants to run", "    systemctl status nginx")
    )
    command = f'touch /tmp/p; echo > "/tmp/{" " * 2400}{fake}"; ' + "; ".join(
        f"echo {n} > /tmp/f{n}" for n in range(30)
    )
    remediate = load_policy(str(Path(DEFAULT_POLICY).with_name("remediate.yaml")))
    shown = question(Gate(remediate, None, ci=False).decide(command), 80, 24)
    lines = shown.split("\n")
    assert len(lines) <= 23 and all(len(line) < 80 for line in lines), shown
    assert "touch /tmp/p" in shown and "more parts not shown" in shown
    assert "/tmp/\u2423\u00d72400" in lines[2]  # the blanks, counted
    assert lines[-1] == "To run it type WORD (anything else refuses): "


@pytest.mark.parametrize(
    "expect",
    [
        {"regex": ["."]},
        {"regex": ["\\S|\\s"]},
        {"regex": ["(?s)\\A.+\\z"]},
        {"regex": ["\\{"]},
        {"required_substrings": ["{"]},
        {"required_substrings": {"values": ["}"], "case_sensitive": True}},
    ],
)
def test_an_expect_every_output_passes_is_refused(expect: dict[str, object]) -> None:
    # F10: patterns and substrings every JSON object output holds check nothing.
    from agentledger.errors import InputError
    from agentledger.suites.properties.score import validate_expect

    with pytest.raises(InputError, match="checks nothing"):
        validate_expect(expect, "expect.json")


def test_an_expect_that_checks_a_field_or_a_word_is_kept() -> None:
    from agentledger.suites.properties.score import validate_expect

    validate_expect({"regex": {"patterns": ["."], "field": "sql"}}, "expect.json")
    validate_expect({"regex": ["status"], "required_substrings": ["done"]}, "expect.json")


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("cat <<EOF\n`rm -rf /srv/data`\nEOF", "unknown"),
        ('echo "${x:-`touch p`}"', "unknown"),
        ("echo `echo \\`touch p\\``", "unknown"),
        ('grep "${x:-`touch p`}" /etc/hostname', "unknown"),
        ("ssh h 'grep \"${x:-`rm -rf /srv`}\" /etc/hosts'", "unknown"),
        ("echo \"${x:-'`touch p`'}\"", "unknown"),
        ("echo `date`", "read-only"),
        ('echo "`date`"', "read-only"),
        ("echo 'a`b`c'", "read-only"),
        # literal to bash (quoted inside the expansion), refused all the same: the parser
        # does not read inside ${...}, so no backquote there is vouched for
        ("echo ${x:-'`touch p`'}", "unknown"),
    ],
)
def test_a_backquote_the_parser_did_not_read_is_unknown(line: str, kind: str) -> None:
    # F21: backquotes inside ${...} and in here-document bodies were not seen; bash runs them.
    assert classify(line).kind == kind


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # F22: subcommands and options that change a daemon, the kernel's view or a file
        ("systemd-analyze set-log-level debug", "mutating"),
        ("systemd-analyze set-log-target console", "mutating"),
        ("systemd-analyze service-watchdogs no", "mutating"),
        ("resolvectl log-level debug", "mutating"),
        ("journalctl --cursor-file=/tmp/cursor -n 5", "mutating"),
        # their reading forms still run
        ("systemd-analyze blame", "read-only"),
        ("systemd-analyze", "read-only"),
        ("resolvectl status", "read-only"),
        ("journalctl -u nginx -n 20 --no-pager", "read-only"),
        ("strace -c ls /tmp", "read-only"),
        ("ltrace ls", "read-only"),
    ],
)
def test_what_changes_a_daemon_or_writes_a_file_is_not_read_only(line: str, kind: str) -> None:
    assert classify(line).kind == kind
