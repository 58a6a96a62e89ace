"""Secrets on command lines measured blind (issue 33, cause 10: "of new kinds at most 5%").

The corpus is tests/data/secrets/cmdline_blind4_cases.jsonl, made by
make_cmdline_blind4_corpus.py beside it, written without reading the redaction rules or the
other corpora: 135 secrets in twelve families (the prefix of each `source`: db, cloud, net,
mail, pkg, k8s, interp, http, stdin, wrap, url, enc) and 66 plain lines with secret-sounding
words, placeholders, hashes and UUIDs. All of it is blind: whoever tunes the rules measures
against it and does not read it, or it stops measuring anything.

First run against main (2f16e71): 16 of 135 secrets reached the log and 7 of 66 plain lines
were changed. The cases that failed then are expected to fail (not strictly: a rule that
fixes one passes); every other case must keep passing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_blind4_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]

FIRST_RUN_LEAKS = {
    "net-wg-set-key",
    "mail-sendemail-xp",
    "pkg-composer-basic",
    "interp-perl-dbi",
    "interp-php-pdo",
    "stdin-heredoc-psql",
    "stdin-herestring-mysql",
    "stdin-netrc-printf",
    "stdin-pgpass-append",
    "url-mysql-uri",
    "enc-base64-decode-pipe",
    "enc-hex-xxd",
    "enc-jwt-split",
    "enc-smtp-auth-plain",
    "enc-wireguard-privkey",
    "enc-pem-body",
}
"""Secrets that reached the log on the first run against main."""

FIRST_RUN_CHANGED = {
    "fp-redis-env-placeholder",
    "fp-cmdsubst-secret-file",
    "fp-ipmitool-E",
    "fp-kubectl-from-file",
    "fp-borg-passcommand",
    "fp-export-min-length",
    "fp-ldap-filter",
}
"""Plain lines that main changed on the first run."""


def leaks(text: str, pieces: list[str]) -> list[str]:
    return [piece for piece in pieces if piece in text]


def marked(rows: list[dict[str, object]], failed: set[str], reason: str) -> list[object]:
    """The rows as parameters, those in `failed` expected to fail (not strictly)."""
    return [
        pytest.param(
            row,
            id=str(row["source"]),
            marks=[pytest.mark.xfail(strict=False, reason=reason)]
            if row["source"] in failed
            else [],
        )
        for row in rows
    ]


def test_the_corpus_is_labelled_and_all_blind() -> None:
    assert len(SECRETS) >= 100 and len(BENIGN) >= 50
    assert all(row["blind"] and row["field"] == "command" for row in ROWS)
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert all(row["secret"] == row["pieces"][0] for row in SECRETS)
    assert len({row["source"] for row in ROWS}) == len(ROWS)
    assert {row["source"] for row in SECRETS} >= FIRST_RUN_LEAKS
    assert {row["source"] for row in BENIGN} >= FIRST_RUN_CHANGED


@pytest.mark.parametrize(
    "row", marked(SECRETS, FIRST_RUN_LEAKS, "reached the log on the first run against main")
)
def test_a_blind_secret_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]


@pytest.mark.xfail(
    strict=False,
    reason="main leaks 16 of 135 (12%), over the 5% goal of issue 33; the rules are being "
    "rewritten to reach it",
)
def test_at_most_five_percent_of_the_blind_secrets_leak() -> None:
    redactor = Redactor()
    by_family: defaultdict[str, list[str]] = defaultdict(list)
    for row in SECRETS:
        if leaks(redactor.redact_command(row["text"]), row["pieces"]):
            by_family[row["source"].split("-")[0]].append(row["source"])
    leaked = sum(len(sources) for sources in by_family.values())
    assert leaked <= len(SECRETS) * 0.05, (
        f"{leaked} of {len(SECRETS)} reach the log: {dict(sorted(by_family.items()))}"
    )


@pytest.mark.parametrize(
    "row", marked(BENIGN, FIRST_RUN_CHANGED, "main changed it on the first run")
)
def test_a_blind_plain_line_is_logged_as_typed(row: dict[str, object]) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]
