"""Secrets never reach the shell log: a corpus of realistic secrets, printed by commands and
passed as their arguments through `agentledger exec`, allowed and denied."""

from __future__ import annotations

import base64
import json
import os
import random
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.cli.exec_fast import join_argv
from agentledger.runner.shell_gate.redact import Redactor, fingerprint

_random = random.Random(15)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
# What people put in passwords, less the characters that end a shell word or a URL part.
PASSWORD = ALNUM + "!#%^*_+-.~"


def pick(alphabet: str, size: int) -> str:
    return "".join(_random.choice(alphabet) for _ in range(size))


def password() -> str:
    return pick(string.ascii_letters, 1) + pick(PASSWORD, _random.randint(9, 20))


def pem(label: str, lines: int = 6) -> str:
    body = "\n".join(pick(B64, 64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{pick(B64, 20)}==\n-----END {label}-----"


def jwt() -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    claims = part({"sub": pick(HEX, 12), "iat": _random.randint(10**9, 2 * 10**9)})
    return f"{header}.{claims}.{pick(URLSAFE, 43)}"


def service_account_json() -> tuple[str, str]:
    key = pem("PRIVATE KEY", 4).replace("\n", "\\n")
    document = json.dumps(
        {
            "type": "service_account",
            "project_id": "prod-123",
            "private_key_id": pick(HEX, 40),
            "private_key": key,
            "client_email": "ci@prod-123.iam.gserviceaccount.com",
        }
    )
    return document, key.split("\\n")[2]


# Each kind: how its secret is made, and the ways it shows up (`{s}` is the secret).
KINDS: dict[str, tuple[object, list[str]]] = {
    "aws-access-key-id": (
        lambda: "AKIA" + pick(UPPER, 16),
        ["aws_access_key_id = {s}", "key {s} found", "AWS_ACCESS_KEY_ID={s} aws s3 ls"],
    ),
    "aws-secret-access-key": (
        lambda: pick(B64, 40),
        ["aws_secret_access_key = {s}", "export AWS_SECRET_ACCESS_KEY={s}",
         '"SecretAccessKey": "{s}",'],
    ),
    "aws-session-token": (
        lambda: "FwoGZXIvYXdzE" + pick(B64, 180),
        ["AWS_SESSION_TOKEN={s}", '"SessionToken": "{s}"'],
    ),
    "github-classic-token": (
        lambda: "ghp_" + pick(ALNUM, 36),
        ["{s}", "git clone https://x-access-token:{s}@github.com/o/r", "GITHUB_TOKEN={s}"],
    ),
    "github-fine-grained-token": (
        lambda: "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59),
        ["gh auth login --with-token {s}", "token: {s}"],
    ),
    "github-oauth-token": (lambda: "gho_" + pick(ALNUM, 36), ["oauth_token: {s}", "{s}"]),
    "gitlab-pat": (
        lambda: "glpat-" + pick(URLSAFE, 20),
        ["PRIVATE-TOKEN: {s}", "glab auth login --token {s}", "{s}", "GITLAB_TOKEN={s}"],
    ),
    "slack-bot-token": (
        lambda: f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 13)}-{pick(ALNUM, 24)}",
        ["SLACK_BOT_TOKEN={s}", "token={s}", "{s}"],
    ),
    "slack-webhook": (
        lambda: f"https://hooks.slack.com/services/T{pick(UPPER, 8)}/B{pick(UPPER, 10)}/"
        + pick(ALNUM, 24),
        ["curl -X POST -d @msg.json {s}", "webhook: {s}", "{s}"],
    ),
    "stripe-secret-key": (lambda: "sk_live_" + pick(ALNUM, 24), ["{s}", "STRIPE_KEY={s}"]),
    "stripe-restricted-key": (lambda: "rk_live_" + pick(ALNUM, 24), ["stripe --api-key {s}"]),
    "stripe-webhook-secret": (
        lambda: "whsec_" + pick(ALNUM, 32),
        ["{s}", "STRIPE_WEBHOOK_SECRET={s}", "signing secret is {s}"],
    ),
    "npm-token": (
        lambda: "npm_" + pick(ALNUM, 36),
        ["//registry.npmjs.org/:_authToken={s}", "NPM_TOKEN={s}", "{s}"],
    ),
    "vault-token": (
        lambda: "hvs." + pick(URLSAFE, 24),
        ["vault login {s}", "VAULT_TOKEN={s}", "X-Vault-Token: {s}", "{s}"],
    ),
    "sendgrid-key": (
        lambda: f"SG.{pick(URLSAFE, 22)}.{pick(URLSAFE, 43)}",
        ["SENDGRID_API_KEY={s}", "{s}", "Authorization: Bearer {s}"],
    ),
    "huggingface-token": (
        lambda: "hf_" + pick(ALNUM, 34),
        ["huggingface-cli login --token {s}", "HF_TOKEN={s}", "{s}"],
    ),
    "digitalocean-token": (
        lambda: "dop_v1_" + pick(HEX, 64),
        ["doctl auth init -t {s}", "DIGITALOCEAN_TOKEN={s}", "{s}"],
    ),
    "pypi-token": (
        lambda: "pypi-AgEIcHlwaS5vcmc" + pick(URLSAFE, 120),
        ["twine upload -p {s} dist/*", "password = {s}", "{s}"],
    ),
    "age-secret-key": (
        lambda: "AGE-SECRET-KEY-1" + pick(UPPER, 58),
        ["# created: 2026-01-01\n# public key: age1xyz\n{s}", "{s}"],
    ),
    "pgp-private-key": (lambda: pem("PGP PRIVATE KEY BLOCK"), ["{s}", "key:\n{s}\n"]),
    "rsa-private-key": (lambda: pem("RSA PRIVATE KEY"), ["{s}", "cat id_rsa\n{s}"]),
    "openssh-private-key": (lambda: pem("OPENSSH PRIVATE KEY"), ["{s}"]),
    "ec-private-key": (lambda: pem("EC PRIVATE KEY", 3), ["{s}"]),
    "encrypted-private-key": (lambda: pem("ENCRYPTED PRIVATE KEY", 4), ["{s}"]),
    "curl-basic-auth": (
        password,
        ["curl -u admin:{s} https://api.internal/v1", "curl --user deploy:{s} -sS https://x.internal",
         "curl -s -uops:{s} https://jenkins.internal/api/json"],
    ),
    "x-api-key-header": (
        lambda: pick(ALNUM, 32),
        ["curl -H 'X-API-Key: {s}' https://api.internal", "x-api-key: {s}", "Api-Key: {s}"],
    ),
    "cookie-header": (
        lambda: pick(URLSAFE, 40),
        ["curl -H 'Cookie: session={s}' https://app.internal", "Set-Cookie: sid={s}; HttpOnly",
         "curl -b 'session={s}' https://app.internal"],
    ),
    "docker-auth": (
        lambda: base64.b64encode(f"ci:{password()}".encode()).decode(),
        ['{{"auths": {{"registry.internal": {{"auth": "{s}"}}}}}}', '"auth": "{s}"'],
    ),
    "openssl-passout": (
        password,
        ["openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:{s}",
         "openssl rsa -in k.pem -passin pass:{s}"],
    ),
    "docker-login-password": (
        password,
        ["docker login -u ci -p {s} registry.internal", "podman login --password {s} quay.io",
         "helm registry login -u x -p {s} r.internal"],
    ),
    "azure-client-secret": (
        lambda: pick(ALNUM, 3) + "8Q~" + pick(ALNUM + "_~.-", 34),
        ["az login --service-principal -u 0000-app -p {s} --tenant t", "AZURE_CLIENT_SECRET={s}",
         '"clientSecret": "{s}"', "{s}"],
    ),
    "sshpass-password": (
        password,
        ["sshpass -p {s} ssh root@10.0.0.4 uptime", "sshpass -p '{s}' scp f host:/tmp"],
    ),
    "gcp-service-account-key": (
        lambda: service_account_json(),
        ["{s}"],
    ),
    "jwt": (
        jwt,
        ["{s}", "Authorization: Bearer {s}", "kubectl --token={s} get pods", "id_token={s}"],
    ),
    "postgres-url-password": (
        password,
        ["psql postgresql://app:{s}@db.internal:5432/app", "DATABASE_URL=postgres://u:{s}@db/x"],
    ),
    "mongodb-url-password": (
        password,
        ["mongosh 'mongodb+srv://admin:{s}@cluster0.mongodb.net/test'",
         "mongodump -u admin -p {s} --db app"],
    ),
    "redis-password": (
        password,
        ["redis-cli -h cache -a {s} info", "redis://:{s}@cache.internal:6379/0"],
    ),
    "mysql-password": (
        password,
        ["mysql -uroot -p{s} -e 'show databases'", "mysqldump -u backup -p{s} app",
         "MYSQL_PWD={s} mysql -u root"],
    ),
    "password-flag": (
        password,
        ["app --password {s} -v", "tool --password={s}", "mytool --db-password '{s}'",
         "vpn --passphrase {s}"],
    ),
    "env-password": (
        password,
        ["PGPASSWORD={s} psql -h db", "export DB_PASSWORD={s}", "RSYNC_PASSWORD={s} rsync a b"],
    ),
    "connection-string": (
        password,
        ["Server=db;Database=app;User Id=sa;Password={s};",
         "Driver={{ODBC}};Server=db;UID=sa;PWD={s};", "jdbc:mysql://db/app?user=u&password={s}"],
    ),
    "bearer-token": (
        lambda: pick(URLSAFE, 48),
        ["Authorization: Bearer {s}", "curl -H 'authorization: bearer {s}' https://x"],
    ),
    "basic-auth-header": (
        lambda: base64.b64encode(f"admin:{password()}".encode()).decode(),
        ["Authorization: Basic {s}"],
    ),
    "google-api-key": (lambda: "AIza" + pick(URLSAFE, 35), ["{s}", "key={s}"]),
    "google-oauth-client-secret": (lambda: "GOCSPX-" + pick(URLSAFE, 28), ["{s}"]),
    "openai-key": (
        lambda: "sk-proj-" + pick(URLSAFE, 48), ["OPENAI_API_KEY={s}", "{s}"]
    ),
    "anthropic-key": (
        lambda: "sk-ant-api03-" + pick(URLSAFE, 93), ["ANTHROPIC_API_KEY={s}", "x-api-key: {s}"]
    ),
    "azure-storage-key": (
        lambda: pick(B64, 86) + "==",
        ["DefaultEndpointsProtocol=https;AccountName=st1;AccountKey={s};EndpointSuffix=core"],
    ),
    "twilio-api-key": (lambda: "SK" + pick(HEX, 32), ["{s}"]),
    "kubeconfig-client-key": (
        lambda: pick(B64, 120) + "=",
        ["    client-key-data: {s}", "    token: {s}"],
    ),
    "ldap-bind-password": (
        password, ["ldapsearch -x -D cn=admin,dc=x -w {s} -b dc=x"]
    ),
    "keytool-storepass": (
        password, ["keytool -list -keystore k.jks -storepass {s}"]
    ),
    "smb-password": (password, ["smbclient //fs/share -U admin%{s}"]),
    "docker-pat": (lambda: "dckr_pat_" + pick(URLSAFE, 27), ["{s}"]),
    "datadog-api-key": (lambda: pick(HEX, 32), ["DD_API_KEY={s}", "--api-key {s}"]),
    "telegram-bot-token": (
        lambda: f"{_random.randint(10**8, 10**9)}:{pick(URLSAFE, 35)}", ["{s}"]
    ),
}  # fmt: skip


