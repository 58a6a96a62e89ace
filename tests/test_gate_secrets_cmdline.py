"""Secrets typed on command lines (issue 33, cause 10, the red team's second round: 11 of 23
command lines such as `htpasswd -b FILE USER PASS`, `echo 'u:p' | chpasswd`,
`openssl enc -k PASS`, `echo PW | sudo -S ls` and `aws configure set aws_secret_access_key X`
reached the log).

The corpus is tests/data/secrets/cmdline_cases.jsonl, made by make_cmdline_corpus.py beside it
before any command-line rule was written (committed first): 70 secrets on command lines of
60 kinds of tool and form, and 45 read-only lines that hold none (`grep -r password /etc`,
`openssl x509 -in cert -noout -text`, `aws s3 ls`, `mysql -u u -p db`, `echo x | sudo tee`).
Every third case of each is blind: labelled with the rest, never looked at while the rules
were tuned. On main 53 of 70 reached the log (the dev part 37 of 47, the blind part 16 of
23) and 1 of 45 plain lines was changed (`--password-stdin HOST` took HOST for the secret).

The cause: the detectors read text, and these secrets have no shape; they are secrets by
their place. `redact_argv` reads the line with the classifier's parser and each tool's rule
(`redact_argv_rules`) names the words that hold one. The blind part's first run, with the
rules as written from the dev part: 0 of 23 reach the log, 0 of 15 plain lines changed; the
dev part 0 of 47 after one fix (openssl's `-pbkdf2` read as `-p -b -k df2`).

The same person wrote the corpus and the rules in one sitting, so that blind part is weak
evidence. cmdline_after_cases.jsonl was written after the rules, of tools and forms they
were not written from (kinit, unrar, gpg --passphrase-fd, net rpc, ykman and pkcs11 PINs,
az --account-key, etcdctl, rabbitmqadmin, mosquitto_passwd, doveadm, slappasswd, mkpasswd,
lftp scripts, wrappers: timeout, docker exec, kubectl exec, xargs): its first run left 16 of
30 in the log (every one a tool with no rule; the known tools behind wrappers were held) and
changed 1 of 20 plain lines (`export TOKEN_URL=https://...`, by the older assignment rule,
as on main). Rules for those tools were then added, tuned on it: 1 of 30 (a password inside
`python3 -c` code) and the same 1 of 20. A tool with no rule still leaks what it takes by
place: the table is what protects, and it grows by kind. With the general layer
(`redact_argv_general`: names that say secret on any tool, code and SQL in any word), 0 of 30
and 0 of 20.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor
from secrets_corpus_helpers import leaks

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]
AFTER = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_after_cases.jsonl")
    .read_text()
    .splitlines()
]
AFTER_LEAKS: set[str] = set()
"""Lines whose secret still reaches the log (`python3 -c "crypt.crypt('X')"` did until the
general layer, `redact_argv_general`, read code)."""
AFTER_CHANGED: set[str] = set()
"""Plain lines changed (`export TOKEN_URL=https://...` was, until a name ending in `_url`
stopped counting as a secret's)."""


def test_the_corpus_is_labelled_and_a_third_is_blind() -> None:
    assert len(SECRETS) >= 60 and len(BENIGN) >= 30
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert sum(row["blind"] for row in SECRETS) * 3 >= len(SECRETS) - 2
    assert len({row["source"] for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", SECRETS, ids=[row["source"] for row in SECRETS])
def test_a_secret_typed_on_a_command_line_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]
    assert "[REDACTED:" in redacted


def test_at_most_five_percent_of_the_blind_part_leaks() -> None:
    redactor = Redactor()
    blind = [row for row in SECRETS if row["blind"]]
    leaked = [
        row["source"] for row in blind if leaks(redactor.redact_command(row["text"]), row["pieces"])
    ]
    assert len(leaked) <= len(blind) * 0.05, leaked


@pytest.mark.parametrize("row", BENIGN, ids=[row["source"] for row in BENIGN])
def test_a_read_only_line_without_a_secret_is_logged_as_typed(row: dict[str, object]) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "htpasswd -b f u 'unterminated",
        "echo $'\\xff\\xfe' | chpasswd",
        "sudo -S",
        "echo | sudo -S ls",
        "printf | chpasswd",
        "htpasswd -b",
        "bash -c",
        "ssh",
        "env -u",
        "chpasswd <<<",
        "ftp <<EOF\nuser\nEOF",
        "mysql -p",
        "(((( | chpasswd",
        "a=$(b=$(c=$(d=$(htpasswd -b f u p)))) " * 50,
        "htpasswd -b f u \udcff\udcfe",
    ],
)
def test_odd_lines_are_logged_without_error(line: str) -> None:
    redacted = Redactor().redact_command(line)
    assert isinstance(redacted, str)


