"""Secrets typed on command lines of tools the rule table did not name (issue 33, cause 10:
"of new kinds at most 5%").

The corpus is tests/data/secrets/cmdline_kinds_cases.jsonl, made by
make_cmdline_kinds_corpus.py beside it and committed before any rule for its tools: 58
secrets on command lines of tools absent from `redact_argv_rules.TOOLS` (keytool, jarsigner,
apksigner, zip/unzip/7z, influx, cqlsh, nodetool, isql, bcp, tsql, mysqlsh, mongodump,
mongorestore, s3cmd, pgbackrest, skopeo, docker/podman login -p, helm repo, twine, cargo,
npm, poetry, svn, kcat, nats, artemis, swaks, sentry-cli, consul, nomad, doctl, glab,
kadmin, samba-tool, smbget, plink, pscp, x11vnc, racadm, wpa_cli, iwconfig, openconnect,
grafana-cli, gpg --passphrase, ccrypt, veracrypt, java -D, mvn -D, ansible -e, wp, winexe)
and 20 lines of the same tools that hold none. Every third case of each is blind: never
looked at while the rules were tuned.

Its first run, with the table as it stood (rules of tools not in the corpus, the detectors
of text, the assignment and URL rules): 22 of 58 reached the log (the dev part 16 of 39,
the blind part 6 of 19), and 0 of 20 plain lines were changed. What was held was held by
shape or by name (`--password`, `-token=`, `KEY=value`, `user:pass@`); what leaked sits by
place after a short or tool-own option (`cqlsh -p`, `bcp -P`, `plink -pw`,
`racadm -p`), or as a bare positional (`cargo login TOKEN`, `isql DSN USER
PASS`, `grafana-cli admin reset-admin-password PW`), or inside a quoted script
(`kadmin.local -q 'addprinc -pw PW'`), or on stdin (`openconnect --passwd-on-stdin`).

Rules were then written from the dev part's 16 (`redact_argv_kinds`): the dev part 0 of 39,
and the blind part, measured once with those rules before it was read, 5 of 19 (nodetool
`-pw`, tsql `-P`, skopeo `--src-creds`, `npm config set ..._authToken`, `iwconfig key
s:X`: tools with no rule yet, as the first run's); 0 of 20 plain lines changed. Rules for
those five kinds were added after: 0 of 58, 0 of 20 plain lines changed. The same person
wrote the corpus and the rules in one sitting, so the blind part is weak evidence; what it
shows again is that a tool with no rule leaks what it takes by place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor
from secrets_corpus_helpers import leaks

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_kinds_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]
KNOWN_LEAKS: set[str] = set()
"""Lines whose secret still reaches the log (no rule reads them)."""


def test_the_corpus_is_labelled_and_a_third_is_blind() -> None:
    assert len(SECRETS) >= 40 and len(BENIGN) >= 15
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert sum(row["blind"] for row in SECRETS) * 3 >= len(SECRETS) - 2
    assert len({row["source"] for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", SECRETS, ids=[row["source"] for row in SECRETS])
def test_a_secret_of_a_tool_new_to_the_table_does_not_reach_the_log(
    row: dict[str, object],
) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    leaked = leaks(redacted, row["pieces"])  # type: ignore[arg-type]
    if row["source"] in KNOWN_LEAKS:
        assert leaked, "fixed: remove it from KNOWN_LEAKS"
    else:
        assert not leaked, redacted


def test_at_most_five_percent_leak() -> None:
    redactor = Redactor()
    leaked = [
        row["source"]
        for row in SECRETS
        if leaks(redactor.redact_command(row["text"]), row["pieces"])
    ]
    assert len(leaked) <= len(SECRETS) * 0.05, leaked


@pytest.mark.parametrize("row", BENIGN, ids=[row["source"] for row in BENIGN])
def test_a_line_of_the_same_tools_without_a_secret_is_logged_as_typed(
    row: dict[str, object],
) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]


@pytest.mark.parametrize(
    "line",
    [
        "npm config set registry https://registry.example.com/",
        "npm config get //registry.example.com/:_authToken",
        "yarn config set npmRegistryServer https://r.example.com",
        "iwconfig wlan0 key off",
        "iwconfig wlan0 key [2]",
        "cargo login",
        "cargo build --release",
        "poetry config http-basic.priv alice",
        "poetry config virtualenvs.in-project true",
        "kadmin.local -q 'listprincs'",
        "kadmin -p admin/admin -k -t /etc/krb5.keytab -q 'getprinc bob'",
        "wpa_cli set_network 0 ssid '\"home\"'",
        "wpa_cli -i wlan0 status",
        "plink -pwfile /root/pw admin@10.0.0.5 uptime",
        "isql -v MSSQL_DSN",
        "skopeo inspect --creds-file /run/auth.json docker://a/b",
        "grafana-cli plugins ls",
        "ccrypt -d -k /root/keyfile notes.txt.cpt",
    ],
)
def test_look_alikes_of_the_new_rules_are_logged_as_typed(line: str) -> None:
    assert Redactor().redact_command(line) == line


@pytest.mark.parametrize(
    "line",
    [
        "isql",
        "cargo login",
        "npm config set",
        "iwconfig key",
        "wpa_cli set_network 0 psk",
        "kadmin -q",
        "plink -pw",
        "poetry config",
        "grafana-cli admin reset-admin-password",
    ],
)
def test_odd_lines_of_the_new_tools_are_logged_without_error(line: str) -> None:
    assert Redactor().redact_command(line) == line
