"""Secrets a command line holds in a form the detectors of text do not read as typed (issue
33, cause 10: "a PEM body without its header, a key through base64, fold or xxd, a JWT split
across lines", ".netrc and pgpass lines"): the command line is as safe as output.

The corpus is tests/data/secrets/cmdline_decode_cases.jsonl, made by
make_cmdline_decode_corpus.py beside it and committed before any rule for these forms: 58
secrets (encoded and fed to a decoder, `printf '\\x..'`, split over quotes or a line
continuation, headerless private keys written to key files, credential-file lines written
by echo/printf/tee/here-document, SQL on standard input setting a password) and 32 lines of
the same tools that hold none (base64 of plain text, `base64 -d FILE`, `xxd FILE`, hashes,
public keys, a certificate, shell rc lines). Every third case of each is blind.

Its first run, with the rules as they stood: 29 of 58 reached the log (the dev part 20 of
39, the blind part 9 of 19), 0 of 32 plain lines changed. What was held was held where a
detector reads the typed text (a base64 token whose decoded text holds a secret, a netrc line,
a here-document's lines); what leaked was made by bash from what was typed (escapes, quotes
side by side, a continuation), was a credential or key line inside quotes, or was SQL.
`redact_argv_decode` then: 0 of 58, 0 of 32 plain lines changed. The leak listing of the
first run named blind cases too and the same person wrote corpus and rules, so the blind
part is weak evidence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor, fingerprint
from secrets_corpus_helpers import leaks

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_decode_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]
TEXT = {row["source"]: row["text"] for row in ROWS}


def mark(kind: str, secret: str) -> str:
    return f"[REDACTED:{kind}:{fingerprint(secret)}]"


def test_the_corpus_is_labelled_and_a_third_is_blind() -> None:
    assert len(SECRETS) >= 30 and len(BENIGN) >= 20
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert all(row["written"] == "before-decode-rules" for row in ROWS)
    assert sum(row["blind"] for row in SECRETS) * 3 >= len(SECRETS) - 2
    assert len({row["source"] for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", SECRETS, ids=[row["source"] for row in SECRETS])
def test_a_hidden_secret_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]


@pytest.mark.parametrize("row", BENIGN, ids=[row["source"] for row in BENIGN])
def test_a_line_of_the_same_forms_without_a_secret_is_logged_as_typed(
    row: dict[str, object],
) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]


def test_the_corpus_totals() -> None:
    redactor = Redactor()
    leaked = [
        r["source"] for r in SECRETS if leaks(redactor.redact_command(r["text"]), r["pieces"])
    ]
    changed = [r["source"] for r in BENIGN if redactor.redact_command(r["text"]) != r["text"]]
    assert (leaked, changed) == ([], [])


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "echo-pgpass",
            "echo 'db.internal:5432:app:app_user:{}' >> ~/.pgpass",
        ),
        (
            "printf-netrc-format",
            "printf 'machine api.heroku.com login me@x.io password %s\\n' {} >> ~/.netrc",
        ),
        (
            "psql-herestring-alter-user",
            "psql -h db1 -U postgres <<< \"ALTER USER app WITH PASSWORD '{}'\"",
        ),
        (
            "sqlplus-heredoc-identified-unquoted",
            "sqlplus / as sysdba <<EOF\nALTER USER system IDENTIFIED BY {};\nEOF",
        ),
        ("wg-private-key-process-substitution", "wg set wg0 private-key <(echo {})"),
        ("echo-ed25519-body-key-file", "echo {} > private.key"),
    ],
)
def test_the_secret_alone_is_replaced_where_it_is_typed(source: str, expected: str) -> None:
    row = next(row for row in SECRETS if row["source"] == source)
    secret = row["pieces"][0]
    kinds = {
        "echo-pgpass": "pgpass",
        "printf-netrc-format": "netrc-password",
        "psql-herestring-alter-user": "sql-password",
        "sqlplus-heredoc-identified-unquoted": "sql-password",
        "wg-private-key-process-substitution": "private-key",
        "echo-ed25519-body-key-file": "private-key",
    }
    assert Redactor().redact_command(TEXT[source]) == expected.format(mark(kinds[source], secret))


def test_a_word_bash_makes_from_pieces_is_replaced_whole() -> None:
    redactor = Redactor()
    # printf's escapes: the word that makes the key goes, the kind is what it decodes to
    line = TEXT["printf-hex-escapes-stripe"]
    escapes = line.split("'")[1]
    assert redactor.redact_command(line) == f"printf {mark('stripe-key', escapes)} > key.txt"
    # quotes side by side: `"sk-ant-api03-V"'b7N...'Fg0...` is one word to bash
    line = TEXT["anthropic-three-quotes"]
    word = line.split("=", 1)[1]
    assert redactor.redact_command(line).startswith("export X=[REDACTED:")
    assert word not in redactor.redact_command(line)
    # a continuation: each half goes
    line = TEXT["jwt-backslash-newline"]
    first, second = line.split("Bearer ")[1].split('"')[0].split("\\\n")
    assert redactor.redact_command(line) == (
        f'curl -H "Authorization: Bearer {mark("split-secret", first)}\\\n'
        f'{mark("split-secret", second)}" https://api.local/v1'
    )


@pytest.mark.parametrize(
    "line",
    [
        "echo 'ok' | tee -a /var/log/deploy.log",
        "printf '%s\\n' \"$@\"",
        "cat <<EOF > config.yaml\nkey: value\nEOF",
        "echo 'SELECT 1' | psql",
        'psql <<< "ALTER ROLE app PASSWORD NULL"',
        'echo "$(date)" > stamp',
        "awk -F'\"' '{print $2}' file",
        "openssl rand -base64 32 > /etc/wireguard/private.key",
        "echo 48656c6c6f 20776f726c64 | xxd -r -p",
        "base64 -d <<< 'aGVsbG8gd29ybGQgZnJvbSB0aGUgZ2F0ZQ=='",
        "echo 'password reset done' > status.txt",
        "printf 'machine %s login %s\\n' h u >> ~/.netrc",
        'echo "a"\'b\'"c" > x',
        "ls -la \\\n  /etc",
        "echo 'hello world' | rev",
        "echo a b c | xargs -n1",
        "redis-cli <<< 'INFO'",
        "sqlplus / as sysdba <<EOF\nconnect / as sysdba\nEOF",
        "mysql <<< \"ALTER USER 'u'@'%' IDENTIFIED BY RANDOM PASSWORD\"",
        "wg pubkey < /etc/wireguard/private.key",
        "echo xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= >> peers.txt",
        "A=1; B=2; echo $A$B",
        'X=foo; Y=bar; echo "$X-$Y"',
        "curl 'https://example.com/search?q=%E2%9C%93%20ok%20%E2%9C%93%20ok%20%E2%9C%93'",
        "printf '\\u2713 done\\n'",
        "MIN=5; echo $MIN",
    ],
)
def test_look_alikes_are_logged_as_typed(line: str) -> None:
    assert Redactor().redact_command(line) == line


def test_forms_beyond_the_corpus_are_held() -> None:
    import base64
    import gzip

    token = "ghp_R8xQm2VtL9pZk4NwYc7HsJd3FbG6uAe1Tq0o"
    hexed = token.encode().hex()
    env = base64.b64encode(b"DB_PASSWORD=Xyz12345abc\n").decode()
    gzipped = base64.b64encode(gzip.compress(token.encode(), mtime=0)).decode()
    octal = "".join(f"\\0{byte:o}" for byte in token.encode())
    wireguard = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
    hex_escapes = "".join(f"\\x{byte:02x}" for byte in token.encode())
    percent = "".join(f"%{byte:02X}" for byte in token.encode())
    ed25519 = "MC4CAQAwBQYDK2VwBCIEIM6EDapszbtgib2G+61FMp1pHt07SwdxZ8sNUOr1Mupj"
    redactor = Redactor()
    for line, pieces in [
        (f"xxd -r -p <<EOF\n{hexed[:40]}\n{hexed[40:]}\nEOF", [hexed[:40], hexed[40:]]),
        (f"echo {hexed[:40]} {hexed[40:]} | xxd -r -p", [hexed[:40], hexed[40:]]),
        (f"echo {env[:12]} {env[12:]} | base64 -d >> .env", [env[:12], env[12:]]),
        ("cat <<EOF | psql\nALTER USER x PASSWORD 'Pw12345x';\nEOF", ["Pw12345x"]),
        ("printf '%s:%s:%s:%s:%s\\n' db 5432 app u S3cr3tPwq >> ~/.pgpass", ["S3cr3tPwq"]),
        ("install -m600 /dev/stdin ~/.pgpass <<< 'h:5432:d:u:Pw9999xx'", ["Pw9999xx"]),
        (f"echo {gzipped} | base64 -d | gunzip > tok", [gzipped]),
        (f"echo {token[::-1]} | rev > tok", [token[::-1]]),
        (f"echo {token[:20]} {token[20:]} | tr -d ' ' > tok", [token[:20], token[20:]]),
        (f"echo -e '{octal}' > tok", [octal]),
        (f'echo "{token[:20]}"\\\n"{token[20:]}" > tok', [token[:20], token[20:]]),
        (f"wg pubkey <<< {wireguard}", [wireguard]),
        (f"echo {wireguard} | wg pubkey", [wireguard]),
        (f"wg set wg0 private-key /dev/stdin <<< {wireguard}", [wireguard]),
        ("redis-cli -h cache <<< 'AUTH default R3disStdinPw'", ["R3disStdinPw"]),
        ("redis-cli <<< 'CONFIG SET requirepass N3wR3disPw'", ["N3wR3disPw"]),
        ("sqlplus /nolog <<EOF\nCONNECT sys/Orcl3Conn@orcl AS SYSDBA\nEOF", ["Orcl3Conn"]),
        (
            f'A={token[:20]}; B={token[20:]}; curl -H "Authorization: token $A$B" https://x',
            [token[:20], token[20:]],
        ),
        (
            f'export P={token[:18]} && export Q={token[18:]} && echo "${{P}}${{Q}}" > t',
            [token[18:]],
        ),
        (f"python3 -c \"print(b'{hex_escapes}'.decode())\"", [hex_escapes]),
        (f"curl -d 'token={percent}' https://x", [percent]),
        (f"python3 -c \"open('k','wb').write(base64.b64decode('{ed25519}'))\"", [ed25519]),
    ]:
        assert not leaks(redactor.redact_command(line), pieces), line


def test_the_event_of_exec_holds_the_hidden_secret_in_no_field(tmp_path: Path) -> None:
    # Run for real: the secret made by printf's escapes and the pgpass line typed in quotes
    # are gone from the command, its parts, the reason and the output of the logged event.
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    token = "ghp_E2eQm2VtL9pZk4NwYc7HsJd3FbG6uAe1Tq0o"
    escapes = "".join(f"\\x{byte:02x}" for byte in token.encode())
    line = f"printf '{escapes}\\n'; echo 'db1:5432:app:u:PgE2eSecret9' | cat"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "agentledger"), "exec", "--run-dir", str(run_dir),
         "--", line],
        capture_output=True,
        env={**os.environ, "CI": "true"},
        timeout=60,
        check=False,
    )  # fmt: skip
    raw = (run_dir / "shell_audit.jsonl").read_text()
    assert raw.strip(), result.stderr
    event = json.loads(raw.splitlines()[-1])
    assert result.returncode == 0, result.stderr
    assert token.encode() in result.stdout  # the agent gets its output unchanged
    for piece in (escapes, escapes.replace("\\", "\\\\"), token, "PgE2eSecret9"):
        assert piece not in raw
    assert "[REDACTED:" in event["command"] and event["parts"]
    assert all("PgE2eSecret9" not in json.dumps(part) for part in event["parts"])
