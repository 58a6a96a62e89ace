"""Secrets on command lines measured blind (issue 33, cause 10: "of new kinds at most 5%").

The corpus is tests/data/secrets/cmdline_blind4_cases.jsonl, made by
make_cmdline_blind4_corpus.py beside it, written without reading the redaction rules or the
other corpora: 135 secrets in twelve families (the prefix of each `source`: db, cloud, net,
mail, pkg, k8s, interp, http, stdin, wrap, url, enc) and 66 plain lines with secret-sounding
words, placeholders, hashes and UUIDs. All of it is blind: whoever tunes the rules measures
against it and does not read it, or it stops measuring anything.

First run against main (2f16e71): 16 of 135 secrets reached the log and 7 of 66 plain lines
were changed. First run of the rules written after it (the general layer,
`redact_argv_general`/`redact_argv_code`, and the command line's hidden secrets,
`redact_argv_decode`): 5 of 135 (3.7%) and the same 7 plain lines. Neither was tuned on this
corpus, but the second was asked for after its family counts were seen (most leaks were
encoded or fed on standard input), so that figure is not wholly blind. The cases that fail
now are expected to fail (not strictly: a rule that fixes one passes); every other case,
and the 5% goal, must keep passing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor
from secrets_corpus_helpers import leaks, marked

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_blind4_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]

STILL_LEAKING = {
    "mail-sendemail-xp",
    "enc-base64-decode-pipe",
    "enc-hex-xxd",
    "enc-smtp-auth-plain",
}
"""Secrets that still reach the log (16 did on the first run against main; 5 before the rules
written from the fifth blind corpus, which also took `composer config http-basic.R U P`)."""

STILL_CHANGED = {
    "fp-redis-env-placeholder",
    "fp-cmdsubst-secret-file",
    "fp-kubectl-from-file",
    "fp-borg-passcommand",
    "fp-export-min-length",
    "fp-ldap-filter",
}
"""Plain lines the rules change (the same seven on both runs; `ipmitool -E`'s line no longer
since a variable in double quotes is a reference, tests/test_gate_secrets_blind5.py)."""


def test_the_corpus_is_labelled_and_all_blind() -> None:
    assert len(SECRETS) >= 100 and len(BENIGN) >= 50
    assert all(row["blind"] and row["field"] == "command" for row in ROWS)
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert all(row["secret"] == row["pieces"][0] for row in SECRETS)
    assert len({row["source"] for row in ROWS}) == len(ROWS)
    assert {row["source"] for row in SECRETS} >= STILL_LEAKING
    assert {row["source"] for row in BENIGN} >= STILL_CHANGED


@pytest.mark.parametrize(
    "row", marked(SECRETS, STILL_LEAKING, "still reaches the log", strict=False)
)
def test_a_blind_secret_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]


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
    "row",
    marked(
        BENIGN,
        STILL_CHANGED,
        "the rules change it (a placeholder or a secret-sounding name)",
        strict=False,
    ),
)
def test_a_blind_plain_line_is_logged_as_typed(row: dict[str, object]) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]