def test_a_secret_in_a_long_line_of_many_commands_is_found() -> None:
    line = " && ".join(["ls -l /tmp"] * 300 + ["htpasswd -b f u Far4way!"])
    assert "Far4way!" not in Redactor().redact_command(line)


def test_a_word_the_shell_decodes_is_redacted_whole() -> None:
    # The value is `Ansi-Cpw`; as typed it is `$'Ansi-\x43pw'`: the whole word goes.
    redacted = Redactor().redact_command("htpasswd -b f u $'Ansi-\\x43pw'")
    assert "x43pw" not in redacted and redacted.startswith("htpasswd -b f u [REDACTED:")


def test_the_same_secret_has_the_same_marker_in_the_command_and_its_parts(tmp_path: Path) -> None:
    from agentledger.runner.shell_gate import Gate, Policy

    log = tmp_path / "shell_audit.jsonl"
    gate = Gate(Policy(deny=["re:."]), log)
    assert gate.run("echo 'Gl4ssOnion' | sudo -S systemctl restart nginx").denied
    raw = log.read_text()
    assert "Gl4ssOnion" not in raw
    event = json.loads(raw)
    marker = event["command"].split("'")[1]
    assert marker.startswith("[REDACTED:stdin-password:")
    assert any(marker in part["command"] for part in event["parts"])


def strings_of(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (str(key), *strings_of(item))]
    if isinstance(value, list):
        return [text for item in value for text in strings_of(item)]
    return []


def test_no_secret_of_the_corpus_reaches_any_field_of_the_audit_log(tmp_path: Path) -> None:
    # Each line through the gate, refused (nothing of it runs): its command, every part
    # the classifier found, the reason and the intent are logged, redacted.
    from agentledger.runner.shell_gate import Gate, Policy

    log = tmp_path / "shell_audit.jsonl"
    gate = Gate(Policy(deny=["re:."]), log)
    for row in SECRETS:
        assert gate.run(row["text"]).denied
    raw = log.read_text()
    events = [json.loads(line) for line in raw.splitlines()]
    assert len(events) == len(SECRETS)
    logged = "\n".join(text for event in events for text in strings_of(event))
    leaked = [
        row["source"]
        for row in SECRETS
        if leaks(logged, row["pieces"]) or leaks(raw, row["pieces"])
    ]
    assert leaked == []


