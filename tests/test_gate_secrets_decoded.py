"""Secrets of new kinds and shapes never reach the shell log (issue 33, cause 10): context
rules (DB_PASS=, .netrc, pgpass, XML, YAML/JSON password keys), more token kinds, and secrets
decoded and rescanned (base64, hex, xxd, folded lines, a PEM body without its header, a JWT
split over lines); and ordinary ops output comes through unchanged.

The corpus is tests/data/secrets_new_kinds.jsonl (made by tests/data/make_secrets_corpus.py).
First run, before the rules of issue 33: 91 of its 128 cases reached the log, and 2 of the
62 ordinary lines of tests/data/secrets_benign.txt were redacted; the first corpus
(tests/test_gate_secrets.py, 173 cases) had no miss before or after.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor

DATA = Path(__file__).parent / "data"
ROWS = [json.loads(line) for line in (DATA / "secrets_new_kinds.jsonl").read_text().splitlines()]
BENIGN = (DATA / "secrets_benign.txt").read_text().splitlines()


def leaks(row: dict[str, object]) -> list[str]:
    redacted = Redactor().redact(str(row["text"]))
    return [piece for piece in row["pieces"] if piece in redacted]  # type: ignore[attr-defined]


def test_the_corpus_has_the_kinds_the_issue_names() -> None:
    kinds = {str(row["kind"]).split("-")[0] for row in ROWS}
    assert {"assignment", "netrc", "pgpass", "xml", "yaml", "json", "pem", "base64", "hex",
            "xxd", "jwt"} <= kinds  # fmt: skip
    assert len(ROWS) >= 120


@pytest.mark.parametrize("row", ROWS, ids=[f"{row['kind']}-{i}" for i, row in enumerate(ROWS)])
def test_every_new_secret_is_redacted(row: dict[str, object]) -> None:
    assert leaks(row) == [], row["text"]


def test_at_most_five_percent_of_the_new_kinds_reach_the_log() -> None:
    missed = [row["kind"] for row in ROWS if leaks(row)]
    assert len(missed) <= 0.05 * len(ROWS), missed


def test_ordinary_output_is_not_redacted() -> None:
    changed = [line for line in BENIGN if Redactor().redact(line) != line]
    assert changed == []


def test_hashes_and_firewall_rules_come_through() -> None:
    text = (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  /dev/null\n"
        "-A INPUT -s 10.0.0.0/8 -p tcp -m tcp --dport 22 -j ACCEPT\n"
        "PWD=/root\nOLDPWD=/home/ops\nbypass: true\ncompass: north\n"
        "  password: ${DB_PASSWORD}\n  password: {{ vault_db_password }}\n"
    )
    assert Redactor().redact(text) == text


def test_a_key_passed_through_base64_and_fold_is_found_in_one_piece() -> None:
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEAAAAA" * 8 + "\n-----END"
    encoded = base64.b64encode(key.encode()).decode()
    folded = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60))
    for text in (encoded, folded, f"echo {encoded} | base64 -d"):
        redacted = Redactor().redact(text)
        assert encoded[20:60] not in redacted.replace("\n", "")
        assert "[REDACTED:" in redacted


def test_a_certificate_body_without_its_header_is_left_alone() -> None:
    # A certificate is public: its DER starts with a SEQUENCE inside a SEQUENCE.
    der = b"\x30\x82\x03\x00\x30\x82\x02\xe8" + bytes(range(256)) * 3
    body = base64.b64encode(der).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    assert Redactor().redact(lines) == lines


# The shapes of gitleaks' own true positives for Kubernetes Secrets (gitleaks/gitleaks,
# cmd/generate/config/rules/kubernetes.go, MIT): `data:` before or after `kind: Secret`,
# quoted values, tab indentation, literal and folded blocks.
KUBERNETES = [
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: heketi-secret\ndata:\n"
    "  # base64 encoded password\n  key: bXlwYXNzd29yZA==",
    "apiVersion: v1\ndata:\n\tpassword: UyFCXCpkJHpEc2I9\n\tusername: YWRtaW4=\nkind: Secret\n"
    "metadata:\n\tname: db-user-pass",
    "apiVersion: 'v1'\ndata:\n\textra: 'YWRtaW46cGFzc3dvcmQ='\nkind: 'Secret'",
    'apiVersion: "v1"\nkind: "Secret"\ndata:\n\tpassword: "UyFCXCpkJHpEc2I9"',
    "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockercfg\ndata:\n  .dockercfg: |\n"
    "    eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUvdjEvIjp7ImF1dGgiOiJvcGVuc2VzYW1lIn19fQo=\n",
    "apiVersion: v1\ndata:\n  .dockercfg: >\n"
    "    eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUvdjEvIjp7ImF1dGgiOiJvcGVuc2VzYW1lIn19fQo=\n"
    "metadata:\n  name: secret-dockercfg\nkind: Secret",
    "apiVersion: v1\nkind: secret\ndata:\n\textra: YWRtaW46cGFzc3dvcmQ=\nmetadata:\n\tname: x",
]


@pytest.mark.parametrize("text", KUBERNETES)
def test_every_value_of_a_kubernetes_secret_is_redacted(text: str) -> None:
    redacted = Redactor().redact(text)
    for value in ("bXlwYXNzd29yZA", "UyFCXCpkJHpEc2I9", "YWRtaW46cGFzc3dvcmQ", "eyJhdXRocyI6"):
        assert value not in redacted, redacted


def test_a_config_map_and_empty_or_templated_values_are_left_alone() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: YWRtaW46cGFzc3dvcmQ=\n---\n"
        'kind: Secret\ndata:\n  csrf: ""\n  password: {{ .Values.Password }}\n'
    )
    redacted = Redactor().redact(text)
    assert 'csrf: ""' in redacted and "{{ .Values.Password }}" in redacted


def test_the_token_characters_and_their_class_agree() -> None:
    # redact.py skips the decoding pass for text without a run of these characters, so the
    # class redact_decode searches with must hold exactly them.
    import re

    from agentledger.runner.shell_gate.redact import TOKEN_CHARACTERS, TOKEN_CLASS

    matched = {chr(code) for code in range(128) if re.fullmatch(f"[{TOKEN_CLASS}]", chr(code))}
    assert matched == set(TOKEN_CHARACTERS)
