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
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_kinds_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]
KNOWN_LEAKS = {
    *("cqlsh-p", "isql-dsn", "bcp-P", "twine-p", "cargo-login", "poetry-http-basic"),
    *("doctl-auth", "kadmin-addprinc-pw", "plink-pw", "pscp-pw", "racadm-p", "wpa_cli-psk"),
    *("openconnect-stdin", "grafana-reset", "ccrypt-K", "winexe-U", "iwconfig-key"),
    *("kadmin-w", "nodetool-pw", "npm-config-authtoken", "skopeo-creds", "tsql-P"),
}
"""Lines whose secret still reaches the log (no rule reads them)."""


def leaks(text: str, pieces: list[str]) -> list[str]:
    return [piece for piece in pieces if piece in text]


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


@pytest.mark.xfail(strict=True, reason="22 of 58 leak before the rules")
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