def exec_line(tmp_path: Path, line: str) -> tuple[subprocess.CompletedProcess[bytes], str]:
    """`agentledger exec` of `line` (the installed console script, in a run directory of
    `tmp_path`): the finished process and the audit log it wrote."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = str(Path(sys.executable).parent / "agentledger")
    result = subprocess.run(
        [script, "exec", "--run-dir", str(run_dir), "--", line],
        capture_output=True,
        env={**os.environ, "CI": "true"},
        timeout=60,
        check=False,
    )
    log = run_dir / "shell_audit.jsonl"
    return result, log.read_text() if log.exists() else ""


def test_a_command_run_by_exec_logs_its_password_redacted(tmp_path: Path) -> None:
    # Run for real: the agent sees the command's output; the log does not hold the secret
    # in the command, its parts, or the output that echoes it.
    line = "printf '%s\\n' 'Orch1dGarden' | sudo -S -n true; echo done"
    result, raw = exec_line(tmp_path, line)
    assert raw.strip(), result.stderr
    assert "Orch1dGarden" not in raw
    assert "[REDACTED:stdin-password:" in raw


def test_every_tool_of_the_rules_is_a_name_that_makes_a_line_read() -> None:
    from agentledger.runner.shell_gate.redact import TOOL_NAMES
    from agentledger.runner.shell_gate.redact_argv_rules import STDIN, TOOLS

    assert set(TOOLS) | set(STDIN) <= TOOL_NAMES


@pytest.mark.parametrize("row", AFTER, ids=[row["source"] for row in AFTER])
def test_the_cases_written_after_the_rules(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    if row["kind"] == "tp":
        leaked = leaks(redacted, row["pieces"])  # type: ignore[arg-type]
        assert bool(leaked) == (row["source"] in AFTER_LEAKS), redacted
    else:
        assert (redacted != row["text"]) == (row["source"] in AFTER_CHANGED), redacted


@pytest.mark.parametrize(
    "line",
    [
        "docker login --password-file /run/secrets/registry harbor.corp",
        "gpg --batch --passphrase-fd 0 -d backup.gpg < /root/phrase",
        "gpg --passphrase-file /root/phrase -d backup.gpg",
        "echo hi | kinit -k -t /etc/krb5.keytab host/web1",
        "DB_PASSWORD_FILE=/run/secrets/db ./app",
        "docker run -u 1000:1000 alpine id",
        "openssl enc -d -aes-256-cbc -pbkdf2 -in f -out g -pass env:KEY",
        "timeout 5 mysql -u app -p -e 'select 1'",
        "sudo -u postgres psql -c 'select 1'",
    ],
)
def test_an_option_that_names_where_the_secret_is_is_not_taken_for_it(line: str) -> None:
    assert Redactor().redact_command(line) == line


def nested(line: str, times: int) -> str:
    import shlex

    for _ in range(times):
        line = "bash -c " + shlex.quote(line)
    return line


@pytest.mark.parametrize("times", [1, 3, 5, 6, 9])
def test_a_secret_in_a_line_nested_in_shells_does_not_reach_the_log(times: int) -> None:
    for line in ("htpasswd -b f u Deep9pw", "echo 'Deep9pw' | sudo -S id"):
        assert "Deep9pw" not in Redactor().redact_command(nested(line, times))


def test_input_passed_on_through_filters_is_what_the_tool_reads() -> None:
    redactor = Redactor()
    line = "echo 'u:Thr0ugh9' | cat | tee /dev/null | chpasswd"
    assert "Thr0ugh9" not in redactor.redact_command(line)
    # a filter that prints something else: what the first command printed never reaches it
    assert redactor.redact_command("echo alpha | wc -l | sudo -S id") == (
        "echo alpha | wc -l | sudo -S id"
    )


def test_a_long_pipeline_of_consumers_is_read_whole() -> None:
    line = " | ".join([f"echo 'P{index}x' | sudo -S true" for index in range(500)])
    redacted = Redactor().redact_command(line)
    assert not [index for index in range(500) if f"'P{index}x'" in redacted]


@pytest.mark.parametrize(
    ("line", "secrets"),
    [
        ("printf '%s:%s\\n' alice Pr1ntf9 bob Pr2ntf9 | chpasswd", ["Pr1ntf9", "Pr2ntf9"]),
        ("printf 'u:%s\\n' Pct9pw | sudo chpasswd", ["Pct9pw"]),
        ("yes Ye5pw9 | passwd bob", ["Ye5pw9"]),
        ("cat <<EOF | chpasswd\nann:C4tHd9\nEOF", ["C4tHd9"]),
        ("cat <<EOF | sort | chpasswd\nann:C4tHd9\nEOF", ["C4tHd9"]),
        ("cat <<< 'bo:C4tHs9' | chpasswd", ["C4tHs9"]),
    ],
)
def test_input_made_by_printf_yes_or_cat_is_read_as_the_tool_reads_it(
    line: str, secrets: list[str]
) -> None:
    redacted = Redactor().redact_command(line)
    assert not leaks(redacted, secrets), redacted


def test_what_a_filter_reads_from_a_here_document_is_not_taken_for_a_secret() -> None:
    line = "cat <<EOF | wc -l\nann:x\nEOF"
    assert Redactor().redact_command(line) == line


def outside_command_lines() -> list[str]:
    """Command lines from outside the rules: plainly read-only ones, real investigators',
    the lab agents', and tldr's examples (placeholders filled in)."""
    from command_corpora import investigator_commands, readonly_commands

    data = Path(__file__).parent / "data"
    agents = (data / "agent_commands.jsonl").read_text().splitlines()
    tldr = json.loads((data / "tldr_examples.json").read_text())["examples"]
    return [
        *readonly_commands(),
        *(command for _, command in investigator_commands()),
        *(json.loads(line)["command"] for line in agents),
        *(example["command"] for example in tldr),
    ]


def test_the_argv_rules_change_no_line_of_the_outside_corpora_the_text_rules_leave() -> None:
    # 1,026 lines; the one the argv rules change is one the text rules change too
    # (`curl --user myusername:mypassword`, tldr's placeholder in a password's place).
    redactor = Redactor()
    lines = outside_command_lines()
    assert len(lines) > 1000
    changed = [line for line in lines if redactor.redact_command(line) != redactor.redact(line)]
    assert changed == ["curl --user myusername:mypassword http://example.com"]
    assert "mypassword" not in redactor.redact("curl --user myusername:mypassword http://x")


def test_a_secret_of_the_command_leaves_the_output_only_when_long_enough(tmp_path: Path) -> None:
    # Run for real: `root` as a password stays in output where it is a user's name too;
    # a longer one printed back is replaced in the output as in the command.
    line = (
        "openssl passwd -1 -salt ab root; echo root; "
        "openssl passwd -1 -salt cd LongSecret9x; echo LongSecret9x"
    )
    result, raw = exec_line(tmp_path, line)
    assert result.returncode == 0, result.stderr
    assert b"LongSecret9x" in result.stdout  # the agent gets its output unchanged
    event = json.loads(raw)
    assert "LongSecret9x" not in json.dumps(event)
    assert "-salt ab [REDACTED:password-arg:" in event["command"]
    assert "; echo root;" in event["command"]
    assert "\nroot\n" in event["stdout"]


@pytest.mark.parametrize(
    "line",
    [
        "MYPASS=Xq9pw ./run",
        "ROOTPW=Xq9pw make",
        "export DBPASS=Xq9pw",
        "declare -x DB_SECRET=Xq9pw",
        "env AWS_SECRET_ACCESS_KEY=Xq9pw aws s3 ls",
        "gh auth login --with-token <<< Xq9pw",
    ],
)
def test_a_variable_named_for_a_password_holds_one(line: str) -> None:
    redacted = Redactor().redact_command(line)
    assert "Xq9pw" not in redacted
    if "<<<" in line:  # the operator after a flag is not taken for the flag's value
        assert "--with-token <<< [REDACTED:stdin-password:" in redacted


@pytest.mark.parametrize(
    "line", ["BYPASS=1 ./x", "SSH_ASKPASS=/usr/bin/ksshaskpass git pull", "export PWD_DIR=/x"]
)
def test_a_name_that_only_looks_like_a_password_is_left(line: str) -> None:
    assert Redactor().redact_command(line) == line
