"""Secrets of new kinds the seventh red team wrote and ran through the gate (issue 33, cause 10:
"of new kinds at most 5%"), and the plain commands it ran.

The corpus is tests/data/secrets/cmdline_redteam7_cases.jsonl, made by
make_cmdline_redteam7_corpus.py beside it from the red team's two sets (findings B16, B17):
62 secrets in what a command printed (vendor tokens, URLs, config lines, network-device
configs; `field` "output", `Redactor.redact`), 50 command lines that type a password (`field`
"command", `Redactor.redact_command`) and 341 plain commands (read-only ones and an
investigator's) that must be logged as typed.

First run against main (b6066dc; cmdline_redteam7_first_run.txt): 16 of 112 secrets reached
the log (output 5 of 62, command lines 11 of 50) and 0 of 341 plain lines were changed. A case
in STILL_LEAKING is expected to fail, strictly: a rule that fixes one must take it off.

After the rules for their causes (network-device configs, LDAP `olc*PW`/`userPassword`,
ipsec.secrets `: PSK`, `*_AUTH=`, credential pairs in code, a NuGet key; per-tool argument
positions; secrets fed on standard input or through `<(printf ...)`): 0 of 112 and 0 of 341.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor
from secrets_corpus_helpers import leaks

DATA = Path(__file__).parent / "data/secrets"
ROWS = [
    json.loads(line) for line in (DATA / "cmdline_redteam7_cases.jsonl").read_text().splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]

FIRST_RUN = {"output": (5, 62), "command": (11, 50), "plain_changed": (0, 341)}
"""The figures of the first run against main (b6066dc)."""

STILL_LEAKING: set[str] = set()
"""Secrets that still reach the log."""


def logged(row: dict[str, object]) -> str:
    redactor = Redactor()
    text = str(row["text"])
    return redactor.redact_command(text) if row["field"] == "command" else redactor.redact(text)


def test_the_corpus_is_the_red_teams() -> None:
    assert sum(row["field"] == "output" for row in SECRETS) == FIRST_RUN["output"][1]
    assert sum(row["field"] == "command" for row in SECRETS) == FIRST_RUN["command"][1]
    assert len(BENIGN) == FIRST_RUN["plain_changed"][1]
    assert all(row["written"] == "red-team-7" and row["blind"] for row in ROWS)
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert all(row["secret"] == row["pieces"][0] for row in SECRETS)
    assert len({row["source"] for row in ROWS}) == len(ROWS)
    assert {row["source"] for row in SECRETS} >= STILL_LEAKING


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            row,
            id=str(row["source"]),
            marks=[pytest.mark.xfail(strict=True, reason="still reaches the log")]
            if row["source"] in STILL_LEAKING
            else [],
        )
        for row in SECRETS
    ],
)
def test_a_red_team_secret_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = logged(row)
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]


def test_the_red_teams_plain_commands_are_logged_as_typed() -> None:
    changed = [row["text"] for row in BENIGN if logged(row) != row["text"]]
    assert not changed


def test_at_most_five_percent_of_the_red_team_secrets_leak() -> None:
    leaked = [row["source"] for row in SECRETS if leaks(logged(row), row["pieces"])]
    assert len(leaked) <= len(SECRETS) * 0.05, leaked


def test_the_rules_cover_their_kind_not_only_the_red_teams_lines() -> None:
    """Each cause's rule on other lines of its kind, and the plain lines next to them."""
    redactor = Redactor()
    secret = "Qw7ErT9yUi3"
    commands = (
        f"echo 'AUTH default {secret}' | ncat cache.internal 6379",
        f"printf '%s' {secret} | gcloud secrets versions add db --data-file -",
        f"mc --insecure admin user add prod alice {secret}",
        f"redis-cli -h cache ACL SETUSER alice on '>{secret}' '~app:*'",
        f"python3 -c \"import requests as r; r.get(u, auth=HTTPBasicAuth('al', '{secret}'))\"",
        f"openvpn --config c.ovpn --auth-user-pass <(printf '%s\\n' alice {secret})",
        f"printf '{secret}' | sha512sum",
    )
    for command in commands:
        assert secret not in redactor.redact_command(command), command
    outputs = (
        f"enable secret 0 {secret}",
        f"auth = HTTPDigestAuth('al', '{secret}')",
        f"username ops privilege 15 password {secret}",
        "tacacs-server key 7 0822455D0A16",
        "ip ospf message-digest-key 1 md5 7 094F471A1A0A",
        f"snmp-server community {secret} RW 10",
        f"olcSyncreplPassword: {secret}",
        f"userPassword:: {secret}",
        f'%any : PSK "{secret}"',
        f"PROXY_AUTH={secret}",
    )
    for output in outputs:
        assert secret not in redactor.redact(output), output
    for plain in (
        "echo hello | sha256sum",
        "echo -n abc123 | md5sum",
        "printf 'PING\\r\\n' | nc cache 6379",
        "echo foo | base64",
        "net user alice /add",
        "net user alice * /add",
        "cat <(printf 'a\\nb\\n')",
        "openvpn --config c.ovpn --auth-user-pass creds.txt",
        "mc admin user list prod",
    ):
        assert redactor.redact_command(plain) == plain
    for plain in ("the secret 5 times", "SMTP_AUTH=login", "olcRootDN: cn=admin,dc=example,dc=org"):
        assert redactor.redact(plain) == plain