def build_corpus() -> list[tuple[str, str, str]]:
    """(kind, text, secret): every context of every kind (at least three of each kind, the
    contexts taken again when there are fewer), each with a secret of its own."""
    corpus = []
    for kind, (make, contexts) in KINDS.items():
        for context in (contexts * 3)[: max(3, len(contexts))]:
            made = make()  # type: ignore[operator]
            if isinstance(made, tuple):
                text, secret = made
                corpus.append((kind, context.format(s=text), secret))
            else:
                corpus.append((kind, context.format(s=made), made))
    return corpus


CORPUS = build_corpus()


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 150
    assert len({kind for kind, _, _ in CORPUS}) >= 40
    assert len({secret for _, _, secret in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(
    ("kind", "text", "secret"), CORPUS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CORPUS)]
)
def test_every_secret_is_redacted(kind: str, text: str, secret: str) -> None:
    redacted = Redactor().redact(text)
    assert secret not in redacted
    assert "[REDACTED:" in redacted


def test_a_marker_names_the_kind_and_a_hash_shared_by_the_same_secret() -> None:
    token = "ghp_" + "a1B2" * 9
    first = Redactor().redact(f"echo {token}")
    second = Redactor().redact(f"GITHUB_TOKEN={token} gh api /user")
    assert first == f"echo [REDACTED:github-token:{fingerprint(token)}]"
    assert f":{fingerprint(token)}]" in second
    other = Redactor().redact("echo ghp_" + "z9Y8" * 9)
    assert fingerprint(token) not in other
    # Quoted or not, a value is the same secret.
    assert Redactor().redact("--password 'hunter22x'") == (
        f"--password [REDACTED:secret-flag:{fingerprint('hunter22x')}]"
    )


def test_the_fingerprint_is_keyed_per_user(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from agentledger.runner.shell_gate import redact_key as redact

    monkeypatch.setattr(redact, "_key", None)
    first = fingerprint("hunter2")
    assert first != hashlib.sha256(b"hunter2").hexdigest()[:6]
    key = Path(os.environ["AGENTLEDGER_CACHE_DIR"]) / "redaction.key"
    assert key.stat().st_mode & 0o077 == 0 and len(key.read_bytes()) == 32
    # Read back by the next process (here: with the module's copy forgotten).
    monkeypatch.setattr(redact, "_key", None)
    assert fingerprint("hunter2") == first
    key.write_bytes(b"\1" * 32)
    monkeypatch.setattr(redact, "_key", None)
    assert fingerprint("hunter2") != first


def test_ordinary_ops_output_is_left_alone() -> None:
    text = (
        "Chain INPUT (policy ACCEPT)\n"
        "target     prot opt source               destination\n"
        "f2b-sshd   tcp  --  0.0.0.0/0            0.0.0.0/0     multiport dports 22\n"
        "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms\n"
        "PWD=/home/ops\nHOME=/root\n"
        "nginx.service - A high performance web server\n"
        "   Active: active (running) since Tue 2026-03-12 10:15:00 UTC\n"
        "commit 7f555a1c0ffee; Author: Ops <ops@example.com>\n"
        "psql --no-password -h db -c 'select 1'\n"
    )
    assert Redactor().redact(text) == text


def batches(size: int) -> Iterator[list[tuple[str, str, str]]]:
    for start in range(0, len(CORPUS), size):
        yield CORPUS[start : start + size]


def strings_of(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def test_no_secret_of_the_corpus_reaches_the_log_through_exec(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = str(Path(sys.executable).parent / "agentledger")
    env = {**os.environ, "CI": "true"}
    printed = b""
    for batch in batches(12):
        texts = [text for _, text, _ in batch]
        line = join_argv(["printf", "%s\\n", *texts])
        commands = [
            ["--", "printf", "%s\\n", *texts],  # as arguments, printed on stdout
            ["--", line + " >&2"],  # on stderr
            ["--", line + " > /etc/agentledger-never-written"],  # denied: logged, not run
        ]
        for arguments in commands:
            result = subprocess.run(
                [script, "exec", "--run-dir", str(run_dir), *arguments],
                capture_output=True,
                env=env,
                timeout=60,
                check=False,
            )
            assert result.returncode in (0, 126), result.stderr
            printed += result.stdout
    # The agent gets its output unchanged; only the log is redacted.
    assert all(text.encode() in printed for _, text, _ in CORPUS)
    raw = (run_dir / "shell_audit.jsonl").read_text()
    events = [json.loads(line) for line in raw.splitlines()]
    assert len(events) == 3 * len(list(batches(12)))
    assert {event["decision"] for event in events} == {"allowed", "denied"}
    logged = "\n".join(text for event in events for text in strings_of(event))
    leaked = [(kind, secret) for kind, _, secret in CORPUS if secret in logged or secret in raw]
    assert leaked == []
    assert re.search(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{6}\]", logged)


def test_a_denied_sshpass_does_not_log_its_password(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = str(Path(sys.executable).parent / "agentledger")
    result = subprocess.run(
        [script, "exec", "--run-dir", str(run_dir), "--",
         "sshpass -p 'S3cr3t!Pass' ssh root@10.0.0.4 'rm -rf /var/log/app'"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 126
    raw = (run_dir / "shell_audit.jsonl").read_text()
    assert "S3cr3t!Pass" not in raw and "[REDACTED:password-flag:" in raw


def test_no_secret_reaches_the_log_when_the_text_is_the_command(tmp_path: Path) -> None:
    # Each text run as a command line of its own, refused: the command, every part the
    # classifier finds in it and the reason are logged, redacted.
    from agentledger.runner.shell_gate import Gate, Policy

    log = tmp_path / "shell_audit.jsonl"
    gate = Gate(Policy(deny=["re:."]), log)
    for _, text, _ in CORPUS:
        assert gate.run(text).denied
    raw = log.read_text()
    events = [json.loads(line) for line in raw.splitlines()]
    assert len(events) == len(CORPUS)
    logged = "\n".join(text for event in events for text in strings_of(event))
    leaked = [(kind, secret) for kind, _, secret in CORPUS if secret in logged or secret in raw]
    assert leaked == []


def test_the_rule_table_is_cached_so_exec_does_not_import_the_library(tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from agentledger.runner.shell_gate.redact import Redactor\n"
        "print(Redactor().redact('token=abc123xyz'), 'detect_secrets' in sys.modules)\n"
    )
    env = {**os.environ, "AGENTLEDGER_CACHE_DIR": str(tmp_path / "cache")}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert outputs[0][1] == "True" and outputs[1][1] == "False"
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].startswith("token=[REDACTED:")


def test_long_output_is_searched_around_the_words_and_still_redacted() -> None:
    # Past a few KB each rule runs only on the lines holding a word it needs.
    filler = "\n".join(
        f"api-{n}   1/1   Running   0   5d   10.244.1.{n}   node-2" for n in range(40)
    )
    text = "\n".join(f"{filler}\n{context}" for _, context, _ in CORPUS)
    assert len(text) > 100_000
    redacted = Redactor().redact(text)
    assert [secret for _, _, secret in CORPUS if secret in redacted] == []
    assert redacted.count(filler) == len(CORPUS)
